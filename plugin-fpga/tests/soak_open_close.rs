//! The device open/close soak: the `sim` device opened, used and
//! dropped again and again (its model thread, BAR and driver each time).
//! After a warm-up tenth, the process's threads and file descriptors must
//! not grow at all and its RSS by less than 1 MiB.
//!
//! 200 cycles in `cargo test`; `cargo xtask soak` runs 1000 with
//! `TENSORPLUG_SOAK_CYCLES` and writes the samples to
//! `$TENSORPLUG_SOAK_DIR/open_close.csv` for its plot.

use std::time::{Duration, Instant};

use tensorplug_core::accelerator::QueueId;

/// (RSS in KiB, open file descriptors, threads) of this process.
fn usage() -> (u64, usize, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
    };
    let fds = std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count();
    (field("VmRSS:"), fds, field("Threads:"))
}

fn cycle() {
    let mut dev = tensorplug_fpga::open::sim::open_with(Vec::new()).expect("sim opens");
    let q = QueueId(0);
    let buf = dev.allocate(1 << 16, 256).expect("allocate");
    let fence = dev.fill(q, buf, 1 << 16, 0x3F80_0000).expect("fill");
    dev.wait(fence, Duration::from_secs(5))
        .expect("the fill completes");
    let mut back = vec![0u8; 64];
    let read = unsafe { dev.copy_from_device(q, back.as_mut_ptr(), buf, back.len()) }.unwrap();
    dev.wait(read, Duration::from_secs(5)).unwrap();
    assert_eq!(&back[..4], &1.0f32.to_le_bytes());
    dev.deallocate(buf).expect("deallocate");
}

#[test]
fn opening_and_closing_the_sim_device_leaks_nothing() {
    let cycles: usize = std::env::var("TENSORPLUG_SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let warm = (cycles / 10).max(1);
    let every = (cycles / 100).max(1);
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut baseline = None;
    for i in 1..=cycles {
        cycle();
        if i == warm {
            baseline = Some(usage());
        }
        if i % every == 0 {
            let (rss, fds, threads) = usage();
            samples.push(format!(
                "{:.3},{i},{rss},{fds},{threads}",
                start.elapsed().as_secs_f64()
            ));
        }
    }
    if let Some(dir) = std::env::var_os("TENSORPLUG_SOAK_DIR") {
        let path = std::path::Path::new(&dir).join("open_close.csv");
        let text = format!(
            "seconds,cycle,rss_kib,fds,threads\n{}\n",
            samples.join("\n")
        );
        std::fs::write(&path, text).expect("write the samples");
    }
    let (rss0, fds0, threads0) = baseline.expect("a warm-up sample");
    let (rss, fds, threads) = usage();
    eprintln!(
        "{cycles} open/close cycles in {:.1} s: after cycle {warm}: RSS {rss0} KiB, {fds0} fds, \
         {threads0} threads; at the end: RSS {rss} KiB, {fds} fds, {threads} threads",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(threads, threads0, "threads grew");
    assert_eq!(fds, fds0, "file descriptors grew");
    assert!(
        rss.saturating_sub(rss0) < 1024,
        "RSS grew {} KiB over {} cycles",
        rss - rss0,
        cycles - warm
    );
}
