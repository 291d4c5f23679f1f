//! The link protocol's version number: a leaf that the error, message and
//! handshake modules all name.

use core::fmt;
use serde::{Deserialize, Serialize};

/// A link protocol version: majors must match, minors add messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProtocolVersion {
    /// Incompatible changes bump this.
    pub major: u16,
    /// Backwards-compatible additions bump this.
    pub minor: u16,
}

/// The version this crate speaks.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion { major: 2, minor: 3 };

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
