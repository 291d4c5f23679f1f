//! The accelerator error classes, a leaf every capability trait names.

/// What went wrong, in device-independent terms (the embedded-hal pattern).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// Device memory is exhausted, or the request exceeds it.
    OutOfMemory,
    /// An address, length, shape or descriptor is invalid.
    InvalidArgument,
    /// The device did not answer within the timeout.
    Timeout,
    /// The device reported a fault or lost state; a reset may recover it.
    DeviceFault,
    /// The device's ABI or firmware is incompatible with this driver.
    Incompatible,
    /// The bus or link failed (CRC error, framing, disconnect).
    Transport,
    /// The device does not implement this operation.
    Unsupported,
    /// Anything else.
    Other,
}

/// An accelerator error: printable, and classified by [`ErrorKind`].
pub trait Error: core::fmt::Debug + core::fmt::Display {
    /// The device-independent class of this error.
    fn kind(&self) -> ErrorKind;
}
