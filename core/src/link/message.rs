//! The messages, their ids and their postcard payloads.
//!
//! The header carries the message id; the payload is the postcard encoding of
//! the message's body struct. Ids are explicit and stable (not serde variant
//! indices), so adding a message never renumbers another.

use super::error::LinkError;
use super::framing::{MAX_BULK_CHUNK, MAX_FRAME_LEN};
use super::ops::{
    Allocate, ClockValue, Deallocate, DrainEvents, GetInfo, GetLinkInfo, Info, LinkInfo,
    MemoryState, ReadClock, Reset, Submit, SubmitBatch,
};
use super::program_ops::{ForgetPrograms, LoadProgram, RunProgram};
use super::records::EventRecords;
use super::version::{PROTOCOL_VERSION, ProtocolVersion};
use postcard::ser_flavors::Flavor;
use serde::{Deserialize, Serialize};

/// Opens the link: the sender's version and largest frame (frozen layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Hello {
    /// The sender's protocol version.
    pub version: ProtocolVersion,
    /// The largest frame (before COBS) the sender accepts.
    pub max_frame_len: u32,
}

impl Hello {
    /// The hello this crate sends.
    pub const fn ours() -> Self {
        Self {
            version: PROTOCOL_VERSION,
            max_frame_len: MAX_FRAME_LEN as u32,
        }
    }
}

/// Liveness check; the answer echoes the nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ping {
    /// Any value; echoed back in `Pong`.
    pub nonce: u32,
}

/// Reads one 32-bit device register (remote-bus mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadRegister {
    /// Byte offset in the device's register map.
    pub offset: u32,
}

/// Writes one 32-bit device register (remote-bus mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WriteRegister {
    /// Byte offset in the device's register map.
    pub offset: u32,
    /// The value to write.
    pub value: u32,
}

/// A register's value, answering [`ReadRegister`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RegisterValue {
    /// The offset that was read.
    pub offset: u32,
    /// Its value.
    pub value: u32,
}

/// Reads up to [`MAX_BULK_CHUNK`] bytes of device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadMemory {
    /// Device address of the first byte.
    pub address: u64,
    /// Bytes to read (at most [`MAX_BULK_CHUNK`]).
    pub len: u32,
}

/// Writes a chunk of device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WriteMemory<'a> {
    /// Device address of the first byte.
    pub address: u64,
    /// The bytes (at most [`MAX_BULK_CHUNK`]).
    pub data: &'a [u8],
}

impl<'a> WriteMemory<'a> {
    /// Splits a write of any length into frames of at most [`MAX_BULK_CHUNK`].
    pub fn chunks(address: u64, data: &'a [u8]) -> impl Iterator<Item = WriteMemory<'a>> + 'a {
        data.chunks(MAX_BULK_CHUNK)
            .enumerate()
            .map(move |(i, data)| WriteMemory {
                address: address.wrapping_add((i * MAX_BULK_CHUNK) as u64),
                data,
            })
    }
}

/// Device memory, answering [`ReadMemory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryData<'a> {
    /// Device address of the first byte.
    pub address: u64,
    /// The bytes read.
    pub data: &'a [u8],
}

/// A submitted command finished. Sent later, with the `Submit`'s request id.
/// Commands on one queue complete in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Completion {
    /// The queue the command ran on.
    pub queue: u8,
    /// 0 = success, else the error code (`ops::error_code`).
    pub status: u32,
    /// Device clock when the command completed.
    pub device_ticks: u64,
}

/// Turns device-side profiling (and the event-batch stream) on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SetProfiling {
    /// True to start streaming event batches.
    pub enabled: bool,
}

/// Success with nothing to return (register/memory writes, submit accepted,
/// profiling toggled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ack;

/// Codes an MCU answers a failed request with. Unknown codes are kept raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RemoteErrorCode {
    /// A request arrived before a successful handshake.
    HandshakeRequired = 1,
    /// The hello's major version differs (the server stays unopened).
    IncompatibleVersion = 2,
    /// The server does not implement this (known) message.
    Unsupported = 3,
    /// Address or length out of the device's range.
    OutOfRange = 4,
    /// The queue is full; retry later.
    Busy = 5,
    /// The device reported a failure; `detail` carries its status.
    DeviceFault = 6,
    /// The server received a frame it could not decode (`detail`: the
    /// [`LinkErrorKind`](super::LinkErrorKind) as a number).
    BadFrame = 7,
    /// A program was refused (2.3; `detail`:
    /// [`ProgramError::detail`](crate::program::ProgramError::detail)).
    ProgramRefused = 8,
    /// `RunProgram` names a program the MCU does not hold (2.3): it
    /// restarted or forgot it; load it again.
    UnknownProgram = 9,
}

