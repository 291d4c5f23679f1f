//! The model behind each transport, driven with the same bring-up and
//! command sequence: SPI frames, the in-process MMIO thread, and the model
//! server in a second process over a shared-memory BAR file.
#![cfg(feature = "std")]

mod model_support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model_support::{VecBus, values};
use tensorplug_abi::device::{
    COMMAND_DESCRIPTOR_SIZE, CommandDescriptor, CompletionDescriptor, CompletionStatus, Control,
    DEVICE_MAGIC, EventDescriptor, EventKind, Features, Opcode, RESET_KEY, Register, Status,
};
use tensorplug_device_fpga::transport::mmio::{MmioTransport, ShmBar};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_device_fpga::transport::{DmaRegion, Transport};
use tensorplug_model_fpga::model::host::{InProcessDevice, ServeOptions, faults_line};
use tensorplug_model_fpga::model::{AlignedMemory, Faults, ManualClock, Model, ModelConfig};

const CMDQ: u64 = 0;
const CPLQ: u64 = 0x1000;
const EVQ: u64 = 0x2000;
const A: u64 = 0x1_0000;
const B: u64 = 0x2_0000;
const OUT: u64 = 0x3_0000;
const TIMEOUT: Duration = Duration::from_secs(5);

fn wait_for<T: Transport>(t: &mut T, reg: Register, what: &str, ok: impl Fn(u32) -> bool) -> u32 {
    let start = Instant::now();
    loop {
        let v = t.read_reg(reg.0).unwrap();
        if ok(v) {
            return v;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "timed out waiting for {what} ({reg:?} = {v:#x})"
        );
        std::thread::yield_now();
    }
}

/// Bring-up: reset, READY, identity, rings of 8/8/16 in device memory, ENABLE.
fn bring_up<T: Transport>(t: &mut T) -> u32 {
    // Reset handshake: SCRATCH (non-zero now) reads 0 once the reset is
    // taken; READY alone may still be the value from before the reset.
    t.write_reg(Register::SCRATCH.0, 0x5A5A).unwrap();
    t.write_reg(Register::RESET.0, RESET_KEY).unwrap();
    wait_for(t, Register::SCRATCH, "the reset", |s| s == 0);
    wait_for(t, Register::STATUS, "READY", |s| s & Status::READY.0 != 0);
    assert_eq!(t.read_reg(Register::ID.0).unwrap(), DEVICE_MAGIC);
    for (base, size, addr, n) in [
        (Register::CMDQ_BASE_LO, Register::CMDQ_SIZE, CMDQ, 8),
        (Register::CPLQ_BASE_LO, Register::CPLQ_SIZE, CPLQ, 8),
        (Register::EVQ_BASE_LO, Register::EVQ_SIZE, EVQ, 16),
    ] {
        t.write_reg(base.0, addr as u32).unwrap();
        t.write_reg(size.0, n).unwrap();
    }
    t.write_reg(Register::CONTROL.0, (Control::ENABLE | Control::EVENTS).0)
        .unwrap();
    wait_for(t, Register::STATUS, "ENABLED", |s| {
        s & Status::ENABLED.0 != 0
    });
    t.read_reg(Register::FEATURES.0).unwrap()
}

