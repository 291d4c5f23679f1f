//! Completion descriptors: what the device writes into the completion queue,
//! one per command, in command order.

use super::le::{put, u16_at, u32_at};

/// How a command ended. Every `u16` is representable; a driver treats
/// values it does not know as failures.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CompletionStatus(pub u16);

impl CompletionStatus {
    /// The command ran to completion.
    pub const OK: CompletionStatus = CompletionStatus(0);
    /// The opcode is not one this device knows. `detail`: the opcode.
    pub const INVALID_OPCODE: CompletionStatus = CompletionStatus(1);
    /// Unknown flag, non-zero reserved or unused field, zero or inconsistent
    /// dimensions. `detail`: byte offset of the offending field.
    pub const INVALID_ARGUMENT: CompletionStatus = CompletionStatus(2);
    /// An operand range lies outside device memory (or overflows).
    /// `detail`: byte offset of the offending address field.
    pub const OUT_OF_RANGE: CompletionStatus = CompletionStatus(3);
    /// An f32 operand is not 4-byte aligned. `detail`: as for `OUT_OF_RANGE`.
    pub const MISALIGNED: CompletionStatus = CompletionStatus(4);
    /// The opcode needs a feature this device lacks (e.g. DMA). `detail`: the feature bit.
    pub const UNSUPPORTED: CompletionStatus = CompletionStatus(5);
    /// A host-bus (DMA) transfer failed. `detail`: 0.
    pub const BUS_ERROR: CompletionStatus = CompletionStatus(6);
    /// The command was cut short because the device halted. `detail`: 0.
    pub const ABORTED: CompletionStatus = CompletionStatus(7);
    /// The device failed internally and halts after writing this.
    /// `detail`: device-specific.
    pub const DEVICE_FAULT: CompletionStatus = CompletionStatus(8);

    /// Wraps a raw value (any value is representable).
    pub const fn from_raw(raw: u16) -> Self {
        Self(raw)
    }

    /// `Some(self)` if this ABI version defines the status.
    pub const fn known(self) -> Option<Self> {
        match self.name() {
            Some(_) => Some(self),
            None => None,
        }
    }

    /// True only for [`OK`](Self::OK).
    pub const fn is_ok(self) -> bool {
        self.0 == Self::OK.0
    }

    /// The constant's name, e.g. `"OUT_OF_RANGE"`; `None` if unknown.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::OK => "OK",
            Self::INVALID_OPCODE => "INVALID_OPCODE",
            Self::INVALID_ARGUMENT => "INVALID_ARGUMENT",
            Self::OUT_OF_RANGE => "OUT_OF_RANGE",
            Self::MISALIGNED => "MISALIGNED",
            Self::UNSUPPORTED => "UNSUPPORTED",
            Self::BUS_ERROR => "BUS_ERROR",
            Self::ABORTED => "ABORTED",
            Self::DEVICE_FAULT => "DEVICE_FAULT",
            _ => return None,
        })
    }
}

/// Bits of [`CompletionDescriptor::flags`].
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CompletionFlags(pub u8);

impl CompletionFlags {
    /// The phase tag: 1 on the device's first pass over the queue, 0 on the
    /// second, and so on. An entry whose phase differs from the pass the host
    /// expects has not been written yet, so the host can poll memory alone.
    pub const PHASE: CompletionFlags = CompletionFlags(1 << 0);

    /// The raw bits.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// True if every bit of `other` is set in `self`.
    pub const fn contains(self, other: CompletionFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// The phase tag the device writes for the command at free-running
/// completion index `index` in a queue of `entries` (a power of two) entries.
pub const fn expected_phase(index: u32, entries: u32) -> bool {
    match index.checked_div(entries) {
        Some(pass) => pass & 1 == 0,
        None => false,
    }
}

/// One completion-queue entry: 16 bytes, little-endian, 4-byte aligned.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CompletionDescriptor {
    /// The command's `tag`.
    pub tag: u16,
    /// How the command ended.
    pub status: CompletionStatus,
    /// The command's `stream`.
    pub stream: u8,
    /// [`CompletionFlags`].
    pub flags: CompletionFlags,
    /// Written as 0.
    pub _reserved0: u16,
    /// Free-running command-queue index of the command (its `CMDQ_HEAD` value
    /// when the device took it).
    pub command_index: u32,
    /// Status-specific detail (see [`CompletionStatus`]); 0 for `OK`.
    pub detail: u32,
}

/// Size of a [`CompletionDescriptor`] in bytes.
pub const COMPLETION_DESCRIPTOR_SIZE: usize = 16;

impl CompletionDescriptor {
    /// Encodes in the wire/memory format.
    pub const fn to_le_bytes(&self) -> [u8; COMPLETION_DESCRIPTOR_SIZE] {
        let mut b = [0u8; COMPLETION_DESCRIPTOR_SIZE];
        put(&mut b, 0, &self.tag.to_le_bytes());
        put(&mut b, 2, &self.status.0.to_le_bytes());
        b[4] = self.stream;
        b[5] = self.flags.0;
        put(&mut b, 6, &self._reserved0.to_le_bytes());
        put(&mut b, 8, &self.command_index.to_le_bytes());
        put(&mut b, 12, &self.detail.to_le_bytes());
        b
    }

    /// Decodes the wire/memory format. Every byte pattern decodes.
    pub const fn from_le_bytes(b: &[u8; COMPLETION_DESCRIPTOR_SIZE]) -> Self {
        Self {
            tag: u16_at(b, 0),
            status: CompletionStatus(u16_at(b, 2)),
            stream: b[4],
            flags: CompletionFlags(b[5]),
            _reserved0: u16_at(b, 6),
            command_index: u32_at(b, 8),
            detail: u32_at(b, 12),
        }
    }
}
