//! The host bus the device masters by DMA (`COPY_H2D`/`COPY_D2H`, host rings).

/// A host-bus transfer failed (no memory at that bus address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BusError;

/// Host memory as the device sees it, by bus address.
pub trait HostBus {
    /// Reads `buf.len()` bytes at `bus_addr`.
    fn read(&mut self, bus_addr: u64, buf: &mut [u8]) -> Result<(), BusError>;
    /// Writes `data` at `bus_addr`.
    fn write(&mut self, bus_addr: u64, data: &[u8]) -> Result<(), BusError>;
}

/// No host bus (an SPI-attached device): every transfer fails. A model
/// built with it does not report `Features::DMA`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NoHostBus;

impl HostBus for NoHostBus {
    fn read(&mut self, _: u64, _: &mut [u8]) -> Result<(), BusError> {
        Err(BusError)
    }
    fn write(&mut self, _: u64, _: &[u8]) -> Result<(), BusError> {
        Err(BusError)
    }
}

/// The transport's DMA window (in-process heap block or shared-memory file).
impl HostBus for tensorplug_device_fpga::transport::DmaRegion<'_> {
    fn read(&mut self, bus_addr: u64, buf: &mut [u8]) -> Result<(), BusError> {
        tensorplug_device_fpga::transport::DmaRegion::read(self, bus_addr, buf)
            .map_err(|_| BusError)
    }
    fn write(&mut self, bus_addr: u64, data: &[u8]) -> Result<(), BusError> {
        tensorplug_device_fpga::transport::DmaRegion::write(self, bus_addr, data)
            .map_err(|_| BusError)
    }
}

/// A plain byte slice at bus address `base` (tests, MCU firmware with a
/// host-memory stand-in).
#[derive(Debug)]
pub struct SliceBus<'a> {
    /// Bus address of `memory[0]`.
    pub base: u64,
    /// The host memory.
    pub memory: &'a mut [u8],
}

impl SliceBus<'_> {
    fn range(&self, bus_addr: u64, len: usize) -> Result<core::ops::Range<usize>, BusError> {
        let start = bus_addr
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .ok_or(BusError)?;
        let end = start.checked_add(len).ok_or(BusError)?;
        if end > self.memory.len() {
            return Err(BusError);
        }
        Ok(start..end)
    }
}

impl HostBus for SliceBus<'_> {
    fn read(&mut self, bus_addr: u64, buf: &mut [u8]) -> Result<(), BusError> {
        let r = self.range(bus_addr, buf.len())?;
        buf.copy_from_slice(&self.memory[r]);
        Ok(())
    }
    fn write(&mut self, bus_addr: u64, data: &[u8]) -> Result<(), BusError> {
        let r = self.range(bus_addr, data.len())?;
        self.memory[r].copy_from_slice(data);
        Ok(())
    }
}

impl<B: HostBus + ?Sized> HostBus for &mut B {
    fn read(&mut self, bus_addr: u64, buf: &mut [u8]) -> Result<(), BusError> {
        (**self).read(bus_addr, buf)
    }
    fn write(&mut self, bus_addr: u64, data: &[u8]) -> Result<(), BusError> {
        (**self).write(bus_addr, data)
    }
}
