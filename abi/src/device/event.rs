//! Profiling-event descriptors: what the device stamps into the event ring.
//!
//! [`EventDescriptor`] has exactly the layout of `tensorplug_core::event::Event`
//! (same fields, order, sizes and offsets; 16 bytes, 8-byte aligned), and
//! [`EventKind`] values are the same numbers as `tensorplug_core::event::EventKind`,
//! so a driver copies ring entries into core's rings field for field.

use super::le::{put, u16_at, u32_at, u64_at};

/// What an event marks. Every `u8` is representable; unknown kinds are
/// kept, not rejected. Values match `tensorplug_core::event::EventKind`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventKind(pub u8);

impl EventKind {
    /// A non-copy command started executing. `arg`: its opcode.
    pub const OP_BEGIN: EventKind = EventKind(1);
    /// A non-copy command finished. `arg`: its opcode.
    pub const OP_END: EventKind = EventKind(2);
    /// `COPY_H2D` started. `arg`: byte count (saturated to `u32::MAX`).
    pub const COPY_H2D_BEGIN: EventKind = EventKind(3);
    /// `COPY_H2D` finished. `arg`: byte count (saturated).
    pub const COPY_H2D_END: EventKind = EventKind(4);
    /// `COPY_D2H` started. `arg`: byte count (saturated).
    pub const COPY_D2H_BEGIN: EventKind = EventKind(5);
    /// `COPY_D2H` finished. `arg`: byte count (saturated).
    pub const COPY_D2H_END: EventKind = EventKind(6);
    /// `COPY_D2D` started. `arg`: byte count (saturated).
    pub const COPY_D2D_BEGIN: EventKind = EventKind(7);
    /// `COPY_D2D` finished. `arg`: byte count (saturated).
    pub const COPY_D2D_END: EventKind = EventKind(8);

    /// Wraps a raw value (any value is representable).
    pub const fn from_raw(raw: u8) -> Self {
        Self(raw)
    }

    /// `Some(self)` if this ABI version defines the kind.
    pub const fn known(self) -> Option<Self> {
        if self.0 >= Self::OP_BEGIN.0 && self.0 <= Self::COPY_D2D_END.0 {
            Some(self)
        } else {
            None
        }
    }
}

/// One event-ring entry: 16 bytes, little-endian, 8-byte aligned; the
/// layout of `tensorplug_core::event::Event`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EventDescriptor {
    /// Timestamp-counter ticks (see `TIMESTAMP_FREQ_HZ`).
    pub timestamp: u64,
    /// Kind-specific argument (see [`EventKind`]).
    pub arg: u32,
    /// The command's `tag`.
    pub op_id: u16,
    /// The command's `stream`.
    pub queue: u8,
    /// An [`EventKind`] value.
    pub kind: EventKind,
}

/// Size of an [`EventDescriptor`] in bytes.
pub const EVENT_DESCRIPTOR_SIZE: usize = 16;

impl EventDescriptor {
    /// Encodes in the wire/memory format.
    pub const fn to_le_bytes(&self) -> [u8; EVENT_DESCRIPTOR_SIZE] {
        let mut b = [0u8; EVENT_DESCRIPTOR_SIZE];
        put(&mut b, 0, &self.timestamp.to_le_bytes());
        put(&mut b, 8, &self.arg.to_le_bytes());
        put(&mut b, 12, &self.op_id.to_le_bytes());
        b[14] = self.queue;
        b[15] = self.kind.0;
        b
    }

    /// Decodes the wire/memory format. Every byte pattern decodes.
    pub const fn from_le_bytes(b: &[u8; EVENT_DESCRIPTOR_SIZE]) -> Self {
        Self {
            timestamp: u64_at(b, 0),
            arg: u32_at(b, 8),
            op_id: u16_at(b, 12),
            queue: b[14],
            kind: EventKind(b[15]),
        }
    }
}
