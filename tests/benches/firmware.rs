//! The firmware under QEMU, for `cargo xtask bench` (figure files in
//! `<target>/tensorplug-bench/`):
//!
//! - `firmware_link_round_trip`: a small op-level request (`ReadClock`) to
//!   the firmware, against the same request to the same driver served by a
//!   host thread over loopback TCP (the baseline, same run);
//! - `firmware_bulk_copy_throughput`: a 4 KiB host-to-device copy under
//!   QEMU, against a raw echo of the same 4 KiB over the same QEMU chardev
//!   (the firmware built with `bench-echo`, booted in the same run): what
//!   the link protocol and the driver leave of the UART's byte rate. QEMU's
//!   CMSDK UART does not pace bytes at the baud rate (it hands a polling
//!   guest one byte per main-loop turn, whatever `BAUDDIV` says), so the
//!   line rate is no baseline;
//! - `firmware_bulk_copy_wire_efficiency`: payload bytes over the bytes the
//!   copy put on the wire, both ways: the fraction of the line rate the
//!   copy reaches on a UART-bound link;
//! - `firmware_delegate_invoke_bytes` and `_round_trips`: the LiteRT
//!   delegate on the firmware (`tests/python/tflite_delegate_mcu.py`, the
//!   converter's int8 convnet with float input and output as one stored
//!   program): the bytes the host sends per invoke against the input's
//!   bytes, and the round trips per invoke, read from a recording of the
//!   wire;
//! - `firmware_ring_push_instructions`: Cortex-M4 instructions executed per
//!   event-ring push, counted by QEMU (`-singlestep -d exec` filtered to
//!   `tensorplug_ring_push`) while the tick interrupt records events;
//! - `firmware_int8_conv_instructions_per_mac`: Cortex-M4 instructions the
//!   model's int8 convolution kernel executes per multiply-accumulate, for a
//!   `Conv2DInt8` sent over the op-level link (QEMU's exec trace filtered to
//!   the kernel's symbol, `-singlestep`: one trace line per instruction).
//!   The anchor is CMSIS-NN, whose `arm_convolve_s8` uses the M4's dual
//!   16-bit MAC (`SMLAD`).

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::prelude::*;

