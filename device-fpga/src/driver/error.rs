//! The driver's error type.

use core::fmt;

use tensorplug_abi::device::{CompletionStatus, IdentityError};
use tensorplug_core::accelerator::{self, ErrorKind, ShapeError};

use crate::transport;

/// What a bounded wait was waiting for when it ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WaitFor {
    /// `STATUS.READY` after a reset.
    Ready,
    /// `STATUS.ENABLED` after programming the rings.
    Enabled,
    /// A free command-queue slot (back-pressure).
    QueueSlot,
    /// The completion of a fence.
    Completion,
    /// Earlier commands to finish before a bulk-path copy.
    Idle,
}

/// Why a driver operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The transport failed (CRC, framing, bus fault, out-of-range access).
    Transport(transport::Error),
    /// `SCRATCH` did not read back what was written: no device, or a
    /// broken bus.
    BusCheck,
    /// Not a tensorplug device, or an incompatible device ABI (both
    /// versions are in the inner error).
    Identity(IdentityError),
    /// A bounded wait ran out; the device may be stuck. Call `reset`.
    Timeout {
        /// What was awaited.
        waiting_for: WaitFor,
        /// The budget that ran out, in microseconds.
        after_us: u64,
    },
    /// The device halted (`STATUS.HALTED`); only a reset clears it.
    Halted {
        /// `HALT_REASON`.
        reason: CompletionStatus,
    },
    /// The device lost its ring state without being asked to (it was reset,
    /// or never enabled). Call `reset`.
    DeviceReset,
    /// The device completed a command with an error status.
    Command {
        /// The status the device wrote (unknown values are failures too).
        status: CompletionStatus,
        /// The status-specific detail word.
        detail: u32,
        /// The command's tag (the op id).
        tag: u16,
    },
    /// The command was outstanding when the driver reset the device.
    Aborted,
    /// The device broke the ring protocol (a completion for the wrong
    /// command, a wrong phase bit, an impossible index).
    Protocol,
    /// No free block of device memory is large enough.
    OutOfMemory {
        /// Bytes requested.
        requested: u64,
        /// The largest free block, in bytes.
        largest_free: u64,
    },
    /// The allocator's fixed-capacity block table is full.
    TooManyAllocations,
    /// `deallocate` of an address that is not the start of a live
    /// allocation (double free, or never allocated).
    UnknownAllocation {
        /// The address given.
        addr: u64,
    },
    /// `addr..addr + len` is not inside the allocatable device memory.
    OutOfRange {
        /// Start of the range.
        addr: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// The op descriptor's shapes are inconsistent.
    Shape(ShapeError),
    /// An argument is invalid (alignment not a power of two, a range
    /// outside device memory, a dimension too large for the device).
    InvalidArgument,
    /// The device lacks a feature the request needs (`Features` bits).
    Unsupported {
        /// The missing `Features` bits.
        feature: u32,
    },
    /// The device does not declare this op (its `FEATURES` and `OPS`
    /// registers do not bring it): refused before anything is enqueued.
    Undeclared {
        /// The op's catalogue name.
        op: &'static str,
    },
    /// The op's attributes do not fit the device's command (its feature is
    /// there, but e.g. a dimension over 65535 or a transpose of six axes).
    BeyondCommand {
        /// What does not fit.
        what: &'static str,
    },
}

impl Error {
    /// The device-independent category of the error.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            // A bus that stays busy is a device that stopped answering.
            Self::Transport(e) if matches!(e.kind(), transport::ErrorKind::Timeout) => {
                ErrorKind::Timeout
            }
            Self::Transport(_) | Self::BusCheck => ErrorKind::Transport,
            Self::Identity(_) => ErrorKind::Incompatible,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::Halted { .. } | Self::DeviceReset | Self::Aborted | Self::Protocol => {
                ErrorKind::DeviceFault
            }
            Self::Command { status, .. } => status_kind(*status),
            Self::OutOfMemory { .. } | Self::TooManyAllocations => ErrorKind::OutOfMemory,
            Self::UnknownAllocation { .. }
            | Self::OutOfRange { .. }
            | Self::Shape(_)
            | Self::InvalidArgument => ErrorKind::InvalidArgument,
            Self::Unsupported { .. } | Self::Undeclared { .. } | Self::BeyondCommand { .. } => {
                ErrorKind::Unsupported
            }
        }
    }
}

