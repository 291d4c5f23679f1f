//! Devices whose driver runs on an MCU: the link's op-level mode
//! (`docs/link-protocol.md`). Any backend whose firmware serves
//! `tensorplug_core::link::OpServer` gets these two device kinds by calling
//! [`open`] for items it does not know:
//!
//! - `mcu-tcp:<host:port>`: the MCU's UART on a TCP socket (QEMU, a
//!   serial-to-network bridge);
//! - `mcu-serial:<tty>`: the MCU's UART, 8N1, raw, at the `SERIAL_BAUD`
//!   setting (default 115200).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use tensorplug_core::link::{LinkStream, RemoteAccelerator};

use crate::devices::{DynAccelerator, erase};
use crate::{OpenError, settings};

/// The device kinds of this module, for a backend's `DEVICE_KINDS`.
pub const KINDS: &str = "`mcu-tcp:<host:port>` or `mcu-serial:<tty>`";

/// Budget for connecting, and for each answer of the MCU.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The UART's baud rate setting (`TENSORPLUG_SERIAL_BAUD`).
pub const SERIAL_BAUD: &str = "SERIAL_BAUD";
/// The baud rate when [`SERIAL_BAUD`] is unset.
pub const DEFAULT_SERIAL_BAUD: u32 = 115_200;

/// Opens `item` if it is an MCU device kind; `None` for any other item.
pub fn open(item: &str) -> Option<Result<Box<DynAccelerator>, OpenError>> {
    if let Some(addr) = item.strip_prefix("mcu-tcp:") {
        return Some(open_tcp(addr));
    }
    item.strip_prefix("mcu-serial:")
        .map(|tty| open_serial(Path::new(tty)))
}

/// `mcu-tcp:<host:port>`.
pub fn open_tcp(addr: &str) -> Result<Box<DynAccelerator>, OpenError> {
    let target = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{addr}`: {e}"))?
        .next()
        .ok_or("the address resolves to nothing")?;
    let stream = TcpStream::connect_timeout(&target, ANSWER_TIMEOUT)
        .map_err(|e| format!("cannot connect to the MCU at {target}: {e}"))?;
    stream
        .set_nodelay(true)
        .map_err(|e| format!("cannot configure the socket: {e}"))?;
    connect(stream)
}

/// `mcu-serial:<tty>`.
pub fn open_serial(path: &Path) -> Result<Box<DynAccelerator>, OpenError> {
    let baud = settings::positive(SERIAL_BAUD, DEFAULT_SERIAL_BAUD, "baud rate")?;
    let port = serialport::new(path.to_string_lossy(), baud)
        .timeout(ANSWER_TIMEOUT)
        .open()
        .map_err(|e| format!("cannot open it at {baud} baud: {e}"))?;
    connect(SerialLink(port))
}

fn connect<S: LinkStream + Send + 'static>(stream: S) -> Result<Box<DynAccelerator>, OpenError> {
    let accel = RemoteAccelerator::connect(stream, ANSWER_TIMEOUT).map_err(|e| e.to_string())?;
    Ok(erase(accel))
}

/// A serial port as a [`LinkStream`].
struct SerialLink(Box<dyn serialport::SerialPort>);

impl Read for SerialLink {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for SerialLink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl LinkStream for SerialLink {
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.0
            .set_timeout(timeout.max(Duration::from_millis(1)))
            .map_err(io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_items_are_not_ours_and_bad_targets_are_clear_errors() {
        assert!(open("sim").is_none());
        assert!(open("tcp:127.0.0.1:1").is_none());
        let Some(Err(error)) = open("mcu-serial:/dev/tty-tensorplug-missing") else {
            panic!("opened a missing tty");
        };
        assert!(error.to_string().contains("cannot open it at"), "{error}");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let Some(Err(error)) = open(&format!("mcu-tcp:127.0.0.1:{port}")) else {
            panic!("connected to a closed port");
        };
        assert!(
            error.to_string().contains("cannot connect to the MCU"),
            "{error}"
        );
    }
}