/// Submits `cmd` as command `index` and waits for its completion.
fn run<T: Transport>(t: &mut T, index: u32, cmd: CommandDescriptor) -> CompletionDescriptor {
    let slot = u64::from(index % 8);
    t.write_mem(
        CMDQ + slot * COMMAND_DESCRIPTOR_SIZE as u64,
        &cmd.to_le_bytes(),
    )
    .unwrap();
    t.write_reg(Register::CMDQ_DOORBELL.0, index + 1).unwrap();
    wait_for(t, Register::CPLQ_TAIL, "the completion", |tail| {
        tail == index + 1
    });
    let mut raw = [0; 16];
    t.read_mem(CPLQ + slot * 16, &mut raw).unwrap();
    t.write_reg(Register::CPLQ_HEAD.0, index + 1).unwrap();
    CompletionDescriptor::from_le_bytes(&raw)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The common sequence: two inputs in, an ADD, the result out (through DMA
/// when the transport has a window), events checked.
fn exercise<T: Transport>(t: &mut T) {
    let features = bring_up(t);
    let (a, b) = (values(256, 1), values(256, 2));
    let mut index = 0;
    let dma: Option<DmaRegion<'_>> = t.dma();
    let dma_base = dma.map(|d| d.bus_base());
    if let (Some(dma), Some(base)) = (dma, dma_base) {
        dma.write(base, &f32_bytes(&a)).unwrap();
        let mut h2d = CommandDescriptor::new(Opcode::COPY_H2D, 1, 0);
        (h2d.src0, h2d.dst, h2d.len) = (base, A, 1024);
        assert_eq!(run(t, index, h2d).status, CompletionStatus::OK);
        index += 1;
    } else {
        t.write_mem(A, &f32_bytes(&a)).unwrap();
    }
    t.write_mem(B, &f32_bytes(&b)).unwrap();
    let mut add = CommandDescriptor::new(Opcode::ADD_F32, 2, 0);
    (add.src0, add.src1, add.dst, add.len) = (A, B, OUT, 256);
    let done = run(t, index, add);
    assert_eq!(
        (done.status, done.tag, done.command_index),
        (CompletionStatus::OK, 2, index)
    );
    index += 1;
    let want: Vec<u8> = f32_bytes(&a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<_>>());
    let mut got = vec![0; 1024];
    if let Some(base) = dma_base {
        let mut d2h = CommandDescriptor::new(Opcode::COPY_D2H, 3, 0);
        (d2h.src0, d2h.dst, d2h.len) = (OUT, base + 4096, 1024);
        assert_eq!(run(t, index, d2h).status, CompletionStatus::OK);
        index += 1;
        t.dma().unwrap().read(base + 4096, &mut got).unwrap();
        assert_ne!(features & Features::DMA.0, 0);
    } else {
        t.read_mem(OUT, &mut got).unwrap();
    }
    assert_eq!(got, want);
    let tail = t.read_reg(Register::EVQ_TAIL.0).unwrap();
    assert_eq!(tail, 2 * index, "begin and end per command");
    let mut raw = [0; 16];
    t.read_mem(EVQ + 16 * u64::from(tail - 1), &mut raw)
        .unwrap();
    let last = EventDescriptor::from_le_bytes(&raw);
    let kind = if dma_base.is_some() {
        EventKind::COPY_D2H_END
    } else {
        EventKind::OP_END
    };
    assert_eq!(last.kind, kind);
}

#[test]
fn over_spi_frames() {
    let dev = Model::new(
        AlignedMemory::zeroed(1 << 20),
        VecBus(Vec::new()),
        ManualClock::new(),
        ModelConfig::default(),
        false,
    )
    .unwrap();
    let mut spi = SpiTransport::new(SpiSlave::new(dev), SpiConfig::default());
    exercise(&mut spi);
}

#[test]
fn over_in_process_mmio() {
    let dev = InProcessDevice::spawn(1 << 20, 1 << 16, ServeOptions::default()).unwrap();
    let mut t = dev.transport();
    exercise(&mut t);
    let features = t.read_reg(Register::FEATURES.0).unwrap();
    assert_eq!(
        features & Features::IRQ.0,
        0,
        "no interrupt line on a memory-backed BAR"
    );
    dev.stop().unwrap();
}

#[test]
fn in_process_faults_show_up_through_the_registers() {
    let dev = InProcessDevice::spawn(1 << 20, 1 << 16, ServeOptions::default()).unwrap();
    let mut t = dev.transport();
    bring_up(&mut t);
    assert!(dev.set_faults(Faults {
        lose_next_completion: true,
        ..Faults::default()
    }));
    t.write_mem(
        CMDQ,
        &CommandDescriptor::new(Opcode::NOP, 5, 0).to_le_bytes(),
    )
    .unwrap();
    t.write_reg(Register::CMDQ_DOORBELL.0, 1).unwrap();
    wait_for(&mut t, Register::CMDQ_HEAD, "the command taken", |h| h == 1);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        t.read_reg(Register::CPLQ_TAIL.0).unwrap(),
        0,
        "completion lost"
    );
    // The timestamp keeps moving while idle (host clock).
    let t0 = t.read_reg(Register::TIMESTAMP_LO.0).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let t1 = t.read_reg(Register::TIMESTAMP_LO.0).unwrap();
    assert!(
        t1.wrapping_sub(t0) > 100_000,
        "≥ 1 ms of 100 MHz ticks: {t0} → {t1}"
    );
}

#[test]
fn reset_over_the_register_window_clears_host_written_registers() {
    let dev = InProcessDevice::spawn(1 << 16, 4096, ServeOptions::default()).unwrap();
    let mut t = dev.transport();
    bring_up(&mut t);
    t.write_reg(Register::SCRATCH.0, 0xABCD).unwrap();
    t.write_reg(Register::RESET.0, RESET_KEY).unwrap();
    wait_for(&mut t, Register::SCRATCH, "SCRATCH back to 0", |c| c == 0);
    assert_eq!(t.read_reg(Register::CONTROL.0).unwrap(), 0);
    assert_eq!(t.read_reg(Register::CMDQ_SIZE.0).unwrap(), 0);
    assert_eq!(
        t.read_reg(Register::STATUS.0).unwrap() & Status::ENABLED.0,
        0
    );
    bring_up(&mut t);
}

#[test]
fn over_a_shared_memory_file_served_by_another_process() {
    let path =
        std::env::temp_dir().join(format!("tensorplug-model-test-{}.bar", std::process::id()));
    let mut server = Command::new(env!("CARGO_BIN_EXE_tensorplug-model-server"))
        .arg(&path)
        .args(["--create", "--memory", "1048576", "--dma", "65536"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), format!("ready {}", path.display()));
    let bar = ShmBar::open(&path).unwrap();
    let mut t = MmioTransport::new(bar);
    exercise(&mut t);
    drop(server.stdin.take()); // EOF: the server stops.
    let start = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < TIMEOUT, "server did not stop");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_model_server_takes_faults_and_stop_on_stdin() {
    let path = std::env::temp_dir().join(format!(
        "tensorplug-model-faults-{}.bar",
        std::process::id()
    ));
    let mut server = Command::new(env!("CARGO_BIN_EXE_tensorplug-model-server"))
        .arg(&path)
        .args(["--create", "--memory", "65536", "--dma", "4096"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut stdin = server.stdin.take().unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("ready "), "{line:?}");
    let mut t = MmioTransport::new(ShmBar::open(&path).unwrap());
    bring_up(&mut t);
    let mut ask = |cmd: &str| {
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
        let mut reply = String::new();
        out.read_line(&mut reply).unwrap();
        reply.trim().to_string()
    };
    assert!(ask("faults bogus").starts_with("error "));
    // A line that never ends is refused, not buffered: the next one works.
    let endless = "x".repeat(100_000);
    assert_eq!(ask(&endless), "error a line longer than 4096 bytes");
    assert!(ask("faults bogus").starts_with("error "));
    let faults = Faults {
        lose_next_completion: true,
        ..Faults::default()
    };
    assert_eq!(ask(&faults_line(&faults)), "ok");
    t.write_mem(
        CMDQ,
        &CommandDescriptor::new(Opcode::NOP, 5, 0).to_le_bytes(),
    )
    .unwrap();
    t.write_reg(Register::CMDQ_DOORBELL.0, 1).unwrap();
    wait_for(&mut t, Register::CMDQ_HEAD, "the command taken", |h| h == 1);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        t.read_reg(Register::CPLQ_TAIL.0).unwrap(),
        0,
        "completion lost"
    );
    // The next command completes normally, into slot 0 (the lost one never used it).
    t.write_mem(
        CMDQ + 64,
        &CommandDescriptor::new(Opcode::NOP, 6, 0).to_le_bytes(),
    )
    .unwrap();
    t.write_reg(Register::CMDQ_DOORBELL.0, 2).unwrap();
    wait_for(&mut t, Register::CPLQ_TAIL, "the next completion", |tail| {
        tail == 1
    });
    let mut raw = [0; 16];
    t.read_mem(CPLQ, &mut raw).unwrap();
    let next = CompletionDescriptor::from_le_bytes(&raw);
    assert_eq!((next.tag, next.command_index), (6, 1));
    writeln!(stdin, "stop").unwrap();
    stdin.flush().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < TIMEOUT, "server did not stop");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success());
    let _ = std::fs::remove_file(&path);
}

