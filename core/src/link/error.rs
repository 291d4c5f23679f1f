//! Link errors: one specific variant per way a frame can be bad.

use super::version::ProtocolVersion;
use core::fmt;

/// Everything that can go wrong encoding, decoding or negotiating a frame.
///
/// Decoding errors never lose data that was already accepted: the decoder
/// drops only the bad frame and carries on at the next delimiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LinkError {
    /// No delimiter within `limit` bytes; the rest of the frame is skipped.
    Oversized {
        /// The largest frame accepted, in bytes.
        limit: usize,
    },
    /// The delimiter arrived before the frame was complete.
    Truncated {
        /// Frame bytes (after COBS decoding) that did arrive.
        received: usize,
    },
    /// The CRC-32 does not match the frame's contents.
    CrcMismatch {
        /// CRC computed over the received header and payload.
        computed: u32,
        /// CRC carried by the frame.
        received: u32,
    },
    /// The CRC is good but the header's payload length disagrees with the
    /// frame's size (a sender bug).
    LengthMismatch {
        /// Payload length in the header.
        declared: usize,
        /// Payload bytes actually in the frame.
        received: usize,
    },
    /// A well-formed frame carries a message id this version does not know.
    UnknownMessage {
        /// The unknown id.
        id: u8,
    },
    /// A known message id whose payload does not decode (or has trailing bytes).
    MalformedPayload {
        /// The message id.
        id: u8,
    },
    /// The peer speaks a protocol version we cannot talk to.
    IncompatibleVersion {
        /// Our version.
        local: ProtocolVersion,
        /// The peer's version.
        peer: ProtocolVersion,
    },
    /// The output buffer cannot hold the encoded frame.
    BufferTooSmall {
        /// Bytes the frame may need (worst case).
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
    /// A message is too large for one frame (split bulk data into chunks of
    /// [`MAX_BULK_CHUNK`](super::MAX_BULK_CHUNK)).
    PayloadTooLarge {
        /// The message's payload length.
        len: usize,
        /// [`MAX_PAYLOAD_LEN`](super::MAX_PAYLOAD_LEN).
        limit: usize,
    },
}

/// The coarse class of a [`LinkError`], for callers that only branch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LinkErrorKind {
    /// A frame or message exceeds the size limit.
    Oversized,
    /// A frame ended early.
    Truncated,
    /// Bits were corrupted in transit (CRC mismatch).
    Corrupt,
    /// A message id this version does not know.
    UnknownMessage,
    /// A frame passed its CRC but its contents are inconsistent.
    Malformed,
    /// The peer's protocol version is incompatible.
    Incompatible,
    /// The caller's buffer is too small.
    BufferTooSmall,
}

impl LinkError {
    /// The coarse class of this error.
    pub const fn kind(&self) -> LinkErrorKind {
        match self {
            Self::Oversized { .. } | Self::PayloadTooLarge { .. } => LinkErrorKind::Oversized,
            Self::Truncated { .. } => LinkErrorKind::Truncated,
            Self::CrcMismatch { .. } => LinkErrorKind::Corrupt,
            Self::UnknownMessage { .. } => LinkErrorKind::UnknownMessage,
            Self::LengthMismatch { .. } | Self::MalformedPayload { .. } => LinkErrorKind::Malformed,
            Self::IncompatibleVersion { .. } => LinkErrorKind::Incompatible,
            Self::BufferTooSmall { .. } => LinkErrorKind::BufferTooSmall,
        }
    }
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Oversized { limit } => {
                write!(f, "link frame exceeds {limit} bytes without a delimiter")
            }
            Self::Truncated { received } => {
                write!(f, "link frame truncated after {received} bytes")
            }
            Self::CrcMismatch { computed, received } => write!(
                f,
                "link frame CRC mismatch: computed {computed:#010x}, frame carries {received:#010x}"
            ),
            Self::LengthMismatch { declared, received } => write!(
                f,
                "link frame header declares {declared} payload bytes but carries {received}"
            ),
            Self::UnknownMessage { id } => write!(f, "unknown link message id {id:#04x}"),
            Self::MalformedPayload { id } => {
                write!(f, "malformed payload for link message id {id:#04x}")
            }
            Self::IncompatibleVersion { local, peer } => write!(
                f,
                "incompatible link protocol: we speak {local}, the peer speaks {peer}"
            ),
            Self::BufferTooSmall { needed, available } => write!(
                f,
                "buffer too small for link frame: need {needed} bytes, have {available}"
            ),
            Self::PayloadTooLarge { len, limit } => write!(
                f,
                "link message payload of {len} bytes exceeds the {limit}-byte frame limit"
            ),
        }
    }
}

impl core::error::Error for LinkError {}
