//! Why a program is refused: one small enum a device can put on the wire.

use core::fmt;

/// Why a program does not parse, validate or run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProgramError {
    /// Shorter than its header, or not the length its header says.
    Length,
    /// The first four bytes are not `TPPG`.
    Magic,
    /// A major version this device does not read.
    Version {
        /// The program's major version.
        major: u16,
    },
    /// The CRC-32 does not match: the bytes were damaged.
    Crc,
    /// A reserved header field is not 0.
    Flags,
    /// More buffers, commands, bytes or arena than the device takes.
    TooLarge(Limit),
    /// A buffer record is wrong.
    Buffer {
        /// Its index.
        index: u16,
        /// What is wrong.
        fault: BufferFault,
    },
    /// A command record is wrong.
    Command {
        /// Its index.
        index: u16,
        /// What is wrong.
        fault: CommandFault,
    },
    /// A run supplied a different number of bindings than the program has.
    Bindings {
        /// The program's binding count.
        expected: u16,
        /// What the run supplied.
        got: u16,
    },
}

/// Which limit a program exceeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Limit {
    /// Its length in bytes.
    Bytes,
    /// Its buffer count.
    Buffers,
    /// Its command count.
    Commands,
    /// Its scratch arena.
    Arena,
}

/// What is wrong with a buffer record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BufferFault {
    /// An unknown kind code.
    Kind,
    /// An unknown dtype code.
    DType,
    /// A rank above the maximum, a dim past the rank, or a reserved byte.
    Shape,
    /// Its byte length overflows.
    Overflow,
    /// A binding slot out of range or used twice.
    Slot,
    /// A scratch offset not aligned, or past the arena.
    Arena,
    /// Two scratch buffers alive at once share arena bytes.
    Overlap {
        /// The other buffer.
        with: u16,
    },
    /// An output no command writes.
    NeverWritten,
    /// A view whose `place` is not another buffer that is no view, of
    /// the view's dtype and byte length (format 1.1).
    View,
}

/// What is wrong with a command record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum CommandFault {
    /// An unknown tag, or a reserved field that is not 0.
    Tag,
    /// A buffer index out of range, or a used slot left empty.
    BufferIndex,
    /// An op this device does not know, or attributes it does not write.
    UnknownOp,
    /// The op's shapes or dtypes do not match its rule.
    Shape,
    /// It writes an input or a constant, or one of its own inputs.
    Writes,
    /// It reads a scratch buffer no earlier command wrote.
    ReadsUnwritten,
    /// A copy between buffers of different byte lengths.
    CopyLength,
}

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Length => f.write_str("program length does not match its header"),
            Self::Magic => f.write_str("not a device program (bad magic)"),
            Self::Version { major } => write!(f, "program format {major}.x is not supported"),
            Self::Crc => f.write_str("program CRC mismatch (damaged bytes)"),
            Self::Flags => f.write_str("program header has reserved bits set"),
            Self::TooLarge(limit) => write!(f, "program exceeds the device's {limit:?} limit"),
            Self::Buffer { index, fault } => write!(f, "program buffer {index}: {fault:?}"),
            Self::Command { index, fault } => write!(f, "program command {index}: {fault:?}"),
            Self::Bindings { expected, got } => {
                write!(f, "program takes {expected} bindings, the run gave {got}")
            }
        }
    }
}

impl core::error::Error for ProgramError {}

impl ProgramError {
    /// The error packed into the link's 32-bit error `detail`: bits 24..32
    /// the variant (1 `Length` … 9 `Bindings`), 16..24 the limit or fault,
    /// 0..16 the record index (a buffer's in 0..8 and, for `Overlap`, the
    /// other buffer in 8..16), the major version, or the bindings expected.
    /// [`from_detail`](Self::from_detail) reads it back.
    pub fn detail(&self) -> u32 {
        let (variant, sub, low): (u8, u8, u16) = match *self {
            Self::Length => (1, 0, 0),
            Self::Magic => (2, 0, 0),
            Self::Version { major } => (3, 0, major),
            Self::Crc => (4, 0, 0),
            Self::Flags => (5, 0, 0),
            Self::TooLarge(limit) => (6, limit as u8, 0),
            Self::Buffer { index, fault } => {
                let (code, with) = fault.code();
                (7, code, (index & 0xFF) | u16::from(with) << 8)
            }
            Self::Command { index, fault } => (8, fault as u8, index),
            Self::Bindings { expected, got } => (9, got.min(255) as u8, expected),
        };
        u32::from(variant) << 24 | u32::from(sub) << 16 | u32::from(low)
    }

    /// Reads back what [`detail`](Self::detail) packed (a `Bindings`'s
    /// `got` saturates at 255); `None` for a detail it does not make.
    pub fn from_detail(detail: u32) -> Option<Self> {
        let (variant, sub, low) = ((detail >> 24) as u8, (detail >> 16) as u8, detail as u16);
        Some(match variant {
            1 => Self::Length,
            2 => Self::Magic,
            3 => Self::Version { major: low },
            4 => Self::Crc,
            5 => Self::Flags,
            6 => Self::TooLarge(Limit::from_code(sub)?),
            7 => Self::Buffer {
                index: low & 0xFF,
                fault: BufferFault::from_code(sub, (low >> 8) as u8)?,
            },
            8 => Self::Command {
                index: low,
                fault: CommandFault::from_code(sub)?,
            },
            9 => Self::Bindings {
                expected: low,
                got: u16::from(sub),
            },
            _ => return None,
        })
    }
}

impl Limit {
    const ALL: [Self; 4] = [Self::Bytes, Self::Buffers, Self::Commands, Self::Arena];

    fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }
}

impl BufferFault {
    fn code(self) -> (u8, u8) {
        match self {
            Self::Kind => (0, 0),
            Self::DType => (1, 0),
            Self::Shape => (2, 0),
            Self::Overflow => (3, 0),
            Self::Slot => (4, 0),
            Self::Arena => (5, 0),
            Self::Overlap { with } => (6, with.min(255) as u8),
            Self::NeverWritten => (7, 0),
            Self::View => (8, 0),
        }
    }

    fn from_code(code: u8, with: u8) -> Option<Self> {
        Some(match code {
            0 => Self::Kind,
            1 => Self::DType,
            2 => Self::Shape,
            3 => Self::Overflow,
            4 => Self::Slot,
            5 => Self::Arena,
            6 => Self::Overlap { with: with.into() },
            7 => Self::NeverWritten,
            8 => Self::View,
            _ => return None,
        })
    }
}

impl CommandFault {
    const ALL: [Self; 7] = [
        Self::Tag,
        Self::BufferIndex,
        Self::UnknownOp,
        Self::Shape,
        Self::Writes,
        Self::ReadsUnwritten,
        Self::CopyLength,
    ];

    fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code)).copied()
    }
}
