//! Why a record was not stored ([`RingError`]).

use core::fmt;

/// Why a record was not stored. The record has been dropped and counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RingError {
    /// The ring was full.
    Full,
    /// Every per-thread ring of a [`RingRegistry`](super::RingRegistry)
    /// was taken.
    NoFreeRing,
}

/// Category of a [`RingError`], in the embedded-hal style.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RingErrorKind {
    /// The ring had no room: the consumer did not drain it in time.
    Full,
    /// The producer has no ring: the registry has fewer rings than threads.
    NoRing,
}

impl RingError {
    /// The error's category.
    pub const fn kind(&self) -> RingErrorKind {
        match self {
            Self::Full => RingErrorKind::Full,
            Self::NoFreeRing => RingErrorKind::NoRing,
        }
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Full => "event ring full: record dropped",
            Self::NoFreeRing => "no free per-thread event ring: record dropped",
        })
    }
}

impl core::error::Error for RingError {}
