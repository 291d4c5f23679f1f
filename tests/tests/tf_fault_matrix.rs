//! The fault matrix: a Keras `fit` on `/device:FPGA:0` while the
//! device's own process dies (SIGKILL) or freezes (SIGSTOP), for each
//! transport with a device process: `pcie:` and `tcp:` (the model server)
//! and `mcu-tcp:` (the firmware under QEMU; some cases also with a `tcp:`
//! item on the firmware's UART, the remote-bus mode, and `mcu-serial:` on a
//! pty forwarded to it). The `sim` device's faults are
//! injected in the model (`tf_kernels.rs`, `tf_variables.rs`).
//!
//! Each case: the fit fails within a bound, with a `tf.errors` error naming
//! the op and the device; no variable is left half-updated (each holds its
//! value from before the failed step or after it, or fails to read naming
//! the device); the process goes on and the CPU still computes; then, with the device back (restarted, or resumed), a new process
//! predicts on it, equal to the CPU (`tests/python/tf_fault_fit.py`).
//! `docs/reliability.md` has the table.
//!
//! `cargo test` runs each fault once and each transport but `serial:` at
//! least once (8 cases, about 2 minutes alone); the cases marked ignored complete the grid
//! (`cargo xtask test --fault-matrix`, or `-- --include-ignored`).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tensorplug_tests::model_server::ModelServer;
use tensorplug_tests::qemu::Qemu;
use tensorplug_tests::wire::Wire;

/// The device wait budget the TF process runs with; on a link it bounds
/// each answer too (not the link's own 5 s default).
const TIMEOUT_MS: &str = "6000";
/// One case at a time: two TF processes, their devices and QEMU on two
/// cores starve a healthy device past its timeout before any fault.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// How long the harness waits for the fitting process to end after the
/// fault before it calls it a hang.
const HANG: Duration = Duration::from_secs(90);

