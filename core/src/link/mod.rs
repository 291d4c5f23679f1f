//! The host ⇄ MCU link protocol.
//!
//! The host bridge talks to the MCU firmware over a UART (or QEMU's UART on a
//! TCP socket). Every message travels in one frame:
//!
//! ```text
//! COBS( header(7) | postcard payload | CRC-32 LE(4) ) 0x00
//! ```
//!
//! - [`Encoder`] writes frames into a caller buffer and numbers them.
//! - [`Decoder`] takes bytes as they arrive (one at a time or many frames at
//!   once), rejects bad frames with a specific [`LinkError`] and resynchronises
//!   at the next `0x00`.
//! - [`Hello`] and [`negotiate`] implement the version handshake.
//!
//! `no_std`, no allocation: all buffers are fixed-size arrays. The byte-level
//! format is specified in `docs/link-protocol.md`.

mod decode;
mod encode;
mod error;
mod handshake;
mod header;
mod message;
pub mod ops;
mod records;
mod sequence;
pub mod server;
mod session;
#[cfg(feature = "std")]
mod stream;
mod version;

#[cfg(test)]
mod tests;

pub use decode::{Decoder, FeedResult, Frame, FrameStart, bad_frame_request_id, decode_frame};
pub use encode::{Encoder, encode_frame};
pub use error::{LinkError, LinkErrorKind};
pub use handshake::{Agreement, negotiate};
pub use header::{FrameHeader, HEADER_LEN, NO_REQUEST};
pub use message::{
    Ack, Completion, ErrorResponse, EventBatch, Hello, MemoryData, Message, MessageClass,
    MessageId, Ping, ReadMemory, ReadRegister, RegisterValue, RemoteErrorCode, SetProfiling,
    WriteMemory, WriteRegister,
};
pub use ops::Submit;
pub use records::{EVENT_RECORD_LEN, EventRecords};
pub use sequence::SequenceTracker;
pub use server::OpServer;
pub use session::Session;
#[cfg(feature = "std")]
pub use stream::LinkStream;
pub use version::{PROTOCOL_VERSION, ProtocolVersion};

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

/// Events one [`EventBatch`] carries at most (16 bytes each on the wire).
pub const MAX_EVENTS_PER_BATCH: usize = MAX_BULK_CHUNK / EVENT_RECORD_LEN;

/// The frame delimiter.
pub const DELIMITER: u8 = 0x00;

/// CRC-32/ISO-HDLC (the zlib / Ethernet CRC-32): polynomial 0x04C11DB7
/// reflected, init and final XOR 0xFFFFFFFF; check value 0xCBF43926.
pub(crate) const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
