//! The host's end of a link to a device (`docs/link-protocol.md`): a TCP
//! connection or a UART, opened with bounded waits, as one
//! [`LinkStream`]. Two users share it:
//!
//! - the op-level device items `mcu-tcp:<host:port>` and `mcu-serial:<tty>`
//!   ([`open_mcu`]: a [`RemoteAccelerator`] to a driver on an MCU), which any
//!   plugin offers by calling it for the items it does not know;
//! - the reference FPGA's remote-bus items `tcp:` and `serial:`
//!   (`plugin-fpga`, its driver over `LinkTransport` on a [`Link`]).
//!
//! No TensorFlow here, and nothing of one device.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use tensorplug_core::accelerator::OpDecl;
use tensorplug_core::link::LinkStream;

mod client;

pub use client::{OP_LEVEL_VERSION, RemoteAccelerator, RemoteError};

/// Budget for connecting, and for each answer of the device, unless the
/// plugin's wait budget (`TENSORPLUG_TIMEOUT_MS`) is set: then that.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The UART's baud rate setting (`TENSORPLUG_SERIAL_BAUD`), read by the
/// plugin and passed to [`serial`] and [`open_mcu`].
pub const SERIAL_BAUD: &str = "SERIAL_BAUD";
/// The baud rate when [`SERIAL_BAUD`] is unset.
pub const DEFAULT_SERIAL_BAUD: u32 = 115_200;

/// The op-level device items, for a backend's `DEVICE_KINDS`.
pub const MCU_KINDS: &str = "`mcu-tcp:<host:port>` or `mcu-serial:<tty>`";

/// An open link: a TCP connection or a UART.
pub enum Link {
    /// `…tcp:<host:port>`.
    Tcp(TcpStream),
    /// `…serial:<tty>`.
    Serial(Box<dyn serialport::SerialPort>),
}

