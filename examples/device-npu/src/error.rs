//! The NPU's errors: what went wrong, classified by `ErrorKind`.

use core::fmt;
use tensorplug_core::accelerator::{ErrorKind, ShapeError};

/// Why an NPU call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum NpuError {
    /// No free block is large enough.
    OutOfMemory {
        /// Bytes asked for.
        bytes: u64,
    },
    /// The address is outside every live allocation.
    OutOfRange(u64),
    /// The queue does not exist.
    NoSuchQueue(u8),
    /// The alignment is not a power of two.
    BadAlignment(u64),
    /// The fence was never issued.
    UnknownFence(u64),
    /// The op is not in the NPU's capabilities.
    Unsupported(&'static str),
    /// The op descriptor is inconsistent.
    Shape(ShapeError),
    /// A size overflows.
    Overflow,
    /// The allocation table is full.
    TooManyAllocations,
    /// A MatMul's output overlaps one of its inputs.
    OutputOverlapsInput,
}

impl NpuError {
    /// The device-independent class: `OutOfMemory`, `Unsupported`, or
    /// `InvalidArgument` for everything else.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::OutOfMemory { .. } | Self::TooManyAllocations => ErrorKind::OutOfMemory,
            Self::Unsupported(_) => ErrorKind::Unsupported,
            _ => ErrorKind::InvalidArgument,
        }
    }
}

impl fmt::Display for NpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfMemory { bytes } => write!(f, "NPU: no free block of {bytes} bytes"),
            Self::OutOfRange(addr) => write!(f, "NPU: address {addr:#x} is not allocated"),
            Self::NoSuchQueue(q) => {
                write!(f, "NPU: no queue {q} (it has {})", crate::consts::QUEUES)
            }
            Self::BadAlignment(a) => write!(f, "NPU: alignment {a} is not a power of two"),
            Self::UnknownFence(fence) => write!(f, "NPU: fence {fence} was never issued"),
            Self::Unsupported(op) => write!(f, "NPU: {op} is not supported (MatMul and Relu are)"),
            Self::Shape(e) => write!(f, "NPU: {e}"),
            Self::Overflow => f.write_str("NPU: tensor size overflows"),
            Self::TooManyAllocations => f.write_str("NPU: too many live allocations"),
            Self::OutputOverlapsInput => f.write_str("NPU: MatMul output overlaps an input"),
        }
    }
}

impl tensorplug_core::accelerator::Error for NpuError {
    fn kind(&self) -> ErrorKind {
        NpuError::kind(self)
    }
}

impl core::error::Error for NpuError {}
