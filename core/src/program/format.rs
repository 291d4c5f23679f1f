//! The program's byte layout: a header, a buffer table and a command list
//! of fixed-size little-endian records, then a CRC-32.
//! `docs/device-programs.md` gives it byte by byte.

use crate::accelerator::{ATTR_BYTES, Attrs, MAX_RANK, Namespace, OpId};

/// The first four bytes of every program.
pub const MAGIC: [u8; 4] = *b"TPPG";
/// The format's major version: a device refuses any other.
pub const VERSION_MAJOR: u16 = 1;
/// The format's minor version: a device accepts any minor of its major
/// whose records it can read (a later minor only adds record kinds and
/// command tags, which an older device refuses by name). 1.1 adds
/// [`BufferKind::View`].
pub const VERSION_MINOR: u16 = 1;
/// Bytes in the header.
pub const HEADER_LEN: usize = 24;
/// Bytes in one buffer record.
pub const BUFFER_LEN: usize = 32;
/// Bytes in one command record.
pub const COMMAND_LEN: usize = 48;
/// Bytes of the trailing CRC-32 (ISO-HDLC, as the link's frames).
pub const CRC_LEN: usize = 4;
/// Every scratch buffer's arena offset is a multiple of this.
pub const ARENA_ALIGN: u32 = 64;
/// The most buffers any program has (buffer indices are `u16`; the
/// validator keeps two `u16` per buffer on its stack).
pub const MAX_BUFFERS: usize = 256;
/// An unused input slot of a command.
pub const NO_BUFFER: u16 = u16::MAX;

pub(crate) use crate::checksum::CRC32;

/// What a buffer is to the program's caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum BufferKind {
    /// Bound by the caller at each run; only read.
    Input = 0,
    /// Bound by the caller at each run; written.
    Output = 1,
    /// Bound once (weights computed from constants); only read.
    Constant = 2,
    /// Bound by reference; read and written (training updates).
    Variable = 3,
    /// Lives in the program's arena, at the planned offset.
    Scratch = 4,
    /// Format 1.1: another buffer's bytes in a shape of its own (a
    /// reshape that copies nothing). Its `place` is that buffer's index,
    /// a buffer that is no view, of the same dtype and byte length; a
    /// command that reads or writes the view reads or writes that buffer.
    View = 5,
}

impl BufferKind {
    /// The kind with code `code`.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::Input,
            1 => Self::Output,
            2 => Self::Constant,
            3 => Self::Variable,
            4 => Self::Scratch,
            5 => Self::View,
            _ => return None,
        })
    }

    /// Whether a command may write it (a view: whether its target may).
    pub const fn writable(self) -> bool {
        !matches!(self, Self::Input | Self::Constant)
    }

    /// Whether a run binds it to an address of its own (one binding slot).
    pub const fn bound(self) -> bool {
        !matches!(self, Self::Scratch | Self::View)
    }
}

/// The header's fields (bytes 4.. of the program).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Buffer records.
    pub buffers: u16,
    /// Command records.
    pub commands: u16,
    /// Binding slots a run supplies (one per non-scratch buffer).
    pub bindings: u16,
    /// Reserved, 0.
    pub flags: u16,
    /// Bytes of scratch arena a run supplies.
    pub arena: u32,
    /// Bytes of the whole program, CRC included.
    pub total: u32,
}

impl Header {
    /// The total length that `buffers` and `commands` records need.
    pub const fn length_for(buffers: usize, commands: usize) -> usize {
        HEADER_LEN + buffers * BUFFER_LEN + commands * COMMAND_LEN + CRC_LEN
    }

    /// Writes the record's bytes.
    pub fn write(&self, out: &mut [u8; HEADER_LEN]) {
        out[..4].copy_from_slice(&MAGIC);
        put16(out, 4, self.major);
        put16(out, 6, self.minor);
        put16(out, 8, self.buffers);
        put16(out, 10, self.commands);
        put16(out, 12, self.bindings);
        put16(out, 14, self.flags);
        put32(out, 16, self.arena);
        put32(out, 20, self.total);
    }

    /// Reads a record from its bytes.
    pub fn read(raw: &[u8; HEADER_LEN]) -> Self {
        Self {
            major: get16(raw, 4),
            minor: get16(raw, 6),
            buffers: get16(raw, 8),
            commands: get16(raw, 10),
            bindings: get16(raw, 12),
            flags: get16(raw, 14),
            arena: get32(raw, 16),
            total: get32(raw, 20),
        }
    }
}