impl RemoteErrorCode {
    /// Decodes a raw code; `None` for codes this version does not know.
    pub const fn from_u16(raw: u16) -> Option<Self> {
        Some(match raw {
            1 => Self::HandshakeRequired,
            2 => Self::IncompatibleVersion,
            3 => Self::Unsupported,
            4 => Self::OutOfRange,
            5 => Self::Busy,
            6 => Self::DeviceFault,
            7 => Self::BadFrame,
            8 => Self::ProgramRefused,
            9 => Self::UnknownProgram,
            _ => return None,
        })
    }
}

/// A request failed on the MCU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ErrorResponse {
    /// A [`RemoteErrorCode`] as `u16`.
    pub code: u16,
    /// Code-specific detail (device status, offending address, …).
    pub detail: u32,
}

impl ErrorResponse {
    /// The decoded code, or `None` if this version does not know it.
    pub const fn code(&self) -> Option<RemoteErrorCode> {
        RemoteErrorCode::from_u16(self.code)
    }
}

/// Profiling events drained from the MCU's rings; streamed unsolicited while
/// profiling is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventBatch<'a> {
    /// Events the MCU dropped (full ring) since the previous batch.
    pub dropped: u32,
    /// The events, oldest first (at most [`MAX_EVENTS_PER_BATCH`](super::MAX_EVENTS_PER_BATCH)).
    #[serde(borrow)]
    pub events: EventRecords<'a>,
}

/// The wire id of each message (byte 0 of the frame header).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum MessageId {
    /// [`Message::Hello`]
    Hello = 0x01,
    /// [`Message::Ping`]
    Ping = 0x02,
    /// [`Message::ReadRegister`]
    ReadRegister = 0x03,
    /// [`Message::WriteRegister`]
    WriteRegister = 0x04,
    /// [`Message::ReadMemory`]
    ReadMemory = 0x05,
    /// [`Message::WriteMemory`]
    WriteMemory = 0x06,
    /// [`Message::Submit`]
    Submit = 0x07,
    /// [`Message::SetProfiling`]
    SetProfiling = 0x08,
    /// [`Message::GetInfo`]
    GetInfo = 0x09,
    /// [`Message::Allocate`]
    Allocate = 0x0A,
    /// [`Message::Deallocate`]
    Deallocate = 0x0B,
    /// [`Message::ReadClock`]
    ReadClock = 0x0C,
    /// [`Message::Reset`]
    Reset = 0x0D,
    /// [`Message::DrainEvents`]
    DrainEvents = 0x0E,
    /// [`Message::GetLinkInfo`] (2.1)
    GetLinkInfo = 0x0F,
    /// [`Message::SubmitBatch`] (2.2)
    SubmitBatch = 0x10,
    /// [`Message::LoadProgram`] (2.3)
    LoadProgram = 0x11,
    /// [`Message::RunProgram`] (2.3)
    RunProgram = 0x12,
    /// [`Message::ForgetPrograms`] (2.3)
    ForgetPrograms = 0x13,
    /// [`Message::HelloAck`]
    HelloAck = 0x81,
    /// [`Message::Pong`]
    Pong = 0x82,
    /// [`Message::RegisterValue`]
    RegisterValue = 0x83,
    /// [`Message::Ack`]
    Ack = 0x84,
    /// [`Message::MemoryData`]
    MemoryData = 0x85,
    /// [`Message::Completion`]
    Completion = 0x86,
    /// [`Message::Error`]
    Error = 0x87,
    /// [`Message::Info`]
    Info = 0x88,
    /// [`Message::MemoryState`]
    MemoryState = 0x89,
    /// [`Message::ClockValue`]
    ClockValue = 0x8A,
    /// [`Message::LinkInfo`] (2.1)
    LinkInfo = 0x8B,
    /// [`Message::EventBatch`]
    EventBatch = 0xC0,
}

/// Who sends a message and whether it answers one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MessageClass {
    /// Host → MCU (ids 0x01–0x7F); carries a fresh request id.
    Request,
    /// MCU → host (ids 0x80–0xBF); echoes the request's id.
    Response,
    /// MCU → host, unsolicited (ids 0xC0–0xFF); request id 0.
    Notification,
}

