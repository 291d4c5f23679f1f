//! The `sim` device under Miri: the driver on this thread, the model on its
//! own, sharing one heap BAR. Small enough to run in `cargo miri test`
//! (`cargo xtask test` does); it checks aliasing and data races between the
//! two sides, which the ordinary suites cannot see.
#![cfg(feature = "std")]

use std::time::Duration;
use tensorplug_core::accelerator::prelude::*;

use tensorplug_core::accelerator::{
    Accelerator, DType, DeviceAddr, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_model_fpga::model::host::{IdlePolicy, InProcessDevice, ServeOptions};

const Q: QueueId = QueueId(0);
const TIMEOUT: Duration = Duration::from_secs(600);

fn tensor(addr: DeviceAddr, n: u64) -> TensorDesc {
    TensorDesc::new(addr, DType::F32, Shape::new(&[n]).unwrap())
}

#[test]
fn bulk_copies_and_ops_share_the_bar_soundly() {
    round_trip(false);
}

#[test]
fn dma_copies_and_ops_share_the_bar_soundly() {
    round_trip(true);
}

/// Bring-up, an upload, two ReLUs in flight, a download and an event drain.
fn round_trip(dma_copies: bool) {
    let options = ServeOptions {
        idle: IdlePolicy {
            spin: Duration::ZERO,
            yield_until: Duration::ZERO,
            min_sleep: Duration::from_micros(10),
            max_sleep: Duration::from_micros(10),
        },
        ..ServeOptions::default()
    };
    let device = InProcessDevice::spawn(64 << 10, 4 << 10, options).unwrap();
    let config = DriverConfig {
        command_entries: 4,
        completion_entries: 4,
        event_entries: 16,
        dma_copies,
        // Miri's clock runs with the interpreted instructions: budgets that
        // cannot run out before the model thread gets scheduled.
        ready_timeout_us: 600_000_000,
        submit_timeout_us: 600_000_000,
        idle_timeout_us: 600_000_000,
    };
    let mut dev: Driver<_, _> =
        Driver::new(device.transport(), StdClock::default(), config).unwrap();
    dev.set_profiling(true).unwrap();
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let input = dev.allocate(64, 64).unwrap();
    let output = dev.allocate(64, 64).unwrap();
    dev.write_blocking(Q, input, &bytes, TIMEOUT).unwrap();
    // Two ops in flight while the driver writes the next command entries.
    for op_id in 0..2 {
        let op = OpDesc {
            kind: OpKind::Unary(Unary::RELU),
            inputs: &[tensor(input, 16)],
            output: tensor(output, 16),
            op_id,
        };
        dev.launch(Q, &op).unwrap();
    }
    let mut back = vec![0u8; 64];
    dev.read_blocking(Q, &mut back, output, TIMEOUT).unwrap();
    let got: Vec<f32> = back
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(got, want);
    let mut events = [tensorplug_core::event::Event::default(); 16];
    let drained = dev.drain_events(&mut events).unwrap();
    assert!(
        drained.events >= 4,
        "two ops' begin/end events: {drained:?}"
    );
    drop(dev);
    device.stop().unwrap();
}
