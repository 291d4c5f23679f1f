//! Loom model of the SPSC ring: every interleaving of one producer and one
//! consumer delivers each record in order or counts it as dropped.
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p tensorplug-core --test loom_ring --release`
//! (`cargo xtask miri-loom` runs it with a bounded preemption count).
#![cfg(loom)]

use loom::thread;
use tensorplug_core::ring::{Consumer, Ring};

/// A ring that outlives the model's threads (one small leak per execution).
fn leaked_ring<const N: usize>() -> &'static mut Ring<u32, N> {
    Box::leak(Box::new(Ring::new()))
}

/// Drains what is there and checks it continues `delivered` in order.
fn take<const N: usize>(consumer: &mut Consumer<'_, u32, N>, delivered: &mut Vec<u32>) {
    let mut out = [0u32; 2];
    let n = consumer.drain(&mut out);
    delivered.extend_from_slice(&out[..n]);
}

/// `pushes` records into a ring of `N`, the consumer draining `drains` times
/// concurrently and once more after the producer has joined.
fn model<const N: usize>(pushes: u32, drains: usize) {
    loom::model(move || {
        let (mut producer, mut consumer) = leaked_ring::<N>().split();
        let writer = thread::spawn(move || {
            let accepted: Vec<u32> = (0..pushes).filter(|&n| producer.push(n).is_ok()).collect();
            (accepted, producer.dropped())
        });
        let mut delivered = Vec::new();
        for _ in 0..drains {
            take(&mut consumer, &mut delivered);
        }
        let (accepted, dropped_by_producer) = writer.join().unwrap();
        while !consumer.is_empty() {
            take(&mut consumer, &mut delivered);
        }
        // In order, nothing accepted lost, nothing invented.
        assert_eq!(delivered, accepted);
        assert_eq!(consumer.dropped(), dropped_by_producer);
        assert_eq!(delivered.len() + consumer.dropped(), pushes as usize);
    });
}

#[test]
fn every_record_is_delivered_in_order_or_counted_with_room() {
    model::<4>(4, 3);
}

#[test]
fn every_record_is_delivered_in_order_or_counted_when_full() {
    // Capacity 2, four pushes: whether the ring is full depends on the
    // interleaving, and both outcomes must balance.
    model::<2>(5, 3);
}

#[test]
fn a_record_is_visible_once_published() {
    loom::model(|| {
        let (mut producer, mut consumer) = leaked_ring::<2>().split();
        let writer = thread::spawn(move || {
            producer.push(0xABCD).unwrap();
        });
        // Either nothing yet, or the fully written record: never garbage.
        if let Some(value) = consumer.pop() {
            assert_eq!(value, 0xABCD);
        }
        writer.join().unwrap();
    });
}
