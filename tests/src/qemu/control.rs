//! QEMU's own controls, as a developer uses them on a board: its gdbstub,
//! to write a firmware variable (`set var` in gdb), and its monitor, to
//! press reset (`system_reset`). Both on Unix sockets in a directory of
//! the [`Qemu`](super::Qemu) that is removed with it.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a control may take to answer.
const ANSWER: Duration = Duration::from_secs(10);

/// The sockets of one QEMU.
pub(super) struct Controls {
    dir: PathBuf,
}

impl Controls {
    /// A fresh, empty directory for the sockets.
    pub(super) fn new() -> io::Result<Self> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tensorplug-qemu-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// QEMU's arguments for the gdbstub and the monitor.
    pub(super) fn args(&self) -> [String; 4] {
        let socket = |name: &str| {
            format!(
                "unix:{},server=on,wait=off",
                self.dir.join(name).to_string_lossy()
            )
        };
        [
            "-gdb".into(),
            socket("gdb.sock"),
            "-monitor".into(),
            socket("monitor.sock"),
        ]
    }

    /// Writes `bytes` at `addr` through the gdbstub: attaching stops the
    /// CPU, detaching resumes it.
    pub(super) fn write_memory(&self, addr: u64, bytes: &[u8]) -> io::Result<()> {
        let mut gdb = connect(&self.dir.join("gdb.sock"))?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let len = bytes.len();
        gdb_command(&mut gdb, &format!("M{addr:x},{len:x}:{hex}"))?;
        gdb_command(&mut gdb, "D")
    }

    /// Runs one monitor command and returns what it printed.
    pub(super) fn monitor(&self, command: &str) -> io::Result<String> {
        let mut monitor = connect(&self.dir.join("monitor.sock"))?;
        read_until(&mut monitor, "(qemu) ")?;
        monitor.write_all(format!("{command}\n").as_bytes())?;
        let out = read_until(&mut monitor, "(qemu) ")?;
        Ok(out.trim_end_matches("(qemu) ").to_string())
    }
}

impl Drop for Controls {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn connect(path: &Path) -> io::Result<UnixStream> {
    let stream = UnixStream::connect(path)
        .map_err(|e| io::Error::new(e.kind(), format!("QEMU's {}: {e}", path.display())))?;
    stream.set_read_timeout(Some(ANSWER))?;
    Ok(stream)
}

fn read_until(stream: &mut UnixStream, end: &str) -> io::Result<String> {
    let mut text = Vec::new();
    let mut byte = [0u8; 1];
    while !text.ends_with(end.as_bytes()) {
        if stream.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "QEMU closed its monitor",
            ));
        }
        text.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Sends one command of the GDB remote protocol and waits for its `OK`.
/// Stop replies (`T…`, `S…`: QEMU sends one when the CPU stops for the
/// attach) are skipped.
fn gdb_command(stream: &mut UnixStream, body: &str) -> io::Result<()> {
    let sum = body.bytes().fold(0u8, u8::wrapping_add);
    stream.write_all(format!("${body}#{sum:02x}").as_bytes())?;
    loop {
        let answer = gdb_packet(stream)?;
        if !answer.starts_with(['T', 'S']) {
            return expect_ok(&answer);
        }
    }
}

/// Reads the next packet of the GDB remote protocol and returns its body,
/// acknowledging it.
fn gdb_packet(stream: &mut UnixStream) -> io::Result<String> {
    let mut byte = [0u8; 1];
    loop {
        // Acks (`+`) come before the answer; anything else is noise.
        stream.read_exact(&mut byte)?;
        if byte[0] == b'$' {
            break;
        }
        if byte[0] == b'-' {
            return Err(io::Error::other("the gdbstub asked for a resend"));
        }
    }
    let mut answer = Vec::new();
    loop {
        stream.read_exact(&mut byte)?;
        if byte[0] == b'#' {
            break;
        }
        answer.push(byte[0]);
    }
    let mut checksum = [0u8; 2];
    stream.read_exact(&mut checksum)?;
    stream.write_all(b"+")?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

fn expect_ok(answer: &str) -> io::Result<()> {
    if answer == "OK" {
        Ok(())
    } else {
        Err(io::Error::other(format!("the gdbstub answered {answer:?}")))
    }
}