/// The error category of a completion status; unknown statuses are faults.
pub const fn status_kind(status: CompletionStatus) -> ErrorKind {
    match status {
        CompletionStatus::INVALID_OPCODE
        | CompletionStatus::INVALID_ARGUMENT
        | CompletionStatus::OUT_OF_RANGE
        | CompletionStatus::MISALIGNED => ErrorKind::InvalidArgument,
        CompletionStatus::UNSUPPORTED => ErrorKind::Unsupported,
        CompletionStatus::BUS_ERROR => ErrorKind::Transport,
        _ => ErrorKind::DeviceFault,
    }
}

impl From<transport::Error> for Error {
    fn from(e: transport::Error) -> Self {
        Self::Transport(e)
    }
}

impl From<IdentityError> for Error {
    fn from(e: IdentityError) -> Self {
        Self::Identity(e)
    }
}

impl From<ShapeError> for Error {
    fn from(e: ShapeError) -> Self {
        Self::Shape(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "transport: {e}"),
            Self::BusCheck => f.write_str("the SCRATCH register does not read back: no device?"),
            Self::Identity(e) => write!(f, "{e}"),
            Self::Timeout {
                waiting_for,
                after_us,
            } => write!(
                f,
                "device timed out after {after_us} µs waiting for {waiting_for:?}"
            ),
            Self::Halted { reason } => match reason.name() {
                Some(name) => write!(f, "device halted: {name}"),
                None => write!(f, "device halted: unknown reason {:#06x}", reason.0),
            },
            Self::DeviceReset => f.write_str("the device lost its ring state (unexpected reset)"),
            Self::Command {
                status,
                detail,
                tag,
            } => match status.name() {
                Some(name) => {
                    write!(f, "command (tag {tag}) failed: {name}, detail {detail:#x}")?;
                    match tensorplug_core::quant::block::describe_detail(*detail) {
                        // An int8 command's quantization block (ABI 1.4).
                        Some((reason, value)) if *status == CompletionStatus::INVALID_ARGUMENT => {
                            write!(f, " (its quantization block has {reason}: {value})")
                        }
                        _ => Ok(()),
                    }
                }
                None => write!(
                    f,
                    "command (tag {tag}) failed with unknown status {:#06x}, detail {detail:#x}",
                    status.0
                ),
            },
            Self::Aborted => f.write_str("work aborted by a device reset"),
            Self::Protocol => f.write_str("the device broke the completion-ring protocol"),
            Self::OutOfMemory {
                requested,
                largest_free,
            } => write!(
                f,
                "out of device memory: {requested} bytes requested, largest free block {largest_free}"
            ),
            Self::TooManyAllocations => f.write_str("allocation table full"),
            Self::UnknownAllocation { addr } => {
                write!(f, "{addr:#x} is not a live allocation (double free?)")
            }
            Self::OutOfRange { addr, len } => write!(
                f,
                "{len} bytes at device address {addr:#x} are outside the allocatable memory"
            ),
            Self::Shape(e) => write!(f, "inconsistent op shapes: {e}"),
            Self::InvalidArgument => f.write_str("invalid argument"),
            Self::Unsupported { feature } => {
                write!(f, "the device lacks feature bits {feature:#x}")
            }
            Self::Undeclared { op } => write!(
                f,
                "the device does not declare {op} (its FEATURES and OPS registers)"
            ),
            Self::BeyondCommand { what } => write!(f, "beyond the device's commands: {what}"),
        }
    }
}

impl core::error::Error for Error {}

impl accelerator::Error for Error {
    fn kind(&self) -> ErrorKind {
        Error::kind(self)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;
    use tensorplug_core::quant::{QuantError, block};

    #[test]
    fn a_refused_quantization_block_says_why() {
        let e = Error::Command {
            status: CompletionStatus::INVALID_ARGUMENT,
            detail: block::detail(QuantError::ZeroPoint { value: 300 }),
            tag: 7,
        };
        assert_eq!(
            e.to_string(),
            "command (tag 7) failed: INVALID_ARGUMENT, detail 0x12c0418 (its quantization block \
             has a zero point outside int8's [-128, 127]: 300)"
        );
        // Another field's detail stays a bare offset.
        let other = Error::Command {
            status: CompletionStatus::INVALID_ARGUMENT,
            detail: 40,
            tag: 7,
        };
        assert_eq!(
            other.to_string(),
            "command (tag 7) failed: INVALID_ARGUMENT, detail 0x28"
        );
    }
}
