//! Every driver behind one object-safe [`DynAccelerator`].

mod erased;

pub use crate::error::DeviceError;
#[cfg(test)]
pub use erased::Erased;
pub use erased::{DynAccelerator, erase};

/// Why a device could not be opened: any error, shown to the user as
/// ``cannot open device `<spec>`: <error>``.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;
