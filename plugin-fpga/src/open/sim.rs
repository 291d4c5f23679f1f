//! `sim` and `pcie:<path>`: the reference FPGA driver over MMIO.
//!
//! `sim` runs the behavioural model on its own thread behind an in-process
//! heap BAR ([`open_sim`]); `pcie:<file>` maps a BAR file (a
//! `tensorplug-model-server` shared-memory file, or a sysfs `resource` file
//! of a real card). `TENSORPLUG_SIM_FAULTS` (a testing aid,
//! [`fault_rules`]) makes `sim` fail on purpose.

use super::sim_device::SimDevice;
use super::{bring_up, host_driver_config};
use std::path::Path;
use std::sync::Arc;
use tensorplug_device_fpga::transport::mmio::{MmioTransport, ShmBar};
use tensorplug_host_bridge::prelude::{DynAccelerator, OpenError, erase, settings};
use tensorplug_model_fpga::model::host::fault_rules::{self, FaultRule, SIM_FAULTS_ENV};
use tensorplug_model_fpga::model::host::open_sim;

/// The fault rules of setting `SIM_FAULTS` (none when unset).
pub fn rules_from_env() -> Result<Vec<FaultRule>, OpenError> {
    match settings::get("SIM_FAULTS")? {
        None => Ok(Vec::new()),
        Some(value) => Ok(fault_rules::parse(&value.text).map_err(|why| value.error(why))?),
    }
}

/// `sim`: the behavioural model on its own thread behind the MMIO transport.
pub fn open() -> Result<Box<DynAccelerator>, OpenError> {
    open_with(rules_from_env()?)
}

/// `sim` whose launches fire the fault `rules` (none: the plain model).
pub fn open_with(rules: Vec<FaultRule>) -> Result<Box<DynAccelerator>, OpenError> {
    let (driver, device) = open_sim(host_driver_config()?)?;
    if !rules.is_empty() {
        eprintln!("tensorplug: {SIM_FAULTS_ENV}: test-only fault injection is on: {rules:?}");
    }
    Ok(erase(SimDevice::new(driver, device, rules)))
}

/// `pcie:<path>`: a BAR file (sysfs resource, or a model server's shm file).
pub fn open_pcie(path: &Path) -> Result<Box<DynAccelerator>, OpenError> {
    let bar = ShmBar::open(path).map_err(|e| {
        format!("cannot map the BAR file (is `tensorplug-model-server` serving it?): {e}")
    })?;
    bring_up(MmioTransport::new(Arc::new(bar)))
}
