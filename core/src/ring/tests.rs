//! Unit tests; small enough for Miri (`cargo +nightly miri test --lib ring`).

use super::*;
use crate::event::{Event, EventKind};
use std::vec::Vec;

fn event(n: u64) -> Event {
    Event::new(EventKind::OpBegin, n, (n % 4) as u8, n as u16, n as u32)
}

fn timestamps(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.timestamp).collect()
}

#[test]
fn keeps_push_order_across_many_wrap_arounds() {
    let mut ring: Ring<Event, 4> = Ring::new();
    let (mut producer, mut consumer) = ring.split();
    let mut out = [Event::default(); 3];
    let mut next_expected = 0;
    for round in 0..10u64 {
        for i in 0..3 {
            producer.push(event(round * 3 + i)).unwrap();
        }
        assert_eq!(consumer.drain(&mut out), 3);
        for e in &out {
            assert_eq!(e.timestamp, next_expected);
            next_expected += 1;
        }
    }
    assert_eq!(consumer.dropped(), 0);
}

#[test]
fn full_ring_drops_and_counts_without_losing_accepted_records() {
    let mut ring: Ring<Event, 4> = Ring::new();
    let (mut producer, mut consumer) = ring.split();
    for n in 0..4 {
        assert_eq!(producer.push(event(n)), Ok(()));
    }
    assert_eq!(producer.free_slots(), 0);
    assert_eq!(producer.push(event(4)), Err(RingError::Full));
    let full = producer.push(event(5)).unwrap_err();
    assert_eq!(full, RingError::Full);
    assert_eq!(full.kind(), RingErrorKind::Full);
    assert_eq!(producer.dropped(), 2);
    assert_eq!(consumer.dropped(), 2);

    let mut out = [Event::default(); 8];
    assert_eq!(consumer.drain(&mut out), 4);
    assert_eq!(timestamps(&out[..4]), [0, 1, 2, 3]);
    assert_eq!(out[2], event(2));

    // Room again: the next push is stored, and the count stays.
    assert_eq!(producer.push(event(6)), Ok(()));
    assert_eq!(consumer.pop(), Some(event(6)));
    assert_eq!(consumer.dropped(), 2);
}

#[test]
fn try_push_hands_the_record_back_without_counting() {
    let mut ring: Ring<u32, 2> = Ring::new();
    let (mut producer, consumer) = ring.split();
    assert_eq!(producer.try_push(1), Ok(()));
    assert_eq!(producer.try_push(2), Ok(()));
    assert_eq!(producer.try_push(3), Err(3));
    assert_eq!(consumer.dropped(), 0);
}

#[test]
fn empty_ring_drains_nothing() {
    let mut ring: Ring<Event, 8> = Ring::new();
    let (mut producer, mut consumer) = ring.split();
    let mut out = [event(99); 4];
    assert_eq!(consumer.drain(&mut out), 0);
    assert_eq!(out, [event(99); 4], "drain must not write when empty");
    assert_eq!(consumer.pop(), None);
    assert!(consumer.is_empty());
    assert_eq!(consumer.drain_each(|_| panic!("no records")), 0);

    producer.push(event(1)).unwrap();
    assert_eq!(consumer.drain(&mut []), 0, "an empty buffer takes nothing");
    assert_eq!(consumer.len(), 1);
}

#[test]
fn drain_each_takes_everything_in_order() {
    let mut ring: Ring<u16, 8> = Ring::new();
    let (mut producer, mut consumer) = ring.split();
    for n in 0..6 {
        producer.push(n).unwrap();
    }
    consumer.pop();
    let mut seen = Vec::new();
    assert_eq!(consumer.drain_each(|n| seen.push(n)), 5);
    assert_eq!(seen, [1, 2, 3, 4, 5]);
    assert!(consumer.is_empty());
}

#[test]
fn records_survive_a_second_split() {
    let mut ring: Ring<u8, 4> = Ring::new();
    {
        let (mut producer, _) = ring.split();
        producer.push(7).unwrap();
        producer.push(8).unwrap();
        producer.push(9).unwrap();
        producer.push(10).unwrap();
        assert!(producer.push(11).is_err());
    }
    let (mut producer, mut consumer) = ring.split();
    assert_eq!(producer.dropped(), 1);
    assert!(
        producer.push(12).is_err(),
        "the new producer sees a full ring"
    );
    assert_eq!(consumer.pop(), Some(7));
    assert_eq!(consumer.dropped(), 2);
}

#[test]
fn recorder_builds_nothing_while_disabled() {
    let switch = RecordingSwitch::new(false);
    let mut ring: Ring<Event, 4> = Ring::new();
    let (producer, mut consumer) = ring.split();
    let mut recorder = Recorder::new(&switch, producer);

    let mut built = 0;
    assert!(!recorder.record_with(|| {
        built += 1;
        event(1)
    }));
    assert_eq!(built, 0);
    assert!(consumer.is_empty());

    switch.enable();
    assert!(recorder.record(event(2)));
    switch.disable();
    assert!(!recorder.record(event(3)));
    assert_eq!(recorder.push(event(4)), Ok(()));
    assert_eq!(consumer.pop(), Some(event(2)));
    assert_eq!(consumer.pop(), Some(event(4)));
    assert_eq!(consumer.pop(), None);
}

