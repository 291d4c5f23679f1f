//! The configuration flash: a JEDEC SPI NOR with two image slots.
//!
//! Each slot holds an [`ImageHeader`](super::ImageHeader) in its first sector
//! and the payload from [`IMAGE_PAYLOAD_OFFSET`]. A writer validates the
//! image, picks the slot that does not hold the newest valid image, erases
//! it header sector first, programs and verifies the payload, and programs
//! the header last with `sequence` one past the other slot's. Power loss at
//! any point leaves the written slot invalid (erased or CRC-failing header,
//! or payload CRC mismatch) and the other slot untouched.

/// Program granularity: a page program never crosses a page boundary.
pub const CONFIG_FLASH_PAGE_SIZE: u32 = 256;
/// Erase granularity (the `SECTOR_ERASE_4K` command).
pub const CONFIG_FLASH_SECTOR_SIZE: u32 = 4096;
/// Smallest config flash the layout fits (16 MiB, 24-bit addresses).
pub const CONFIG_FLASH_MIN_SIZE: u32 = 0x0100_0000;
/// Size of one image slot.
pub const IMAGE_SLOT_SIZE: u32 = 0x0080_0000;
/// Offset of the payload inside a slot (the header sector comes first).
pub const IMAGE_PAYLOAD_OFFSET: u32 = CONFIG_FLASH_SECTOR_SIZE;
/// Largest payload a slot holds.
pub const IMAGE_MAX_PAYLOAD: u32 = IMAGE_SLOT_SIZE - IMAGE_PAYLOAD_OFFSET;
/// JEDEC ID (manufacturer, type, capacity) of the reference board's flash,
/// a Winbond W25Q128JV: bytes `EF 40 18` as `0x00EF4018`.
pub const REFERENCE_FLASH_JEDEC_ID: u32 = 0x00EF_4018;

/// An image slot of the config flash.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ImageSlot {
    /// Bytes `0x000000..0x800000`.
    A = 0,
    /// Bytes `0x800000..0x1000000`.
    B = 1,
}

impl ImageSlot {
    /// Byte offset of the slot (its header) in the flash.
    pub const fn offset(self) -> u32 {
        self as u32 * IMAGE_SLOT_SIZE
    }

    /// The other slot.
    pub const fn other(self) -> Self {
        match self {
            Self::A => Self::B,
            Self::B => Self::A,
        }
    }
}

/// True if `a` is a newer write generation than `b` (serial-number
/// arithmetic, RFC 1982, so the sequence may wrap).
pub const fn sequence_is_newer(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

/// The slot to boot, given each slot's `sequence` if (and only if) its header
/// and payload are valid. A tie boots slot A.
pub const fn boot_slot(a: Option<u32>, b: Option<u32>) -> Option<ImageSlot> {
    match (a, b) {
        (Some(a), Some(b)) if sequence_is_newer(b, a) => Some(ImageSlot::B),
        (Some(_), _) => Some(ImageSlot::A),
        (None, Some(_)) => Some(ImageSlot::B),
        (None, None) => None,
    }
}

/// Where to write a new image and with which `sequence`, given the same
/// inputs as [`boot_slot`]: the slot that is not booted, one generation on.
pub const fn write_target(a: Option<u32>, b: Option<u32>) -> (ImageSlot, u32) {
    match boot_slot(a, b) {
        Some(ImageSlot::A) => (ImageSlot::B, next_sequence(a)),
        Some(ImageSlot::B) => (ImageSlot::A, next_sequence(b)),
        None => (ImageSlot::A, 1),
    }
}

const fn next_sequence(current: Option<u32>) -> u32 {
    match current {
        Some(s) => s.wrapping_add(1),
        None => 1,
    }
}

/// SPI NOR commands the config flash answers (standard JEDEC opcodes,
/// 24-bit big-endian addresses, as on the W25Q/MX25/IS25 families).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NorCommand(pub u8);

impl NorCommand {
    /// `9F`: read 3 ID bytes (manufacturer, type, capacity).
    pub const READ_JEDEC_ID: NorCommand = NorCommand(0x9F);
    /// `03` + address: read bytes until chip-select rises.
    pub const READ_DATA: NorCommand = NorCommand(0x03);
    /// `05`: read the status register ([`NorStatus`]).
    pub const READ_STATUS: NorCommand = NorCommand(0x05);
    /// `06`: set the write-enable latch (needed before program and erase).
    pub const WRITE_ENABLE: NorCommand = NorCommand(0x06);
    /// `02` + address + 1..=256 bytes: program within one page (bits 1 → 0 only).
    pub const PAGE_PROGRAM: NorCommand = NorCommand(0x02);
    /// `20` + address: erase the 4 KiB sector holding the address to 0xFF.
    pub const SECTOR_ERASE_4K: NorCommand = NorCommand(0x20);
}

/// Bits of the SPI NOR status register.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NorStatus(pub u8);

impl NorStatus {
    /// Write in progress: a program or erase is running.
    pub const BUSY: NorStatus = NorStatus(1 << 0);
    /// The write-enable latch is set.
    pub const WRITE_ENABLED: NorStatus = NorStatus(1 << 1);

    /// True if every bit of `other` is set in `self`.
    pub const fn contains(self, other: NorStatus) -> bool {
        self.0 & other.0 == other.0
    }
}
