//! Suite cases with the model's fault injection: every failure is a
//! specific error, the driver recovers through `reset`, acknowledged data
//! survives, and the next op works.

use std::time::{Duration, Instant};
use tensorplug_core::accelerator::prelude::*;

use tensorplug_abi::device::CompletionStatus;
use tensorplug_core::accelerator::{
    Accelerator, Binary, DeviceAddr, ErrorKind, Fence, OpDesc, OpKind, Unary,
};
use tensorplug_core::event::Event;
use tensorplug_device_fpga::driver::{Error, WaitFor};
use tensorplug_device_fpga::transport;
use tensorplug_model_fpga::model::{DEVICE_FAULT_DETAIL, Faults};

use super::*;

/// A Relu of `x` into a fresh buffer; returns the output and the fence.
fn relu(
    f: &mut impl Fixture,
    x: DeviceAddr,
    n: u64,
) -> (DeviceAddr, tensorplug_core::accelerator::Fence) {
    let dev = f.dev();
    let y = dev.allocate(n * 4, 64).unwrap();
    let inputs = [tensor(x, &[n])];
    let op = OpDesc {
        kind: OpKind::Unary(Unary::RELU),
        inputs: &inputs,
        output: tensor(y, &[n]),
        op_id: 5,
    };
    (y, dev.launch(Q, &op).unwrap())
}

/// After recovery: the data uploaded before the fault is intact, and a new
/// op computes the right result.
fn check_recovered(f: &mut impl Fixture, x: DeviceAddr, data: &[f32]) {
    assert_eq!(
        download(f.dev(), x, data.len()),
        data,
        "acknowledged data lost"
    );
    let (y, fence) = relu(f, x, data.len() as u64);
    f.dev().wait(fence, TIMEOUT).unwrap();
    let mut want = vec![0.0; data.len()];
    tensorplug_model_fpga::kernels::reference::relu(data, &mut want);
    assert_eq!(download(f.dev(), y, data.len()), want);
}

pub fn full_event_ring_counts_drops(f: &mut impl Fixture) {
    f.set_faults(Faults {
        cap_event_ring: Some(4),
        ..Faults::default()
    });
    let x = upload(f.dev(), &values(16, 50));
    f.dev().set_profiling(true).unwrap();
    let mut last = None;
    for _ in 0..10 {
        last = Some(relu(f, x, 16).1);
    }
    f.dev().wait(last.unwrap(), TIMEOUT).unwrap();
    let mut events = [Event::default(); 32];
    let drained = f.dev().drain_events(&mut events).unwrap();
    assert_eq!(drained.events, 4);
    assert_eq!(drained.dropped, 16);
    let again = f.dev().drain_events(&mut events).unwrap();
    assert_eq!((again.events, again.dropped), (0, 0));
    f.set_faults(Faults::default());
}

pub fn lost_completion_times_out_then_recovers(f: &mut impl Fixture) {
    let data = values(32, 51);
    let x = upload(f.dev(), &data);
    f.set_faults(Faults {
        lose_next_completion: true,
        ..Faults::default()
    });
    let (_, fence) = relu(f, x, 32);
    let e = expect_kind(f.dev().wait(fence, SHORT), ErrorKind::Timeout);
    assert!(
        matches!(
            e,
            Error::Timeout {
                waiting_for: WaitFor::Completion,
                ..
            }
        ),
        "{e}"
    );
    f.dev().reset().unwrap();
    // The lost command's fence fails clearly, for good.
    assert_eq!(f.dev().poll(fence), Err(Error::Aborted));
    assert_eq!(f.dev().wait(fence, SHORT), Err(Error::Aborted));
    check_recovered(f, x, &data);
}

pub fn stuck_busy_times_out_then_recovers(f: &mut impl Fixture) {
    let data = values(32, 52);
    let x = upload(f.dev(), &data);
    f.set_faults(Faults {
        stuck_busy: true,
        ..Faults::default()
    });
    let (_, fence) = relu(f, x, 32);
    expect_kind(f.dev().wait(fence, SHORT), ErrorKind::Timeout);
    // A bulk-path copy waits for the stuck command, bounded too.
    let mut buf = [0u8; 4];
    expect_kind(
        f.dev().read_blocking(Q, &mut buf, x, SHORT),
        ErrorKind::Timeout,
    );
    f.set_faults(Faults::default());
    f.dev().reset().unwrap();
    assert_eq!(f.dev().poll(fence), Err(Error::Aborted));
    check_recovered(f, x, &data);
}

pub fn device_fault_halts_then_recovers(f: &mut impl Fixture) {
    let data = values(32, 53);
    let x = upload(f.dev(), &data);
    f.set_faults(Faults {
        fault_next_command: true,
        ..Faults::default()
    });
    let (_, fence) = relu(f, x, 32);
    let e = expect_kind(f.dev().wait(fence, TIMEOUT), ErrorKind::DeviceFault);
    assert!(
        matches!(
            e,
            Error::Command {
                status: CompletionStatus::DEVICE_FAULT,
                detail: DEVICE_FAULT_DETAIL,
                tag: 5
            }
        ),
        "{e}"
    );
    // The device has halted: the next command cannot run, and says why.
    let (_, next) = relu(f, x, 32);
    let e = expect_kind(f.dev().wait(next, TIMEOUT), ErrorKind::DeviceFault);
    assert_eq!(
        e,
        Error::Halted {
            reason: CompletionStatus::DEVICE_FAULT
        }
    );
    f.dev().reset().unwrap();
    check_recovered(f, x, &data);
}

