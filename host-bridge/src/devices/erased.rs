//! [`Erased`]: any [`Accelerator`] behind one object-safe type, so devices of
//! different drivers and transports sit side by side in the registry.

use crate::error::DeviceError;
use core::time::Duration;
use tensorplug_core::accelerator::{
    Accelerator, DeviceAddr, DeviceInfo, Drained, Fence, MemoryUsage, OpDesc, QueueId,
};
use tensorplug_core::event::Event;

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

impl<A: Accelerator + Send> Accelerator for Erased<A> {
    type Error = DeviceError;

    fn info(&self) -> DeviceInfo {
        self.accel.info()
    }
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, DeviceError> {
        self.accel
            .allocate(bytes, align)
            .map_err(DeviceError::from_driver)
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), DeviceError> {
        self.accel
            .deallocate(addr)
            .map_err(DeviceError::from_driver)
    }
    fn memory_usage(&self) -> MemoryUsage {
        self.accel.memory_usage()
    }
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, DeviceError> {
        // SAFETY: forwarded contract.
        unsafe { self.accel.copy_to_device(queue, dst, src, len) }.map_err(DeviceError::from_driver)
    }
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, DeviceError> {
        // SAFETY: forwarded contract.
        unsafe { self.accel.copy_from_device(queue, dst, src, len) }
            .map_err(DeviceError::from_driver)
    }
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, DeviceError> {
        self.accel
            .copy_on_device(queue, dst, src, len)
            .map_err(DeviceError::from_driver)
    }
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, DeviceError> {
        self.accel
            .fill(queue, dst, len, pattern)
            .map_err(DeviceError::from_driver)
    }
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, DeviceError> {
        self.accel
            .launch(queue, op)
            .map_err(DeviceError::from_driver)
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, DeviceError> {
        self.accel.poll(fence).map_err(DeviceError::from_driver)
    }
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), DeviceError> {
        self.accel
            .wait(fence, timeout)
            .map_err(DeviceError::from_driver)
    }
    fn reset(&mut self) -> Result<(), DeviceError> {
        self.accel.reset().map_err(DeviceError::from_driver)
    }
    fn timestamp(&mut self) -> Result<u64, DeviceError> {
        self.accel.timestamp().map_err(DeviceError::from_driver)
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), DeviceError> {
        self.accel
            .set_profiling(enabled)
            .map_err(DeviceError::from_driver)
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, DeviceError> {
        self.accel
            .drain_events(out)
            .map_err(DeviceError::from_driver)
    }
}
