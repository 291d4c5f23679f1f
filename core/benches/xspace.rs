//! XSpace build + encode of 1,000,000 drained events (500,000 spans).
//!
//! Goals: >= 20 M events/s, and peak heap <= 2x the encoded size,
//! measured with the counting global allocator below. Writes two figure files
//! for `cargo xtask bench` under `<target>/tensorplug-bench/`.

use criterion::{Criterion, Throughput, criterion_group};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tensorplug_core::clock::{ClockMap, SyncPair};
use tensorplug_core::event::{Event, EventKind as K};
use tensorplug_core::xspace::{DeviceTrace, OpInfo, XSpaceBuilder};

/// Counts live heap bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to `System` and only adds counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const EVENTS: usize = 1_000_000;
const START_NS: u64 = 1_700_000_000_000_000_000;
const QUEUES: u8 = 4;

/// Ops on 4 queues back to back, every 8th span a host-to-device copy.
fn drained_events() -> Vec<Event> {
    let mut events = Vec::with_capacity(EVENTS);
    let mut queue_time = [0u64; QUEUES as usize];
    for span in 0..EVENTS / 2 {
        let queue = (span % usize::from(QUEUES)) as u8;
        // One tag per distinct op (the op table index), as the host bridge does.
        let tag = (span % 16) as u16;
        let begin = queue_time[usize::from(queue)] + 20;
        let end = begin + 300 + (span as u64 % 700);
        queue_time[usize::from(queue)] = end;
        let (b, e, arg) = if span % 8 == 7 {
            (K::CopyH2DBegin, K::CopyH2DEnd, 4_096 + span as u32 % 65_536)
        } else {
            (K::OpBegin, K::OpEnd, 0x20)
        };
        events.push(Event::new(b, begin, queue, tag, arg));
        events.push(Event::new(e, end, queue, tag, 0));
    }
    events
}

fn op_table() -> Vec<OpInfo<'static>> {
    const NAMES: [&str; 4] = ["dense/MatMul", "dense/BiasAdd", "relu", "conv2d/Conv2D"];
    (0..16)
        .map(|i| OpInfo {
            name: NAMES[i % 4],
            tf_op: "model/layer:Op",
            flops: 1 << (10 + i),
            bytes_accessed: 4_096,
        })
        .collect()
}

fn trace(events: &[Event]) -> DeviceTrace<'_> {
    DeviceTrace {
        device_index: 0,
        clock: ClockMap::nominal(SyncPair::new(0, START_NS, START_NS + 1_000), 1_000_000_000)
            .expect("valid clock"),
        device_events: events,
        host_events: &[],
        dropped_device_events: 0,
        dropped_host_events: 0,
    }
}

/// TF's two-call protocol: size, then a buffer of that size, then encode.
fn build_and_encode(builder: &XSpaceBuilder<'_>) -> Vec<u8> {
    let plan = builder.plan();
    let mut buf = vec![0u8; plan.encoded_len()];
    let written = plan.encode_into(&mut buf).expect("exact-size buffer");
    assert_eq!(written, buf.len());
    buf
}

fn bench_xspace(c: &mut Criterion) {
    let events = drained_events();
    let ops = op_table();
    let devices = [trace(&events)];
    let builder = XSpaceBuilder::new(START_NS, &ops, &devices);
    let mut group = c.benchmark_group("xspace");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("build_encode_1M_events", |b| {
        b.iter(|| build_and_encode(black_box(&builder)))
    });
    group.finish();
}

criterion_group!(benches, bench_xspace);

/// Median events/s over a few runs, and peak heap of one run over its output.
fn figures() -> (f64, f64, usize, usize) {
    let events = drained_events();
    let ops = op_table();
    let devices = [trace(&events)];
    let builder = XSpaceBuilder::new(START_NS, &ops, &devices);

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = build_and_encode(&builder);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let encoded = out.len();
    drop(out);
    let leaked = LIVE.load(Ordering::Relaxed).saturating_sub(before);

    let mut rates: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            black_box(build_and_encode(&builder));
            EVENTS as f64 / t.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    (
        rates[rates.len() / 2],
        peak as f64 / encoded as f64,
        encoded,
        leaked,
    )
}

fn bench_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("tensorplug-bench")
}

fn write_figure(name: &str, value: f64, baseline: f64, unit: &str, goal: &str) {
    let dir = bench_dir();
    let json = format!(
        "{{\"figure\": \"{name}\", \"value\": {value}, \"baseline\": {baseline}, \
         \"unit\": \"{unit}\", \"goal\": \"{goal}\"}}\n"
    );
    let path = dir.join(format!("{name}.json"));
    if let Err(err) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, json)) {
        eprintln!("cannot write {}: {err}", path.display());
    }
}

fn main() {
    benches();
    let (events_per_second, heap_ratio, encoded, leaked) = figures();
    println!(
        "xspace: {:.1} M events/s (goal >= 50), peak heap {:.3}x of {} encoded bytes \
         (goal <= 2), {} bytes still live after collect",
        events_per_second / 1e6,
        heap_ratio,
        encoded,
        leaked
    );
    write_figure(
        "xspace_events_per_second",
        events_per_second,
        50e6,
        "events/s",
        ">= 50000000 events/s (baseline = goal)",
    );
    write_figure(
        "xspace_peak_heap_ratio",
        heap_ratio * encoded as f64,
        encoded as f64,
        "bytes",
        "peak heap <= 2x encoded size (baseline = encoded size)",
    );
    Criterion::default().configure_from_args().final_summary();
}
