//! Bringing up the reference driver over each transport.

pub mod link;
pub mod sim;
pub mod sim_device;
pub mod spidev;

use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::Transport;
use tensorplug_host_bridge::devices::{self, DynAccelerator};
use tensorplug_host_bridge::{OpenError, registry};
use tensorplug_model_fpga::model::host::SIM_MAX_ALLOCATIONS as MAX_ALLOCATIONS;

/// Driver budgets for a host: the MCU-sized defaults (100 ms for `READY`)
/// are too tight on a loaded machine, where the model thread or a model
/// server may not run for a while; queue waits get the bridge's timeout.
pub fn host_driver_config() -> Result<DriverConfig, OpenError> {
    let timeout_us = u64::try_from(registry::timeout_from_env()?.as_micros()).unwrap_or(u64::MAX);
    Ok(DriverConfig {
        ready_timeout_us: 5_000_000,
        submit_timeout_us: timeout_us,
        idle_timeout_us: timeout_us,
        ..DriverConfig::default()
    })
}

/// Brings up the reference driver on `transport` with the host budgets.
pub fn bring_up<T: Transport + Send + 'static>(
    transport: T,
) -> Result<Box<DynAccelerator>, OpenError> {
    let driver =
        Driver::<_, _, MAX_ALLOCATIONS>::new(transport, StdClock::default(), host_driver_config()?)
            .map_err(|e| format!("driver bring-up failed: {e}"))?;
    Ok(devices::erase(driver))
}