/// A device in a process of its own; a link's device is reached through a
/// [`Wire`] that can drop the connection or corrupt a byte.
enum Device {
    Bar(ModelServer),
    Link(ModelServer, Wire),
    /// The firmware, and the item's scheme: `mcu-tcp` (op-level) or `tcp`
    /// (remote-bus: the reference driver on the host).
    Firmware(Qemu, Wire, &'static str),
    /// The firmware reached as a tty: a pty whose other end is forwarded to
    /// QEMU's UART, and the item's scheme: `mcu-serial` (op-level) or
    /// `serial` (remote-bus).
    SerialFirmware(Qemu, Pty, &'static str),
}

/// A pty pair whose master end is forwarded to and from a QEMU UART; the
/// slave's path is the TF item's tty. When QEMU's end closes, the
/// forwarding ends and closes the master.
struct Pty {
    path: String,
    /// Kept open so that the slave's path stays valid between openings.
    _slave: serialport::TTYPort,
    /// Flip one bit in the next bytes the device sends.
    corrupt_next: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Milliseconds to hold the device's next bytes back.
    delay_next_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Stop forwarding and close the master: the tty hangs up, as a USB
    /// serial adapter pulled out does; the MCU runs on.
    unplug: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Pty {
    fn forward(uart: &TcpStream) -> Self {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let (master, slave) = tensorplug_tests::pty_pair();
        let path = serialport::SerialPort::name(&slave).expect("the pty's name");
        let mut to_tty = master.try_clone_native().expect("the master's clone");
        let mut from_tty = master;
        serialport::SerialPort::set_timeout(&mut from_tty, Duration::from_millis(50))
            .expect("a read timeout");
        let (mut from_uart, mut to_uart) = (
            uart.try_clone().expect("the UART"),
            uart.try_clone().expect("the UART"),
        );
        let closed = std::sync::Arc::new(AtomicBool::new(false));
        let closing = closed.clone();
        let corrupt_next = std::sync::Arc::new(AtomicBool::new(false));
        let corrupt = corrupt_next.clone();
        let delay_next_ms = std::sync::Arc::new(AtomicU64::new(0));
        let delay = delay_next_ms.clone();
        let unplug = std::sync::Arc::new(AtomicBool::new(false));
        let unplugged = unplug.clone();
        // Reads time out, so that an unplug ends the forwarding promptly.
        // The timeout is the socket's, so `qemu.uart` and every clone of it
        // have it too: nothing else may read the UART while a pty forwards.
        from_uart
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("a read timeout on the UART");
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Why the forwarding ended, for a case that fails: the tty's
            // path goes away with the master.
            let ended = loop {
                if unplugged.load(Ordering::SeqCst) {
                    break "unplugged".to_string();
                }
                match from_uart.read(&mut buf) {
                    Ok(0) => break "the UART closed".to_string(),
                    Ok(n) => {
                        let ms = delay.swap(0, Ordering::SeqCst);
                        if ms > 0 {
                            std::thread::sleep(Duration::from_millis(ms));
                        }
                        if corrupt.swap(false, Ordering::SeqCst) {
                            buf[n / 2] ^= 0x10;
                        }
                        if let Err(e) = to_tty.write_all(&buf[..n]) {
                            break format!("writing to the pty's master: {e}");
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => break format!("reading the UART: {e}"),
                }
            };
            eprintln!("pty forwarding ended: {ended}");
            closing.store(true, Ordering::Release);
        });
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !closed.load(Ordering::Acquire) {
                match from_tty.read(&mut buf) {
                    Ok(n) => {
                        if to_uart.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    // No slave open: TF has not opened it yet, or closed it.
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self {
            path,
            _slave: slave,
            corrupt_next,
            delay_next_ms,
            unplug,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Pcie,
    Tcp,
    Mcu,
    /// The firmware in remote-bus mode (a `tcp:` item on its UART).
    McuBus,
    /// The firmware as a tty (`mcu-serial:` on a pty).
    McuSerial,
    /// The firmware in remote-bus mode as a tty (`serial:` on a pty).
    McuBusSerial,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    Kill,
    Freeze,
    /// The connection dropped, the device alive (a link's; a tty's
    /// adapter unplugged).
    Drop,
    /// One bit flipped in what the device sends (a link's or a tty's).
    Corrupt,
    /// What the device sends cut short (its second half lost), then a bit
    /// flipped in what it sends next (a link's).
    CutThenCorrupt,
    /// One answer held back for half the budget (a link's or a tty's): the fit must go
    /// on. The case then drops the connection to end it.
    Slow,
    /// The board's reset pressed (QEMU's monitor, `system_reset`).
    Reset,
    /// The firmware's main loop wedged (a debugger); its watchdog resets it.
    Wedge,
}

impl Device {
    fn start(transport: Transport, fault: Fault) -> Self {
        match transport {
            // One BAR file per case, so no case sees another's leftovers.
            Transport::Pcie => Self::Bar(ModelServer::start(&format!("fault-matrix-{fault:?}"))),
            Transport::Tcp => {
                let server = ModelServer::start_link();
                let addr = server.ready.trim_start_matches("tcp:").to_string();
                let wire = Wire::start(move || TcpStream::connect(&addr)).expect("the wire");
                Self::Link(server, wire)
            }
            Transport::McuSerial | Transport::McuBusSerial => {
                let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
                assert!(qemu.wait_for_log("tensorplug firmware", Duration::from_secs(10)));
                let pty = Pty::forward(&qemu.uart);
                let scheme = if matches!(transport, Transport::McuSerial) {
                    "mcu-serial"
                } else {
                    "serial"
                };
                Self::SerialFirmware(qemu, pty, scheme)
            }
            Transport::Mcu | Transport::McuBus => {
                let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
                assert!(qemu.wait_for_log("tensorplug firmware", Duration::from_secs(10)));
                let uart = qemu.uart.try_clone().expect("the UART's socket");
                let wire = Wire::start(move || uart.try_clone()).expect("the wire");
                let scheme = if matches!(transport, Transport::Mcu) {
                    "mcu-tcp"
                } else {
                    "tcp"
                };
                Self::Firmware(qemu, wire, scheme)
            }
        }
    }

    /// The `TENSORPLUG_DEVICE` item.
    fn item(&self) -> String {
        match self {
            Self::Bar(s) => format!("pcie:{}", s.file.display()),
            Self::Link(_, wire) => format!("tcp:127.0.0.1:{}", wire.port),
            Self::Firmware(_, wire, scheme) => format!("{scheme}:127.0.0.1:{}", wire.port),
            Self::SerialFirmware(_, pty, scheme) => format!("{scheme}:{}", pty.path),
        }
    }

    fn break_it(&mut self, fault: Fault) {
        match (self, fault) {
            (Self::Bar(s) | Self::Link(s, _), Fault::Kill) => s.kill(),
            (Self::Bar(s) | Self::Link(s, _), Fault::Freeze) => s.freeze(true),
            (Self::Firmware(qemu, ..) | Self::SerialFirmware(qemu, ..), Fault::Kill) => qemu.kill(),
            (Self::Firmware(qemu, ..) | Self::SerialFirmware(qemu, ..), Fault::Freeze) => {
                qemu.freeze(true);
            }
            (Self::Link(_, wire) | Self::Firmware(_, wire, _), Fault::Drop) => {
                wire.drop_connection();
            }
            (Self::Link(_, wire) | Self::Firmware(_, wire, _), Fault::Corrupt) => {
                wire.corrupt_next();
            }
            (Self::Link(_, wire) | Self::Firmware(_, wire, _), Fault::CutThenCorrupt) => {
                wire.cut_then_corrupt();
            }
            (Self::SerialFirmware(_, pty, _), Fault::Drop) => {
                pty.unplug.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            (Self::SerialFirmware(_, pty, _), Fault::Corrupt) => {
                pty.corrupt_next
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            (Self::Firmware(qemu, ..) | Self::SerialFirmware(qemu, ..), Fault::Reset) => {
                qemu.system_reset()
                    .expect("QEMU's monitor resets the board");
            }
            (Self::Firmware(qemu, ..), Fault::Wedge) => {
                qemu.inject(tensorplug_tests::qemu::Fault::Wedge)
                    .expect("the debugger wedges the main loop");
            }
            (_, fault) => unreachable!("no {fault:?} for this device"),
        }
    }

    /// Holds one answer back for half the budget: the fit must finish
    /// another epoch, no error.
    fn slow_answer(&self, what: &str, out: &mpsc::Receiver<String>) {
        let budget: u64 = TIMEOUT_MS.parse().expect("a number");
        match self {
            Self::Link(_, wire) | Self::Firmware(_, wire, _) => {
                wire.delay_next(Duration::from_millis(budget / 2));
            }
            Self::SerialFirmware(_, pty, _) => pty
                .delay_next_ms
                .store(budget / 2, std::sync::atomic::Ordering::SeqCst),
            Self::Bar(_) => unreachable!("no wire to slow"),
        }
        let lines: Vec<String> = (0..2)
            .map_while(|_| out.recv_timeout(Duration::from_secs(60)).ok())
            .collect();
        assert_eq!(
            lines,
            ["training", "training"],
            "{what}: the fit did not go on through a slow answer"
        );
    }

    /// The device back: resumed if frozen, a new one if killed, plugged in
    /// again (a new tty) if unplugged, else the same one (a new client of
    /// its wire).
    fn back(self, transport: Transport, fault: Fault) -> Self {
        match (self, fault) {
            (old, Fault::Kill) => {
                drop(old);
                Self::start(transport, fault)
            }
            (device, Fault::Freeze) => {
                match &device {
                    Self::Bar(s) | Self::Link(s, _) => s.freeze(false),
                    Self::Firmware(qemu, ..) | Self::SerialFirmware(qemu, ..) => {
                        qemu.freeze(false);
                    }
                }
                device
            }
            (Self::SerialFirmware(qemu, _, scheme), Fault::Drop) => {
                let pty = Pty::forward(&qemu.uart);
                Self::SerialFirmware(qemu, pty, scheme)
            }
            (device, _) => device,
        }
    }
}

fn tf(args: &[&str], item: &str) -> Command {
    let mut command = Command::new(tensorplug_tests::python());
    command
        .arg(tensorplug_tests::workspace_root().join("tests/python/tf_fault_fit.py"))
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            tensorplug_tests::plugin_path(),
        )
        .env("TENSORPLUG_DEVICE", item)
        .env("TENSORPLUG_TIMEOUT_MS", TIMEOUT_MS)
        .env_remove("TENSORPLUG_SIM_FAULTS");
    command
}

/// Reads `child`'s stdout lines into a channel.
fn lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn case(transport: Transport, fault: Fault) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("{transport:?} / {fault:?}");
    let mut device = Device::start(transport, fault);
    let stamp = tensorplug_tests::scratch_dir("fault-matrix")
        .join(format!("{transport:?}-{fault:?}.stamp"));
    let stamp_arg = stamp.to_string_lossy().into_owned();
    // An MCU that restarts comes back in the same session's process.
    let restarts = matches!(transport, Transport::Mcu | Transport::McuSerial)
        && matches!(fault, Fault::Reset | Fault::Wedge);
    let mut fit = tf(&["fit", &stamp_arg], &device.item())
        .env(
            "TENSORPLUG_FAULT_SAME_PROCESS",
            if restarts { "1" } else { "0" },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start python");
    let out = lines(&mut fit);
    let mut seen = Vec::new();
    loop {
        match out.recv_timeout(Duration::from_secs(120)) {
            Ok(line) if line == "training" => break,
            Ok(line) => seen.push(line),
            Err(e) => {
                let _ = fit.kill();
                let stderr = fit.wait_with_output().map(|o| o.stderr).unwrap_or_default();
                panic!(
                    "{what}: no epoch finished ({e}): {seen:?}\n{}",
                    String::from_utf8_lossy(&stderr)
                );
            }
        }
    }
    // Mid-fit: the next epoch is under way.
    std::thread::sleep(Duration::from_millis(300));
    let fault = if fault == Fault::Slow {
        device.slow_answer(&what, &out);
        Fault::Drop
    } else {
        fault
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    std::fs::write(&stamp, format!("{:.3}", now.as_secs_f64())).expect("write the stamp");
    device.break_it(fault);

    let deadline = std::time::Instant::now() + HANG;
    let status = loop {
        if let Some(status) = fit.try_wait().expect("wait for python") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = fit.kill();
            panic!("{what}: the fit hung for {HANG:?} after the fault");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout: Vec<String> = out.try_iter().collect();
    let stderr = fit
        .stderr
        .take()
        .map(|mut e| {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
            s
        })
        .unwrap_or_default();
    assert!(
        status.success() && stdout.iter().any(|l| l.starts_with("ok:")),
        "{what}: {status}\nstdout: {stdout:#?}\nstderr (tail): {}",
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    let failed = stdout
        .iter()
        .find(|l| l.starts_with("failed after"))
        .cloned();
    let failed = failed.unwrap_or_default();
    let variables = stdout
        .iter()
        .find(|l| l.starts_with("variables: "))
        .cloned()
        .unwrap_or_else(|| panic!("{what}: the variables were not checked: {stdout:#?}"));
    eprintln!("{what}: {failed}; {variables}");
    if restarts {
        assert!(
            stdout.iter().any(|l| l.starts_with("same process: ")),
            "{what}: the same process did not use the device again: {stdout:#?}"
        );
        // The weights the restart took read as lost, naming it.
        assert!(
            fault != Fault::Reset || variables.contains("lost when it restarted"),
            "{what}: {variables}"
        );
    }
    let message = stdout
        .iter()
        .find(|l| l.starts_with("message: "))
        .cloned()
        .unwrap_or_default();
    match (transport, fault) {
        // TF's SyncAll returns a bool: it logs our status and raises its
        // own text (an event's timeout, found by the SyncAll after it).
        (Transport::Tcp | Transport::Mcu | Transport::McuSerial, Fault::Freeze) => {
            let within = format!("within {TIMEOUT_MS} ms");
            assert!(
                message.contains(&within)
                    || (message.contains("PluggableDevice SyncAll failed")
                        && stderr.contains("synchronize_all_activity: FPGA:0")
                        && stderr.contains(&within)),
                "{what}: the link's answer budget is not TENSORPLUG_TIMEOUT_MS: {message}"
            )
        }
        (Transport::Mcu | Transport::McuSerial, Fault::Reset) => assert!(
            message.contains("the MCU restarted"),
            "{what}: the host did not see the restart: {message}"
        ),
        (_, Fault::Reset) => assert!(
            message.contains("the device restarted, and its memory with it"),
            "{what}: the host did not see the restart: {message}"
        ),
        // The damaged answer after the cut one fails its own call at once:
        // taken for the cut frame's tail, it waited out the budget, and the
        // link then failed every call for one more (the variables' reads).
        (_, Fault::CutThenCorrupt) => assert!(
            !message.contains("within") && !variables.contains("within"),
            "{what}: a call waited out the budget: {message} / {variables}"
        ),
        _ => {}
    }

    let device = device.back(transport, fault);
    let after = tf(&["after"], &device.item())
        .output()
        .expect("cannot start python");
    let after_out = String::from_utf8_lossy(&after.stdout);
    assert!(
        after.status.success() && after_out.contains("ok:"),
        "{what}: with the device back: {}\n{after_out}\n{}",
        after.status,
        String::from_utf8_lossy(&after.stderr)
    );
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn pcie_device_killed_mid_fit() {
    case(Transport::Pcie, Fault::Kill);
}

#[test]
fn pcie_device_frozen_mid_fit() {
    case(Transport::Pcie, Fault::Freeze);
}

#[test]
fn tcp_device_killed_mid_fit() {
    case(Transport::Tcp, Fault::Kill);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn tcp_device_frozen_mid_fit() {
    case(Transport::Tcp, Fault::Freeze);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_firmware_killed_mid_fit() {
    case(Transport::Mcu, Fault::Kill);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_firmware_frozen_mid_fit() {
    case(Transport::Mcu, Fault::Freeze);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_board_reset_mid_fit() {
    case(Transport::Mcu, Fault::Reset);
}

#[test]
fn mcu_main_loop_wedged_mid_fit_and_the_watchdog_resets_it() {
    case(Transport::Mcu, Fault::Wedge);
}

#[test]
fn tcp_connection_dropped_mid_fit() {
    case(Transport::Tcp, Fault::Drop);
}

#[test]
fn tcp_bytes_corrupted_mid_fit() {
    case(Transport::Tcp, Fault::Corrupt);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn tcp_answer_cut_short_then_the_next_damaged_mid_fit() {
    case(Transport::Tcp, Fault::CutThenCorrupt);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_answer_cut_short_then_the_next_damaged_mid_fit() {
    case(Transport::Mcu, Fault::CutThenCorrupt);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_connection_dropped_mid_fit() {
    case(Transport::Mcu, Fault::Drop);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_bytes_corrupted_mid_fit() {
    case(Transport::Mcu, Fault::Corrupt);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn tcp_slow_answer_mid_fit() {
    case(Transport::Tcp, Fault::Slow);
}

#[test]
fn mcu_slow_answer_mid_fit() {
    case(Transport::Mcu, Fault::Slow);
}

#[test]
fn mcu_remote_bus_board_reset_mid_fit() {
    case(Transport::McuBus, Fault::Reset);
}

#[test]
fn mcu_serial_board_reset_mid_fit() {
    case(Transport::McuSerial, Fault::Reset);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_serial_firmware_killed_mid_fit() {
    case(Transport::McuSerial, Fault::Kill);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_serial_firmware_frozen_mid_fit() {
    case(Transport::McuSerial, Fault::Freeze);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_serial_adapter_unplugged_mid_fit() {
    case(Transport::McuSerial, Fault::Drop);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_serial_slow_answer_mid_fit() {
    case(Transport::McuSerial, Fault::Slow);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_serial_bytes_corrupted_mid_fit() {
    case(Transport::McuSerial, Fault::Corrupt);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_remote_bus_serial_adapter_unplugged_mid_fit() {
    case(Transport::McuBusSerial, Fault::Drop);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_remote_bus_serial_bytes_corrupted_mid_fit() {
    case(Transport::McuBusSerial, Fault::Corrupt);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_remote_bus_serial_board_reset_mid_fit() {
    case(Transport::McuBusSerial, Fault::Reset);
}

#[test]
#[ignore = "full grid only: cargo xtask test --fault-matrix"]
fn mcu_remote_bus_serial_firmware_killed_mid_fit() {
    case(Transport::McuBusSerial, Fault::Kill);
}
