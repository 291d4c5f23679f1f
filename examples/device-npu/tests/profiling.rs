//! The NPU's declared capabilities, clock and profiling events.

mod common;

use common::*;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{DType, OpKind, Unary};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_device_npu::{CLOCK_HZ, EVENT_CAPACITY, Npu, QUEUES};

#[test]
fn declares_matmul_and_relu_on_f32_with_profiling() {
    let info = npu().info();
    let caps = info.capabilities;
    for kind in [
        matmul(false, false),
        matmul(true, true),
        OpKind::Unary(Unary::RELU),
    ] {
        assert!(caps.supports(kind, DType::F32), "{kind:?}");
    }
    assert_eq!(caps.ops.iter().count(), 2, "{:?}", caps.ops);
    assert!(caps.profiling);
    assert_eq!((info.queues, info.clock_hz, QUEUES), (2, 1_000_000, 2));
    assert_eq!(CLOCK_HZ, info.clock_hz);
}

#[test]
fn launches_record_begin_and_end_with_op_id_queue_and_clock_ticks() {
    let mut dev = Npu::new(vec![0u8; 4096], StepClock::default());
    let x = put(&mut dev, &[1.; 4]);
    let inputs = [t(x, &[4])];
    let relu = op(OpKind::Unary(Unary::RELU), &inputs, t(x, &[4]), 42);
    dev.launch(Q, &relu).unwrap();
    let mut out = [Event::default(); 4];
    let drained = dev.drain_events(&mut out).unwrap();
    assert_eq!((drained.events, drained.dropped), (0, 0), "off: nothing");

    dev.set_profiling(true).unwrap();
    let before = dev.timestamp().unwrap();
    dev.launch(Q, &relu).unwrap();
    dev.fill(Q, x, 16, 0).unwrap(); // copies and fills record nothing
    let drained = dev.drain_events(&mut out).unwrap();
    assert_eq!((drained.events, drained.dropped), (2, 0));
    assert_eq!(out[0], Event::new(EventKind::OpBegin, before + 1, 1, 42, 0));
    assert_eq!(out[1], Event::new(EventKind::OpEnd, before + 2, 1, 42, 0));

    dev.set_profiling(false).unwrap();
    dev.launch(Q, &relu).unwrap();
    assert_eq!(
        dev.timestamp().unwrap(),
        before + 3,
        "off: the clock is not read"
    );
    assert_eq!(dev.drain_events(&mut out).unwrap().events, 0);
}

#[test]
fn a_full_ring_drops_and_counts_once() {
    let mut dev = npu();
    let x = put(&mut dev, &[1.; 4]);
    let inputs = [t(x, &[4])];
    let relu = op(OpKind::Unary(Unary::RELU), &inputs, t(x, &[4]), 7);
    dev.set_profiling(true).unwrap();
    let launches = EVENT_CAPACITY / 2 + 3;
    for _ in 0..launches {
        dev.launch(Q, &relu).unwrap();
    }
    dev.reset().unwrap(); // keeps recorded events
    let mut all = vec![Event::default(); 2 * launches];
    let drained = dev.drain_events(&mut all).unwrap();
    assert_eq!((drained.events, drained.dropped), (EVENT_CAPACITY, 6));
    assert!(all[..EVENT_CAPACITY].iter().all(|e| e.op_id == 7));
    let again = dev.drain_events(&mut all).unwrap();
    assert_eq!(
        (again.events, again.dropped),
        (0, 0),
        "drops are reported once"
    );
    dev.launch(Q, &relu).unwrap();
    assert_eq!(dev.drain_events(&mut all).unwrap().events, 2, "room again");
}
