//! Errors of config-flash programming, and the [`Phase`] they name.

use core::fmt;

use tensorplug_abi::device::ImageError;

use crate::transport::BusFault;

/// What the programmer is doing, for the progress callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Phase {
    /// Erasing sectors of the target slot.
    Erase,
    /// Programming pages.
    Program,
    /// Reading back and comparing.
    Verify,
}

/// Why programming (or reading) the configuration flash failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FlashError {
    /// The image is refused (bad header, CRC, length or ABI). Nothing was
    /// erased or written.
    Image(ImageError),
    /// The image is shorter than its 64-byte header.
    ImageTooShort {
        /// Bytes given.
        len: usize,
    },
    /// The chip's JEDEC ID is not that of a NOR flash of at least 16 MiB
    /// (all-ones or all-zeros: nothing answers).
    UnsupportedChip {
        /// The three ID bytes read.
        jedec_id: [u8; 3],
    },
    /// The write-enable latch did not set (write-protected, or no chip).
    WriteEnableFailed,
    /// `BUSY` did not clear within the budget.
    Timeout {
        /// What the flash was doing.
        phase: Phase,
        /// The flash address of the operation.
        addr: u32,
    },
    /// Read-back differs from what was programmed.
    VerifyMismatch {
        /// First differing flash address.
        addr: u32,
    },
    /// The SPI bus failed.
    Spi(BusFault),
}

/// Coarse category of a [`FlashError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The image itself is unusable; the flash was not touched.
    BadImage,
    /// The flash chip is missing, unsupported or protected.
    Chip,
    /// A bounded wait ran out.
    Timeout,
    /// Data read back is not what was written.
    Verify,
    /// The SPI bus failed.
    Bus,
}

impl FlashError {
    /// The error's category.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::Image(_) | Self::ImageTooShort { .. } => ErrorKind::BadImage,
            Self::UnsupportedChip { .. } | Self::WriteEnableFailed => ErrorKind::Chip,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::VerifyMismatch { .. } => ErrorKind::Verify,
            Self::Spi(_) => ErrorKind::Bus,
        }
    }
}

impl From<ImageError> for FlashError {
    fn from(e: ImageError) -> Self {
        Self::Image(e)
    }
}

impl fmt::Display for FlashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Image(e) => write!(f, "image refused, flash untouched: {e}"),
            Self::ImageTooShort { len } => {
                write!(
                    f,
                    "image refused, flash untouched: {len} bytes is shorter than a header"
                )
            }
            Self::UnsupportedChip {
                jedec_id: [m, t, c],
            } => write!(
                f,
                "config flash JEDEC ID {m:02x} {t:02x} {c:02x}: not a NOR flash of at least 16 MiB"
            ),
            Self::WriteEnableFailed => {
                f.write_str("config flash did not set its write-enable latch")
            }
            Self::Timeout { phase, addr } => {
                write!(
                    f,
                    "config flash stayed busy during {phase:?} at {addr:#08x}"
                )
            }
            Self::VerifyMismatch { addr } => {
                write!(f, "config flash verify failed at {addr:#08x}")
            }
            Self::Spi(fault) => write!(f, "SPI bus fault: {fault:?}"),
        }
    }
}

impl core::error::Error for FlashError {}
