//! The bridge's error type and its mapping to `TF_Code`.

use std::fmt;
use tensorplug_abi::tf::{self, TF_Code};
use tensorplug_core::accelerator::ErrorKind;

/// Result with the bridge's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// [`Error::Timeout`]'s end when the device was reset after it.
pub const RESET: &str = "; the device was reset and its pending work failed";
/// [`Error::Timeout`]'s end when the reset after it failed too.
pub const RESET_FAILED: &str =
    "; resetting the device failed too (see the log), and its pending work failed";

/// Everything that can go wrong in the bridge; each message says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A TF C function is not loaded (the plugin was not loaded by TensorFlow).
    #[error(
        "TensorFlow's `{0}` is not loaded in this process; load the plugin through \
         TensorFlow (TF_PLUGGABLE_DEVICE_LIBRARY_PATH or tensorflow-plugins/)"
    )]
    TfApiMissing(String),
    /// The device list could not be parsed.
    #[error("{value}: {reason}")]
    DeviceSpec {
        /// `<variable>="<value>"`.
        value: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// A device could not be opened.
    #[error("cannot open device `{spec}`: {reason}")]
    Open {
        /// The device list's item.
        spec: String,
        /// Why.
        reason: String,
    },
    /// The device or its driver reported an error.
    #[error("{device}: {source}")]
    Device {
        /// `<TYPE>:<ordinal> (<spec>)`.
        device: String,
        /// The driver's error.
        source: DeviceError,
    },
    /// A wait ran out of time.
    #[error(
        "{device}: {what} did not complete within {timeout_ms} ms (set TENSORPLUG_TIMEOUT_MS \
         to wait longer){then}"
    )]
    Timeout {
        /// `<TYPE>:<ordinal> (<spec>)`.
        device: String,
        /// What was waited for.
        what: &'static str,
        /// The budget.
        timeout_ms: u64,
        /// What happened next: that the device was reset (`RESET`), that the
        /// reset failed too (`RESET_FAILED`), or nothing.
        then: &'static str,
    },
    /// A wait failed at once: a reset of the device failed, and the budget
    /// since has not run out.
    #[error(
        "{device}: {what} failed at once: a reset of the device failed within the last \
         {timeout_ms} ms (it does not answer); until that budget ends waits fail at once, \
         then one tries again (TENSORPLUG_TIMEOUT_MS)"
    )]
    Unresponsive {
        /// `<TYPE>:<ordinal> (<spec>)`.
        device: String,
        /// What was waited for.
        what: &'static str,
        /// The budget.
        timeout_ms: u64,
    },
    /// TF passed something the bridge cannot use (null handle, foreign pointer).
    #[error("{0}")]
    InvalidArgument(String),
    /// TF and tensorplug disagree about a struct of the C API.
    #[error("{0}")]
    Abi(String),
    /// Work on this stream failed earlier; the stream stays failed.
    #[error("the stream failed earlier: {0}")]
    StreamFailed(String),
    /// A bug in tensorplug.
    #[error("internal error: {0}; this is a tensorplug bug, please report it")]
    Internal(String),
}

impl Error {
    /// TF and tensorplug disagree about a C struct: [`Error::Abi`] with its text.
    pub fn abi(error: impl std::fmt::Display) -> Self {
        Self::Abi(error.to_string())
    }

    /// The TF status code this error is reported with.
    pub fn code(&self) -> TF_Code {
        match self {
            Self::TfApiMissing(_) => tf::TF_FAILED_PRECONDITION,
            Self::DeviceSpec { .. } => tf::TF_INVALID_ARGUMENT,
            Self::Open { .. } => tf::TF_UNAVAILABLE,
            Self::Device { source, .. } => code_of_kind(source.kind),
            Self::Timeout { .. } => tf::TF_DEADLINE_EXCEEDED,
            Self::Unresponsive { .. } => tf::TF_UNAVAILABLE,
            Self::InvalidArgument(_) => tf::TF_INVALID_ARGUMENT,
            Self::Abi(_) => tf::TF_FAILED_PRECONDITION,
            Self::StreamFailed(_) => tf::TF_ABORTED,
            Self::Internal(_) => tf::TF_INTERNAL,
        }
    }
}

/// The TF code for a device error class.
pub fn code_of_kind(kind: ErrorKind) -> TF_Code {
    match kind {
        ErrorKind::OutOfMemory => tf::TF_RESOURCE_EXHAUSTED,
        ErrorKind::InvalidArgument => tf::TF_INVALID_ARGUMENT,
        ErrorKind::Timeout => tf::TF_DEADLINE_EXCEEDED,
        ErrorKind::DeviceFault => tf::TF_INTERNAL,
        ErrorKind::Incompatible => tf::TF_FAILED_PRECONDITION,
        ErrorKind::Transport => tf::TF_UNAVAILABLE,
        ErrorKind::Unsupported => tf::TF_UNIMPLEMENTED,
        _ => tf::TF_UNKNOWN,
    }
}

/// A driver error, kept as its class and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceError {
    /// The device-independent class.
    pub kind: ErrorKind,
    /// The driver's `Display`.
    pub message: String,
}

impl DeviceError {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn from_driver<E: tensorplug_core::accelerator::Error>(error: E) -> Self {
        Self::new(error.kind(), error.to_string())
    }
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?})", self.message, self.kind)
    }
}

impl std::error::Error for DeviceError {}

impl tensorplug_core::accelerator::Error for DeviceError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}
