//! The driver through the in-process MMIO transport to the model thread
//! (the `sim` device):
//!
//! - group `driver_mmio`, id `nop_round_trip`: one `NOP` submitted, doorbell,
//!   completion reaped (goal: median ≤ 500 ns);
//! - group `driver_mmio_copy`, ids `h2d2h_64MiB` (64 MiB host → device, then
//!   device → host, through the memory window: the default copy path),
//!   `h2d2h_64MiB_dma` (the same through `COPY_H2D`/`COPY_D2H` and a 4 MiB
//!   DMA window, `DriverConfig::dma_copies`) and `memcpy_64MiB` (a plain
//!   copy of the same bytes, the baseline); criterion throughput is the
//!   bytes each moves (128 MiB, 128 MiB, 64 MiB);
//! - group `driver_mmio_mlp_step`, ids `profiling_off`/`profiling_on`: one
//!   MNIST MLP `predict` step of device work with event recording off / on.
//!
//! Figure files in `<target>/tensorplug-bench/`:
//! `driver-nop-round-trip.json` (median ns, goal ≤ 500),
//! `driver-copy-vs-memcpy.json` (bandwidth of the round trip, counting both
//! directions, over memcpy bandwidth; goal ratio ≥ 0.5) and
//! `driver-profiling-mlp-step.json` (MLP step with events on / off, paired;
//! the device side of the profiler-overhead goal, ratio ≤ 1.02).

use std::hint::black_box;
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::prelude::*;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tensorplug_abi::device::{CommandDescriptor, CommandFlags, Opcode};
use tensorplug_core::accelerator::{Accelerator, QueueId};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_model_fpga::model::host::{InProcessDevice, ServeOptions};

#[path = "common/figure.rs"]
mod figure;
use figure::write_figure;

const COPY: usize = 64 << 20;
const TIMEOUT: Duration = Duration::from_secs(10);

fn device(
    memory: usize,
    dma_copies: bool,
) -> (
    InProcessDevice,
    Driver<impl tensorplug_device_fpga::transport::Transport, StdClock>,
) {
    let model = InProcessDevice::spawn(memory, 4 << 20, ServeOptions::default()).expect("model");
    let config = DriverConfig {
        dma_copies,
        ..DriverConfig::default()
    };
    let driver = Driver::new(model.transport(), StdClock::default(), config).expect("bring-up");
    (model, driver)
}

fn nop() -> CommandDescriptor {
    let mut nop = CommandDescriptor::new(Opcode::NOP, 0, 0);
    nop.flags = CommandFlags::NO_EVENTS;
    nop
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn round_trip(c: &mut Criterion) {
    let (_model, mut dev) = device(1 << 20, false);
    let mut once = || {
        let fence = dev.submit_raw(&nop()).unwrap();
        dev.wait(fence, TIMEOUT).unwrap();
    };
    let mut group = c.benchmark_group("driver_mmio");
    group.bench_function("nop_round_trip", |b| b.iter(&mut once));
    group.finish();

    // The figure: median of single round trips, measured back to back.
    for _ in 0..1000 {
        once();
    }
    let samples = (0..20_000)
        .map(|_| {
            let start = Instant::now();
            once();
            start.elapsed().as_nanos() as f64
        })
        .collect();
    write_figure(
        "driver-nop-round-trip",
        "driver NOP round trip, in-process MMIO (median)",
        median(samples),
        None,
        "ns",
        "value <= 500",
    );
}

fn copy(c: &mut Criterion) {
    let src: Vec<u8> = (0..COPY).map(|i| (i * 13) as u8).collect();
    let mut back = vec![0u8; COPY];
    let q = QueueId(0);
    let mut group = c.benchmark_group("driver_mmio_copy");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    // The DMA path (4 MiB window, staged chunk by chunk), for comparison.
    {
        let (_model, mut dev) = device(COPY + (4 << 20), true);
        let buf = dev.allocate(COPY as u64, 4096).unwrap();
        let mut round_trip = |back: &mut [u8]| {
            dev.write_blocking(q, buf, black_box(&src), TIMEOUT)
                .unwrap();
            dev.read_blocking(q, back, buf, TIMEOUT).unwrap();
        };
        round_trip(&mut back);
        assert!(back == src, "DMA round trip corrupted data");
        group.throughput(Throughput::Bytes(2 * COPY as u64));
        group.bench_function("h2d2h_64MiB_dma", |b| b.iter(|| round_trip(&mut back)));
    }

    let (_model, mut dev) = device(COPY + (4 << 20), false);
    let buf = dev.allocate(COPY as u64, 4096).unwrap();
    let mut round_trip = |back: &mut [u8]| {
        dev.write_blocking(q, buf, black_box(&src), TIMEOUT)
            .unwrap();
        dev.read_blocking(q, back, buf, TIMEOUT).unwrap();
    };
    round_trip(&mut back);
    assert!(back == src, "round trip corrupted data");
    group.throughput(Throughput::Bytes(2 * COPY as u64));
    group.bench_function("h2d2h_64MiB", |b| b.iter(|| round_trip(&mut back)));
    group.throughput(Throughput::Bytes(COPY as u64));
    group.bench_function("memcpy_64MiB", |b| {
        b.iter(|| back.copy_from_slice(black_box(&src)))
    });
    group.finish();

    // The figure: medians of 9 alternating runs of each, in bytes/s.
    let (mut trips, mut copies) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        let start = Instant::now();
        round_trip(&mut back);
        trips.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        back.copy_from_slice(black_box(&src));
        copies.push(start.elapsed().as_secs_f64());
    }
    let moved = 2.0 * COPY as f64 / median(trips);
    let memcpy = COPY as f64 / median(copies);
    write_figure(
        "driver-copy-vs-memcpy",
        "driver copy h2d+d2h 64 MiB, in-process MMIO, bytes moved/s (vs memcpy)",
        moved,
        Some(memcpy),
        "B/s",
        "ratio >= 0.5",
    );
}

