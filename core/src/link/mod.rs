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
mod framing;
mod handshake;
mod header;
mod message;
pub mod ops;
mod program_ops;
mod program_store;
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
pub use framing::{
    CRC_LEN, DELIMITER, MAX_BULK_CHUNK, MAX_ENCODED_FRAME_LEN, MAX_FRAME_LEN, MAX_PAYLOAD_LEN,
};
pub use handshake::{Agreement, negotiate};
pub use header::{FrameHeader, HEADER_LEN, NO_REQUEST};
pub use message::{
    Ack, Completion, ErrorResponse, EventBatch, Hello, MemoryData, Message, MessageClass,
    MessageId, Ping, ReadMemory, ReadRegister, RegisterValue, RemoteErrorCode, SetProfiling,
    WriteMemory, WriteRegister,
};
pub use ops::Submit;
pub use program_ops::{ForgetPrograms, LoadProgram, RunProgram};
pub use program_store::{LoadFault, ProgramStore};
pub use records::{EVENT_RECORD_LEN, EventRecords, MAX_EVENTS_PER_BATCH};
pub use sequence::SequenceTracker;
pub use server::OpServer;
pub use session::Session;
#[cfg(feature = "std")]
pub use stream::LinkStream;
pub use version::{PROTOCOL_VERSION, ProtocolVersion};
