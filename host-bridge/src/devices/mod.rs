//! Opening the devices `TENSORPLUG_DEVICE` names, each as a [`DynAccelerator`].

mod erased;
mod link;
mod sim;
pub mod spec;
mod spidev;

pub use erased::{DeviceError, DynAccelerator, Erased};
#[cfg(test)]
pub(crate) use sim::{faults::parse as parse_sim_faults, open_sim_with};
pub use spec::{DEVICE_ENV, DeviceSpec};

use crate::error::{Error, Result};
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::Transport;

/// Opens one device: brings up its driver over its transport.
pub fn open(spec: &DeviceSpec) -> Result<Box<DynAccelerator>> {
    match spec {
        DeviceSpec::Sim => sim::open_sim(),
        DeviceSpec::Pcie(path) => sim::open_pcie(path),
        DeviceSpec::Spidev(path) => spidev::open(path),
        DeviceSpec::Serial(path) => link::open_serial(path),
        DeviceSpec::Tcp(addr) => link::open_tcp(addr),
    }
}

/// An environment variable's value (`None`: unset) as a positive number;
/// unset or empty gives `default`. The error names the variable.
pub(crate) fn positive_setting(
    name: &str,
    value: Option<&str>,
    default: u32,
    what: &str,
) -> std::result::Result<u32, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(default),
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name}={text:?}: expected a positive {what}")),
        },
    }
}

/// Brings up the reference driver on `transport` with the host budgets;
/// an error is reported through `fail` (which names the device).
pub(crate) fn bring_up<T: Transport + Send + 'static>(
    transport: T,
    fail: impl Fn(String) -> Error,
) -> Result<Box<DynAccelerator>> {
    let driver = Driver::<_, _, { sim::MAX_ALLOCATIONS }>::new(
        transport,
        StdClock::default(),
        sim::host_driver_config()?,
    )
    .map_err(|e| fail(format!("driver bring-up failed: {e}")))?;
    Ok(Box::new(Erased::new(driver)))
}
