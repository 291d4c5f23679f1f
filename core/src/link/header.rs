//! The fixed 7-byte frame header.

/// Bytes in a frame header.
pub const HEADER_LEN: usize = 7;

/// The request id of frames that answer no request (event batches).
pub const NO_REQUEST: u16 = 0;

/// The header in front of every payload (all fields little-endian).
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | message id |
/// | 1 | 2 | sequence number (per sender, wrapping) |
/// | 3 | 2 | request id (correlation; 0 = none) |
/// | 5 | 2 | payload length |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameHeader {
    /// The [`MessageId`](super::MessageId) as a raw byte.
    pub message_id: u8,
    /// The sender's frame counter.
    pub seq: u16,
    /// Requests: an id chosen by the requester; responses: the request's id.
    pub request_id: u16,
    /// Bytes of postcard payload after the header.
    pub payload_len: u16,
}

impl FrameHeader {
    /// The header as it appears on the wire (before COBS).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let [s0, s1] = self.seq.to_le_bytes();
        let [r0, r1] = self.request_id.to_le_bytes();
        let [l0, l1] = self.payload_len.to_le_bytes();
        [self.message_id, s0, s1, r0, r1, l0, l1]
    }

    /// Reads a header from its wire bytes.
    pub fn from_bytes(bytes: &[u8; HEADER_LEN]) -> Self {
        Self {
            message_id: bytes[0],
            seq: u16::from_le_bytes([bytes[1], bytes[2]]),
            request_id: u16::from_le_bytes([bytes[3], bytes[4]]),
            payload_len: u16::from_le_bytes([bytes[5], bytes[6]]),
        }
    }
}