/// The device side of profiling: the MNIST MLP's device work for one
/// `predict` step (input upload, three fused GEMMs, softmax, result
/// download, event drain) with the device's event recording on vs off.
/// Figure `driver-profiling-mlp-step`: median of 400 paired on/off ratios.
fn mlp_step_profiling(c: &mut Criterion) {
    use tensorplug_core::accelerator::{DType, OpDesc, OpKind, Shape, TensorDesc};
    use tensorplug_core::event::Event;
    let (_model, mut dev) = device(16 << 20, false);
    let q = QueueId(0);
    let f32s = |dev: &mut Driver<_, _>, dims: &[u64]| {
        let n: u64 = dims.iter().product();
        let addr = dev.allocate(n * 4, 256).unwrap();
        TensorDesc::new(addr, DType::F32, Shape::new(dims).unwrap())
    };
    let widths = [784u64, 512, 512, 10];
    let x = f32s(&mut dev, &[128, 784]);
    let mut layers = Vec::new();
    let mut input = x;
    for pair in widths.windows(2) {
        let w = f32s(&mut dev, &[pair[0], pair[1]]);
        let b = f32s(&mut dev, &[pair[1]]);
        let out = f32s(&mut dev, &[128, pair[1]]);
        layers.push(([input, w, b], out));
        input = out;
    }
    let probs = f32s(&mut dev, &[128, 10]);
    let host_x = vec![0.5f32; 128 * 784];
    let mut host_y = vec![0f32; 128 * 10];
    let mut events = [Event::default(); 256];
    let mut step = |dev: &mut Driver<_, _>, profiling: bool| {
        dev.set_profiling(profiling).unwrap();
        // SAFETY: host buffers outlive the blocking copies.
        unsafe {
            let f = dev
                .copy_to_device(q, x.addr, host_x.as_ptr().cast(), host_x.len() * 4)
                .unwrap();
            dev.wait(f, TIMEOUT).unwrap();
        }
        let last = layers.len() - 1;
        for (i, (inputs, out)) in layers.iter().enumerate() {
            let op = OpDesc {
                kind: OpKind::FusedMatMul {
                    transpose_a: false,
                    transpose_b: false,
                    relu: i != last,
                },
                inputs,
                output: *out,
                op_id: i as u16 + 1,
            };
            dev.launch(q, &op).unwrap();
        }
        let op = OpDesc {
            kind: OpKind::Softmax,
            inputs: &[layers[last].1],
            output: probs,
            op_id: 9,
        };
        dev.launch(q, &op).unwrap();
        // SAFETY: as above.
        unsafe {
            let f = dev
                .copy_from_device(q, host_y.as_mut_ptr().cast(), probs.addr, host_y.len() * 4)
                .unwrap();
            dev.wait(f, TIMEOUT).unwrap();
        }
        while dev.drain_events(&mut events).unwrap().events > 0 {}
    };
    let mut group = c.benchmark_group("driver_mmio_mlp_step");
    group.bench_function("profiling_off", |b| b.iter(|| step(&mut dev, false)));
    group.bench_function("profiling_on", |b| b.iter(|| step(&mut dev, true)));
    group.finish();
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..400 {
        let start = Instant::now();
        step(&mut dev, false);
        off.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        step(&mut dev, true);
        on.push(start.elapsed().as_secs_f64());
    }
    let ratios = on.iter().zip(&off).map(|(a, b)| a / b).collect();
    write_figure(
        "driver-profiling-mlp-step",
        &format!(
            "device side of profiling: MNIST MLP step on sim ({:.0} us), event recording on / off, paired",
            median(off) * 1e6
        ),
        median(ratios),
        Some(1.0),
        "ratio",
        "ratio <= 1.02",
    );
}

criterion_group!(benches, round_trip, copy, mlp_step_profiling);
criterion_main!(benches);
