//! The FPGA next to the MCU, and the driver that runs it.
//!
//! The driver is the reference FPGA driver over its SPI transport; what is
//! on the far side of that SPI is the board file's `fpga` (`build.rs` sets
//! `cfg(tp_fpga)`):
//! - `model`: the FPGA's behavioural model in this MCU's RAM, behind the
//!   model's SPI slave (an emulated FPGA, [`model`]);
//! - `spi`: a real FPGA on the board's SPI bus, through the chip HAL's
//!   `SpiDevice` (a production image, [`spi`]).
//!
//! The driver lives in a critical-section mutex: the main loop and the tick
//! interrupt share it.

mod slot;

#[cfg(tp_fpga = "model")]
mod model;
#[cfg(tp_fpga = "model")]
use model::{Bus, bus};
#[cfg(tp_fpga = "model")]
pub use model::{DEVICE_MEMORY, FpgaPort, init, set_faults};

#[cfg(tp_fpga = "spi")]
mod spi;
#[cfg(tp_fpga = "spi")]
use spi::{Bus, bus};
#[cfg(tp_fpga = "spi")]
pub use spi::{FpgaPort, install};

use critical_section::CriticalSection;
use slot::Slot;
use tensorplug_device_fpga::driver::{Driver, DriverConfig, Error};
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};

use crate::glue::DriverClock;

/// The driver the op-level mode runs: the reference FPGA driver over SPI.
pub type FpgaDriver = Driver<SpiTransport<Bus>, DriverClock, 64>;

static DRIVER: Slot<FpgaDriver> = slot::empty();

/// Runs `f` on the driver, bringing the device up first if it is not.
pub fn with_driver<R>(
    cs: CriticalSection<'_>,
    f: impl FnOnce(&mut FpgaDriver) -> R,
) -> Result<R, Error> {
    let mut slot = DRIVER.borrow_ref_mut(cs);
    if slot.is_empty() {
        let transport = SpiTransport::new(bus(), SpiConfig::default());
        let config = DriverConfig {
            event_entries: crate::board::EVENT_ENTRIES,
            ..DriverConfig::default()
        };
        let driver = Driver::new(transport, DriverClock::new(), config)?;
        defmt::info!("driver up: the FPGA over SPI, op-level mode");
        // Cannot fail: the slot is empty.
        let _ = slot.push(driver);
    }
    match slot.first_mut() {
        Some(driver) => Ok(f(driver)),
        None => Err(Error::DeviceReset),
    }
}

/// Runs `f` on the driver if it is up (the tick interrupt).
pub fn if_driver(cs: CriticalSection<'_>, f: impl FnOnce(&mut FpgaDriver)) {
    if let Some(driver) = DRIVER.borrow_ref_mut(cs).first_mut() {
        f(driver);
    }
}

/// Drops the driver: the host's own driver takes the device over (remote-bus
/// mode) and will reset it.
pub fn release_driver() {
    critical_section::with(|cs| {
        if DRIVER.borrow_ref_mut(cs).pop().is_some() {
            defmt::info!("driver released: remote-bus mode");
        }
    });
}
