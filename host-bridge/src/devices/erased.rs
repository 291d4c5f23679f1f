//! [`Erased`]: any [`Accelerator`] behind one object-safe type, so devices of
//! different drivers and transports sit side by side in the registry.

use crate::error::DeviceError;
use tensorplug_core::accelerator::{Accelerator, Device, DeviceInfo};

/// Every device the bridge drives, whatever its driver.
pub type DynAccelerator = dyn Accelerator<Error = DeviceError> + Send;

/// Wraps a driver so it becomes a [`DynAccelerator`]. What must live
/// beside the driver (a model thread, a test's fault injection) is the
/// backend's own wrapper around it, e.g. `plugin-fpga`'s `SimDevice`.
pub struct Erased<A> {
    accel: A,
}

impl<A> Erased<A> {
    /// Wraps `accel`.
    pub fn new(accel: A) -> Self {
        Self { accel }
    }
}

/// `accel` as a boxed [`DynAccelerator`].
pub fn erase<A: Accelerator + Send + 'static>(accel: A) -> Box<DynAccelerator> {
    Box::new(Erased::new(accel))
}

impl<A: Accelerator + Send> Device for Erased<A> {
    type Error = DeviceError;
    fn info(&self) -> DeviceInfo {
        self.accel.info()
    }
}

tensorplug_core::forward_capabilities!(
    [A: Accelerator + Send] Erased<A> => accel, map_err(DeviceError::from_driver):
    Memory, Transfer, Launch, Reset, Profiling
);
