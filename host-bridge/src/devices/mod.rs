//! Every driver behind one object-safe [`DynAccelerator`].

mod erased;

pub use crate::error::DeviceError;
pub use erased::{DynAccelerator, Erased, erase};