/// One buffer record, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferRecord {
    /// [`BufferKind`] code.
    pub kind: u8,
    /// [`DType`](crate::accelerator::DType) code.
    pub dtype: u8,
    /// Number of dims used.
    pub rank: u8,
    /// Reserved, 0.
    pub reserved: u8,
    /// The binding slot, the arena offset of a scratch buffer, or the
    /// index of the buffer a view views.
    pub place: u32,
    /// Dims, outermost first; those past `rank` are 0.
    pub dims: [u32; MAX_RANK],
}

impl BufferRecord {
    /// Writes the record's bytes.
    pub fn write(&self, out: &mut [u8; BUFFER_LEN]) {
        out[0] = self.kind;
        out[1] = self.dtype;
        out[2] = self.rank;
        out[3] = self.reserved;
        put32(out, 4, self.place);
        for (i, d) in self.dims.iter().enumerate() {
            put32(out, 8 + 4 * i, *d);
        }
    }

    /// Reads a record from its bytes.
    pub fn read(raw: &[u8; BUFFER_LEN]) -> Self {
        Self {
            kind: raw[0],
            dtype: raw[1],
            rank: raw[2],
            reserved: raw[3],
            place: get32(raw, 4),
            dims: core::array::from_fn(|i| get32(raw, 8 + 4 * i)),
        }
    }
}

/// A command's tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum CommandTag {
    /// Launch one op of the catalogue (or the device's own).
    Launch = 0,
    /// Copy one buffer into another of the same byte length.
    Copy = 1,
    /// Fill a buffer with a repeated 32-bit pattern.
    Fill = 2,
}

impl CommandTag {
    /// The tag with code `code`.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::Launch,
            1 => Self::Copy,
            2 => Self::Fill,
            _ => return None,
        })
    }
}

/// One command record, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandRecord {
    /// [`CommandTag`] code.
    pub tag: u8,
    /// Inputs used (`Launch`: the op's count; `Copy`: 1; `Fill`: 0).
    pub inputs_used: u8,
    /// The profiling id each launch carries (the TF node it came from).
    pub op_id: u16,
    /// The op (`Launch`), else 0.
    pub op: OpId,
    /// The output buffer.
    pub output: u16,
    /// Input buffers; unused slots are [`NO_BUFFER`].
    pub inputs: [u16; 3],
    /// Reserved, 0.
    pub reserved: u16,
    /// The op's attributes (`Launch`), the pattern in bytes 0..4 (`Fill`).
    pub attrs: Attrs,
    /// Reserved, 0.
    pub tail: u32,
}

impl CommandRecord {
    /// Writes the record's bytes.
    pub fn write(&self, out: &mut [u8; COMMAND_LEN]) {
        out[0] = self.tag;
        out[1] = self.inputs_used;
        put16(out, 2, self.op_id);
        put32(out, 4, self.op.namespace.0);
        put16(out, 8, self.op.code);
        put16(out, 10, self.output);
        for (i, b) in self.inputs.iter().enumerate() {
            put16(out, 12 + 2 * i, *b);
        }
        put16(out, 18, self.reserved);
        out[20..20 + ATTR_BYTES].copy_from_slice(&self.attrs.0);
        put32(out, 44, self.tail);
    }

    /// Reads a record from its bytes.
    pub fn read(raw: &[u8; COMMAND_LEN]) -> Self {
        let mut attrs = [0; ATTR_BYTES];
        attrs.copy_from_slice(&raw[20..20 + ATTR_BYTES]);
        Self {
            tag: raw[0],
            inputs_used: raw[1],
            op_id: get16(raw, 2),
            op: OpId {
                namespace: Namespace(get32(raw, 4)),
                code: get16(raw, 8),
            },
            output: get16(raw, 10),
            inputs: core::array::from_fn(|i| get16(raw, 12 + 2 * i)),
            reserved: get16(raw, 18),
            attrs: Attrs(attrs),
            tail: get32(raw, 44),
        }
    }
}

fn put16(out: &mut [u8], at: usize, v: u16) {
    out[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get16(raw: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([raw[at], raw[at + 1]])
}

fn get32(raw: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]])
}
