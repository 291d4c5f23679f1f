//! Event ring speed against the crates the issue names as baselines.
//!
//! * `ring_push/{tensorplug,heapless}`: single-thread push of the 16-byte
//!   `Event` into a 1024-slot ring. Pushes are timed in chunks of 1023 (what
//!   both rings hold); the drain between chunks is not timed. The sequence
//!   number goes through `black_box`, not the record: a black-boxed record is
//!   stored in pieces and reloaded whole, a store-forwarding stall that would
//!   dominate both sides.
//! * `ring_two_threads/{tensorplug,rtrb}`: one iteration moves a burst of
//!   2^20 records: a producer thread pushes one at a time (retrying when
//!   full), the consumer drains batches of up to 256 into a buffer (rtrb:
//!   `read_chunk` + copy, its fastest reading API). A waiting side spins, then
//!   yields (the machine may have more threads than cores). Thread start is
//!   timed for both (well under 1 % of a burst).
//! * `record/disabled`: a `Recorder` whose switch is off, given a closure
//!   that would read the clock.
//!
//! `cargo xtask bench` turns these into the ratio table.

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use std::hint::{black_box, spin_loop};
use std::time::{Duration, Instant};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::ring::{Recorder, RecordingSwitch, Ring};

/// Slots in every ring compared here.
const CAPACITY: usize = 1024;
/// Records per timed chunk: what a 1024-slot heapless queue holds.
const CHUNK: u64 = CAPACITY as u64 - 1;
/// Records per drain in the two-thread benches.
const BATCH: usize = 256;
/// Records per iteration of the two-thread benches.
const BURST: u64 = 1 << 20;

/// Waits politely: spins first, then gives the core away (both benches).
struct Backoff(u32);

impl Backoff {
    fn wait(&mut self) {
        self.0 += 1;
        if self.0 < 64 {
            spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn event(n: u64) -> Event {
    Event::new(EventKind::OpBegin, n, 0, n as u16, n as u32)
}

/// Times `push(count, first)` over `iters` records in chunks, calling the
/// untimed `empty()` between chunks.
fn time_pushes(iters: u64, mut push: impl FnMut(u64, u64), mut empty: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let count = CHUNK.min(iters - done);
        let start = Instant::now();
        push(count, done);
        total += start.elapsed();
        empty();
        done += count;
    }
    total
}

fn push_single_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("ring_push");
    group.throughput(Throughput::Elements(1));
    group.bench_function("tensorplug", |b| {
        let mut ring: Box<Ring<Event, CAPACITY>> = Box::default();
        let (mut producer, mut consumer) = ring.split();
        let mut sink = vec![Event::default(); CAPACITY];
        b.iter_custom(|iters| {
            time_pushes(
                iters,
                |count, first| {
                    for n in first..first + count {
                        let _ = producer.push(event(black_box(n)));
                    }
                },
                || {
                    black_box(consumer.drain(&mut sink));
                },
            )
        });
    });
    group.bench_function("heapless", |b| {
        let mut queue: Box<heapless::spsc::Queue<Event, CAPACITY>> = Box::default();
        let (mut producer, mut consumer) = queue.split();
        b.iter_custom(|iters| {
            time_pushes(
                iters,
                |count, first| {
                    for n in first..first + count {
                        let _ = producer.enqueue(event(black_box(n)));
                    }
                },
                || {
                    while let Some(e) = consumer.dequeue() {
                        black_box(e);
                    }
                },
            )
        });
    });
    group.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("ring_two_threads");
    group.throughput(Throughput::Elements(BURST));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    group.bench_function("tensorplug", |b| {
        let mut ring: Box<Ring<Event, CAPACITY>> = Box::default();
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut producer, mut consumer) = ring.split();
                let start = Instant::now();
                std::thread::scope(|scope| {
                    scope.spawn(move || {
                        for n in 0..BURST {
                            let e = event(n);
                            let mut backoff = Backoff(0);
                            while producer.try_push(e).is_err() {
                                backoff.wait();
                            }
                        }
                    });
                    let mut buf = [Event::default(); BATCH];
                    let mut received = 0;
                    let mut backoff = Backoff(0);
                    while received < BURST {
                        let n = consumer.drain(&mut buf);
                        if n == 0 {
                            backoff.wait();
                            continue;
                        }
                        backoff = Backoff(0);
                        black_box(&buf[..n]);
                        received += n as u64;
                    }
                });
                total += start.elapsed();
            }
            total
        });
    });
    group.bench_function("rtrb", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut producer, mut consumer) = rtrb::RingBuffer::<Event>::new(CAPACITY);
                let start = Instant::now();
                std::thread::scope(|scope| {
                    scope.spawn(move || {
                        for n in 0..BURST {
                            let e = event(n);
                            let mut backoff = Backoff(0);
                            while producer.push(e).is_err() {
                                backoff.wait();
                            }
                        }
                    });
                    let mut buf = [Event::default(); BATCH];
                    let mut received = 0;
                    let mut backoff = Backoff(0);
                    while received < BURST {
                        let ready = consumer.slots().min(BATCH);
                        let chunk = match consumer.read_chunk(ready) {
                            Ok(chunk) if ready > 0 => chunk,
                            _ => {
                                backoff.wait();
                                continue;
                            }
                        };
                        backoff = Backoff(0);
                        let (first, second) = chunk.as_slices();
                        let n = first.len() + second.len();
                        buf[..first.len()].copy_from_slice(first);
                        buf[first.len()..n].copy_from_slice(second);
                        chunk.commit_all();
                        black_box(&buf[..n]);
                        received += n as u64;
                    }
                });
                total += start.elapsed();
            }
            total
        });
    });
    group.finish();
}

fn disabled_recording(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    group.throughput(Throughput::Elements(1));
    group.bench_function("disabled", |b| {
        static SWITCH: RecordingSwitch = RecordingSwitch::new(false);
        let mut ring: Box<Ring<Event, CAPACITY>> = Box::default();
        let (producer, _consumer) = ring.split();
        let mut recorder = Recorder::new(&SWITCH, producer);
        let epoch = Instant::now();
        b.iter(|| recorder.record_with(|| event(epoch.elapsed().as_nanos() as u64)));
    });
    group.finish();
}

criterion_group!(benches, push_single_thread, two_threads, disabled_recording);
criterion_main!(benches);
