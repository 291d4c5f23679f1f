//! The FPGA next to the MCU, and the driver that runs it.
//!
//! The FPGA is its behavioural model in this MCU's RAM, reached only
//! through its SPI port: the driver's `SpiTransport` clocks frames into an
//! `embedded_hal::spi::SpiDevice` whose far end is the model's SPI slave, so
//! the driver puts on SPI exactly the bytes a real FPGA receives. Both live
//! in critical-section mutexes: the main loop and the tick interrupt share
//! them.

use core::cell::RefCell;
use critical_section::{CriticalSection, Mutex};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, Error};
use tensorplug_device_fpga::transport::spi::slave::{SpiSlave, SpiTarget, TargetError};
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::{Faults, Model, ModelConfig, ModelError, NoHostBus};

use crate::clock::{DeviceTicks, DriverClock};

/// Device memory of the modelled FPGA, from the board's `ram_budget`
/// (mps2-an386: 3 MiB of its 4 MiB of RAM).
pub const DEVICE_MEMORY: usize = crate::board::DEVICE_MEMORY;

#[repr(C, align(64))]
struct DeviceMemory([u8; DEVICE_MEMORY]);

/// The model's device memory, under a fixed name so that `cargo xtask size`
/// can leave it out of the firmware's own RAM footprint.
#[unsafe(no_mangle)]
static mut TENSORPLUG_DEVICE_MEMORY: DeviceMemory = DeviceMemory([0; DEVICE_MEMORY]);

type Fpga = Model<&'static mut [u8], NoHostBus, DeviceTicks>;

/// The driver the op-level mode runs: the reference FPGA driver over SPI.
pub type FpgaDriver = Driver<SpiTransport<SpiSlave<FpgaPort>>, DriverClock, 64>;

/// A slot for one value whose empty state is all zeros, so that the static
/// lands in `.bss`: an `Option`'s `None` is a niche value, which would put
/// the whole static (3.7 KB for the driver) into flash as `.data`.
type Slot<T> = Mutex<RefCell<heapless::Vec<T, 1>>>;

static MODEL: Slot<Fpga> = Mutex::new(RefCell::new(heapless::Vec::new()));
static DRIVER: Slot<FpgaDriver> = Mutex::new(RefCell::new(heapless::Vec::new()));

/// Builds the model over the device memory. Call once, at boot.
pub fn init() -> Result<(), ModelError> {
    // SAFETY: `init` runs once, before anything else touches the memory.
    let memory = unsafe { &mut (*core::ptr::addr_of_mut!(TENSORPLUG_DEVICE_MEMORY)).0 };
    let config = ModelConfig::default();
    let ticks = DeviceTicks::new(config.timing.freq_hz);
    let model = Model::new(&mut memory[..], NoHostBus, ticks, config, false)?;
    critical_section::with(|cs| {
        let mut slot = MODEL.borrow_ref_mut(cs);
        slot.clear();
        // Cannot fail: the slot was just emptied.
        let _ = slot.push(model);
    });
    Ok(())
}

/// Changes the FPGA model's injected faults (`debug_faults`).
pub fn set_faults(f: impl FnOnce(&mut Faults)) {
    critical_section::with(|cs| {
        if let Some(model) = MODEL.borrow_ref_mut(cs).first_mut() {
            f(model.faults_mut());
        }
    });
}

/// The FPGA's SPI port (its registers and memory), for the SPI slave and for
/// the remote-bus server.
pub struct FpgaPort;

impl FpgaPort {
    fn with<R>(f: impl FnOnce(&mut Fpga) -> Result<R, TargetError>) -> Result<R, TargetError> {
        critical_section::with(|cs| match MODEL.borrow_ref_mut(cs).first_mut() {
            Some(model) => f(model),
            None => Err(TargetError::OutOfRange),
        })
    }
}

impl SpiTarget for FpgaPort {
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError> {
        Self::with(|m| SpiTarget::read_reg(m, offset))
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError> {
        Self::with(|m| SpiTarget::write_reg(m, offset, value))
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        Self::with(|m| SpiTarget::read_mem(m, addr, buf))
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        Self::with(|m| SpiTarget::write_mem(m, addr, data))
    }
}

/// Runs `f` on the driver, bringing the device up first if it is not.
pub fn with_driver<R>(
    cs: CriticalSection<'_>,
    f: impl FnOnce(&mut FpgaDriver) -> R,
) -> Result<R, Error> {
    let mut slot = DRIVER.borrow_ref_mut(cs);
    if slot.is_empty() {
        let transport = SpiTransport::new(SpiSlave::new(FpgaPort), SpiConfig::default());
        let driver = Driver::new(transport, DriverClock, DriverConfig::default())?;
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
