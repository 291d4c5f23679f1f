//! A BAR in a heap block, for a model of the device in the same process.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io;

use super::{Bar, BarLayout, MmioRegion};
use crate::transport::DmaRegion;

/// A zeroed, page-aligned heap block laid out like a [`ShmBar`](super::ShmBar)
/// file. Share it with a model thread through an `Arc<HeapBar>`: both sides
/// get the same windows. DMA bus addresses are offsets in the block.
#[derive(Debug)]
pub struct HeapBar {
    ptr: *mut u8,
    alloc: Layout,
    layout: BarLayout,
    registers: MmioRegion<'static>,
    memory: MmioRegion<'static>,
    dma: DmaRegion<'static>,
}

// SAFETY: the block is only accessed through raw pointers with the ordering
// rules of `MmioRegion`/`DmaRegion`; `ptr` is owned and freed once.
unsafe impl Send for HeapBar {}
// SAFETY: as above.
unsafe impl Sync for HeapBar {}

impl HeapBar {
    /// Allocates a zeroed block for `layout`.
    pub fn new(layout: BarLayout) -> io::Result<Self> {
        let oom = || io::Error::new(io::ErrorKind::OutOfMemory, "cannot allocate the BAR block");
        let alloc = Layout::from_size_align(layout.total_len(), 4096).map_err(|_| oom())?;
        // SAFETY: the size is non-zero (the header page alone is 4 KiB).
        let ptr = unsafe { alloc_zeroed(alloc) };
        if ptr.is_null() {
            return Err(oom());
        }
        // SAFETY: the block lives until `drop`, which no window outlives: the
        // 'static windows are only handed out re-borrowed from `&self`. It is
        // only accessed through raw pointers.
        let windows = unsafe { super::shm::windows(ptr, &layout) };
        match windows {
            Ok((registers, memory, dma)) => Ok(Self {
                ptr,
                alloc,
                layout,
                registers,
                memory,
                dma,
            }),
            Err(e) => {
                // SAFETY: allocated above with `alloc`, never shared.
                unsafe { dealloc(ptr, alloc) };
                Err(io::Error::other(e))
            }
        }
    }

    /// The layout of the block.
    pub const fn layout(&self) -> &BarLayout {
        &self.layout
    }
}

impl Bar for HeapBar {
    fn registers(&self) -> MmioRegion<'_> {
        self.registers
    }
    fn memory(&self) -> MmioRegion<'_> {
        self.memory
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        Some(self.dma)
    }
}

impl Drop for HeapBar {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with `self.alloc`; freed only here.
        unsafe { dealloc(self.ptr, self.alloc) };
    }
}
