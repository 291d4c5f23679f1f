//! Compile-time layout assertions for every descriptor, and the same facts
//! as data (for the C-header check and the docs check in `abi/tests`).

use super::{
    CommandDescriptor, CommandFlags, CompletionDescriptor, CompletionFlags, CompletionStatus,
    EventDescriptor, EventKind, ImageHeader, Opcode, Register,
};
use core::mem::{align_of, offset_of, size_of};

/// Where one field lives in a descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// The Rust (and C) field name.
    pub name: &'static str,
    /// Byte offset.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// The layout of one descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructLayout {
    /// The Rust type name (the C name is `TPD_` + this).
    pub name: &'static str,
    /// `size_of`.
    pub size: usize,
    /// `align_of`.
    pub align: usize,
    /// Every field, in order.
    pub fields: &'static [FieldLayout],
}

/// Asserts size, alignment, every field's type and offset, and that the
/// fields tile the struct (no implicit padding); emits a [`StructLayout`].
macro_rules! layout {
    ($table:ident: $ty:ident, size $size:literal, align $align:literal,
     { $($field:ident: $fty:ty = $off:literal),* $(,)? }) => {
        const _: () = assert!(size_of::<$ty>() == $size);
        const _: () = assert!(align_of::<$ty>() == $align);
        $(
            const _: () = assert!(offset_of!($ty, $field) == $off);
            const _: for<'a> fn(&'a $ty) -> &'a $fty = |s| &s.$field;
        )*
        const _: () = assert!(0 $(+ size_of::<$fty>())* == $size);
        #[doc = concat!("The layout of [`", stringify!($ty), "`].")]
        pub const $table: StructLayout = StructLayout {
            name: stringify!($ty),
            size: $size,
            align: $align,
            fields: &[$(FieldLayout {
                name: stringify!($field),
                offset: $off,
                size: size_of::<$fty>(),
            }),*],
        };
    };
}

layout!(COMMAND_LAYOUT: CommandDescriptor, size 64, align 8, {
    opcode: Opcode = 0,
    flags: CommandFlags = 2,
    tag: u16 = 4,
    stream: u8 = 6,
    dtype: u8 = 7,
    src0: u64 = 8,
    src1: u64 = 16,
    src2: u64 = 24,
    dst: u64 = 32,
    len: u64 = 40,
    m: u32 = 48,
    n: u32 = 52,
    k: u32 = 56,
    imm: u32 = 60,
});

layout!(COMPLETION_LAYOUT: CompletionDescriptor, size 16, align 4, {
    tag: u16 = 0,
    status: CompletionStatus = 2,
    stream: u8 = 4,
    flags: CompletionFlags = 5,
    _reserved0: u16 = 6,
    command_index: u32 = 8,
    detail: u32 = 12,
});

layout!(EVENT_LAYOUT: EventDescriptor, size 16, align 8, {
    timestamp: u64 = 0,
    arg: u32 = 8,
    op_id: u16 = 12,
    queue: u8 = 14,
    kind: EventKind = 15,
});

layout!(IMAGE_HEADER_LAYOUT: ImageHeader, size 64, align 4, {
    magic: u32 = 0,
    format_version: u16 = 4,
    header_size: u16 = 6,
    abi_version: u32 = 8,
    features: u32 = 12,
    payload_length: u32 = 16,
    payload_crc32: u32 = 20,
    sequence: u32 = 24,
    _reserved0: [u32; 8] = 28,
    header_crc32: u32 = 60,
});

const _: () = assert!(size_of::<CommandDescriptor>() == super::COMMAND_DESCRIPTOR_SIZE);
const _: () = assert!(size_of::<CompletionDescriptor>() == super::COMPLETION_DESCRIPTOR_SIZE);
const _: () = assert!(size_of::<EventDescriptor>() == super::EVENT_DESCRIPTOR_SIZE);
const _: () = assert!(size_of::<ImageHeader>() == super::IMAGE_HEADER_SIZE);

