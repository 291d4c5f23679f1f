//! [`SimDevice`]: a `sim` device's driver with the model thread it talks to,
//! and the test-only fault injection of `TENSORPLUG_SIM_FAULTS`: a wrapper
//! this plugin owns, so the bridge's launch path knows nothing of it.

use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{DeviceInfo, Drained, Fence, OpDesc, QueueId};
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

impl<D: Accelerator> Device for SimDevice<D> {
    type Error = D::Error;
    fn info(&self) -> DeviceInfo {
        self.driver.info()
    }
}

impl<D: Accelerator> Launch for SimDevice<D> {
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, D::Error> {
        if !self.rules.is_empty() && !fault_rules::arm_for(&self.model, &mut self.rules, op.kind) {
            eprintln!("tensorplug: {SIM_FAULTS_ENV}: the model did not take the faults in time");
        }
        self.driver.launch(queue, op)
    }
}

impl<D: Accelerator> Profiling for SimDevice<D> {
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

tensorplug_core::forward_capabilities!([D: Accelerator] SimDevice<D> => driver: Memory, Transfer, Reset);
