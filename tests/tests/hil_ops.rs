//! Hardware in the loop under QEMU, op-level mode: the reference FPGA
//! driver runs on the emulated Cortex-M4 and drives the FPGA (its model in
//! the MCU's RAM) over SPI; the host sends `Accelerator` calls over the UART
//! (`RemoteAccelerator`), and device events come from the firmware's
//! interrupt-fed ring.
//!
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` target, which
//! `cargo xtask test` installs.

use std::net::TcpStream;
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Accelerator, DType, Error as _, ErrorKind, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_core::clock::{ClockMap, SyncPair};
use tensorplug_core::conformance::{Config, Fixture, Outcome, run_fixture};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_link_host::RemoteAccelerator;
use tensorplug_tests::mcu::{Sent, on_the_mcu};
use tensorplug_tests::qemu::{Fault, Qemu, assert_every_member_ran};

/// Budget for each answer of the firmware under emulation.
const ANSWER: Duration = Duration::from_secs(10);

fn boot() -> Qemu {
    tensorplug_tests::mcu::boot()
}

fn connect(qemu: &Qemu) -> RemoteAccelerator<TcpStream> {
    let stream = qemu.uart.try_clone().expect("clone the UART socket");
    RemoteAccelerator::connect(stream, ANSWER)
        .unwrap_or_else(|e| panic!("op-level link: {e}\nlogs:\n{}", qemu.logs().join("\n")))
}

/// The firmware as a conformance fixture: a command hangs when the
/// debugger tells the FPGA to lose its completion.
struct OnQemu<'q> {
    qemu: &'q Qemu,
    dev: RemoteAccelerator<TcpStream>,
}

impl Fixture for OnQemu<'_> {
    type Device = RemoteAccelerator<TcpStream>;
    fn device(&mut self) -> &mut Self::Device {
        &mut self.dev
    }
    fn stall_next_command(&mut self) -> bool {
        self.qemu.inject(Fault::LoseNextCompletion).is_ok()
    }
    fn clear_stall(&mut self) {
        self.qemu
            .inject(Fault::Clear)
            .expect("the debugger clears the fault");
    }
}

#[test]
fn the_driver_on_the_mcu_passes_the_conformance_suite() {
    let qemu = boot();
    let dev = connect(&qemu);
    let info = dev.info();
    assert!(info.name.contains("tensorplug"), "{info:?}");
    let config = Config {
        large_copy: 4 << 10,
        // 67 elements, not 1 000: past 64, so unrolled loops end on a
        // remainder, at a fifteenth of the UART's bytes.
        long_vector: 67,
        ..Config::default()
    };
    let report = run_fixture(&mut OnQemu { qemu: &qemu, dev }, &config);
    println!("{report}");
    assert!(
        report.failures().next().is_none(),
        "{report}\nfirmware logs:\n{}",
        qemu.logs().join("\n")
    );
    // The timeout case ran: a command hung through the debugger.
    let timeout = report
        .cases
        .iter()
        .find(|c| c.name == "timeout_then_reset_recovers")
        .map(|c| &c.outcome);
    assert!(
        matches!(timeout, Some(Outcome::Passed(_))),
        "{timeout:?}\n{report}"
    );
    assert!(
        qemu.wait_for_log(
            "the FPGA will lose the next completion",
            Duration::from_secs(1)
        ),
        "the fault never reached the firmware; logs:\n{}",
        qemu.logs().join("\n")
    );
    // The firmware's driver lowered every int8 op, its model ran it.
    assert_every_member_ran(&report, "op_int8");
    assert!(
        qemu.wait_for_log("driver up: the FPGA over SPI", Duration::from_secs(1)),
        "the firmware's own driver did not run; logs:\n{}",
        qemu.logs().join("\n")
    );
}

fn host_ns(origin: Instant) -> u64 {
    origin.elapsed().as_nanos() as u64
}

fn sync_pair(dev: &mut RemoteAccelerator<TcpStream>, origin: Instant) -> SyncPair {
    let before = host_ns(origin);
    let ticks = dev.timestamp().expect("clock read");
    SyncPair::new(ticks, before, host_ns(origin))
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn device_events_come_from_the_firmware_interrupt_ring_on_the_host_clock() {
    let qemu = boot();
    let mut dev = connect(&qemu);
    let origin = Instant::now();
    let hz = dev.info().clock_hz;
    let q = QueueId(0);
    let x = dev.allocate(64, 64).unwrap();
    let y = dev.allocate(64, 64).unwrap();
    dev.write_blocking(q, x, &f32s(&[-1.0; 16]), ANSWER)
        .unwrap();
    // Sync pairs: their round trip bounds the skew of the mapping.
    let pairs: Vec<SyncPair> = (0..10).map(|_| sync_pair(&mut dev, origin)).collect();
    let start = pairs[pairs.len() - 1];
    dev.set_profiling(true).unwrap();
    let t = TensorDesc::new(x, DType::F32, Shape::new(&[16]).unwrap());
    let out = TensorDesc::new(y, DType::F32, Shape::new(&[16]).unwrap());
    let mut fence = Default::default();
    for op_id in 100..108 {
        let op = OpDesc {
            kind: OpKind::Unary(Unary::RELU),
            inputs: &[t],
            output: out,
            op_id,
        };
        fence = dev.launch(q, &op).unwrap();
    }
    dev.wait(fence, ANSWER).unwrap();
    // The tick interrupt drains the FPGA's ring every millisecond.
    std::thread::sleep(Duration::from_millis(50));
    let stop = sync_pair(&mut dev, origin);
    let mut events = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); 64];
    let drained = dev.drain_events(&mut events).unwrap();
    let events = &events[..drained.events];
    assert_eq!(drained.dropped, 0);
    let map = ClockMap::from_pairs(start, stop, hz).unwrap();
    for op_id in 100..108 {
        let of = |kind: EventKind| {
            events
                .iter()
                .find(|e| e.op_id == op_id && e.kind == kind as u8)
                .unwrap_or_else(|| panic!("no {kind:?} of op {op_id} in {events:?}"))
                .timestamp
        };
        let (begin, end) = (of(EventKind::OpBegin), of(EventKind::OpEnd));
        assert!(start.device_ticks <= begin && begin <= end && end <= stop.device_ticks);
        let (b, e) = (map.to_host_ns(begin), map.to_host_ns(end));
        assert!(
            start.host_ns_before <= b && e <= stop.host_ns_after,
            "{b}..{e}"
        );
    }
    let rtt: Vec<u64> = pairs
        .iter()
        .map(|p| p.host_ns_after - p.host_ns_before)
        .collect();
    let (min, max) = (rtt.iter().min().unwrap(), rtt.iter().max().unwrap());
    let rate = map.ps_per_tick() as f64 / (1e12 / hz as f64);
    println!(
        "sync over the link: round trip {:.2}..{:.2} ms (skew bound = half of it), \
         measured rate {:.4} of nominal",
        *min as f64 / 1e6,
        *max as f64 / 1e6,
        rate
    );
}

#[test]
fn a_firmware_that_stops_answering_is_a_clear_timeout_in_op_level_mode() {
    let qemu = boot();
    let stream = qemu.uart.try_clone().unwrap();
    let mut dev = RemoteAccelerator::connect(stream, Duration::from_secs(2)).unwrap();
    qemu.freeze(true);
    let start = Instant::now();
    let error = dev.allocate(64, 64).unwrap_err();
    let took = start.elapsed();
    qemu.freeze(false);
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(error.to_string().contains("2000 ms"), "{error}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// TensorFlow over QEMU with the driver on the MCU: the FPGA plugin's
/// `mcu-tcp:` device runs a Keras MLP's `predict` under the profiler,
/// equal to the CPU; the profile's device ops come from the firmware's
/// interrupt-fed event ring.
#[test]
fn tensorflow_predicts_with_the_driver_on_the_mcu() {
    let qemu = boot();
    let stdout = tensorplug_tests::qemu::tf_mlp_scenario(&qemu, "mcu-tcp:");
    assert!(
        qemu.wait_for_log("driver up: the FPGA over SPI", Duration::from_secs(1)),
        "TF did not use the firmware's driver; logs:\n{}",
        qemu.logs().join("\n")
    );
    println!("{stdout}");
}

#[test]
fn a_new_host_session_starts_from_a_fresh_device() {
    let qemu = boot();
    let mut first = connect(&qemu);
    first.allocate(1 << 20, 64).unwrap();
    assert!(first.memory_usage().used >= 1 << 20);
    drop(first);
    let mut second = connect(&qemu);
    second.allocate(64, 64).unwrap();
    assert!(
        second.memory_usage().used < 1 << 20,
        "the first session's allocation survived: {:?}",
        second.memory_usage()
    );
}

/// The op-level link carries every op: a Keras convnet (Conv2D with bias and
/// ReLU, DepthwiseConv2D, MaxPooling2D, AveragePooling2D, Permute) runs
/// behind `mcu-tcp:` with every compute node on the FPGA, equal to the CPU.
#[test]
fn a_keras_convnet_runs_with_the_driver_on_the_mcu() {
    let qemu = boot();
    let stdout = tensorplug_tests::qemu::tf_scenario(
        &qemu,
        "mcu-tcp:",
        "tf_qemu_convnet.py",
        &[],
        &["convnet on the firmware's FPGA"],
    );
    println!("{stdout}");
}

/// Device programs on the MCU (link 2.3): the firmware stores a program,
/// validates it, and runs it with one request; the result equals the same
/// ops launched one by one; a program over its 8 KiB store is refused by
/// name, and the link goes on serving.
#[test]
fn the_firmware_stores_a_program_and_runs_it_like_its_ops_one_by_one() {
    use tensorplug_core::accelerator::{DeviceAddr, VendorOps};
    use tensorplug_core::program::{BufferKind, ProgramBuilder};
    let qemu = boot();
    let mut dev = connect(&qemu);
    assert!(dev.runs_programs(), "the firmware speaks link 2.3");
    let q = QueueId(0);
    let s = |d: &[u64]| Shape::new(d).unwrap();
    let mm = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    // y = softmax(relu(x·w + b)).
    let steps = [
        (mm, &[0usize, 1][..]),
        (OpKind::BiasAdd, &[4, 2][..]),
        (OpKind::Unary(Unary::RELU), &[5][..]),
        (OpKind::Softmax, &[6][..]),
    ];
    let shapes = [
        s(&[2, 8]),
        s(&[8, 4]),
        s(&[4]),
        s(&[2, 4]),
        s(&[2, 4]),
        s(&[2, 4]),
        s(&[2, 4]),
    ];
    let mut b = ProgramBuilder::new();
    let kinds = [
        BufferKind::Input,
        BufferKind::Constant,
        BufferKind::Constant,
        BufferKind::Output,
    ];
    let ids: Vec<_> = (0..7)
        .map(|i| {
            b.buffer(
                *kinds.get(i).unwrap_or(&BufferKind::Scratch),
                DType::F32,
                shapes[i],
            )
            .unwrap()
        })
        .collect();
    let outputs = [4, 5, 6, 3];
    for (op_id, ((kind, inputs), out)) in steps.iter().zip(outputs).enumerate() {
        let ins: Vec<_> = inputs.iter().map(|&i| ids[i]).collect();
        b.launch(*kind, op_id as u16 + 1, &ins, ids[out]).unwrap();
    }
    let program = b.finish(&VendorOps::NONE).unwrap().bytes;

    // Buffers for every tensor (the op-by-op run uses all seven).
    let addrs: Vec<DeviceAddr> = (0..7).map(|_| dev.allocate(64, 64).unwrap()).collect();
    let x: Vec<f32> = (0..16).map(|i| (i as f32 - 7.5) / 4.0).collect();
    let w: Vec<f32> = (0..32)
        .map(|i| ((i * 13 % 11) as f32 - 5.0) / 6.0)
        .collect();
    for (i, data) in [(0, &x[..]), (1, &w[..]), (2, &[0.25, -0.5, 0.0, 1.0][..])] {
        dev.write_blocking(q, addrs[i], &f32s(data), ANSWER)
            .unwrap();
    }
    let read_y = |dev: &mut RemoteAccelerator<TcpStream>| {
        let mut out = [0u8; 32];
        dev.read_blocking(q, &mut out, addrs[3], ANSWER).unwrap();
        out
    };
    let mut fence = Default::default();
    for (op_id, ((kind, inputs), out)) in steps.iter().zip(outputs).enumerate() {
        let ins: Vec<_> = inputs
            .iter()
            .map(|&i| TensorDesc::new(addrs[i], DType::F32, shapes[i]))
            .collect();
        let op = OpDesc {
            kind: *kind,
            inputs: &ins,
            output: TensorDesc::new(addrs[out], DType::F32, shapes[out]),
            op_id: op_id as u16 + 1,
        };
        fence = dev.launch(q, &op).unwrap();
    }
    dev.wait(fence, ANSWER).unwrap();
    let want = read_y(&mut dev);
    dev.write_blocking(q, addrs[3], &[0; 32], ANSWER).unwrap();

    let name = dev
        .load_program(&program)
        .unwrap()
        .expect("the peer keeps programs");
    let arena = dev.allocate(1024, 64).unwrap();
    let fence = dev
        .run_program(q, name, &addrs[..4], arena)
        .expect("the peer keeps programs")
        .unwrap();
    dev.wait(fence, ANSWER).unwrap();
    assert_eq!(read_y(&mut dev), want, "the program's y, byte for byte");

    // 200 launches (about 10 KiB) do not fit the firmware's 8 KiB store.
    let mut big = ProgramBuilder::new();
    let (i, o) = (
        big.buffer(BufferKind::Input, DType::F32, s(&[4])).unwrap(),
        big.buffer(BufferKind::Output, DType::F32, s(&[4])).unwrap(),
    );
    let t = [
        big.buffer(BufferKind::Scratch, DType::F32, s(&[4]))
            .unwrap(),
        big.buffer(BufferKind::Scratch, DType::F32, s(&[4]))
            .unwrap(),
    ];
    let relu = OpKind::Unary(Unary::RELU);
    big.launch(relu, 0, &[i], t[0]).unwrap();
    for k in 1..199 {
        big.launch(relu, 0, &[t[(k + 1) % 2]], t[k % 2]).unwrap();
    }
    big.launch(relu, 0, &[t[0]], o).unwrap();
    let big = big.finish(&VendorOps::NONE).unwrap().bytes;
    assert!(big.len() > 8 * 1024);
    let error = dev.load_program(&big).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::OutOfMemory, "{error}");
    assert!(error.to_string().contains("Bytes limit"), "{error}");

    let fence = dev
        .run_program(q, name, &addrs[..4], arena)
        .expect("the peer keeps programs")
        .unwrap();
    dev.wait(fence, ANSWER).unwrap();
    assert_eq!(read_y(&mut dev), want, "still served");
}

/// Runs `tests/python/tf_programs.py <mode>` on the firmware through a
/// recording wire; returns its stdout and what the host sent, counting
/// the launches of ops `counts`.
fn programs_on_the_mcu(mode: &[&str], counts: impl Fn(&OpKind) -> bool) -> (String, Sent) {
    let name = format!("hil-programs-{}", mode.join("-"));
    let python = |work: &std::path::Path| {
        let mut command = std::process::Command::new(tensorplug_tests::python());
        command
            .arg(tensorplug_tests::workspace_root().join("tests/python/tf_programs.py"))
            .arg(work)
            .args(mode)
            .env(
                "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
                tensorplug_tests::plugin_path(),
            );
        command
    };
    on_the_mcu(&name, python, counts)
}

/// The LiteRT delegate on the MCU: the converter's int8 convnet with float
/// input and output (`QUANTIZE` … `DEQUANTIZE`, 5 nodes) is one partition,
/// compiled into one program the firmware stores once; each invoke is its
/// input in, one `RunProgram` and the output's read, in one round trip,
/// and none of its ops crosses the link alone; bit for bit equal to
/// TFLite's reference kernels; with `profile_file` the firmware's events
/// are named by TFLite node (`tests/python/tflite_delegate_mcu.py`). A
/// Keras 3 convnet without a batch size (its `Flatten` a run-time shape,
/// evaluated at prepare) is one partition too, in one round trip. A float
/// model split by `SIN` keeps its 1-node partition on the CPU by the
/// measured link's cost.
#[test]
fn the_litert_delegate_on_the_mcu_invokes_one_stored_program_in_one_round_trip() {
    let python = |flag: Option<&'static str>| {
        move |work: &std::path::Path| {
            let mut command = std::process::Command::new(tensorplug_tests::python());
            command
                .arg(tensorplug_tests::workspace_root().join("tests/python/tflite_delegate_mcu.py"))
                .arg(work)
                .arg(tensorplug_tests::plugin_path())
                .args(flag);
            command
        }
    };
    let any = |_: &OpKind| true;
    let (stdout, sent) = on_the_mcu("hil-delegate-dynamic", python(Some("--dynamic")), any);
    assert!(stdout.contains("invokes 4 bit-exact"), "{stdout}");
    // CONV_2D, RESHAPE (a copy) and FULLY_CONNECTED; SHAPE,
    // STRIDED_SLICE and PACK were folded at prepare.
    assert!(stdout.contains("program stored 3"), "{stdout}");
    assert_eq!((sent.loads, sent.runs, sent.launches), (1, 4, 0));
    assert!(
        sent.round_trips_between_runs.iter().all(|&t| t <= 1),
        "round trips per invoke: {:?}",
        sent.round_trips_between_runs
    );
    // With `profile_file`, the firmware's events of the stored program's
    // launches come back named by their TFLite nodes.
    let (stdout, _) = on_the_mcu("hil-delegate-profile", python(Some("--profile")), any);
    assert!(
        stdout.contains("trace: every launch named by its node"),
        "{stdout}"
    );
    let (stdout, sent) = on_the_mcu("hil-delegate", python(None), any);
    assert!(stdout.contains("invokes 4 bit-exact"), "{stdout}");
    assert!(stdout.contains("program stored 5"), "{stdout}");
    assert_eq!(sent.loads, 1, "the program is stored once");
    assert_eq!(sent.runs, 4, "one RunProgram per invoke");
    assert_eq!(sent.launches, 0, "no op crossed the link alone");
    assert!(
        sent.round_trips_between_runs.iter().all(|&t| t <= 1),
        "round trips per invoke: {:?}",
        sent.round_trips_between_runs
    );
    println!(
        "bytes between runs: {:?}; round trips: {:?}",
        sent.between_runs, sent.round_trips_between_runs
    );
    // The default cost model measures the link to the firmware and keeps
    // a model's 1-node partition on the CPU: 1 program, not 2.
    let (stdout, sent) = on_the_mcu("hil-delegate-split", python(Some("--split")), any);
    assert!(stdout.contains("split: 1 partition"), "{stdout}");
    assert_eq!(
        sent.loads, 1,
        "one program: the small partition stayed on the CPU"
    );
    println!(
        "{}",
        stdout
            .lines()
            .find(|l| l.starts_with("split:"))
            .unwrap_or("")
    );
}

/// Device programs in TF on the MCU (`TENSORPLUG_GRAPH_PROGRAMS=1`,
/// `mcu-tcp:`): a Keras MLP's dense stack becomes one program node; the
/// firmware stores its program once (`LoadProgram`) and each `predict`
/// step runs it with one `RunProgram`; the result equals the CPU's and the
/// profile names every TF node of it (`tests/python/tf_programs.py`,
/// through a recording wire). Only the profiled `predict` launches the
/// program's ops one by one (its 2 steps × 5 nodes); the model's
/// initializers launch ops of their own.
#[test]
fn a_keras_mlp_on_the_mcu_runs_each_step_as_one_stored_program() {
    let dense = |k: &OpKind| {
        matches!(
            k,
            OpKind::FusedMatMul { .. } | OpKind::Softmax | OpKind::Unary(Unary::TANH)
        )
    };
    let (_, sent) = programs_on_the_mcu(&[], dense);
    assert_eq!(sent.loads, 1, "the program is stored once");
    // Two unprofiled predicts of two steps each.
    assert_eq!(sent.runs, 4, "one RunProgram per step");
    assert_eq!(
        sent.launches, 10,
        "only the profiled predict's 2 steps × 5 nodes"
    );
}

/// A QAT convnet (tfmot on tf_keras, `int8_qat.py`'s) on the MCU: the
/// graph pass's 8 int8 ops and its quantized `Flatten` are one program,
/// stored once and run with one `RunProgram` per call; an int8 op crosses
/// the link alone only in the op-by-op call made after it (programs off),
/// which gives the same bytes (`tests/python/tf_program_qat.py`).
#[test]
fn a_qat_convnet_on_the_mcu_runs_its_int8_ops_as_one_stored_program() {
    let python = |work: &std::path::Path| {
        let mut command = std::process::Command::new(tensorplug_tests::python());
        command
            .arg(tensorplug_tests::workspace_root().join("tests/python/tf_program_qat.py"))
            .arg(work)
            .env(
                "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
                tensorplug_tests::plugin_path(),
            );
        command
    };
    let (stdout, sent) = on_the_mcu("hil-program-qat", python, |k| k.is_int8());
    assert!(
        stdout.contains("qat: the largest program 9 nodes; equal to op by op in 3 calls"),
        "{stdout}"
    );
    assert_eq!(sent.loads, 1, "the program is stored once");
    assert_eq!(sent.runs, 3, "one RunProgram per call");
    assert_eq!(sent.launches, 8, "only the op-by-op call's 8 int8 ops");
}

/// A Keras LSTM's `predict` on the MCU: each step of its loop (both
/// products, `split` into the gates, the cell) is one stored program, run
/// with one `RunProgram` per step; a gate's activation crosses the link
/// alone only in the op-by-op call made after it (programs off), which
/// gives the same bytes (`tests/python/tf_program_lstm.py`).
#[test]
fn a_keras_lstm_on_the_mcu_runs_each_step_as_one_stored_program() {
    let python = |work: &std::path::Path| {
        let mut command = std::process::Command::new(tensorplug_tests::python());
        command
            .arg(tensorplug_tests::workspace_root().join("tests/python/tf_program_lstm.py"))
            .arg(work)
            .env(
                "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
                tensorplug_tests::plugin_path(),
            );
        command
    };
    let gates =
        |k: &OpKind| matches!(k, OpKind::Unary(u) if [Unary::SIGMOID, Unary::TANH].contains(u));
    let (stdout, sent) = on_the_mcu("hil-program-lstm", python, gates);
    assert!(
        stdout.contains("lstm: the largest program 14 nodes; equal to op by op in 3 calls"),
        "{stdout}"
    );
    assert_eq!(sent.loads, 1, "the step's program is stored once");
    assert_eq!(sent.runs, 3 * 5, "one RunProgram per step of each call");
    assert_eq!(
        sent.launches,
        5 * 5,
        "only the op-by-op call's 5 steps × 3 sigmoids and 2 tanhs"
    );
}

/// Keras' MultiHeadAttention with a residual and a LayerNormalization on
/// the MCU: its products (four projections and two `Einsum`s, each a
/// `BatchMatMul` record) run inside one stored program, one `RunProgram`
/// per call; only the profiled call launches them one by one, and the
/// result equals the CPU. The firmware runs the fused `LayerNorm`
/// command, bit-equal to the same block compiled without fusion (the
/// script's second program: stored once, run once, profiled once).
#[test]
fn an_attention_block_on_the_mcu_runs_as_one_stored_program() {
    let records = |k: &OpKind| matches!(k, OpKind::Record(r) if r.decl.name == "BatchMatMul");
    let (stdout, sent) = programs_on_the_mcu(&["attention"], records);
    assert!(
        stdout.contains("attention: equal to the CPU in 3 calls; 1 program(s) compiled"),
        "{stdout}"
    );
    assert!(
        stdout.contains("layer norm: one LayerNorm command, bit-equal to the unfused program"),
        "{stdout}"
    );
    assert_eq!(
        sent.loads, 2,
        "each program (fused, unfused) is stored once"
    );
    assert_eq!(
        sent.runs, 4,
        "one RunProgram per call: 3 of the fused, 1 of the unfused"
    );
    assert_eq!(
        sent.launches, 12,
        "only the profiled calls' 4 projections and 2 Einsums, one call of each program"
    );
}

/// A Keras convnet on the MCU as one stored program: its convolution
/// block (`_FusedConv2D`, `MaxPool`, `_FusedConv2D`), Flatten's `Reshape`
/// and its dense head (`_FusedMatMul`, `Softmax`), run with one
/// `RunProgram` per step; none of their ops crosses the link alone, and
/// `predict` equals the CPU. The same model built under a CPU scope (its
/// variables on the CPU) runs as a program too, its weights kept on the
/// device: a step sends its input, its start and its fetch, within the
/// issue's 1.1× the input + 512 B and 2 round trips, whichever model it
/// is.
#[test]
fn a_keras_convnet_on_the_mcu_runs_as_one_stored_program_and_its_cpu_weights_cross_once() {
    let ops = |k: &OpKind| {
        matches!(
            k,
            OpKind::FusedConv2D(..)
                | OpKind::MaxPool(_)
                | OpKind::FusedMatMul { .. }
                | OpKind::Softmax
        )
    };
    let (stdout, sent) = programs_on_the_mcu(&["convnet"], ops);
    assert!(stdout.contains("convnet: equal to the CPU"), "{stdout}");
    assert!(
        stdout.contains("convnet with CPU variables: equal to the CPU"),
        "{stdout}"
    );
    // The two models' programs differ (the CPU model's weights are bound
    // last): each is stored once.
    assert_eq!(sent.loads, 2, "one program per model, each stored once");
    // Two models, two predicts each of two steps.
    assert_eq!(sent.runs, 8, "one RunProgram per step");
    assert_eq!(
        sent.launches, 0,
        "no op of a program crossed the link alone"
    );
    steps_within_the_bound(&stdout, &sent, 4);
}

/// A one-layer model (`Dense(32)`, one `_FusedMatMul`) built under a CPU
/// scope: its lone node reads the CPU's variables, so it runs as a
/// one-node stored program that keeps them; a step sends its input, its
/// start and its fetch, within 1.1× the input + 512 B and 2 round trips
/// (op by op, its 8.3 kB of weights crossed every step).
#[test]
fn a_one_layer_model_with_cpu_variables_on_the_mcu_sends_its_weights_once() {
    let ops = |k: &OpKind| matches!(k, OpKind::FusedMatMul { .. });
    let (stdout, sent) = programs_on_the_mcu(&["lone"], ops);
    assert!(
        stdout.contains("one layer with CPU variables: a one-node program, equal to the CPU"),
        "{stdout}"
    );
    assert_eq!(sent.loads, 1, "one program, stored once");
    assert_eq!(sent.runs, 4, "one RunProgram per step: two predicts of two");
    assert_eq!(sent.launches, 0, "the MatMul never crossed the link alone");
    steps_within_the_bound(&stdout, &sent, 2);
}

/// Checks each predict's second step (between its two `RunProgram`s; the
/// first also carries Keras's copy of the whole array and, once, CPU
/// weights) against the bound, 1.1× the step's input + 512 B and 2
/// round trips, against the `bytes:` line the script printed; `predicts`
/// of two steps each.
fn steps_within_the_bound(stdout: &str, sent: &Sent, predicts: usize) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("bytes: "))
        .expect("a bytes line");
    let figure = |name: &str| -> usize {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    let step_input = figure("inputs") / figure("steps");
    let steps: Vec<usize> = sent.between_runs.iter().copied().step_by(2).collect();
    assert_eq!(steps.len(), predicts, "{:?}", sent.between_runs);
    let bound = step_input + step_input / 10 + 512;
    // Weights that crossed every step would break the bound.
    assert!(
        step_input + figure("weights") > bound,
        "the weights ({line}) are within the bound's margin: the check would not see them cross"
    );
    for (k, &bytes) in steps.iter().enumerate() {
        assert!(
            bytes <= bound,
            "step {k}: {bytes} bytes from the host, more than {bound} (input {step_input}): {:?}",
            sent.between_runs
        );
    }
    let turns: Vec<usize> = sent
        .round_trips_between_runs
        .iter()
        .copied()
        .step_by(2)
        .collect();
    // The fetch of the step before (TF waits for its bytes), then the
    // input's upload and the program's start in one stream: the program
    // node uploads its host data itself, without waiting.
    assert!(
        turns.iter().all(|&t| t <= 2),
        "round trips per step: {turns:?}"
    );
    println!(
        "bytes per step: {steps:?} for a {step_input}-byte input; {} bytes in all; round \
         trips per step: {turns:?}",
        sent.bytes
    );
}

/// A program larger than the firmware's 8 KiB store (a stack of 60 Dense
/// layers) is refused when it is loaded; the program node then runs its
/// commands one by one, says so once on stderr and in the report, and
/// `predict` still equals the CPU; with `TENSORPLUG_FALLBACK=error` the
/// step fails instead, naming the device's refusal.
#[test]
fn a_program_the_firmware_cannot_store_runs_its_commands_one_by_one() {
    let qemu = boot();
    let port = qemu.serve_uart().expect("serve the UART");
    let work = tensorplug_tests::scratch_dir("hil-programs-deep");
    let out = std::process::Command::new(tensorplug_tests::python())
        .arg(tensorplug_tests::workspace_root().join("tests/python/tf_programs.py"))
        .arg(&work)
        .arg("deep")
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            tensorplug_tests::plugin_path(),
        )
        .env("TENSORPLUG_DEVICE", format!("mcu-tcp:127.0.0.1:{port}"))
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tf_programs.py deep failed:\n{stdout}\n{}",
        &stderr[stderr.len().saturating_sub(4000)..]
    );
    assert!(stdout.contains("deep: equal to the CPU"), "{stdout}");
    assert!(
        stdout.contains("deep, TENSORPLUG_FALLBACK=error: "),
        "{stdout}"
    );
    let said = stderr.matches("the device did not store it").count();
    assert_eq!(said, 1, "said once:\n{stderr}");
    assert!(stderr.contains("Bytes limit"), "{stderr}");
    // And in the report, beside the pass's decision.
    let report = std::fs::read_to_string(work.join("report.txt")).expect("the report");
    assert_eq!(
        report.matches("the device did not store it").count(),
        1,
        "{report}"
    );
}
