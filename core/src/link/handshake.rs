//! The version handshake.
//!
//! The host opens with [`Hello`](super::Hello); the MCU answers `HelloAck`
//! with its own. Each side calls [`negotiate`] on the pair: versions with the
//! same major talk at the lower minor; different majors are refused with an
//! error naming both. The frame header and the `Hello`/`HelloAck` payloads are
//! frozen across all versions, so any two versions can always tell each other
//! apart.

use super::error::LinkError;
use super::message::Hello;
use super::version::ProtocolVersion;

/// What both peers agreed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Agreement {
    /// The version both speak: the common major and the lower minor.
    pub version: ProtocolVersion,
    /// The smaller of the two peers' maximum frame lengths.
    pub max_frame_len: u32,
}

/// Checks `peer`'s hello against ours.
///
/// # Errors
/// [`LinkError::IncompatibleVersion`] (naming both versions) when the majors
/// differ.
pub fn negotiate(local: &Hello, peer: &Hello) -> Result<Agreement, LinkError> {
    if local.version.major != peer.version.major {
        return Err(LinkError::IncompatibleVersion {
            local: local.version,
            peer: peer.version,
        });
    }
    Ok(Agreement {
        version: ProtocolVersion {
            major: local.version.major,
            minor: local.version.minor.min(peer.version.minor),
        },
        max_frame_len: local.max_frame_len.min(peer.max_frame_len),
    })
}
