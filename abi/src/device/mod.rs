//! The device ABI of the reference FPGA: what the driver (`device-fpga`), the
//! behavioural model and the RTL must agree on, byte for byte.
//!
//! - [`Register`] offsets and the bits of `CONTROL`, `STATUS` and the IRQ registers;
//! - the [`CommandDescriptor`], [`CompletionDescriptor`] and [`EventDescriptor`]
//!   ring entries, with explicit little-endian encode/decode;
//! - the ABI version, [`Features`] and the compatibility rule
//!   ([`AbiRequirement::check`], [`check_identity`]);
//! - the bitstream [`ImageHeader`] and the config-flash layout ([`flash`]).
//!
//! `docs/device-abi.md` is the specification; `abi/include/tensorplug_device_abi.h`
//! is generated from these files by `cargo xtask header`.

mod command;
mod completion;
mod event;
pub mod flash;
mod image;
pub mod layout;
mod le;
mod regs;
mod tables;
mod version;
mod window;

pub use command::{COMMAND_DESCRIPTOR_SIZE, CommandDescriptor, CommandFlags, Opcode};
pub use completion::{
    COMPLETION_DESCRIPTOR_SIZE, CompletionDescriptor, CompletionFlags, CompletionStatus,
    expected_phase,
};
pub use event::{EVENT_DESCRIPTOR_SIZE, EventDescriptor, EventKind};
pub use image::{
    IMAGE_FORMAT_VERSION, IMAGE_HEADER_CRC_COVERED, IMAGE_HEADER_SIZE, IMAGE_MAGIC, ImageError,
    ImageHeader,
};
pub use regs::{Control, Irq, OPS_WORDS, REGISTER_SPACE_SIZE, RESET_KEY, Register, Status};
pub use tables::PerOpElementwise;
pub use version::{
    AbiRequirement, AbiVersion, DEVICE_ABI_VERSION, DEVICE_ABI_VERSION_MAJOR,
    DEVICE_ABI_VERSION_MINOR, DEVICE_ABI_VERSION_PATCH, DEVICE_ABI_VERSION_WORD, DEVICE_MAGIC,
    DRIVER_ABI_REQUIREMENT, ErrorKind, Features, IdentityError, REFERENCE_FEATURES,
    REFERENCE_TIMESTAMP_FREQ_HZ, check_identity,
};
pub use window::WindowFields;

/// The source files `cargo xtask header` feeds to cbindgen, relative to `abi/`.
/// (`layout.rs` and `le.rs` hold no C-visible items.)
pub const HEADER_SOURCES: [&str; 7] = [
    "src/device/version.rs",
    "src/device/regs.rs",
    "src/device/command.rs",
    "src/device/completion.rs",
    "src/device/event.rs",
    "src/device/image.rs",
    "src/device/flash.rs",
];
