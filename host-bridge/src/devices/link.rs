//! `tcp:<host:port>`: the reference FPGA driver over the link protocol
//! (`LinkTransport`, `docs/link-protocol.md`) on a TCP connection, to a
//! device's MCU or to `tensorplug-model-server --link`.

use super::{DynAccelerator, Erased};
use crate::error::{Error, Result};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::link::LinkTransport;

/// Budget for connecting, and for each answer of the device.
const LINK_TIMEOUT: Duration = Duration::from_secs(5);

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
    let timeout_ms = LINK_TIMEOUT.as_millis() as u32;
    let transport = LinkTransport::connect(stream, timeout_ms).map_err(|e| fail(e.to_string()))?;
    let driver = Driver::<_, _, { super::sim::MAX_ALLOCATIONS }>::new(
        transport,
        StdClock::default(),
        super::sim::host_driver_config()?,
    )
    .map_err(|e| fail(format!("driver bring-up failed: {e}")))?;
    Ok(Box::new(Erased::new(driver)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
