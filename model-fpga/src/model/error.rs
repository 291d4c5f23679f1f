//! Why a model could not be built ([`ModelError`]).

use core::fmt;

/// The model could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ModelError {
    /// Device memory must start 4-byte aligned (f32 operands).
    MisalignedMemory,
    /// `max_ring_entries` is not a power of two.
    BadConfig,
}

/// Coarse classification of a [`ModelError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments to the constructor are unusable.
    InvalidInput,
}

impl ModelError {
    /// The coarse kind of this error.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::MisalignedMemory | Self::BadConfig => ErrorKind::InvalidInput,
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MisalignedMemory => "device memory is not 4-byte aligned",
            Self::BadConfig => "max_ring_entries is not a power of two",
        })
    }
}

impl core::error::Error for ModelError {}