impl MessageId {
    /// Decodes a raw id; `None` for ids this version does not know.
    pub const fn from_u8(raw: u8) -> Option<Self> {
        Some(match raw {
            0x01 => Self::Hello,
            0x02 => Self::Ping,
            0x03 => Self::ReadRegister,
            0x04 => Self::WriteRegister,
            0x05 => Self::ReadMemory,
            0x06 => Self::WriteMemory,
            0x07 => Self::Submit,
            0x08 => Self::SetProfiling,
            0x09 => Self::GetInfo,
            0x0A => Self::Allocate,
            0x0B => Self::Deallocate,
            0x0C => Self::ReadClock,
            0x0D => Self::Reset,
            0x0E => Self::DrainEvents,
            0x0F => Self::GetLinkInfo,
            0x10 => Self::SubmitBatch,
            0x11 => Self::LoadProgram,
            0x12 => Self::RunProgram,
            0x13 => Self::ForgetPrograms,
            0x81 => Self::HelloAck,
            0x82 => Self::Pong,
            0x83 => Self::RegisterValue,
            0x84 => Self::Ack,
            0x85 => Self::MemoryData,
            0x86 => Self::Completion,
            0x87 => Self::Error,
            0x88 => Self::Info,
            0x89 => Self::MemoryState,
            0x8A => Self::ClockValue,
            0x8B => Self::LinkInfo,
            0xC0 => Self::EventBatch,
            _ => return None,
        })
    }

    /// The class, from the id's range.
    pub const fn class(self) -> MessageClass {
        match self as u8 {
            0x00..=0x7F => MessageClass::Request,
            0x80..=0xBF => MessageClass::Response,
            _ => MessageClass::Notification,
        }
    }
}

