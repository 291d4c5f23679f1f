//! A real FPGA on the board's SPI bus (a production image, no model): the
//! chip HAL's `embedded-hal` 1.0 `SpiDevice` (`crate::glue::FpgaSpiDevice`),
//! kept in a static so that the driver and the remote-bus server can each
//! make a handle on it ([`FpgaSpi`]) whenever they need one.

use embedded_hal::spi::{ErrorKind, ErrorType, Operation, SpiDevice};
use tensorplug_device_fpga::transport::Transport;
use tensorplug_device_fpga::transport::spi::slave::{SpiTarget, TargetError};
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};

use super::slot::{self, Slot};
use crate::glue::FpgaSpiDevice;

static DEVICE: Slot<FpgaSpiDevice> = slot::empty();

/// Keeps the board's FPGA SPI device (from `glue::init`). Call once, at boot.
pub fn install(device: FpgaSpiDevice) {
    critical_section::with(|cs| {
        let mut slot = DEVICE.borrow_ref_mut(cs);
        slot.clear();
        // Cannot fail: the slot was just emptied.
        let _ = slot.push(device);
    });
}

/// A handle on the FPGA's SPI device: each transaction runs on the
/// installed device, in a critical section.
pub struct FpgaSpi;

impl ErrorType for FpgaSpi {
    type Error = ErrorKind;
}

impl SpiDevice for FpgaSpi {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), ErrorKind> {
        critical_section::with(|cs| match DEVICE.borrow_ref_mut(cs).first_mut() {
            Some(device) => device
                .transaction(operations)
                .map_err(|e| embedded_hal::spi::Error::kind(&e)),
            None => Err(ErrorKind::Other),
        })
    }
}

/// What the driver's SPI transport talks to.
pub type Bus = FpgaSpi;

/// A new handle on the bus.
pub fn bus() -> Bus {
    FpgaSpi
}

/// The FPGA's registers and memory for the remote-bus server: its requests
/// go out on the same SPI bus as the driver's, in the same frames.
pub struct FpgaPort;

impl FpgaPort {
    fn with<R>(
        f: impl FnOnce(
            &mut SpiTransport<FpgaSpi>,
        ) -> Result<R, tensorplug_device_fpga::transport::Error>,
    ) -> Result<R, TargetError> {
        f(&mut SpiTransport::new(FpgaSpi, SpiConfig::default())).map_err(|error| {
            // The remote-bus answer has one error code for a failed access.
            defmt::warn!("remote bus: the FPGA access failed: {}", error);
            TargetError::OutOfRange
        })
    }
}

impl SpiTarget for FpgaPort {
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError> {
        Self::with(|t| t.read_reg(offset))
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError> {
        Self::with(|t| t.write_reg(offset, value))
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        Self::with(|t| t.read_mem(addr, buf))
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        Self::with(|t| t.write_mem(addr, data))
    }
}
