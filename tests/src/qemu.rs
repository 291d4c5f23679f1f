//! The MCU firmware under QEMU (`mps2-an386`), as the HIL tests and `cargo
//! xtask hil` run it: built once per process, booted with its UART on a TCP
//! connection to a socket we bound on 127.0.0.1 (QEMU connects, as defmt's
//! `qemu-run` does), its defmt logs (semihosting stdout) decoded as they
//! come. Dropping a [`Qemu`] kills it; every wait is bounded.

mod control;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long QEMU may take to boot and connect.
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(20);

/// The firmware ELF, built once per process (`cargo build --release` in
/// `firmware/`, its own workspace and target dir), or the one
/// `TENSORPLUG_FIRMWARE_ELF` names (e.g. an older commit's, to measure
/// both in one session).
pub fn firmware_elf() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| match std::env::var_os("TENSORPLUG_FIRMWARE_ELF") {
        Some(elf) => PathBuf::from(elf),
        None => build_firmware(&[], "target"),
    })
    .clone()
}

/// The firmware built with the `selftest-panic` feature (a variant: never
/// in the real one's place): it panics right after booting.
pub fn panicking_firmware_elf() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| build_variant("selftest-panic")).clone()
}

/// The firmware built with the `selftest-requantize` feature (a variant):
/// it checks `tensorplug_core::quant` against the requantize golden
/// vectors, logs the verdict and exits QEMU with it.
pub fn requantize_selftest_elf() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| build_variant("selftest-requantize"))
        .clone()
}

/// The firmware built with the `bench-echo` feature (a variant): it sends
/// every UART byte back, with no link protocol.
pub fn echo_firmware_elf() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| build_variant("bench-echo")).clone()
}