/// The sim's counter read live is never behind the snapshot the
/// model thread publishes in the BAR, and moves with real time while that
/// thread sleeps (a snapshot goes stale for as long as the thread is not
/// scheduled).
#[test]
fn the_in_process_counter_reads_live_while_the_model_thread_sleeps() {
    use tensorplug_model_fpga::model::host::IdlePolicy;
    let sleepy = IdlePolicy {
        spin: Duration::ZERO,
        yield_until: Duration::ZERO,
        min_sleep: Duration::from_millis(50),
        max_sleep: Duration::from_millis(50),
    };
    let options = ServeOptions {
        idle: sleepy,
        ..ServeOptions::default()
    };
    let dev = InProcessDevice::spawn(1 << 20, 1 << 16, options).unwrap();
    let mut t = dev.transport();
    let freq = u64::from(ModelConfig::default().timing.freq_hz);
    for _ in 0..20 {
        let hi = t.read_reg(Register::TIMESTAMP_HI.0).unwrap();
        let lo = t.read_reg(Register::TIMESTAMP_LO.0).unwrap();
        let snapshot = u64::from(hi) << 32 | u64::from(lo);
        let live = dev.timestamp().expect("the model thread started");
        assert!(
            live >= snapshot,
            "live {live} behind the snapshot {snapshot}"
        );
        std::thread::sleep(Duration::from_millis(2));
        let later = dev.timestamp().unwrap();
        assert!(
            later - live >= 2 * freq / 1000,
            "2 ms slept, the live counter moved {} ticks at {freq} Hz",
            later - live
        );
    }
    dev.stop().unwrap();
}
