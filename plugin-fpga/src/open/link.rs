//! `tcp:<host:port>` and `serial:<tty>`: the reference FPGA driver over the
//! link protocol (`LinkTransport`, `docs/link-protocol.md`) on a TCP
//! connection or a UART (opened by `tensorplug-link-host`), to a device's
//! MCU or to `tensorplug-model-server --link`.

use super::bring_up;
use std::time::Duration;
use tensorplug_device_fpga::transport::link::LinkTransport;
use tensorplug_host_bridge::prelude::{DynAccelerator, OpenError, settings};
use tensorplug_link_host::{ANSWER_TIMEOUT, DEFAULT_SERIAL_BAUD, Link, SERIAL_BAUD};

/// The UART's baud rate (`TENSORPLUG_SERIAL_BAUD`, shared with `mcu-serial:`).
pub fn baud() -> Result<u32, OpenError> {
    Ok(settings::positive(
        SERIAL_BAUD,
        DEFAULT_SERIAL_BAUD,
        "baud rate",
    )?)
}

/// The budget of each answer on a link: the wait budget
/// (`TENSORPLUG_TIMEOUT_MS`) when set, else [`ANSWER_TIMEOUT`] (a live
/// device answers within milliseconds; a dead one is found in 5 s).
pub fn answer_timeout() -> Result<Duration, OpenError> {
    let default = ANSWER_TIMEOUT.as_millis() as u64;
    let ms = settings::positive(settings::TIMEOUT_MS, default, "number of milliseconds")?;
    Ok(Duration::from_millis(ms))
}

/// `serial:<tty>`: 8N1, no flow control, raw, at [`baud`].
pub fn open_serial(path: &std::path::Path) -> Result<Box<DynAccelerator>, OpenError> {
    open_link(tensorplug_link_host::serial(
        path,
        baud()?,
        answer_timeout()?,
    )?)
}

/// `tcp:<host:port>`.
pub fn open_tcp(addr: &str) -> Result<Box<DynAccelerator>, OpenError> {
    let link = tensorplug_link_host::tcp(addr, answer_timeout()?).map_err(|e| {
        format!(
            "{e} (is the device's link server, e.g. `tensorplug-model-server --link \
             tcp:{addr}`, running?)"
        )
    })?;
    open_link(link)
}

/// The link handshake and the driver's bring-up on `link`.
fn open_link(link: Link) -> Result<Box<DynAccelerator>, OpenError> {
    let timeout_ms = u32::try_from(answer_timeout()?.as_millis()).unwrap_or(u32::MAX);
    let transport = LinkTransport::connect(link, timeout_ms).map_err(|e| e.to_string())?;
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
