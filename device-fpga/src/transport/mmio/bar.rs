//! The [`Bar`] trait: what an MMIO transport maps. A leaf the backings
//! (`heap`, `shm`, `sysfs`) implement.

use super::region::MmioRegion;
use crate::transport::DmaRegion;

/// The windows a mapped device exposes.
pub trait Bar {
    /// The register window; register offset 0 is its first byte.
    fn registers(&self) -> MmioRegion<'_>;
    /// The device-memory aperture; device address 0 is its first byte.
    fn memory(&self) -> MmioRegion<'_>;
    /// The host memory the device reaches by DMA, if any.
    fn dma(&self) -> Option<DmaRegion<'_>> {
        None
    }
}

impl<B: Bar + ?Sized> Bar for &B {
    fn registers(&self) -> MmioRegion<'_> {
        (**self).registers()
    }
    fn memory(&self) -> MmioRegion<'_> {
        (**self).memory()
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        (**self).dma()
    }
}

#[cfg(feature = "std")]
impl<B: Bar + ?Sized> Bar for std::sync::Arc<B> {
    fn registers(&self) -> MmioRegion<'_> {
        (**self).registers()
    }
    fn memory(&self) -> MmioRegion<'_> {
        (**self).memory()
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        (**self).dma()
    }
}