#[test]
fn statics_are_const_initialised() {
    static SWITCH: RecordingSwitch = RecordingSwitch::new(true);
    static RING: Ring<Event, 16> = Ring::new();
    assert!(SWITCH.is_enabled());
    assert_eq!(RING.capacity(), 16);
}

#[test]
fn two_threads_deliver_everything_in_order_or_count_it() {
    const PUSHES: u64 = if cfg!(miri) { 200 } else { 100_000 };
    let mut ring: Ring<Event, 8> = Ring::new();
    let (mut producer, mut consumer) = ring.split();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for n in 0..PUSHES {
                let _ = producer.push(event(n));
            }
        });
        let mut delivered = 0u64;
        let mut last = None;
        let mut out = [Event::default(); 4];
        // Every push either stores or counts, so once the sum reaches PUSHES
        // the producer is done.
        while delivered + (consumer.dropped() as u64) < PUSHES {
            let n = consumer.drain(&mut out);
            for e in &out[..n] {
                assert!(last < Some(e.timestamp), "order broken at {}", e.timestamp);
                last = Some(e.timestamp);
            }
            delivered += n as u64;
            if n == 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(consumer.pop(), None);
        assert_eq!(delivered + consumer.dropped() as u64, PUSHES);
    });
}

#[cfg(feature = "std")]
mod registry {
    use super::*;

    #[test]
    fn each_thread_gets_its_own_ring_and_order_is_kept_per_thread() {
        static REGISTRY: RingRegistry<Event, 8, 2> = RingRegistry::new();
        // Both threads hold a producer at once, so they get different rings.
        let both_registered = std::sync::Barrier::new(2);
        std::thread::scope(|scope| {
            for queue in 0..2u8 {
                let both_registered = &both_registered;
                scope.spawn(move || {
                    let mut producer = REGISTRY.register();
                    both_registered.wait();
                    assert!(producer.has_ring());
                    for n in 0..5 {
                        let e = Event::new(EventKind::OpEnd, n, queue, 0, 0);
                        producer.push(e).unwrap();
                    }
                });
            }
        });
        assert_eq!(REGISTRY.rings_in_use(), 0, "thread exit frees the rings");
        let mut consumer = REGISTRY.consumer().unwrap();
        let mut out = [Event::default(); 16];
        assert_eq!(consumer.drain(&mut out), 10);
        for queue in 0..2 {
            let per_queue: Vec<u64> = out[..10]
                .iter()
                .filter(|e| e.queue == queue)
                .map(|e| e.timestamp)
                .collect();
            assert_eq!(per_queue, [0, 1, 2, 3, 4]);
        }
    }

    #[test]
    fn threads_without_a_ring_count_their_drops() {
        let registry: RingRegistry<u32, 2, 1> = RingRegistry::new();
        let mut first = registry.register();
        let mut second = registry.register();
        assert!(first.has_ring());
        assert!(!second.has_ring());
        let no_ring = second.push(1).unwrap_err();
        assert_eq!(no_ring, RingError::NoFreeRing);
        assert_eq!(no_ring.kind(), RingErrorKind::NoRing);
        first.push(10).unwrap();
        first.push(11).unwrap();
        assert_eq!(first.push(12), Err(RingError::Full));

        let mut consumer = registry.consumer().unwrap();
        assert!(registry.consumer().is_none(), "one consumer at a time");
        assert_eq!(consumer.dropped(), 2);
        let mut seen = Vec::new();
        assert_eq!(consumer.drain_each(|n| seen.push(n)), 2);
        assert_eq!(seen, [10, 11]);

        drop(first);
        let mut third = registry.register();
        assert!(third.has_ring(), "a freed ring is reused");
        third.push(13).unwrap();
        assert_eq!(consumer.drain(&mut [0; 4]), 1);
        drop(consumer);
        assert!(registry.consumer().is_some());
    }

    #[test]
    fn thread_producers_honour_the_recording_switch() {
        let switch = RecordingSwitch::new(false);
        let registry: RingRegistry<u32, 4, 1> = RingRegistry::new();
        let mut producer = registry.register();
        assert!(!producer.record_with(&switch, || panic!("built while off")));
        switch.enable();
        assert!(producer.record_with(&switch, || 5));
        let mut consumer = registry.consumer().unwrap();
        let mut out = [0; 4];
        assert_eq!(consumer.drain(&mut out), 1);
        assert_eq!(out[0], 5);
        assert_eq!(consumer.dropped(), 0);
    }
}
