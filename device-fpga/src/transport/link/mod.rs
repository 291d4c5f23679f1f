//! The link transport: register and memory accesses as link-protocol
//! requests (`tensorplug_core::link`, `docs/link-protocol.md`) over a byte
//! stream, for a device behind an MCU (UART) or a model behind a socket.
//!
//! - `LinkServer` (`no_std`, like the SPI slave: the device-end pieces):
//!   the device end, answering requests on any `SpiTarget`: the firmware's
//!   job, and `tensorplug-model-server --link` on a host.
//! - `LinkTransport` (feature `std`): the driver's end over `Read + Write`.

mod server;
pub use server::LinkServer;

#[cfg(feature = "std")]
mod host;
#[cfg(feature = "std")]
pub use host::{LinkOpenError, LinkTransport};
