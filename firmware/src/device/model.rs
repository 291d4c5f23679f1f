//! The emulated FPGA: its behavioural model in this MCU's RAM, reached only
//! through its SPI port. The driver's `SpiTransport` clocks frames into an
//! `embedded_hal::spi::SpiDevice` whose far end is the model's SPI slave, so
//! the driver puts on SPI exactly the bytes a real FPGA receives.

use tensorplug_device_fpga::transport::spi::slave::{SpiSlave, SpiTarget, TargetError};
use tensorplug_model_fpga::model::{Faults, Model, ModelConfig, ModelError, NoHostBus, TickSource};

use super::slot::{self, Slot};
use crate::glue::clock::{self, TICK_HZ};

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

/// What the driver's SPI transport talks to: the model's SPI slave.
pub type Bus = SpiSlave<FpgaPort>;

/// A new handle on the bus.
pub fn bus() -> Bus {
    SpiSlave::new(FpgaPort)
}

static MODEL: Slot<Fpga> = slot::empty();

/// The model's timestamp counter, at its configured frequency, from the
/// board's free-running clock.
pub struct DeviceTicks {
    freq_hz: u64,
}

impl DeviceTicks {
    /// Ticks at `freq_hz`.
    pub const fn new(freq_hz: u32) -> Self {
        Self {
            freq_hz: freq_hz as u64,
        }
    }
}

impl TickSource for DeviceTicks {
    fn now_ticks(&mut self) -> u64 {
        (u128::from(clock::now()) * u128::from(self.freq_hz) / u128::from(TICK_HZ)) as u64
    }
}

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
