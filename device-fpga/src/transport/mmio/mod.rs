//! PCIe-style transport: a BAR mapped into the address space.
//!
//! A [`Bar`] provides the register window, the device-memory aperture and,
//! optionally, a host [`DmaRegion`]. [`MmioTransport`] turns any `Bar` into a
//! [`Transport`]. Backings: [`FixedBar`] (addresses known at build time,
//! e.g. an SoC's AXI window), and with the `std` feature [`HeapBar`] (an
//! in-process model), [`ShmBar`] (a shared-memory file served by a model in
//! another process) and [`SysfsBar`] (a real card's `resourceN` files).

use core::sync::atomic::{Ordering, fence};

use super::{DmaRegion, Error, Transport, check_reg_alignment};

mod bar;
mod region;
pub use bar::Bar;
pub use region::MmioRegion;

#[cfg(feature = "std")]
mod heap;
#[cfg(feature = "std")]
mod layout;
#[cfg(feature = "std")]
mod shm;
#[cfg(feature = "std")]
mod sysfs;
#[cfg(feature = "std")]
pub use {
    heap::HeapBar,
    layout::BarLayout,
    shm::ShmBar,
    sysfs::{BarWindow, SysfsBar},
};

/// A [`Bar`] from windows at fixed addresses (bare metal, or a mapping the
/// caller keeps alive forever).
#[derive(Clone, Copy, Debug)]
pub struct FixedBar {
    /// The register window.
    pub registers: MmioRegion<'static>,
    /// The device-memory aperture.
    pub memory: MmioRegion<'static>,
    /// The DMA window, if the platform has one.
    pub dma: Option<DmaRegion<'static>>,
}

impl Bar for FixedBar {
    fn registers(&self) -> MmioRegion<'_> {
        self.registers
    }
    fn memory(&self) -> MmioRegion<'_> {
        self.memory
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        self.dma
    }
}

/// [`Transport`] over a mapped [`Bar`].
///
/// Ordering, as Linux's `writel`/`readl`: `write_reg` issues a `Release`
/// fence before its volatile store, so every earlier memory-aperture or
/// DMA-window write is visible to the device before the register write
/// (e.g. a doorbell) lands; `read_reg` issues an `Acquire` fence after its
/// volatile load, so later reads see at least what the device had written
/// before it updated that register (e.g. a completion count). Memory
/// accesses never wait, so nothing here can hang.
#[derive(Debug)]
pub struct MmioTransport<B> {
    bar: B,
}

impl<B: Bar> MmioTransport<B> {
    /// A transport over `bar`.
    pub const fn new(bar: B) -> Self {
        Self { bar }
    }

    /// The mapped BAR.
    pub const fn bar(&self) -> &B {
        &self.bar
    }

    /// Gives the BAR back.
    pub fn into_inner(self) -> B {
        self.bar
    }
}

impl<B: Bar> Transport for MmioTransport<B> {
    fn read_reg(&mut self, offset: u32) -> Result<u32, Error> {
        check_reg_alignment(offset)?;
        let value = self.bar.registers().read_u32(offset as usize)?;
        fence(Ordering::Acquire);
        Ok(value)
    }

    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), Error> {
        check_reg_alignment(offset)?;
        fence(Ordering::Release);
        self.bar.registers().write_u32(offset as usize, value)
    }

    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        let offset = usize::try_from(addr).map_err(|_| Error::out_of_range(addr, buf.len()))?;
        self.bar.memory().read_bytes(offset, buf)
    }

    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), Error> {
        let offset = usize::try_from(addr).map_err(|_| Error::out_of_range(addr, data.len()))?;
        self.bar.memory().write_bytes(offset, data)
    }

    fn dma(&self) -> Option<DmaRegion<'_>> {
        self.bar.dma()
    }
}
