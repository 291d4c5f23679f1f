//! `tcp:<host:port>` and `serial:<tty>`: the reference FPGA driver over the
//! link protocol (`LinkTransport`, `docs/link-protocol.md`) on a TCP
//! connection or a UART, to a device's MCU or to
//! `tensorplug-model-server --link`.

use super::DynAccelerator;
use crate::error::{Error, Result};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;
use tensorplug_device_fpga::transport::link::LinkTransport;

/// Budget for connecting, and for each answer of the device.
const LINK_TIMEOUT: Duration = Duration::from_secs(5);

/// The UART's baud rate.
pub const SERIAL_BAUD_ENV: &str = "TENSORPLUG_SERIAL_BAUD";
/// The baud rate when [`SERIAL_BAUD_ENV`] is unset.
pub const DEFAULT_SERIAL_BAUD: u32 = 115_200;

/// [`SERIAL_BAUD_ENV`]'s value (`None`: unset) as a baud rate.
pub fn parse_baud(value: Option<&str>) -> std::result::Result<u32, String> {
    super::positive_setting(SERIAL_BAUD_ENV, value, DEFAULT_SERIAL_BAUD, "baud rate")
}

/// `serial:<tty>`: 8N1, no flow control, raw, at [`SERIAL_BAUD_ENV`].
pub fn open_serial(path: &std::path::Path) -> Result<Box<DynAccelerator>> {
    let fail = |reason: String| Error::Open {
        spec: format!("serial:{}", path.display()),
        reason,
    };
    let baud = parse_baud(std::env::var(SERIAL_BAUD_ENV).ok().as_deref()).map_err(fail)?;
    let port = serialport::new(path.to_string_lossy(), baud)
        .timeout(LINK_TIMEOUT)
        .open()
        .map_err(|e| fail(format!("cannot open it at {baud} baud: {e}")))?;
    open_link(port, fail)
}

pub fn open_tcp(addr: &str) -> Result<Box<DynAccelerator>> {
    let fail = |reason: String| Error::Open {
        spec: format!("tcp:{addr}"),
        reason,
    };
    let target = addr
        .to_socket_addrs()
        .map_err(|e| fail(format!("cannot resolve the address: {e}")))?
        .next()
        .ok_or_else(|| fail("the address resolves to nothing".into()))?;
    let stream = TcpStream::connect_timeout(&target, LINK_TIMEOUT).map_err(|e| {
        fail(format!(
            "cannot connect to {target}: {e} (is the device's link server, e.g. \
             `tensorplug-model-server --link tcp:{addr}`, running?)"
        ))
    })?;
    stream
        .set_nodelay(true)
        .and_then(|()| stream.set_read_timeout(Some(LINK_TIMEOUT)))
        .map_err(|e| fail(format!("cannot configure the socket: {e}")))?;
    open_link(stream, fail)
}

/// The link handshake and the driver's bring-up on `stream`.
fn open_link<S: std::io::Read + std::io::Write + Send + 'static>(
    stream: S,
    fail: impl Fn(String) -> Error,
) -> Result<Box<DynAccelerator>> {
    let timeout_ms = LINK_TIMEOUT.as_millis() as u32;
    let transport = LinkTransport::connect(stream, timeout_ms).map_err(|e| fail(e.to_string()))?;
    super::bring_up(transport, fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baud_defaults_and_refuses_nonsense() {
        assert_eq!(parse_baud(None), Ok(DEFAULT_SERIAL_BAUD));
        assert_eq!(parse_baud(Some("921600")), Ok(921_600));
        for bad in ["0", "fast", "-9600"] {
            let error = parse_baud(Some(bad)).unwrap_err();
            assert!(error.contains("TENSORPLUG_SERIAL_BAUD"), "{error}");
        }
    }

    #[test]
    fn a_missing_tty_is_a_clear_open_error() {
        let Err(error) = open_serial(std::path::Path::new("/dev/tty-tensorplug-missing")) else {
            panic!("opened a tty that does not exist");
        };
        let text = error.to_string();
        assert!(
            text.contains("serial:/dev/tty-tensorplug-missing") && text.contains("cannot open"),
            "{text}"
        );
    }

    #[test]
    fn nobody_listening_is_a_clear_open_error() {
        // Bind then drop: the port is (almost certainly) closed now.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let Err(error) = open_tcp(&format!("127.0.0.1:{port}")) else {
            panic!("connected to a closed port");
        };
        let text = error.to_string();
        assert!(
            text.contains(&format!("tcp:127.0.0.1:{port}")) && text.contains("cannot connect"),
            "{text}"
        );
    }
}
