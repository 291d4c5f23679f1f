//! A frame's size limits, its delimiter and its CRC.

use super::header::HEADER_LEN;

/// Bytes of CRC-32 at the end of every frame.
pub const CRC_LEN: usize = 4;

/// The largest bulk-memory chunk (or command descriptor) one frame carries.
pub const MAX_BULK_CHUNK: usize = 2048;

/// The largest payload (postcard bytes) of one frame: a full bulk chunk plus
/// room for its address and length fields.
pub const MAX_PAYLOAD_LEN: usize = MAX_BULK_CHUNK + 16;

/// The largest frame before COBS: header, payload and CRC.
pub const MAX_FRAME_LEN: usize = HEADER_LEN + MAX_PAYLOAD_LEN + CRC_LEN;

/// The largest frame on the wire: COBS-encoded [`MAX_FRAME_LEN`] plus the
/// `0x00` delimiter. Size transmit buffers with this.
pub const MAX_ENCODED_FRAME_LEN: usize = cobs::max_encoding_length(MAX_FRAME_LEN) + 1;

/// The frame delimiter.
pub const DELIMITER: u8 = 0x00;

// CRC-32/ISO-HDLC (the zlib / Ethernet CRC-32): polynomial 0x04C11DB7
// reflected, init and final XOR 0xFFFFFFFF; check value 0xCBF43926.
pub(crate) use crate::checksum::CRC32;