/// The firmware built with `feature`, copied to a path of its own
/// ([`build_in_variants`]).
fn build_variant(feature: &str) -> PathBuf {
    build_in_variants(&["--features", feature], "thumbv7em-none-eabihf", feature)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Builds the firmware with cargo `args` (features) for `target`, and copies
/// its ELF to `firmware/target/variants/tensorplug-firmware-<name>`. The
/// feature variants and the other boards' images (`cargo xtask flash
/// --firmware --board`, `cargo xtask size`) share one target dir,
/// `firmware/target/variants`, so their dependencies build once; cargo
/// writes each build's ELF to the same path, so a file lock holds other
/// processes off from the build to the copy (renamed into place: a QEMU
/// reading the old copy keeps it).
///
/// # Errors
/// Cargo could not run, or the build failed.
pub fn build_in_variants(args: &[&str], target: &str, name: &str) -> Result<PathBuf, String> {
    let dir = crate::workspace_root().join("firmware/target/variants");
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    std::fs::create_dir_all(&dir).map_err(|e| io("creating firmware/target/variants", e))?;
    let lock = std::fs::File::create(dir.join(".build-lock"))
        .map_err(|e| io("the variants' lock file", e))?;
    lock.lock()
        .map_err(|e| io("locking the firmware variants' build", e))?;
    let built = try_build_firmware(args, "target/variants", target)?;
    let copy = dir.join(format!("tensorplug-firmware-{name}"));
    let partial = dir.join(format!(
        ".tensorplug-firmware-{name}.{}",
        std::process::id()
    ));
    std::fs::copy(&built, &partial).map_err(|e| io("copying the firmware", e))?;
    std::fs::rename(&partial, &copy).map_err(|e| io("renaming the firmware into place", e))?;
    Ok(copy)
}

/// A `cargo --config` value that builds the firmware for `target` with
/// the checkout's path left out (`core/src/…`): panic locations of the
/// workspace's crates (path dependencies of `firmware/`, so cargo names
/// them by absolute path) then take the same bytes in every clone, and the
/// image's size (`cargo xtask size`) does not depend on where it is.
/// Cargo appends it to `firmware/.cargo/config.toml`'s rustflags.
pub fn path_independent_build(target: &str) -> String {
    // A TOML literal string: no escapes, so any path but one with a `'`.
    let root = crate::workspace_root();
    format!(
        "target.{target}.rustflags=['--remap-path-prefix={}/=']",
        root.display()
    )
}

fn build_firmware(args: &[&str], target_dir: &str) -> PathBuf {
    try_build_firmware(args, target_dir, "thumbv7em-none-eabihf").unwrap_or_else(|e| panic!("{e}"))
}

fn try_build_firmware(args: &[&str], target_dir: &str, target: &str) -> Result<PathBuf, String> {
    let dir = crate::workspace_root().join("firmware");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--locked", "--target", target])
        .args(args)
        .arg("--config")
        .arg(path_independent_build(target))
        .arg("--target-dir")
        .arg(dir.join(target_dir))
        .current_dir(&dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .status()
        .map_err(|e| format!("cannot run cargo to build the firmware: {e}"))?;
    if !status.success() {
        return Err(format!("building the firmware ({}) failed", args.join(" ")));
    }
    let elf = dir
        .join(target_dir)
        .join(target)
        .join("release/tensorplug-firmware");
    if !elf.is_file() {
        return Err(format!("cargo built no {}", elf.display()));
    }
    Ok(elf)
}

/// The decoded log lines so far.
pub type Logs = Arc<Mutex<Vec<String>>>;

/// A running firmware.
pub struct Qemu {
    child: Child,
    /// The firmware's UART0.
    pub uart: TcpStream,
    logs: Logs,
    elf: PathBuf,
    controls: control::Controls,
}

/// Faults the firmware takes from a debugger (`firmware/src/debug_faults.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// The FPGA silently drops the next command's completion.
    LoseNextCompletion = 1,
    /// The main loop wedges until the watchdog resets the MCU.
    Wedge = 2,
    /// Disarms a pending FPGA fault.
    Clear = 3,
}

impl Qemu {
    /// Boots `elf` and waits (bounded) for its UART to connect.
    pub fn boot(elf: &Path) -> std::io::Result<Self> {
        Self::boot_with(elf, &[])
    }

    /// Boots the link firmware ([`firmware_elf`]) and waits for its boot
    /// announcement ([`Qemu::await_announcement`]): its UART is then ready
    /// for a host's `Hello`.
    ///
    /// # Errors
    /// QEMU did not start, or the firmware did not announce itself.
    pub fn boot_firmware() -> std::io::Result<Self> {
        let mut qemu = Self::boot(&firmware_elf())?;
        qemu.await_announcement(BOOT_TIMEOUT).map_err(|e| {
            std::io::Error::new(e.kind(), format!("{e}; logs:\n{}", qemu.logs().join("\n")))
        })?;
        Ok(qemu)
    }

    /// [`Qemu::boot`] with extra QEMU arguments (e.g. `-d` tracing).
    pub fn boot_with(elf: &Path, extra: &[String]) -> std::io::Result<Self> {
        Self::boot_machine("mps2-an386", "cortex-m4", 0, elf, extra)
    }

    /// Boots `elf` on another QEMU machine (an emulated board's
    /// `[emulator]`, `firmware/boards/*.toml`), its serial port number
    /// `serial` (from 0; the ones before it unconnected) on the UART
    /// connection.
    pub fn boot_machine(
        machine: &str,
        cpu: &str,
        serial: u32,
        elf: &Path,
        extra: &[String],
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let controls = control::Controls::new()?;
        let mut child = Command::new("qemu-system-arm")
            .args(["-cpu", cpu, "-machine", machine])
            .arg("-nographic")
            .args(controls.args())
            .args(["-semihosting-config", "enable=on,target=native"])
            .args((0..serial).flat_map(|_| ["-serial", "null"]))
            .arg("-chardev")
            .arg(format!(
                "socket,id=uart0,server=off,telnet=off,nodelay=on,host=127.0.0.1,port={port}"
            ))
            .args(["-serial", "chardev:uart0"])
            .args(extra)
            .arg("-kernel")
            .arg(elf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot start qemu-system-arm ({e}); `cargo xtask test` installs it"),
                )
            })?;
        let logs = Logs::default();
        decode_logs(elf, child.stdout.take().expect("piped"), logs.clone());
        copy_lines(child.stderr.take().expect("piped"), logs.clone(), "qemu: ");
        match accept_within(&listener, BOOT_TIMEOUT) {
            Ok(uart) => {
                uart.set_nodelay(true)?;
                Ok(Self {
                    child,
                    uart,
                    logs,
                    elf: elf.to_path_buf(),
                    controls,
                })
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let lines = logs.lock().map(|l| l.join("\n")).unwrap_or_default();
                Err(std::io::Error::new(
                    e.kind(),
                    format!("QEMU's UART did not connect within {BOOT_TIMEOUT:?}: {e}\n{lines}"),
                ))
            }
        }
    }

    /// The decoded log lines so far.
    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits (bounded) for a log line containing `needle`.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.logs().iter().any(|line| line.contains(needle)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) QEMU: a firmware that stops answering.
    pub fn freeze(&self, frozen: bool) {
        let signal = if frozen { "-STOP" } else { "-CONT" };
        let _ = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status();
    }

    /// Serves the firmware's UART on a new loopback port (one client at a
    /// time, bytes forwarded both ways), so that a process such as
    /// TensorFlow with `TENSORPLUG_DEVICE=tcp:127.0.0.1:<port>` can reach it.
    pub fn serve_uart(&self) -> std::io::Result<u16> {
        Ok(self.serve_uart_on("127.0.0.1:0")?.port())
    }

    /// [`serve_uart`](Self::serve_uart) on `addr` (`host:port`; port 0
    /// picks one); the address it listens on.
    pub fn serve_uart_on(&self, addr: &str) -> std::io::Result<std::net::SocketAddr> {
        let listener = TcpListener::bind(addr)?;
        let bound = listener.local_addr()?;
        let uart = self.uart.try_clone()?;
        std::thread::spawn(move || {
            while let Ok((client, _)) = listener.accept() {
                let _ = client.set_nodelay(true);
                let (Ok(mut to_uart), Ok(mut from_uart)) = (uart.try_clone(), uart.try_clone())
                else {
                    return;
                };
                let (Ok(mut from_client), mut to_client) = (client.try_clone(), client) else {
                    return;
                };
                let upstream =
                    std::thread::spawn(move || std::io::copy(&mut from_client, &mut to_uart));
                // Ends when the firmware's side closes (QEMU killed).
                let _ = std::io::copy(&mut from_uart, &mut to_client);
                let _ = upstream.join();
            }
        });
        Ok(bound)
    }

    /// Waits (bounded) for the link firmware's boot announcement on the UART,
    /// `Error { HandshakeRequired }` with request id 0, and consumes it.
    ///
    /// # Errors
    /// No frame in time, or another frame first.
    pub fn await_announcement(&mut self, timeout: Duration) -> std::io::Result<()> {
        use tensorplug_core::link::{Decoder, FeedResult, Message, NO_REQUEST, RemoteErrorCode};
        self.uart.set_read_timeout(Some(timeout))?;
        let mut decoder = Decoder::new();
        let mut byte = [0u8; 1];
        loop {
            // One byte at a time: what follows the frame stays unread.
            self.uart.read_exact(&mut byte)?;
            match decoder.feed(&byte) {
                FeedResult::Consumed => {}
                FeedResult::Frame { frame, .. } => {
                    let announced = frame.header.request_id == NO_REQUEST
                        && matches!(&frame.message, Message::Error(e)
                            if e.code == RemoteErrorCode::HandshakeRequired as u16);
                    return if announced {
                        Ok(())
                    } else {
                        Err(std::io::Error::other(format!(
                            "the firmware's first frame was {:?}, not its boot announcement",
                            frame.message
                        )))
                    };
                }
                FeedResult::Error { error, .. } => {
                    return Err(std::io::Error::other(format!(
                        "the firmware's first frame did not decode: {error}"
                    )));
                }
            }
        }
    }

    /// Writes `bytes` into the firmware's static `symbol` through QEMU's
    /// gdbstub (the CPU stops for the write).
    ///
    /// # Errors
    /// No such symbol in the ELF, or the gdbstub failed.
    pub fn write_symbol(&self, symbol: &str, bytes: &[u8]) -> std::io::Result<()> {
        use object::{Object, ObjectSymbol};
        let data = std::fs::read(&self.elf)?;
        let file = object::File::parse(&*data).map_err(std::io::Error::other)?;
        let addr = file
            .symbols()
            .find(|s| s.name() == Ok(symbol))
            .map(|s| s.address())
            .ok_or_else(|| std::io::Error::other(format!("no symbol {symbol} in the ELF")))?;
        self.controls.write_memory(addr, bytes)
    }

    /// Injects `fault` into the firmware, as a debugger would.
    ///
    /// # Errors
    /// As [`Qemu::write_symbol`].
    pub fn inject(&self, fault: Fault) -> std::io::Result<()> {
        self.write_symbol("TENSORPLUG_FAULT", &[fault as u8])
    }

    /// Presses the board's reset (QEMU's monitor, `system_reset`): the MCU
    /// reboots, its UART connection stays.
    ///
    /// # Errors
    /// The monitor failed.
    pub fn system_reset(&self) -> std::io::Result<()> {
        self.controls.monitor("system_reset").map(drop)
    }

    /// Kills QEMU (SIGKILL) and reaps it: a board that loses power.
    pub fn kill(&mut self) {
        self.freeze(false);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process's exit status, if it ended.
    pub fn try_exit(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        self.freeze(false);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn accept_within(listener: &TcpListener, timeout: Duration) -> std::io::Result<TcpStream> {
    listener.set_nonblocking(true)?;
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() > timeout {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no connection",
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Decodes the defmt stream of `elf`'s firmware from `out` into `logs`.
fn decode_logs(elf: &Path, mut out: impl Read + Send + 'static, logs: Logs) {
    let bytes = std::fs::read(elf).unwrap_or_default();
    std::thread::spawn(move || {
        let table = match defmt_decoder::Table::parse(&bytes) {
            Ok(Some(table)) => table,
            other => {
                let why = format!("no defmt table in the firmware ELF: {other:?}");
                logs.lock().map(|mut l| l.push(why)).ok();
                return;
            }
        };
        let mut decoder = table.new_stream_decoder();
        let mut chunk = [0u8; 1024];
        loop {
            let n = match out.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            decoder.received(&chunk[..n]);
            loop {
                match decoder.decode() {
                    Ok(frame) => {
                        let line = frame.display(false).to_string();
                        logs.lock().map(|mut l| l.push(line)).ok();
                    }
                    Err(defmt_decoder::DecodeError::UnexpectedEof) => break,
                    Err(defmt_decoder::DecodeError::Malformed) => {
                        logs.lock()
                            .map(|mut l| l.push("(malformed defmt frame)".into()))
                            .ok();
                        break;
                    }
                }
            }
        }
    });
}

fn copy_lines(mut from: impl Read + Send + 'static, logs: Logs, prefix: &'static str) {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        let mut logs = logs.lock().unwrap_or_else(|e| e.into_inner());
        logs.extend(text.lines().map(|line| format!("{prefix}{line}")));
    });
}

/// Runs `tests/python/tf_qemu_mlp.py` (a Keras MLP `predict` under the
/// profiler) with the FPGA plugin's device `item` (e.g.
/// `mcu-tcp:127.0.0.1:<port>`) reaching the firmware's UART through
/// [`Qemu::serve_uart`]; asserts it passed and shows the device ops in the
/// profile, and returns its stdout.
pub fn tf_mlp_scenario(qemu: &Qemu, kind: &str) -> String {
    let logdir = crate::scratch_dir(&format!("hil-tf-profile-{}", kind.trim_end_matches(':')));
    tf_scenario(
        qemu,
        kind,
        "tf_qemu_mlp.py",
        &[logdir.to_string_lossy().as_ref()],
        &[
            "predict on the firmware's FPGA",
            "profile: /device:GPU:1000 device ops",
        ],
    )
}

/// Runs `tests/python/<script>` with `args` and the FPGA plugin's device
/// `kind` (e.g. `mcu-tcp:`) on the firmware's UART ([`Qemu::serve_uart`]);
/// asserts it passed and printed each of `markers`, and returns its stdout.
pub fn tf_scenario(
    qemu: &Qemu,
    kind: &str,
    script: &str,
    args: &[&str],
    markers: &[&str],
) -> String {
    let port = qemu.serve_uart().expect("serve the UART on loopback");
    let out = Command::new(crate::python())
        .arg(crate::workspace_root().join("tests/python").join(script))
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "0")
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", crate::plugin_path())
        .env("TENSORPLUG_DEVICE", format!("{kind}127.0.0.1:{port}"))
        .output()
        .expect("cannot start python");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "scenario failed ({}):\nstdout:\n{stdout}\nstderr (tail):\n{}\nfirmware logs:\n{}",
        out.status,
        &stderr[stderr.len().saturating_sub(4000)..],
        qemu.logs().join("\n")
    );
    for marker in markers {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    stdout
}

/// Asserts that the family case `case` of `report` ran every member of its
/// family on the device (none refused as undeclared), e.g. `op_int8`.
pub fn assert_every_member_ran(report: &tensorplug_core::conformance::Report, case: &str) {
    use tensorplug_core::conformance::Outcome;
    let found = report.cases.iter().find(|c| c.name == case);
    let outcome = found.map(|c| &c.outcome);
    let ran =
        matches!(outcome, Some(Outcome::Passed(m)) if m.ends_with("refused as undeclared: none"));
    assert!(ran, "{case}: {outcome:?}");
}
