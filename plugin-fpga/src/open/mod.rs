//! Bringing up the reference driver over each transport.

pub mod link;
pub mod sim;
pub mod sim_device;
pub mod spidev;

use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::Transport;
use tensorplug_host_bridge::prelude::{DynAccelerator, OpenError, erase, timeout_from_env};
use tensorplug_model_fpga::model::host::SIM_MAX_ALLOCATIONS as MAX_ALLOCATIONS;

/// The longest a host waits for `READY` after a reset: the MCU-sized
/// default (100 ms) is too tight on a loaded machine, where the model
/// thread or a model server may not run for a while.
const HOST_READY_TIMEOUT_US: u64 = 5_000_000;

/// Driver budgets for a host: queue waits get the bridge's timeout
/// (`TENSORPLUG_TIMEOUT_MS`), and so does a reset's wait for `READY` when
/// it is shorter than `HOST_READY_TIMEOUT_US`. A dead device then fails a
/// step within two budgets: its wait's and its reset's
/// (`docs/reliability.md`).
pub fn host_driver_config() -> Result<DriverConfig, OpenError> {
    Ok(driver_config(timeout_from_env()?))
}

fn driver_config(budget: std::time::Duration) -> DriverConfig {
    let timeout_us = u64::try_from(budget.as_micros()).unwrap_or(u64::MAX);
    DriverConfig {
        ready_timeout_us: timeout_us.min(HOST_READY_TIMEOUT_US),
        submit_timeout_us: timeout_us,
        idle_timeout_us: timeout_us,
        ..DriverConfig::default()
    }
}

/// Brings up the reference driver on `transport` with the host budgets.
pub fn bring_up<T: Transport + Send + 'static>(
    transport: T,
) -> Result<Box<DynAccelerator>, OpenError> {
    let driver =
        Driver::<_, _, MAX_ALLOCATIONS>::new(transport, StdClock::default(), host_driver_config()?)
            .map_err(|e| format!("driver bring-up failed: {e}"))?;
    Ok(erase(driver))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_reset_waits_for_ready_within_the_budget_and_at_most_5_s() {
        let short = driver_config(Duration::from_millis(1500));
        assert_eq!(short.ready_timeout_us, 1_500_000);
        assert_eq!(short.submit_timeout_us, 1_500_000);
        let long = driver_config(Duration::from_secs(60));
        assert_eq!(long.ready_timeout_us, HOST_READY_TIMEOUT_US);
        assert_eq!(long.idle_timeout_us, 60_000_000);
    }
}
