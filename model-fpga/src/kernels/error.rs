//! Why a kernel refused its arguments.

use core::fmt;
use tensorplug_core::accelerator::MAX_RANK;

/// Which argument of a kernel an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Operand {
    /// The only input of a unary kernel.
    Input,
    /// The left-hand input (`a`).
    Lhs,
    /// The right-hand input (`b`).
    Rhs,
    /// The bias vector.
    Bias,
    /// The output slice.
    Output,
}

/// A kernel's arguments are inconsistent; nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum KernelError {
    /// A slice does not hold the number of elements its dims describe.
    Length {
        /// The slice.
        operand: Operand,
        /// Elements the dims call for.
        expected: usize,
        /// Elements the slice holds.
        got: usize,
    },
    /// Two shapes do not broadcast: sizes differ on `axis` and neither is 1.
    Broadcast {
        /// Output axis, outermost first.
        axis: u8,
        /// Size in the left-hand shape.
        lhs: usize,
        /// Size in the right-hand shape.
        rhs: usize,
    },
    /// A shape has more than [`MAX_RANK`] axes.
    Rank {
        /// The shape.
        operand: Operand,
        /// Its rank.
        got: usize,
    },
    /// An element count overflows `usize`.
    Overflow,
}

/// Coarse classification of a [`KernelError`], stable across versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// A slice length disagrees with the dims.
    Length,
    /// Shapes are incompatible (broadcasting, rank).
    Shape,
    /// Sizes overflow.
    Overflow,
}

impl KernelError {
    /// The coarse kind of this error.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::Length { .. } => ErrorKind::Length,
            Self::Broadcast { .. } | Self::Rank { .. } => ErrorKind::Shape,
            Self::Overflow => ErrorKind::Overflow,
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Length {
                operand,
                expected,
                got,
            } => write!(
                f,
                "{operand:?} holds {got} elements, its dims call for {expected}"
            ),
            Self::Broadcast { axis, lhs, rhs } => {
                write!(f, "shapes do not broadcast on axis {axis}: {lhs} vs {rhs}")
            }
            Self::Rank { operand, got } => {
                write!(
                    f,
                    "{operand:?} has rank {got}, at most {} is supported",
                    MAX_RANK
                )
            }
            Self::Overflow => f.write_str("element count overflows usize"),
        }
    }
}

impl core::error::Error for KernelError {}

/// `Ok` when `slice_len == expected`, else a [`KernelError::Length`].
pub(crate) fn expect_len(operand: Operand, expected: usize, got: usize) -> Result<(), KernelError> {
    if expected == got {
        Ok(())
    } else {
        Err(KernelError::Length {
            operand,
            expected,
            got,
        })
    }
}

/// `a * b`, or [`KernelError::Overflow`].
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, KernelError> {
    a.checked_mul(b).ok_or(KernelError::Overflow)
}

/// `Ok` when `len` is a whole number of rows of `row_len` (0 rows of length 0
/// only when `len` is 0); else a [`KernelError::Length`] naming the largest
/// whole-row length below `len`.
pub(crate) fn expect_whole_rows(
    operand: Operand,
    len: usize,
    row_len: usize,
) -> Result<(), KernelError> {
    let rem = len.checked_rem(row_len).unwrap_or(len);
    expect_len(operand, len - rem, len)
}
