//! The reference kernels' [`Error`], and the operand checks that return it.

use core::fmt;

use crate::accelerator::{Shape, ShapeError};

/// Why a reference kernel refused its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The shapes are inconsistent (the verdict of
    /// [`OpDesc::validate`](crate::accelerator::OpDesc::validate)).
    Shape(ShapeError),
    /// Operand `operand` (inputs first, then the output) holds `got`
    /// elements; its shape calls for `expected`.
    Length {
        /// Operand index; the number of inputs means the output.
        operand: u8,
        /// Elements its shape calls for.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// An element count overflows `usize`.
    Overflow,
    /// A quantization parameter cannot be represented (int8 ops).
    Quant(crate::quant::QuantError),
    /// Index `value` at `position` of an index operand is outside `0..bound`
    /// (`Gather`, `SegmentSum`).
    Index {
        /// Its position in the index operand.
        position: usize,
        /// The index.
        value: i64,
        /// The size it must be below.
        bound: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Shape(e) => write!(f, "inconsistent shapes: {e}"),
            Self::Length {
                operand,
                expected,
                got,
            } => write!(
                f,
                "operand {operand} holds {got} elements, its shape calls for {expected}"
            ),
            Self::Overflow => f.write_str("element count overflows"),
            Self::Quant(e) => write!(f, "bad quantization: {e}"),
            Self::Index {
                position,
                value,
                bound,
            } => write!(f, "indices[{position}] = {value} is not in [0, {bound})"),
        }
    }
}

impl From<ShapeError> for Error {
    fn from(e: ShapeError) -> Self {
        Self::Shape(e)
    }
}

pub(super) fn elements(s: &Shape) -> Result<usize, Error> {
    dim(s.elements().ok_or(Error::Overflow)?)
}

pub(super) fn dim(d: u64) -> Result<usize, Error> {
    usize::try_from(d).map_err(|_| Error::Overflow)
}

pub(super) fn check_len(operand: u8, expected: usize, got: usize) -> Result<(), Error> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::Length {
            operand,
            expected,
            got,
        })
    }
}
