//! The model as the target of the SPI slave state machine: every register
//! or memory access is followed by [`Model::service`], so a doorbell runs
//! the queued commands before the SPI response is clocked out.

use tensorplug_abi::device::REGISTER_SPACE_SIZE;

use super::bus::HostBus;
use super::clock::TickSource;
use super::device::Model;
use super::memory::DeviceMemory;
use tensorplug_device_fpga::transport::spi::slave::{SpiTarget, TargetError};

impl<M: DeviceMemory, B: HostBus, C: TickSource> SpiTarget for Model<M, B, C> {
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError> {
        if offset >= REGISTER_SPACE_SIZE {
            return Err(TargetError::OutOfRange);
        }
        self.service();
        Ok(Model::read_reg(self, offset))
    }

    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError> {
        if offset >= REGISTER_SPACE_SIZE {
            return Err(TargetError::OutOfRange);
        }
        Model::write_reg(self, offset, value);
        self.service();
        Ok(())
    }

    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        self.read_memory(addr, buf)
            .map_err(|_| TargetError::OutOfRange)
    }

    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        self.write_memory(addr, data)
            .map_err(|_| TargetError::OutOfRange)
    }
}
