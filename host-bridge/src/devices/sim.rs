//! `sim` and `pcie:<path>`: the reference FPGA driver over MMIO.
//!
//! `sim` runs the behavioural model on its own thread behind an in-process
//! heap BAR (register writes wake that thread: [`waking`]); `pcie:<file>`
//! maps a BAR file (a `tensorplug-model-server` shared-memory file, or a
//! sysfs `resource` file of a real card).
//! `TENSORPLUG_SIM_FAULTS` (a testing aid, [`faults`]) makes `sim` fail on purpose.

pub mod faults;
mod waking;

use super::{DynAccelerator, Erased};
use crate::error::{Error, Result};
use std::path::Path;
use std::sync::Arc;
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::model::host::{InProcessDevice, ServeOptions};
use tensorplug_device_fpga::transport::mmio::{MmioTransport, ShmBar};

/// Live device allocations per device (TF's BFC allocator makes few, large ones).
pub const MAX_ALLOCATIONS: usize = 1024;
/// Device memory of a `sim` device.
pub const SIM_MEMORY_BYTES: usize = 256 << 20;
/// DMA window of a `sim` device (host copies are staged through it).
pub const SIM_DMA_BYTES: usize = 8 << 20;

fn open_error(spec: String, reason: impl std::fmt::Display) -> Error {
    Error::Open {
        spec,
        reason: reason.to_string(),
    }
}

/// Driver budgets for a host: the MCU-sized defaults (100 ms for `READY`)
/// are too tight on a loaded machine, where the model thread or a model
/// server may not run for a while; queue waits get the bridge's timeout.
pub(super) fn host_driver_config() -> Result<DriverConfig> {
    let timeout_us =
        u64::try_from(crate::registry::timeout_from_env()?.as_micros()).unwrap_or(u64::MAX);
    Ok(DriverConfig {
        ready_timeout_us: 5_000_000,
        submit_timeout_us: timeout_us,
        idle_timeout_us: timeout_us,
        ..DriverConfig::default()
    })
}

/// `sim`: the behavioural model on its own thread behind the MMIO transport.
pub fn open_sim() -> Result<Box<DynAccelerator>> {
    let rules = faults::from_env().map_err(|why| open_error("sim".into(), why))?;
    open_sim_with(rules)
}

/// `sim` with the fault `rules` of [`faults`] (none: the plain model).
pub fn open_sim_with(rules: Vec<faults::FaultRule>) -> Result<Box<DynAccelerator>> {
    let fail =
        |what: &str, e: &dyn std::fmt::Display| open_error("sim".into(), format!("{what}: {e}"));
    let device = InProcessDevice::spawn(SIM_MEMORY_BYTES, SIM_DMA_BYTES, ServeOptions::default())
        .map_err(|e| fail("cannot start the model thread", &e))?;
    let transport = waking::WakingTransport::new(device.transport(), device.waker());
    let driver =
        Driver::<_, _, MAX_ALLOCATIONS>::new(transport, StdClock::default(), host_driver_config()?)
            .map_err(|e| fail("driver bring-up failed", &e))?;
    if !rules.is_empty() {
        crate::log::warn(format_args!(
            "{}: test-only fault injection is on: {rules:?}",
            faults::SIM_FAULTS_ENV
        ));
        return Ok(Box::new(Erased::new(faults::FaultInjector::new(
            driver, device, rules,
        ))));
    }
    // Field order in `Erased`: the driver drops before the model thread stops.
    Ok(Box::new(Erased::with_keep_alive(driver, device)))
}

/// `pcie:<path>`: a BAR file (sysfs resource, or a model server's shm file).
pub fn open_pcie(path: &Path) -> Result<Box<DynAccelerator>> {
    let spec = || format!("pcie:{}", path.display());
    let bar = ShmBar::open(path).map_err(|e| {
        open_error(
            spec(),
            format!("cannot map the BAR file (is `tensorplug-model-server` serving it?): {e}"),
        )
    })?;
    super::bring_up(MmioTransport::new(Arc::new(bar)), |reason| {
        open_error(spec(), reason)
    })
}