/// One message of the link protocol. Bulk data borrows from the frame buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "no allocator on the MCU to box a launch (about 300 bytes)"
)]
pub enum Message<'a> {
    /// Host opens the link.
    Hello(Hello),
    /// Host checks the link is alive.
    Ping(Ping),
    /// Host reads a register.
    ReadRegister(ReadRegister),
    /// Host writes a register.
    WriteRegister(WriteRegister),
    /// Host reads device memory.
    ReadMemory(ReadMemory),
    /// Host writes device memory.
    WriteMemory(WriteMemory<'a>),
    /// Host queues a command.
    Submit(Submit<'a>),
    /// Host toggles profiling.
    SetProfiling(SetProfiling),
    /// Host asks for the device info (op-level mode).
    GetInfo(GetInfo),
    /// Host allocates device memory (op-level mode).
    Allocate(Allocate),
    /// Host frees device memory (op-level mode).
    Deallocate(Deallocate),
    /// Host reads the device clock (op-level mode).
    ReadClock(ReadClock),
    /// Host resets the device (op-level mode).
    Reset(Reset),
    /// Host asks for recorded events (op-level mode).
    DrainEvents(DrainEvents),
    /// Host asks for the link's window (2.1).
    GetLinkInfo(GetLinkInfo),
    /// Host queues several commands on one queue (2.2).
    SubmitBatch(SubmitBatch<'a>),
    /// Host stores one chunk of a device program (2.3).
    LoadProgram(LoadProgram<'a>),
    /// Host runs a stored program (2.3).
    RunProgram(RunProgram<'a>),
    /// Host drops the stored programs (2.3).
    ForgetPrograms(ForgetPrograms),
    /// MCU answers `Hello` with its own version.
    HelloAck(Hello),
    /// MCU answers `Ping`.
    Pong(Ping),
    /// MCU answers `ReadRegister`.
    RegisterValue(RegisterValue),
    /// MCU confirms a request with nothing to return.
    Ack(Ack),
    /// MCU answers `ReadMemory`.
    MemoryData(MemoryData<'a>),
    /// MCU reports a finished command (request id of its `Submit`).
    Completion(Completion),
    /// MCU reports a failed request.
    Error(ErrorResponse),
    /// MCU streams profiling events, or answers `DrainEvents`.
    EventBatch(EventBatch<'a>),
    /// MCU answers `GetInfo`.
    Info(Info<'a>),
    /// MCU answers `Allocate` and `Deallocate`.
    MemoryState(MemoryState),
    /// MCU answers `ReadClock`.
    ClockValue(ClockValue),
    /// MCU answers `GetLinkInfo` (2.1).
    LinkInfo(LinkInfo),
}

/// Runs `$body` with `$b` bound to the message's body, whatever its type.
macro_rules! with_body {
    ($msg:expr, $b:ident => $body:expr) => {
        match $msg {
            Message::Hello($b) | Message::HelloAck($b) => $body,
            Message::Ping($b) | Message::Pong($b) => $body,
            Message::ReadRegister($b) => $body,
            Message::WriteRegister($b) => $body,
            Message::ReadMemory($b) => $body,
            Message::WriteMemory($b) => $body,
            Message::Submit($b) => $body,
            Message::SetProfiling($b) => $body,
            Message::GetInfo($b) => $body,
            Message::Allocate($b) => $body,
            Message::Deallocate($b) => $body,
            Message::ReadClock($b) => $body,
            Message::Reset($b) => $body,
            Message::DrainEvents($b) => $body,
            Message::GetLinkInfo($b) => $body,
            Message::SubmitBatch($b) => $body,
            Message::LoadProgram($b) => $body,
            Message::RunProgram($b) => $body,
            Message::ForgetPrograms($b) => $body,
            Message::Info($b) => $body,
            Message::MemoryState($b) => $body,
            Message::ClockValue($b) => $body,
            Message::LinkInfo($b) => $body,
            Message::RegisterValue($b) => $body,
            Message::Ack($b) => $body,
            Message::MemoryData($b) => $body,
            Message::Completion($b) => $body,
            Message::Error($b) => $body,
            Message::EventBatch($b) => $body,
        }
    };
}

impl<'a> Message<'a> {
    /// The message's wire id.
    pub const fn id(&self) -> MessageId {
        match self {
            Self::Hello(_) => MessageId::Hello,
            Self::Ping(_) => MessageId::Ping,
            Self::ReadRegister(_) => MessageId::ReadRegister,
            Self::WriteRegister(_) => MessageId::WriteRegister,
            Self::ReadMemory(_) => MessageId::ReadMemory,
            Self::WriteMemory(_) => MessageId::WriteMemory,
            Self::Submit(_) => MessageId::Submit,
            Self::SetProfiling(_) => MessageId::SetProfiling,
            Self::GetInfo(_) => MessageId::GetInfo,
            Self::Allocate(_) => MessageId::Allocate,
            Self::Deallocate(_) => MessageId::Deallocate,
            Self::ReadClock(_) => MessageId::ReadClock,
            Self::Reset(_) => MessageId::Reset,
            Self::DrainEvents(_) => MessageId::DrainEvents,
            Self::GetLinkInfo(_) => MessageId::GetLinkInfo,
            Self::SubmitBatch(_) => MessageId::SubmitBatch,
            Self::LoadProgram(_) => MessageId::LoadProgram,
            Self::RunProgram(_) => MessageId::RunProgram,
            Self::ForgetPrograms(_) => MessageId::ForgetPrograms,
            Self::Info(_) => MessageId::Info,
            Self::MemoryState(_) => MessageId::MemoryState,
            Self::ClockValue(_) => MessageId::ClockValue,
            Self::LinkInfo(_) => MessageId::LinkInfo,
            Self::HelloAck(_) => MessageId::HelloAck,
            Self::Pong(_) => MessageId::Pong,
            Self::RegisterValue(_) => MessageId::RegisterValue,
            Self::Ack(_) => MessageId::Ack,
            Self::MemoryData(_) => MessageId::MemoryData,
            Self::Completion(_) => MessageId::Completion,
            Self::Error(_) => MessageId::Error,
            Self::EventBatch(_) => MessageId::EventBatch,
        }
    }

    /// Whether this is a remote-bus request: an access to the device's own
    /// registers or memory, which a device end answers on the device's
    /// port rather than through its driver (the firmware routes on it).
    pub const fn is_remote_bus(&self) -> bool {
        matches!(
            self,
            Self::ReadRegister(_)
                | Self::WriteRegister(_)
                | Self::ReadMemory(_)
                | Self::WriteMemory(_)
        )
    }

    /// Bytes of postcard payload this message encodes to.
    pub fn payload_len(&self) -> usize {
        with_body!(self, b => postcard::experimental::serialized_size(b))
            // The size flavor cannot fail; 0 would only under-reserve, and
            // the encoder then reports `BufferTooSmall` instead of panicking.
            .unwrap_or(0)
    }

    /// Serialises the payload into any postcard flavor.
    pub(crate) fn write_payload<F: Flavor>(&self, flavor: F) -> postcard::Result<F::Output> {
        with_body!(self, b => postcard::serialize_with_flavor(b, flavor))
    }

    /// Decodes the payload of a frame whose header says `id`.
    ///
    /// # Errors
    /// [`LinkError::UnknownMessage`] for an id this version does not know;
    /// [`LinkError::MalformedPayload`] when the payload does not decode
    /// exactly (trailing bytes included).
    pub fn decode(id: u8, payload: &'a [u8]) -> Result<Self, LinkError> {
        match Self::decode_request(id, payload) {
            Err(LinkError::UnknownMessage { .. }) => Self::decode_answer(id, payload),
            decoded => decoded,
        }
    }

    /// [`decode`](Self::decode) for the requests a host sends (ids below
    /// 0x80); any other id is [`LinkError::UnknownMessage`].
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn decode_request(id: u8, payload: &'a [u8]) -> Result<Self, LinkError> {
        let malformed = |_| LinkError::MalformedPayload { id };
        Ok(match MessageId::from_u8(id) {
            Some(MessageId::Hello) => Self::Hello(exact(payload).map_err(malformed)?),
            Some(MessageId::Ping) => Self::Ping(exact(payload).map_err(malformed)?),
            Some(MessageId::ReadRegister) => Self::ReadRegister(exact(payload).map_err(malformed)?),
            Some(MessageId::WriteRegister) => {
                Self::WriteRegister(exact(payload).map_err(malformed)?)
            }
            Some(MessageId::ReadMemory) => Self::ReadMemory(exact(payload).map_err(malformed)?),
            Some(MessageId::WriteMemory) => Self::WriteMemory(exact(payload).map_err(malformed)?),
            Some(MessageId::Submit) => Self::Submit(exact(payload).map_err(malformed)?),
            Some(MessageId::SetProfiling) => Self::SetProfiling(exact(payload).map_err(malformed)?),
            Some(MessageId::GetInfo) => Self::GetInfo(exact(payload).map_err(malformed)?),
            Some(MessageId::Allocate) => Self::Allocate(exact(payload).map_err(malformed)?),
            Some(MessageId::Deallocate) => Self::Deallocate(exact(payload).map_err(malformed)?),
            Some(MessageId::ReadClock) => Self::ReadClock(exact(payload).map_err(malformed)?),
            Some(MessageId::Reset) => Self::Reset(exact(payload).map_err(malformed)?),
            Some(MessageId::DrainEvents) => Self::DrainEvents(exact(payload).map_err(malformed)?),
            Some(MessageId::GetLinkInfo) => Self::GetLinkInfo(exact(payload).map_err(malformed)?),
            Some(MessageId::SubmitBatch) => {
                let batch: SubmitBatch<'a> = exact(payload).map_err(malformed)?;
                batch
                    .check()
                    .map_err(|_| LinkError::MalformedPayload { id })?;
                Self::SubmitBatch(batch)
            }
            Some(MessageId::LoadProgram) => Self::LoadProgram(exact(payload).map_err(malformed)?),
            Some(MessageId::RunProgram) => Self::RunProgram(exact(payload).map_err(malformed)?),
            Some(MessageId::ForgetPrograms) => {
                Self::ForgetPrograms(exact(payload).map_err(malformed)?)
            }
            _ => return Err(LinkError::UnknownMessage { id }),
        })
    }

    /// [`decode`](Self::decode) for what a device sends: answers and
    /// notifications; any other id is [`LinkError::UnknownMessage`].
    fn decode_answer(id: u8, payload: &'a [u8]) -> Result<Self, LinkError> {
        let malformed = |_| LinkError::MalformedPayload { id };
        Ok(match MessageId::from_u8(id) {
            Some(MessageId::Info) => Self::Info(exact(payload).map_err(malformed)?),
            Some(MessageId::MemoryState) => Self::MemoryState(exact(payload).map_err(malformed)?),
            Some(MessageId::ClockValue) => Self::ClockValue(exact(payload).map_err(malformed)?),
            Some(MessageId::LinkInfo) => Self::LinkInfo(exact(payload).map_err(malformed)?),
            Some(MessageId::HelloAck) => Self::HelloAck(exact(payload).map_err(malformed)?),
            Some(MessageId::Pong) => Self::Pong(exact(payload).map_err(malformed)?),
            Some(MessageId::RegisterValue) => {
                Self::RegisterValue(exact(payload).map_err(malformed)?)
            }
            Some(MessageId::Ack) => Self::Ack(exact(payload).map_err(malformed)?),
            Some(MessageId::MemoryData) => Self::MemoryData(exact(payload).map_err(malformed)?),
            Some(MessageId::Completion) => Self::Completion(exact(payload).map_err(malformed)?),
            Some(MessageId::Error) => Self::Error(exact(payload).map_err(malformed)?),
            Some(MessageId::EventBatch) => Self::EventBatch(exact(payload).map_err(malformed)?),
            _ => return Err(LinkError::UnknownMessage { id }),
        })
    }
}

/// Decodes `T` from all of `payload`; trailing bytes are an error.
fn exact<'a, T: Deserialize<'a>>(payload: &'a [u8]) -> postcard::Result<T> {
    match postcard::take_from_bytes(payload)? {
        (value, []) => Ok(value),
        _ => Err(postcard::Error::DeserializeBadEncoding),
    }
}
