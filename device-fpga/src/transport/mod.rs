//! How the driver reaches the device: 32-bit registers at byte offsets, bulk
//! device memory at 64-bit addresses, and (where the bus has it) a host
//! memory window the device reaches by DMA.
//!
//! The transports know nothing about the register map: the driver decides
//! which register is a doorbell. Two implementations:
//! - [`spi::SpiTransport`]: CRC-checked frames over any
//!   `embedded_hal::spi::SpiDevice`; no DMA.
//! - [`mmio::MmioTransport`]: volatile access to a PCIe BAR (a sysfs
//!   `resource` mmap, a shared-memory file, or a heap block for an
//!   in-process model), with a DMA window.
//! - [`link::LinkTransport`]: link-protocol requests over a byte stream
//!   (TCP, serial) to an MCU or a model server; no DMA.
//!
//! The wire format and the rules are written down in `docs/transports.md`.

mod dma;
mod error;
pub mod link;
pub mod mmio;
pub mod spi;

pub use dma::DmaRegion;
pub use error::{BusFault, CrcSide, Error, ErrorKind};

/// A bus to one device.
///
/// # Contract
/// - Register offsets are byte offsets and must be 4-byte aligned; values
///   are little-endian on the device.
/// - Every operation completes or fails in bounded time: a device that
///   stays busy yields [`Error::Timeout`], never a hang.
/// - Ordering: a `write_reg` is observed by the device after every earlier
///   `write_mem` and every earlier write into the [`DmaRegion`] (so any
///   register may serve as a doorbell); a `read_reg` happens before every
///   later `read_mem` and DMA-window read (so completion state read from a
///   register covers the data it announces).
/// - On error, the contents of a read buffer are unspecified.
pub trait Transport {
    /// Reads the 32-bit register at byte `offset`.
    fn read_reg(&mut self, offset: u32) -> Result<u32, Error>;

    /// Writes the 32-bit register at byte `offset`.
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), Error>;

    /// Reads `buf.len()` bytes of device memory starting at `addr`.
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Error>;

    /// Writes `data` to device memory starting at `addr`.
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), Error>;

    /// The host memory window the device can reach by DMA, if the bus has
    /// one. The driver stages copies there and hands the device its bus
    /// addresses. `None` (the default) means "no DMA": copy with
    /// [`Transport::write_mem`]/[`Transport::read_mem`] instead.
    fn dma(&self) -> Option<DmaRegion<'_>> {
        None
    }
}

impl<T: Transport + ?Sized> Transport for &mut T {
    fn read_reg(&mut self, offset: u32) -> Result<u32, Error> {
        (**self).read_reg(offset)
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), Error> {
        (**self).write_reg(offset, value)
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        (**self).read_mem(addr, buf)
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), Error> {
        (**self).write_mem(addr, data)
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        (**self).dma()
    }
}

/// Checks that a register offset is 4-byte aligned.
pub(crate) fn check_reg_alignment(offset: u32) -> Result<(), Error> {
    if offset.is_multiple_of(4) {
        Ok(())
    } else {
        Err(Error::Misaligned {
            addr: u64::from(offset),
        })
    }
}
