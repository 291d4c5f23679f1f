//! The SPI frame format, shared by the host (master) and device (slave)
//! sides. Byte by byte in `docs/transports.md`.
//!
//! One exchange is two or more SPI transactions (chip-select windows):
//! 1. **Request**, host → device: `command, seq, addr: u64 LE, len: u16 LE`
//!    ([`HEADER_LEN`] bytes), the payload (`WriteReg`: 4 bytes, `WriteMem`:
//!    `len` bytes, reads: none), then CRC-16 LE over header and payload.
//! 2. **Status poll / response fetch**: the host sends [`Command::Status`]
//!    and clocks in `status, seq`, the response payload (`ReadReg`: 4 bytes,
//!    `ReadMem`: `len` bytes, writes: none) and CRC-16 LE over all of them.
//!    While the device answers [`Status::Busy`] the rest is filler; the host
//!    polls again (short polls: command + status byte only), a bounded
//!    number of times.

use crc::{CRC_16_IBM_3740, Crc};

/// Largest payload of one frame; longer transfers are split into frames.
pub const MAX_PAYLOAD: usize = 1024;
/// Bytes of a request header: command, seq, address (8), length (2).
pub const HEADER_LEN: usize = 12;
/// Bytes of a CRC.
pub const CRC_LEN: usize = 2;
/// Bytes of a response head: status, seq.
pub const RESPONSE_HEAD_LEN: usize = 2;
/// Longest request frame.
pub const MAX_REQUEST_LEN: usize = HEADER_LEN + MAX_PAYLOAD + CRC_LEN;
/// Longest response (after the status command byte).
pub const MAX_RESPONSE_LEN: usize = RESPONSE_HEAD_LEN + MAX_PAYLOAD + CRC_LEN;
/// What the device drives on MISO when it has nothing to say.
pub const FILLER: u8 = 0xFF;

/// The frame CRC: CRC-16/IBM-3740 (a.k.a. CCITT-FALSE): polynomial 0x1021,
/// init 0xFFFF, no reflection, no final XOR. Hamming distance 4 for frames
/// up to 4095 bytes, so any 3-bit error in a frame is detected.
pub const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_IBM_3740);

/// CRC-16 over the concatenation of `parts`.
pub fn crc16(parts: &[&[u8]]) -> u16 {
    let mut digest = CRC16.digest();
    for part in parts {
        digest.update(part);
    }
    digest.finalize()
}

/// The first byte of every transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Command {
    /// Read the 32-bit register at `addr`.
    ReadReg = 0x01,
    /// Write the 32-bit register at `addr`.
    WriteReg = 0x02,
    /// Read `len` bytes of device memory at `addr`.
    ReadMem = 0x03,
    /// Write `len` bytes of device memory at `addr`.
    WriteMem = 0x04,
    /// Poll the status of the last request and fetch its response.
    Status = 0x05,
}

impl Command {
    /// The command with this code, if any.
    pub const fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            0x01 => Self::ReadReg,
            0x02 => Self::WriteReg,
            0x03 => Self::ReadMem,
            0x04 => Self::WriteMem,
            0x05 => Self::Status,
            _ => return None,
        })
    }
}

/// The first byte of a response. `0x00` and `0xFF` (an idle or absent bus)
/// are deliberately not statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Status {
    /// Done; the payload is valid.
    Ok = 0xA0,
    /// The request's CRC did not match; it was not executed.
    CrcError = 0xA1,
    /// The address range is outside the register space or memory.
    OutOfRange = 0xA2,
    /// The request was malformed (truncated, too long, bad length).
    Rejected = 0xA3,
    /// No request has been received since reset.
    Idle = 0xA4,
    /// Still working; poll again.
    Busy = 0xB5,
}

impl Status {
    /// The status with this code, if any.
    pub const fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            0xA0 => Self::Ok,
            0xA1 => Self::CrcError,
            0xA2 => Self::OutOfRange,
            0xA3 => Self::Rejected,
            0xA4 => Self::Idle,
            0xB5 => Self::Busy,
            _ => return None,
        })
    }
}

/// Why a request header is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum HeaderError {
    /// The command byte is not a request command.
    UnknownCommand(u8),
    /// The length does not fit the command (registers: 4; memory:
    /// 1..=[`MAX_PAYLOAD`]).
    BadLength(u16),
}

/// A request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// What to do (never [`Command::Status`]).
    pub command: Command,
    /// Sequence number, echoed in the response.
    pub seq: u8,
    /// Register offset or device-memory address.
    pub addr: u64,
    /// Bytes to transfer (4 for registers).
    pub len: u16,
}

impl Header {
    /// The header's wire bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut bytes = [0; HEADER_LEN];
        bytes[0] = self.command as u8;
        bytes[1] = self.seq;
        bytes[2..10].copy_from_slice(&self.addr.to_le_bytes());
        bytes[10..12].copy_from_slice(&self.len.to_le_bytes());
        bytes
    }

    /// Parses and validates header bytes.
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> Result<Self, HeaderError> {
        let command = match Command::from_byte(bytes[0]) {
            Some(Command::Status) | None => return Err(HeaderError::UnknownCommand(bytes[0])),
            Some(command) => command,
        };
        let mut addr = [0; 8];
        addr.copy_from_slice(&bytes[2..10]);
        let len = u16::from_le_bytes([bytes[10], bytes[11]]);
        let header = Self {
            command,
            seq: bytes[1],
            addr: u64::from_le_bytes(addr),
            len,
        };
        let valid = match command {
            Command::ReadReg | Command::WriteReg => len == 4,
            _ => (1..=MAX_PAYLOAD).contains(&usize::from(len)),
        };
        if valid {
            Ok(header)
        } else {
            Err(HeaderError::BadLength(len))
        }
    }

    /// Payload bytes following the header in the request.
    pub const fn request_payload_len(&self) -> usize {
        match self.command {
            Command::WriteReg | Command::WriteMem => self.len as usize,
            _ => 0,
        }
    }

    /// Payload bytes in the response.
    pub const fn response_payload_len(&self) -> usize {
        match self.command {
            Command::ReadReg | Command::ReadMem => self.len as usize,
            _ => 0,
        }
    }
}

/// Bytes clocked on the bus to write `len` bytes of memory in frames of at
/// most `max_payload` bytes, with the device ready at the first poll.
pub const fn bytes_clocked_for_write(len: usize, max_payload: usize) -> usize {
    let max_payload = if max_payload == 0 { 1 } else { max_payload };
    let frames = len.div_ceil(max_payload);
    let per_frame = HEADER_LEN + CRC_LEN + 1 + RESPONSE_HEAD_LEN + CRC_LEN;
    len + frames * per_frame
}
