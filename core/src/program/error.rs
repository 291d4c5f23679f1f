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
}

/// What is wrong with a command record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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
    /// A 16-bit code for the link's error `detail`: the high byte says
    /// which variant, the low byte the record index (saturated).
    pub fn detail(&self) -> u16 {
        let (class, index): (u8, u16) = match *self {
            Self::Length => (1, 0),
            Self::Magic => (2, 0),
            Self::Version { .. } => (3, 0),
            Self::Crc => (4, 0),
            Self::Flags => (5, 0),
            Self::TooLarge(limit) => (6, limit as u16),
            Self::Buffer { index, .. } => (7, index),
            Self::Command { index, .. } => (8, index),
            Self::Bindings { .. } => (9, 0),
        };
        (u16::from(class) << 8) | index.min(255)
    }
}
