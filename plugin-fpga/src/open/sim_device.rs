//! [`SimDevice`]: a `sim` device's driver with the model thread it talks to,
//! and the test-only fault injection of `TENSORPLUG_SIM_FAULTS`: a wrapper
//! this plugin owns, so the bridge's launch path knows nothing of it.

use core::time::Duration;
use tensorplug_core::accelerator::{
    Accelerator, DeviceAddr, DeviceInfo, Drained, Fence, MemoryUsage, OpDesc, QueueId,
};
use tensorplug_core::event::Event;
use tensorplug_model_fpga::model::host::InProcessDevice;
use tensorplug_model_fpga::model::host::fault_rules::{self, FaultRule, SIM_FAULTS_ENV};

/// The driver `D` of a `sim` device, then its model thread (fields drop in
/// order: the driver first, while the model still answers), and the fault
/// rules armed on the model before each launch that matches one.
pub struct SimDevice<D> {
    driver: D,
    model: InProcessDevice,
    rules: Vec<FaultRule>,
}

impl<D> SimDevice<D> {
    /// `driver` over `model`, with fault `rules` (none: the plain model).
    pub fn new(driver: D, model: InProcessDevice, rules: Vec<FaultRule>) -> Self {
        Self {
            driver,
            model,
            rules,
        }
    }
}

impl<D: Accelerator> Accelerator for SimDevice<D> {
    type Error = D::Error;

    fn info(&self) -> DeviceInfo {
        self.driver.info()
    }
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, D::Error> {
        self.driver.allocate(bytes, align)
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), D::Error> {
        self.driver.deallocate(addr)
    }
    fn memory_usage(&self) -> MemoryUsage {
        self.driver.memory_usage()
    }
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, D::Error> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.driver.copy_to_device(queue, dst, src, len) }
    }
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, D::Error> {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.driver.copy_from_device(queue, dst, src, len) }
    }
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, D::Error> {
        self.driver.copy_on_device(queue, dst, src, len)
    }
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, D::Error> {
        self.driver.fill(queue, dst, len, pattern)
    }
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, D::Error> {
        if !self.rules.is_empty() && !fault_rules::arm_for(&self.model, &mut self.rules, op.kind) {
            eprintln!("tensorplug: {SIM_FAULTS_ENV}: the model did not take the faults in time");
        }
        self.driver.launch(queue, op)
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, D::Error> {
        self.driver.poll(fence)
    }
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), D::Error> {
        self.driver.wait(fence, timeout)
    }
    fn reset(&mut self) -> Result<(), D::Error> {
        self.driver.reset()
    }
    fn timestamp(&mut self) -> Result<u64, D::Error> {
        // Live from the model's clock: the BAR's copy is as old as the model
        // thread's last turn, which on a loaded host is hundreds of µs.
        match self.model.timestamp() {
            Some(ticks) => Ok(ticks),
            None => self.driver.timestamp(),
        }
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), D::Error> {
        self.driver.set_profiling(enabled)
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, D::Error> {
        self.driver.drain_events(out)
    }
}