/// A TCP connection to `addr` (`host:port`), without Nagle's delay and
/// with reads bounded by `timeout`.
///
/// # Errors
/// A message naming the address and the cause.
pub fn tcp(addr: &str, timeout: Duration) -> Result<Link, String> {
    let target = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{addr}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{addr}` resolves to nothing"))?;
    let stream = TcpStream::connect_timeout(&target, timeout)
        .map_err(|e| format!("cannot connect to {target}: {e}"))?;
    stream
        .set_nodelay(true)
        .and_then(|()| stream.set_read_timeout(Some(timeout)))
        .map_err(|e| format!("cannot configure the socket: {e}"))?;
    Ok(Link::Tcp(stream))
}

/// The UART at `path`: 8N1, no flow control, raw, at `baud`, with reads
/// bounded by `timeout`.
///
/// # Errors
/// A message naming the baud rate and the cause.
pub fn serial(path: &Path, baud: u32, timeout: Duration) -> Result<Link, String> {
    serialport::new(path.to_string_lossy(), baud)
        .timeout(timeout)
        .open()
        .map(Link::Serial)
        .map_err(|e| format!("cannot open it at {baud} baud: {e}"))
}

/// Opens `item` if it is an op-level device item (`mcu-tcp:`,
/// `mcu-serial:` at `baud`) and connects a [`RemoteAccelerator`] to the
/// MCU; `None` for any other item. `vendor_ops` are the plugin's
/// declarations of its own ops, in code order: the device's info declares
/// those the MCU lists (`RemoteAccelerator::connect_with_vendor_ops`).
pub fn open_mcu(
    item: &str,
    baud: u32,
    timeout: Duration,
    vendor_ops: &'static [&'static OpDecl],
) -> Option<Result<RemoteAccelerator<Link>, String>> {
    let link = if let Some(addr) = item.strip_prefix("mcu-tcp:") {
        tcp(addr, timeout).map_err(|e| format!("the MCU: {e}"))
    } else {
        let tty = item.strip_prefix("mcu-serial:")?;
        serial(Path::new(tty), baud, timeout)
    };
    Some(link.and_then(|link| {
        RemoteAccelerator::connect_with_vendor_ops(link, timeout, vendor_ops)
            .map_err(|e| e.to_string())
    }))
}

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Serial(s) => s.read(buf),
        }
    }
}

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Serial(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.flush(),
            Self::Serial(s) => s.flush(),
        }
    }
}

impl LinkStream for Link {
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        match self {
            Self::Tcp(s) => LinkStream::set_read_timeout(s, timeout),
            Self::Serial(s) => s
                .set_timeout(timeout.max(Duration::from_millis(1)))
                .map_err(io::Error::other),
        }
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read_ready(buf),
            Self::Serial(s) => match s.bytes_to_read().map_err(io::Error::other)? {
                0 => Err(io::ErrorKind::WouldBlock.into()),
                waiting => {
                    let n = buf
                        .len()
                        .min(usize::try_from(waiting).unwrap_or(usize::MAX));
                    s.read(&mut buf[..n])
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed_port() -> u16 {
        // Bind then drop: the port is (almost certainly) closed now.
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn other_items_are_not_ours_and_bad_targets_are_clear_errors() {
        assert!(open_mcu("sim", DEFAULT_SERIAL_BAUD, ANSWER_TIMEOUT, &[]).is_none());
        assert!(open_mcu("tcp:127.0.0.1:1", DEFAULT_SERIAL_BAUD, ANSWER_TIMEOUT, &[]).is_none());
        let Some(Err(error)) = open_mcu(
            "mcu-serial:/dev/tty-tensorplug-missing",
            9600,
            ANSWER_TIMEOUT,
            &[],
        ) else {
            panic!("opened a missing tty");
        };
        assert!(error.contains("cannot open it at 9600 baud"), "{error}");
        let port = closed_port();
        let Some(Err(error)) = open_mcu(
            &format!("mcu-tcp:127.0.0.1:{port}"),
            9600,
            ANSWER_TIMEOUT,
            &[],
        ) else {
            panic!("connected to a closed port");
        };
        assert!(
            error.contains(&format!("the MCU: cannot connect to 127.0.0.1:{port}")),
            "{error}"
        );
        let Err(error) = tcp("no-such-host.invalid:1", ANSWER_TIMEOUT) else {
            panic!("resolved an invalid host");
        };
        assert!(
            error.contains("cannot resolve `no-such-host.invalid:1`"),
            "{error}"
        );
    }

    /// A UART whose other end goes away (a USB adapter unplugged; here a
    /// pty's master closed) fails the next read at once: a hang-up is not
    /// silence, and must not wait out the answer timeout.
    #[cfg(unix)]
    #[test]
    fn a_tty_that_hangs_up_fails_reads_at_once() {
        let (master, slave) = serialport::TTYPort::pair().expect("a pty pair");
        let path = serialport::SerialPort::name(&slave).expect("the pty's name");
        let mut link = serial(Path::new(&path), DEFAULT_SERIAL_BAUD, ANSWER_TIMEOUT).unwrap();
        let mut buf = [0u8; 16];
        let quiet = link.read_ready(&mut buf).map_err(|e| e.kind());
        assert_eq!(
            quiet,
            Err(io::ErrorKind::WouldBlock),
            "silence is not an error"
        );
        drop(master);
        let polled = link.read_ready(&mut buf).map_err(|e| e.kind());
        assert!(
            matches!(polled, Err(kind) if kind != io::ErrorKind::WouldBlock),
            "{polled:?}"
        );
        link.set_read_timeout(ANSWER_TIMEOUT).unwrap();
        let started = std::time::Instant::now();
        let read = link.read(&mut buf).map_err(|e| e.kind());
        assert_eq!(read, Err(io::ErrorKind::BrokenPipe));
        assert!(
            started.elapsed() < ANSWER_TIMEOUT / 2,
            "{:?}",
            started.elapsed()
        );
    }
}