use object::{Object, ObjectSymbol};
use tensorplug_core::accelerator::{
    Accelerator, DType, DeviceAddr, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::link::LinkStream;
use tensorplug_core::link::server::{DriverEvents, serve_stream};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_link_host::RemoteAccelerator;
use tensorplug_model_fpga::model::{HostModel, ModelConfig};
use tensorplug_tests::qemu::{Qemu, echo_firmware_elf, firmware_elf};

#[path = "firmware/programs.rs"]
mod programs;

const ANSWER: Duration = Duration::from_secs(10);
const COPY: usize = 4096;

/// A stream that counts the bytes it moves.
struct Counting {
    inner: TcpStream,
    written: u64,
    read: u64,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl LinkStream for Counting {
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        LinkStream::set_read_timeout(&mut self.inner, timeout)
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read_ready(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

fn counting(stream: TcpStream) -> Counting {
    Counting {
        inner: stream,
        written: 0,
        read: 0,
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn figure(id: &str, what: &str, value: f64, baseline: Option<f64>, unit: &str, goal: &str) {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("tensorplug-bench");
    std::fs::create_dir_all(&dir).expect("create the bench figure directory");
    let baseline = baseline.map_or("null".to_string(), |b| b.to_string());
    let json = format!(
        "{{\"figure\": \"{what}\", \"value\": {value}, \"baseline\": {baseline}, \"unit\": \"{unit}\", \"goal\": \"{goal}\"}}\n"
    );
    std::fs::write(dir.join(format!("{id}.json")), json).expect("write the bench figure");
    eprintln!("{id}: {value:.4} {unit} (baseline {baseline})");
}

fn boot(extra: &[String]) -> Qemu {
    boot_elf(&firmware_elf(), extra)
}

fn boot_elf(elf: &Path, extra: &[String]) -> Qemu {
    let qemu = Qemu::boot_with(elf, extra).expect("QEMU boots the firmware");
    assert!(qemu.wait_for_log("tensorplug firmware", Duration::from_secs(10)));
    qemu
}

/// The `bench-echo` firmware: what it receives it sends back, raw (no
/// framing, nothing in between).
struct Echo {
    qemu: Qemu,
    uart: TcpStream,
}

impl Echo {
    fn boot() -> Self {
        let qemu = boot_elf(&echo_firmware_elf(), &[]);
        assert!(qemu.wait_for_log("bench-echo", Duration::from_secs(10)));
        let uart = qemu.uart.try_clone().expect("the UART's socket");
        uart.set_read_timeout(Some(ANSWER)).expect("read timeout");
        Self { qemu, uart }
    }

    /// Seconds for `data` to go and come back.
    fn once(&mut self, data: &[u8]) -> f64 {
        let mut back = vec![0u8; data.len()];
        let start = Instant::now();
        self.uart
            .write_all(data)
            .expect("send to the echo firmware");
        self.uart
            .read_exact(&mut back)
            .expect("the echo comes back");
        assert_eq!(back, data, "the echo firmware changed bytes");
        start.elapsed().as_secs_f64()
    }
}

/// Rounds of [`copy_against_echo`]: copies and echoes take turns, so
/// that both meet the same load on the host.
const ROUNDS: usize = 4;
/// Copies, and echoes, per round.
const PER_ROUND: usize = 5;

/// Median seconds of a 4 KiB copy to the firmware and of a raw echo of the
/// same bytes, and the bytes one copy put on the wire. The two take turns
/// in [`ROUNDS`] rounds, each QEMU stopped (SIGSTOP) while the other runs:
/// the link firmware's idle loop keeps a core busy, and measured one after
/// the other the ratio moved 1.23–1.57 between runs.
fn copy_against_echo(
    dev: &mut RemoteAccelerator<Counting>,
    firmware: &Qemu,
    addr: DeviceAddr,
    data: &[u8],
) -> (f64, f64, u64) {
    let mut echo = Echo::boot();
    let q = QueueId(0);
    dev.write_blocking(q, addr, data, ANSWER).unwrap();
    echo.once(data);
    let (mut copies, mut echoes, mut wire) = (Vec::new(), Vec::new(), 0);
    for _ in 0..ROUNDS {
        firmware.freeze(true);
        echo.qemu.freeze(false);
        // At most a second stopped: the link firmware's watchdog (3 s,
        // QEMU's clock jumps on resume) must not take it for a stall.
        let stopped = Instant::now();
        for _ in 0..PER_ROUND {
            echoes.push(echo.once(data));
            if stopped.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
        echo.qemu.freeze(true);
        firmware.freeze(false);
        for _ in 0..PER_ROUND {
            let (w, r) = (written(dev), read(dev));
            let start = Instant::now();
            dev.write_blocking(q, addr, data, ANSWER).unwrap();
            copies.push(start.elapsed().as_secs_f64());
            wire = (written(dev) - w) + (read(dev) - r);
        }
    }
    (median(copies), median(echoes), wire)
}

/// Median seconds of `ReadClock` round trips.
fn round_trips(dev: &mut RemoteAccelerator<Counting>) -> f64 {
    for _ in 0..20 {
        dev.timestamp().expect("clock read");
    }
    median(
        (0..200)
            .map(|_| {
                let start = Instant::now();
                dev.timestamp().expect("clock read");
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// The same driver (over SPI to the model) served by a host thread.
fn host_served() -> RemoteAccelerator<Counting> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.set_nodelay(true).expect("nodelay");
        let model = HostModel::on_host(1 << 20, ModelConfig::default()).expect("model");
        let transport = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
        let mut driver =
            Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default())
                .expect("bring-up");
        let _ = serve_stream(&mut stream, &mut driver, &mut DriverEvents);
    });
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    RemoteAccelerator::connect(counting(stream), ANSWER).expect("op-level link")
}

fn round_trip_and_copies() {
    let data: Vec<u8> = (0..COPY).map(|i| (i % 251) as u8 + 1).collect();
    let qemu = boot(&[]);
    let mut dev = RemoteAccelerator::connect(counting(qemu.uart.try_clone().unwrap()), ANSWER)
        .expect("op-level link to the firmware");
    let firmware = round_trips(&mut dev);
    let host = round_trips(&mut host_served());
    figure(
        "firmware_link_round_trip",
        "link round trip (ReadClock) to the firmware under QEMU, vs a host thread",
        firmware * 1e3,
        Some(host * 1e3),
        "ms",
        "informational: QEMU's emulated UART vs loopback TCP",
    );

    let addr = dev.allocate(COPY as u64, 64).unwrap();
    let (copy, echo, wire) = copy_against_echo(&mut dev, &qemu, addr, &data);
    let (throughput, echo) = (COPY as f64 / copy, COPY as f64 / echo);
    figure(
        "firmware_bulk_copy_throughput",
        "4 KiB copy to the firmware under QEMU, vs a raw echo of the same bytes over the same chardev",
        throughput,
        Some(echo),
        "B/s",
        "ratio >= 0.9",
    );
    figure(
        "firmware_bulk_copy_wire_efficiency",
        "4 KiB copy to the firmware: payload / bytes on the wire (both ways)",
        COPY as f64 / wire as f64,
        None,
        "fraction",
        "value >= 0.9",
    );

    // A batch of small commands, in round trips of this run: in one
    // `SubmitBatch` (link 2.2), one frame each within the window (2.1),
    // and stop-and-wait.
    let firmware_fills = fills_three_ways(&mut dev, addr, firmware);
    figure(
        "firmware_batch_of_fills",
        &format!(
            "{BATCH} fills + a wait to the firmware under QEMU, in round trips: one SubmitBatch \
             vs stop-and-wait (window {} without batches: {:.1})",
            firmware_fills.window, firmware_fills.windowed
        ),
        firmware_fills.batched,
        Some(firmware_fills.stop_and_wait),
        "round trips",
        "informational: QEMU's UART moves bytes at a polled rate, so a batch costs its bytes",
    );
    // The same over loopback TCP to a host thread, where a round trip is
    // latency rather than bytes.
    let mut host = host_served();
    let host_trip = round_trips(&mut host);
    let host_addr = host.allocate(4096, 64).expect("allocate");
    let tcp_fills = fills_three_ways(&mut host, host_addr, host_trip);
    figure(
        "link_batch_of_fills_tcp",
        &format!(
            "{BATCH} fills + a wait over loopback TCP to a host thread, in round trips: one \
             SubmitBatch vs stop-and-wait (window {} without batches: {:.1})",
            tcp_fills.window, tcp_fills.windowed
        ),
        tcp_fills.batched,
        Some(tcp_fills.stop_and_wait),
        "round trips",
        "ratio <= 0.5",
    );

    // A program's step: one RunProgram (2.3) against its commands batched,
    // on new sessions (the fills above left the window at 1).
    drop(dev);
    let mut dev = RemoteAccelerator::connect(counting(qemu.uart.try_clone().unwrap()), ANSWER)
        .expect("op-level link to the firmware");
    let ways = programs::three_ways(&mut dev, firmware);
    programs::report("firmware", "on the firmware under QEMU", &ways);
    let ways = programs::three_ways(&mut host_served(), host_trip);
    programs::report("link", "over loopback TCP to a host thread", &ways);
}

/// [`batch_of_fills`] three ways, in round trips of `trip` seconds.
struct Fills {
    window: usize,
    batched: f64,
    windowed: f64,
    stop_and_wait: f64,
}

fn fills_three_ways(dev: &mut RemoteAccelerator<Counting>, addr: DeviceAddr, trip: f64) -> Fills {
    assert!(dev.batching(), "the peer takes batches (2.2)");
    let window = dev.window();
    let batched = batch_of_fills(dev, addr) / trip;
    dev.set_batching(false).expect("batches off");
    let windowed = batch_of_fills(dev, addr) / trip;
    dev.limit_window(1);
    let stop_and_wait = batch_of_fills(dev, addr) / trip;
    Fills {
        window,
        batched,
        windowed,
        stop_and_wait,
    }
}

/// Small commands in one batch (`firmware_batch_of_fills`).
const BATCH: usize = 32;

/// Median seconds of [`BATCH`] 64-byte fills and a wait for the last.
fn batch_of_fills(dev: &mut RemoteAccelerator<Counting>, addr: DeviceAddr) -> f64 {
    let q = QueueId(0);
    median(
        (0..10)
            .map(|_| {
                let start = Instant::now();
                let mut last = None;
                for i in 0..BATCH {
                    last = Some(dev.fill(q, addr, 64, i as u32).expect("fill"));
                }
                dev.wait(last.expect("a fill"), ANSWER)
                    .expect("the batch completes");
                start.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn written(dev: &RemoteAccelerator<Counting>) -> u64 {
    dev.stream().written
}

fn read(dev: &RemoteAccelerator<Counting>) -> u64 {
    dev.stream().read
}

/// Address (Thumb bit cleared) and size of `name` in `elf`.
fn symbol(elf: &Path, name: &str) -> (u64, u64) {
    symbol_where(elf, name, |s| s == name)
}

/// As [`symbol`], for the one symbol whose (mangled) name `matches`.
fn symbol_where(elf: &Path, what: &str, matches: impl Fn(&str) -> bool) -> (u64, u64) {
    let bytes = std::fs::read(elf).expect("read the firmware ELF");
    let file = object::File::parse(&*bytes).expect("parse the firmware ELF");
    let sym = file
        .symbols()
        .find(|s| s.name().is_ok_and(&matches))
        .unwrap_or_else(|| panic!("no `{what}` in the firmware"));
    (sym.address() & !1, sym.size())
}

/// Instructions QEMU traced in `[start, start + size)` while `work` ran on
/// the firmware over the op-level link (`-singlestep`: one per line), the
/// trace's lines entering `start`, and what `work` returned.
fn traced<R>(
    start: u64,
    size: u64,
    what: &str,
    work: impl FnOnce(&mut RemoteAccelerator<Counting>) -> R,
) -> (usize, usize, R) {
    let log = tensorplug_tests::scratch_dir(what).join("exec.log");
    let extra = [
        "-singlestep",
        "-d",
        "exec,nochain",
        "-dfilter",
        &format!("{start:#x}+{size:#x}"),
        "-D",
        &log.to_string_lossy(),
    ]
    .map(String::from);
    let qemu = boot(&extra);
    let mut dev = RemoteAccelerator::connect(counting(qemu.uart.try_clone().unwrap()), ANSWER)
        .expect("op-level link to the firmware");
    let result = work(&mut dev);
    drop(dev);
    drop(qemu);
    let trace = std::fs::read_to_string(&log).expect("QEMU's exec log");
    let entry = format!("/{start:08x}/");
    let executed = trace.lines().filter(|l| l.starts_with("Trace")).count();
    (
        executed,
        trace.lines().filter(|l| l.contains(&entry)).count(),
        result,
    )
}

/// A `Conv2DInt8` of `[1, 8, 8, 8]` by a 3×3×8×8 filter (SAME, 36 864
/// multiply-accumulates) on the firmware: its kernel's instructions per MAC.
fn int8_conv() {
    use tensorplug_core::accelerator::Window;
    use tensorplug_core::quant::block::QuantHeader;
    use tensorplug_core::quant::{Requantize, Rounding};
    let (start, size) = symbol_where(&firmware_elf(), "kernels::int8::conv", |s| {
        s.contains("tensorplug_model_fpga7kernels4int84conv17h")
    });
    let (h, c, oc) = (8u64, 8u64, 8u64);
    let macs = h * h * oc * 9 * c;
    let (executed, _, ()) = traced(start, size, "int8-conv-trace", |dev| {
        let q = QueueId(0);
        let header = QuantHeader {
            zero_points: [-3, 0],
            output_zero_point: 2,
            min: -128,
            max: 127,
            rounding: Rounding::Double,
            channels: oc as u32,
        };
        let r = Requantize::from_real(1.0 / 4096.0).unwrap();
        let mut block: Vec<i32> = header.words().to_vec();
        block.extend((0..oc).map(|i| i as i32 * 10));
        block.extend((0..oc).map(|_| r.multiplier));
        block.extend((0..oc).map(|_| i32::from(r.shift)));
        let block_bytes: Vec<u8> = block.iter().flat_map(|w| w.to_le_bytes()).collect();
        let x: Vec<u8> = (0..h * h * c).map(|i| (i * 37 % 251) as u8).collect();
        let f: Vec<u8> = (0..9 * c * oc).map(|i| (i * 53 % 255) as u8).collect();
        let mut tensor = |bytes: &[u8], dtype: DType, dims: &[u64]| {
            let addr = dev.allocate(bytes.len() as u64, 64).unwrap();
            dev.write_blocking(q, addr, bytes, ANSWER).unwrap();
            TensorDesc::new(addr, dtype, Shape::new(dims).unwrap())
        };
        let inputs = [
            tensor(&x, DType::I8, &[1, h, h, c]),
            tensor(&f, DType::I8, &[3, 3, c, oc]),
            tensor(&block_bytes, DType::I32, &[block.len() as u64]),
        ];
        let out = tensor(&vec![0; (h * h * oc) as usize], DType::I8, &[1, h, h, oc]);
        let mut w = Window::new([3, 3]);
        w.pad = [1, 1, 1, 1];
        let op = OpDesc {
            kind: OpKind::Conv2DInt8(w),
            inputs: &inputs,
            output: out,
            op_id: 1,
        };
        let fence = dev.launch(q, &op).unwrap();
        dev.wait(fence, ANSWER).unwrap();
    });
    assert!(
        executed as u64 > macs / 4,
        "{executed} instructions traced for {macs} MACs"
    );
    figure(
        "firmware_int8_conv_instructions_per_mac",
        "Cortex-M4 instructions per int8 MAC, the model's Conv2DInt8 kernel (QEMU exec trace)",
        executed as f64 / macs as f64,
        None,
        "instructions",
        "informational: CMSIS-NN's arm_convolve_s8 needs about 1 (SMLAD, two MACs each)",
    );
}

fn ring_push() {
    let (start, size) = symbol(&firmware_elf(), "tensorplug_ring_push");
    let (executed, pushes, drained) = traced(start, size, "ring-push-trace", |dev| {
        let q = QueueId(0);
        let x = dev.allocate(64, 64).unwrap();
        let t = TensorDesc::new(x, DType::F32, Shape::new(&[16]).unwrap());
        dev.set_profiling(true).unwrap();
        let mut fence = Default::default();
        for op_id in 0..32 {
            let op = OpDesc {
                kind: OpKind::Unary(Unary::RELU),
                inputs: &[t],
                output: t,
                op_id,
            };
            fence = dev.launch(q, &op).unwrap();
        }
        dev.wait(fence, ANSWER).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let mut events = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); 128];
        dev.drain_events(&mut events).unwrap()
    });
    assert!(
        pushes > 0,
        "no push traced; {} events drained",
        drained.events
    );
    assert_eq!(pushes, drained.events, "one push per event recorded");
    figure(
        "firmware_ring_push_instructions",
        "Cortex-M4 instructions per event-ring push (QEMU exec trace)",
        executed as f64 / pushes as f64,
        None,
        "instructions",
        "value <= 20",
    );
}

fn main() {
    // `cargo xtask bench -- <filter>` (which finds the filter among
    // criterion's options): run only if the filter names this bench.
    let filter = std::env::var("TENSORPLUG_BENCH_FILTER").ok();
    if filter.is_some_and(|f| !"firmware".contains(&f) && !f.contains("firmware")) {
        return;
    }
    round_trip_and_copies();
    delegate_invoke();
    ring_push();
    int8_conv();
}

/// The LiteRT delegate's invokes on the firmware, as the HIL test runs
/// them: bytes sent and round trips between one `RunProgram` and the next.
fn delegate_invoke() {
    let python = |work: &Path| {
        let mut command = std::process::Command::new(tensorplug_tests::python());
        command
            .arg(tensorplug_tests::workspace_root().join("tests/python/tflite_delegate_mcu.py"))
            .arg(work)
            .arg(tensorplug_tests::plugin_path());
        command
    };
    let (stdout, sent) = tensorplug_tests::mcu::on_the_mcu("bench-delegate", python, |_| true);
    let input: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("input_bytes "))
        .and_then(|n| n.parse().ok())
        .expect("the script names its input's bytes");
    assert!(
        !sent.between_runs.is_empty(),
        "no invoke between two runs: {sent:?}"
    );
    let bytes = median(sent.between_runs.iter().map(|&b| b as f64).collect());
    let trips = sent
        .round_trips_between_runs
        .iter()
        .copied()
        .max()
        .unwrap_or(0);
    figure(
        "firmware_delegate_invoke_bytes",
        "LiteRT delegate invoke on the firmware: bytes sent / input bytes",
        bytes,
        Some(input),
        "bytes",
        &format!(
            "value <= {} (1.1 x the input + 512)",
            (1.1 * input + 512.0).floor()
        ),
    );
    figure(
        "firmware_delegate_invoke_round_trips",
        "LiteRT delegate invoke on the firmware: round trips",
        trips as f64,
        None,
        "round trips",
        "value <= 1",
    );
}