// Hand-written constants (cbindgen cannot evaluate expressions) checked
// against their definitions.
const _: () = assert!(super::DEVICE_MAGIC == u32::from_le_bytes(*b"TPFG"));
const _: () = assert!(super::IMAGE_MAGIC == u32::from_le_bytes(*b"TPBS"));
const _: () = assert!(super::RESET_KEY == u32::from_le_bytes(*b"RSET"));
const _: () = assert!(super::DEVICE_ABI_VERSION.to_word() == super::DEVICE_ABI_VERSION_WORD);
const _: () = assert!(super::REFERENCE_FEATURES.0 == super::Features::KNOWN.0);

/// Every descriptor's layout.
pub const LAYOUTS: [StructLayout; 4] = [
    COMMAND_LAYOUT,
    COMPLETION_LAYOUT,
    EVENT_LAYOUT,
    IMAGE_HEADER_LAYOUT,
];

/// How the host may access a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only; writes are ignored.
    ReadOnly,
    /// Write-only; reads return 0.
    WriteOnly,
    /// Read-write.
    ReadWrite,
    /// Read; writing 1 to a bit clears it.
    ReadWriteOneToClear,
}

impl Access {
    /// The short name used in `docs/device-abi.md`.
    pub const fn short_name(self) -> &'static str {
        match self {
            Self::ReadOnly => "RO",
            Self::WriteOnly => "WO",
            Self::ReadWrite => "RW",
            Self::ReadWriteOneToClear => "RW1C",
        }
    }
}

/// One row of the register map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterInfo {
    /// The register.
    pub register: Register,
    /// Its constant's name.
    pub name: &'static str,
    /// Host access.
    pub access: Access,
    /// Value after reset; `None` when the device defines it (sizes, clocks).
    pub reset: Option<u32>,
}

macro_rules! register_map {
    ($($name:ident $access:ident $reset:expr),* $(,)?) => {
        /// The register map, in offset order.
        pub const REGISTER_MAP: [RegisterInfo; [$(stringify!($name)),*].len()] = [$(
            RegisterInfo {
                register: Register::$name,
                name: stringify!($name),
                access: Access::$access,
                reset: $reset,
            }
        ),*];
    };
}

register_map! {
    ID ReadOnly Some(super::DEVICE_MAGIC),
    ABI_VERSION ReadOnly Some(super::DEVICE_ABI_VERSION_WORD),
    FEATURES ReadOnly None,
    SCRATCH ReadWrite Some(0),
    DEVICE_MEM_SIZE_LO ReadOnly None,
    DEVICE_MEM_SIZE_HI ReadOnly None,
    TIMESTAMP_FREQ_HZ ReadOnly None,
    MAX_RING_ENTRIES ReadOnly None,
    CONTROL ReadWrite Some(0),
    STATUS ReadOnly Some(1),
    RESET WriteOnly Some(0),
    HALT_REASON ReadOnly Some(0),
    IRQ_STATUS ReadWriteOneToClear Some(0),
    IRQ_ENABLE ReadWrite Some(0),
    TIMESTAMP_LO ReadOnly None,
    TIMESTAMP_HI ReadOnly None,
    CMDQ_BASE_LO ReadWrite Some(0),
    CMDQ_BASE_HI ReadWrite Some(0),
    CMDQ_SIZE ReadWrite Some(0),
    CMDQ_HEAD ReadOnly Some(0),
    CMDQ_TAIL ReadOnly Some(0),
    CMDQ_DOORBELL WriteOnly Some(0),
    CPLQ_BASE_LO ReadWrite Some(0),
    CPLQ_BASE_HI ReadWrite Some(0),
    CPLQ_SIZE ReadWrite Some(0),
    CPLQ_HEAD ReadWrite Some(0),
    CPLQ_TAIL ReadOnly Some(0),
    EVQ_BASE_LO ReadWrite Some(0),
    EVQ_BASE_HI ReadWrite Some(0),
    EVQ_SIZE ReadWrite Some(0),
    EVQ_HEAD ReadWrite Some(0),
    EVQ_TAIL ReadOnly Some(0),
    EVQ_DROPPED ReadOnly Some(0),
    EVQ_IRQ_THRESHOLD ReadWrite Some(0),
    OPS0 ReadOnly None,
}
