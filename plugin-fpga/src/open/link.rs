//! `tcp:<host:port>` and `serial:<tty>`: the reference FPGA driver over the
//! link protocol (`LinkTransport`, `docs/link-protocol.md`) on a TCP
//! connection or a UART, to a device's MCU or to
//! `tensorplug-model-server --link`.

use super::bring_up;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;
use tensorplug_device_fpga::transport::link::LinkTransport;
use tensorplug_host_bridge::devices::DynAccelerator;
use tensorplug_host_bridge::{OpenError, settings};

/// Budget for connecting, and for each answer of the device.
const LINK_TIMEOUT: Duration = Duration::from_secs(5);

/// The UART's baud rate setting, shared with `mcu-serial:`.
pub use tensorplug_host_bridge::mcu::{DEFAULT_SERIAL_BAUD, SERIAL_BAUD};

/// `serial:<tty>`: 8N1, no flow control, raw, at [`SERIAL_BAUD`].
pub fn open_serial(path: &std::path::Path) -> Result<Box<DynAccelerator>, OpenError> {
    let baud = settings::positive(SERIAL_BAUD, DEFAULT_SERIAL_BAUD, "baud rate")?;
    let port = serialport::new(path.to_string_lossy(), baud)
        .timeout(LINK_TIMEOUT)
        .open()
        .map_err(|e| format!("cannot open it at {baud} baud: {e}"))?;
    open_link(port)
}

/// `tcp:<host:port>`.
pub fn open_tcp(addr: &str) -> Result<Box<DynAccelerator>, OpenError> {
    let target = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the address: {e}"))?
        .next()
        .ok_or("the address resolves to nothing")?;
    let stream = TcpStream::connect_timeout(&target, LINK_TIMEOUT).map_err(|e| {
        format!(
            "cannot connect to {target}: {e} (is the device's link server, e.g. \
             `tensorplug-model-server --link tcp:{addr}`, running?)"
        )
    })?;
    stream
        .set_nodelay(true)
        .and_then(|()| stream.set_read_timeout(Some(LINK_TIMEOUT)))
        .map_err(|e| format!("cannot configure the socket: {e}"))?;
    open_link(stream)
}

/// The link handshake and the driver's bring-up on `stream`.
fn open_link<S: std::io::Read + std::io::Write + Send + 'static>(
    stream: S,
) -> Result<Box<DynAccelerator>, OpenError> {
    let timeout_ms = LINK_TIMEOUT.as_millis() as u32;
    let transport = LinkTransport::connect(stream, timeout_ms).map_err(|e| e.to_string())?;
    bring_up(transport)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tty_is_a_clear_open_error() {
        let Err(error) = open_serial(std::path::Path::new("/dev/tty-tensorplug-missing")) else {
            panic!("opened a tty that does not exist");
        };
        let text = error.to_string();
        assert!(text.contains("cannot open it at 115200 baud"), "{text}");
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
            text.contains(&format!("127.0.0.1:{port}")) && text.contains("cannot connect"),
            "{text}"
        );
    }
}