/// How long a halt may take to surface. Not a speed figure: the point is
/// "a few polls", against the caller's timeout (60 s by default in the
/// host bridge); generous for a debug build on a loaded machine.
// Liveness, not speed: well under the 5 s poll cap and the 10 s `TIMEOUT`
// (a halt noticed only by timing out would take those), with room for a
// loaded CI machine. The error kind is the decisive check.
const HALT_NOTICED_WITHIN: Duration = Duration::from_secs(3);

/// Launches `[2,1,2,1,2] + [1,3,1,3,1]` (five alternating broadcast axes:
/// six commands) with the model set to fault on its next command.
fn faulting_broadcast_add(f: &mut impl Fixture, tag: u16) -> Fence {
    let a = upload(f.dev(), &values(8, 57));
    let b = upload(f.dev(), &values(9, 58));
    let out = f.dev().allocate(72 * 4, 64).unwrap();
    let inputs = [tensor(a, &[2, 1, 2, 1, 2]), tensor(b, &[1, 3, 1, 3, 1])];
    let op = OpDesc {
        kind: OpKind::Binary(Binary::ADD),
        inputs: &inputs,
        output: tensor(out, &[2, 3, 2, 3, 2]),
        op_id: tag,
    };
    f.set_faults(Faults {
        fault_next_command: true,
        ..Faults::default()
    });
    let (before, _) = f.dev().command_counts();
    let fence = f.dev().launch(Q, &op).unwrap();
    assert_eq!(
        f.dev().command_counts().0 - before,
        6,
        "not a multi-command op"
    );
    fence
}

fn assert_first_command_fault(e: &Error, tag: u16) {
    assert_eq!(e.kind(), ErrorKind::DeviceFault, "{e}");
    assert_eq!(
        *e,
        Error::Command {
            status: CompletionStatus::DEVICE_FAULT,
            detail: DEVICE_FAULT_DETAIL,
            tag
        }
    );
}

/// A fault on the first command of a six-command op halts the device with
/// five commands still queued: `poll` alone (what the host bridge's wait
/// loop calls) must report it, not leave the caller to time out; so must
/// `wait`. After a reset the fence is aborted and the device works, with
/// no stale failure reported to later work.
pub fn fault_in_a_multi_command_op_is_reported_promptly(f: &mut impl Fixture) {
    let data = values(32, 56);
    let x = upload(f.dev(), &data);

    let fence = faulting_broadcast_add(f, 9);
    let start = Instant::now();
    let polled = loop {
        match f.dev().poll(fence) {
            Ok(false) if start.elapsed() < Duration::from_secs(5) => std::thread::yield_now(),
            other => break other,
        }
    };
    let took = start.elapsed();
    assert_first_command_fault(&polled.unwrap_err(), 9);
    assert!(
        took < HALT_NOTICED_WITHIN,
        "poll noticed the halt after {took:?}"
    );
    f.dev().reset().unwrap();
    assert_eq!(f.dev().poll(fence), Err(Error::Aborted));
    check_recovered(f, x, &data);

    let fence = faulting_broadcast_add(f, 10);
    let start = Instant::now();
    let waited = f.dev().wait(fence, TIMEOUT);
    let took = start.elapsed();
    assert_first_command_fault(&waited.unwrap_err(), 10);
    assert!(
        took < HALT_NOTICED_WITHIN,
        "wait noticed the halt after {took:?}"
    );
    f.dev().reset().unwrap();
    check_recovered(f, x, &data);
}

pub fn reset_mid_command_is_detected_then_recovers(f: &mut impl Fixture) {
    let data = values(32, 54);
    let x = upload(f.dev(), &data);
    f.set_faults(Faults {
        reset_mid_command: true,
        ..Faults::default()
    });
    let (_, fence) = relu(f, x, 32);
    let e = expect_kind(f.dev().wait(fence, TIMEOUT), ErrorKind::DeviceFault);
    assert_eq!(e, Error::DeviceReset);
    f.dev().reset().unwrap();
    assert_eq!(f.dev().poll(fence), Err(Error::Aborted));
    check_recovered(f, x, &data);
}

pub fn corrupted_frame_is_a_transport_error(f: &mut impl Fixture) {
    let data = values(8, 55);
    let x = upload(f.dev(), &data);
    assert!(f.corrupt_next_request(), "an SPI fixture is needed");
    let e = expect_kind(f.dev().timestamp(), ErrorKind::Transport);
    assert_eq!(
        e,
        Error::Transport(transport::Error::Crc(transport::CrcSide::Request))
    );
    // Nothing was lost, and the link works again without a reset.
    check_recovered(f, x, &data);
}
