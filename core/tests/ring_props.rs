//! Property tests: across random capacities and random interleavings of push
//! bursts and drain batches, order is kept and
//! `pushed == delivered + dropped`.
#![cfg(not(loom))]

use proptest::prelude::*;
use std::collections::VecDeque;
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::ring::{Ring, RingError};

#[derive(Clone, Debug)]
enum Step {
    /// Push this many records in a row.
    Push(usize),
    /// Drain into a buffer of this size.
    Drain(usize),
    /// Pop one record.
    Pop,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0usize..40).prop_map(Step::Push),
            3 => (0usize..40).prop_map(Step::Drain),
            1 => Just(Step::Pop),
        ],
        0..60,
    )
}

fn event(seq: u64) -> Event {
    Event::new(
        EventKind::OpEnd,
        seq,
        (seq % 7) as u8,
        seq as u16,
        !(seq as u32),
    )
}

/// Checks `got` is the oldest accepted record not yet delivered.
fn expect_next(got: Event, accepted: &mut VecDeque<Event>) -> Result<(), TestCaseError> {
    prop_assert_eq!(Some(got), accepted.pop_front(), "out of order or invented");
    Ok(())
}

/// Runs `steps` against a ring of `N`, checking against a model of what must
/// come out: exactly the accepted records, in order.
fn check<const N: usize>(steps: &[Step]) -> Result<(), TestCaseError> {
    let mut ring: Ring<Event, N> = Ring::new();
    let (mut producer, mut consumer) = ring.split();
    let mut pushed = 0u64;
    let mut accepted = VecDeque::new();
    let mut delivered = 0usize;
    let mut buf = vec![Event::default(); 40];

    for step in steps {
        match *step {
            Step::Push(count) => {
                for _ in 0..count {
                    let record = event(pushed);
                    pushed += 1;
                    let in_flight = accepted.len();
                    match producer.push(record) {
                        Ok(()) => accepted.push_back(record),
                        Err(RingError::Full) => prop_assert_eq!(in_flight, N),
                        Err(other) => prop_assert!(false, "unexpected {other}"),
                    }
                }
            }
            Step::Drain(size) => {
                let n = consumer.drain(&mut buf[..size]);
                prop_assert_eq!(n, size.min(accepted.len()));
                for &got in &buf[..n] {
                    expect_next(got, &mut accepted)?;
                }
                delivered += n;
            }
            Step::Pop => match consumer.pop() {
                Some(got) => {
                    expect_next(got, &mut accepted)?;
                    delivered += 1;
                }
                None => prop_assert!(accepted.is_empty()),
            },
        }
        prop_assert_eq!(
            pushed,
            (delivered + accepted.len() + consumer.dropped()) as u64
        );
    }
    // Drain the rest: everything accepted comes out.
    while let Some(got) = consumer.pop() {
        expect_next(got, &mut accepted)?;
        delivered += 1;
    }
    prop_assert!(accepted.is_empty(), "accepted records lost");
    prop_assert_eq!(pushed, (delivered + consumer.dropped()) as u64);
    Ok(())
}

proptest! {
    #[test]
    fn order_kept_and_every_record_delivered_or_dropped(
        capacity_log2 in 0u32..7,
        steps in steps(),
    ) {
        match capacity_log2 {
            0 => check::<1>(&steps)?,
            1 => check::<2>(&steps)?,
            2 => check::<4>(&steps)?,
            3 => check::<8>(&steps)?,
            4 => check::<16>(&steps)?,
            5 => check::<32>(&steps)?,
            _ => check::<64>(&steps)?,
        }
    }
}
