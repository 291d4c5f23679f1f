//! The MCU fails under QEMU, and the host recovers: a
//! wedged main loop is reset by the firmware's watchdog, the board's reset
//! is pressed mid-session (QEMU's monitor). Either way the firmware
//! announces its new boot, the host's wait fails at once with a device
//! fault instead of a timeout, and `reset()` opens a new session with the
//! lost buffers back at their addresses, reading as lost until written.
//!
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` target, which
//! `cargo xtask test` installs.

use std::net::TcpStream;
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Accelerator, DType, DeviceAddr, Error as _, ErrorKind, OpDesc, OpKind, QueueId, Shape,
    TensorDesc, Unary,
};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_link_host::RemoteAccelerator;
use tensorplug_tests::qemu::{Fault, Qemu};

/// Budget for each answer of the firmware under emulation.
const ANSWER: Duration = Duration::from_secs(10);

fn connect(qemu: &Qemu) -> RemoteAccelerator<TcpStream> {
    let stream = qemu.uart.try_clone().expect("clone the UART socket");
    RemoteAccelerator::connect(stream, ANSWER)
        .unwrap_or_else(|e| panic!("op-level link: {e}\nlogs:\n{}", qemu.logs().join("\n")))
}

fn boots(qemu: &Qemu) -> usize {
    let logs = qemu.logs();
    logs.iter()
        .filter(|l| l.contains("tensorplug firmware"))
        .count()
}

/// A fill that hangs (the debugger drops its completion), so that the host
/// is waiting when the MCU restarts; returns the host's wait's outcome, how
/// long it took, and the filled buffer.
fn wait_through(
    qemu: &Qemu,
    dev: &mut RemoteAccelerator<TcpStream>,
    restart: impl FnOnce(),
) -> (String, ErrorKind, Duration, DeviceAddr) {
    let q = QueueId(0);
    let buf = dev.allocate(256, 64).expect("allocate");
    qemu.inject(Fault::LoseNextCompletion)
        .expect("the debugger arms the fault");
    let fence = dev.fill(q, buf, 256, 0x5a).expect("fill");
    // Sends it (a gathered batch goes with the next call).
    assert!(!dev.poll(fence).expect("poll"), "a lost completion came");
    restart();
    let start = Instant::now();
    let error = dev
        .wait(fence, Duration::from_secs(30))
        .expect_err("a restarted MCU cannot complete the fill");
    (error.to_string(), error.kind(), start.elapsed(), buf)
}

/// After a restart: `reset()` opens a new session with the buffers of the
/// lost one (`stale`) back at their addresses. Reading one fails, naming
/// the restart, until it is written again; a new allocation does not
/// alias one; the device computes.
fn recovers(qemu: &Qemu, dev: &mut RemoteAccelerator<TcpStream>, stale: &[DeviceAddr]) {
    dev.reset().unwrap_or_else(|e| {
        panic!(
            "reset() after the restart: {e}\nlogs:\n{}",
            qemu.logs().join("\n")
        )
    });
    let q = QueueId(0);
    let mut back = [0u8; 64];
    for &old in stale {
        let error = dev
            .read_blocking(q, &mut back, old, ANSWER)
            .expect_err("a lost buffer's bytes are not read");
        assert_eq!(error.kind(), ErrorKind::DeviceFault, "{error}");
        assert!(
            error.to_string().contains("lost when it restarted"),
            "{error}"
        );
    }
    let buf = dev.allocate(64, 64).expect("allocate after the restart");
    assert!(
        stale
            .iter()
            .all(|old| buf.0 + 64 <= old.0 || old.0 + 64 <= buf.0),
        "the new buffer {buf:?} aliases a lost one {stale:?}"
    );
    let pattern = 0xa5c3_0f96_u32;
    for &target in stale.iter().chain([&buf]) {
        let fence = dev
            .fill(q, target, 64, pattern)
            .expect("fill after the restart");
        dev.wait(fence, ANSWER).expect("the fill completes");
        dev.read_blocking(q, &mut back, target, ANSWER)
            .expect("read back");
        assert!(
            back.chunks(4).all(|w| w == pattern.to_le_bytes()),
            "{back:02x?}"
        );
    }
    for &old in stale {
        dev.deallocate(old).expect("a restored buffer frees");
    }
}

#[test]
fn a_wedged_main_loop_is_reset_by_the_watchdog_and_the_host_recovers() {
    let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
    let mut dev = connect(&qemu);
    let (error, kind, took, buf) = wait_through(&qemu, &mut dev, || {
        qemu.inject(Fault::Wedge)
            .expect("the debugger wedges the loop");
    });
    let logs = qemu.logs().join("\n");
    assert_eq!(kind, ErrorKind::DeviceFault, "{error}\nlogs:\n{logs}");
    assert!(error.contains("the MCU restarted"), "{error}");
    // Two stall periods of 3 s, and the reboot.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(
        qemu.wait_for_log("the watchdog reset the MCU", Duration::from_secs(1)),
        "the new boot does not name the watchdog; logs:\n{logs}"
    );
    assert!(wait_for_boots(&qemu, 2), "no second boot; logs:\n{logs}");
    recovers(&qemu, &mut dev, &[buf]);
    println!("watchdog: the wait failed after {took:?}: {error}");
}

#[test]
fn a_board_reset_mid_session_fails_the_wait_at_once_and_reset_recovers() {
    let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
    let mut dev = connect(&qemu);
    let (error, kind, took, buf) = wait_through(&qemu, &mut dev, || {
        qemu.system_reset()
            .expect("QEMU's monitor resets the board");
    });
    let logs = qemu.logs().join("\n");
    assert_eq!(kind, ErrorKind::DeviceFault, "{error}\nlogs:\n{logs}");
    assert!(error.contains("the MCU restarted"), "{error}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        !logs.contains("the watchdog reset the MCU"),
        "a pressed reset is not the watchdog's; logs:\n{logs}"
    );
    assert!(wait_for_boots(&qemu, 2), "no second boot; logs:\n{logs}");
    // The next call opens a new session by itself: the old buffer is
    // back, lost until written, and the new one is elsewhere.
    let fresh = dev.allocate(64, 64).expect("a new session");
    assert!(
        fresh.0 + 64 <= buf.0 || buf.0 + 256 <= fresh.0,
        "{fresh:?} aliases {buf:?}"
    );
    recovers(&qemu, &mut dev, &[buf]);
    dev.deallocate(fresh).expect("free");
    println!("board reset: the wait failed after {took:?}: {error}");
}

#[test]
fn a_restart_the_host_did_not_see_is_found_by_its_next_call() {
    let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
    let mut dev = connect(&qemu);
    let held = dev.allocate(64, 64).expect("allocate");
    dev.set_profiling(true).expect("profiling on");
    // The announcement arrives unread; the next request gets the
    // firmware's `HandshakeRequired` answer, or the announcement first.
    reset_and_reboot(&qemu);
    let error = dev
        .allocate(64, 64)
        .expect_err("the new boot has no session");
    assert_eq!(error.kind(), ErrorKind::DeviceFault, "{error}");
    recovers(&qemu, &mut dev, &[held]);
    // The new session profiles as the old one did.
    let (q, x) = (QueueId(0), dev.allocate(64, 64).expect("allocate"));
    let fence = dev.fill(q, x, 64, 0).expect("fill");
    dev.wait(fence, ANSWER).expect("fill");
    let t = TensorDesc::new(x, DType::F32, Shape::new(&[16]).expect("shape"));
    let op = OpDesc {
        kind: OpKind::Unary(Unary::RELU),
        inputs: &[t],
        output: t,
        op_id: 9,
    };
    let fence = dev.launch(q, &op).expect("launch");
    dev.wait(fence, ANSWER).expect("relu");
    std::thread::sleep(Duration::from_millis(50));
    let mut events = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); 16];
    let drained = dev.drain_events(&mut events).expect("drain");
    assert!(
        events[..drained.events].iter().any(|e| e.op_id == 9),
        "no event of op 9 after the restart: {:?}",
        &events[..drained.events]
    );
}

/// Presses the board's reset and waits for the second boot's log line.
fn reset_and_reboot(qemu: &Qemu) {
    qemu.system_reset()
        .expect("QEMU's monitor resets the board");
    assert!(
        wait_for_boots(qemu, 2),
        "no second boot; logs:\n{}",
        qemu.logs().join("\n")
    );
}

fn wait_for_boots(qemu: &Qemu, n: usize) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if boots(qemu) >= n {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Remote-bus mode: the host's driver over `LinkTransport`. The device's
/// memory went with the restart, and the driver on the host still hands it
/// out: every call fails until the caller reopens the link.
#[test]
fn remote_bus_a_restart_fails_every_call_until_the_link_is_reopened() {
    use tensorplug_device_fpga::transport::link::LinkTransport;
    use tensorplug_device_fpga::transport::{Error, Transport};
    let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
    let stream = qemu.uart.try_clone().expect("clone the UART socket");
    stream.set_read_timeout(Some(ANSWER)).expect("timeout");
    let mut link = LinkTransport::connect(stream, 10_000).expect("handshake");
    let id = link.read_reg(0).expect("ID register");
    reset_and_reboot(&qemu);
    for call in ["the first", "a later"] {
        let error = link
            .read_reg(0)
            .expect_err("the restarted device lost its memory");
        assert_eq!(error, Error::Restarted, "{call} call after the restart");
    }
    link.reopen().expect("a new session");
    assert_eq!(link.read_reg(0), Ok(id), "the link did not reopen");
}
