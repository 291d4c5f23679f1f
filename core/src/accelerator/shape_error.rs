//! [`ShapeError`]: why an op descriptor's shapes or types do not fit its op.

use core::fmt;

/// Why an [`OpDesc`](super::OpDesc) is inconsistent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ShapeError {
    /// The op takes `expected` inputs.
    InputCount {
        /// Inputs the op takes.
        expected: u8,
        /// Inputs given.
        got: u8,
    },
    /// Operand `operand` (0.. inputs, then the output) has an element type
    /// the op does not take (f32 but for the int8 ops' operands).
    DType {
        /// Operand index; `inputs.len()` means the output.
        operand: u8,
    },
    /// Operand `operand` has rank `got`; the op needs `expected`.
    Rank {
        /// Operand index; `inputs.len()` means the output.
        operand: u8,
        /// Rank the op needs.
        expected: u8,
        /// Rank given.
        got: u8,
    },
    /// Operand `operand`'s dimension `axis` is `got`; `expected` was needed.
    Dim {
        /// Operand index; `inputs.len()` means the output.
        operand: u8,
        /// Axis, outermost first.
        axis: u8,
        /// Size needed.
        expected: u64,
        /// Size given.
        got: u64,
    },
    /// A size computation overflowed.
    Overflow,
    /// A `Transpose`'s `perm` is not a permutation of the input's axes.
    Permutation,
    /// The attribute block is not one the op takes (a value out of range,
    /// an unknown mode, bytes set that the op does not use).
    Attrs,
}

impl ShapeError {
    /// The same error with operand `from` called `to` (a rule checked on
    /// another operand's behalf).
    pub(super) fn renumber(self, from: u8, to: u8) -> Self {
        let swap = |o: u8| if o == from { to } else { o };
        match self {
            Self::DType { operand } => Self::DType {
                operand: swap(operand),
            },
            Self::Rank {
                operand,
                expected,
                got,
            } => Self::Rank {
                operand: swap(operand),
                expected,
                got,
            },
            Self::Dim {
                operand,
                axis,
                expected,
                got,
            } => Self::Dim {
                operand: swap(operand),
                axis,
                expected,
                got,
            },
            other => other,
        }
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::InputCount { expected, got } => {
                write!(f, "op takes {expected} inputs, got {got}")
            }
            Self::DType { operand } => {
                write!(
                    f,
                    "operand {operand} has an element type the op does not take"
                )
            }
            Self::Rank {
                operand,
                expected,
                got,
            } => write!(f, "operand {operand} has rank {got}, expected {expected}"),
            Self::Dim {
                operand,
                axis,
                expected,
                got,
            } => write!(
                f,
                "operand {operand} has size {got} on axis {axis}, expected {expected}"
            ),
            Self::Overflow => f.write_str("tensor size overflows"),
            Self::Permutation => f.write_str("perm is not a permutation of the input's axes"),
            Self::Attrs => f.write_str("the attributes are not ones the op takes"),
        }
    }
}
