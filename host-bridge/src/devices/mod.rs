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

use crate::error::Result;

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
