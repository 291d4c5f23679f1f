//! Sync pairs on the reference FPGA's `sim`, whose counter register is a
//! snapshot the model thread refreshes.

use std::time::Duration;
use tensorplug_core::accelerator::{DType, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary};
use tensorplug_core::clock::ClockMap;
use tensorplug_core::event::{Event, EventKind};
use tensorplug_host_bridge::internals::profiler::{WallClock, sync_pair};

/// Causality on the `sim` device, whose counter register is a snapshot:
/// after the model thread has idled into its sleeps, an op launched
/// between host times `h0` and `h1` must map, through a sync pair taken
/// just before, into `h0..=h1` (± the pair's own uncertainty). A pair
/// from a single stale read puts the op up to that staleness late —
/// after `h1` once it exceeds the wait's detection latency. Five rounds.
#[test]
fn sync_pairs_on_a_snapshot_counter_keep_device_ops_inside_their_host_window() {
    let mut accel = tensorplug_fpga::open::sim::open().expect("sim");
    let clock = WallClock::now();
    let hz = accel.info().clock_hz;
    let input = accel.allocate(4096, 256).unwrap();
    let output = accel.allocate(4096, 256).unwrap();
    let shape = Shape::new(&[1024]).unwrap();
    let inputs = [TensorDesc::new(input, DType::F32, shape)];
    let op = OpDesc {
        kind: OpKind::Unary(Unary::RELU),
        inputs: &inputs,
        output: TensorDesc::new(output, DType::F32, shape),
        op_id: 1,
    };
    accel.set_profiling(true).unwrap();
    let mut events = [Event::default(); 64];
    for round in 0..5 {
        accel.drain_events(&mut events).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let pair = sync_pair(clock, &mut *accel).unwrap();
        let map = ClockMap::nominal(pair, hz).unwrap();
        let slack = pair.uncertainty_ns() + 1_000;
        let h0 = clock.wall_now();
        let fence = accel.launch(QueueId(0), &op).unwrap();
        while !accel.poll(fence).unwrap() {
            std::hint::spin_loop();
        }
        let h1 = clock.wall_now();
        let got = accel.drain_events(&mut events).unwrap().events;
        let stamp = |kind| {
            let event = events[..got].iter().find(|e| e.kind() == Some(kind));
            map.to_host_ns(event.expect("op event").timestamp)
        };
        let (begin, end) = (stamp(EventKind::OpBegin), stamp(EventKind::OpEnd));
        assert!(
            begin + slack >= h0 && end <= h1 + slack,
            "round {round}: op at {}..{} ns from launch, host window {} ns, pair ± {} ns",
            begin as i64 - h0 as i64,
            end as i64 - h0 as i64,
            h1 - h0,
            pair.uncertainty_ns()
        );
    }
}
