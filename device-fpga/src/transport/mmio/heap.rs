//! A BAR in a heap block, for a model of the device in the same process.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io;

use super::bar::Bar;
use super::layout::BarLayout;
use super::region::MmioRegion;
use crate::transport::DmaRegion;

/// The block's alignment: a page, as a mapped BAR file has.
const PAGE: usize = 4096;

/// A zeroed, page-aligned heap block laid out like a [`ShmBar`](super::ShmBar)
/// file. Share it with a model thread through an `Arc<HeapBar>`: both sides
/// get the same windows. DMA bus addresses are offsets in the block.
#[derive(Debug)]
pub struct HeapBar {
    /// The allocation; the windows start at its first page boundary.
    base: *mut u8,
    alloc: Layout,
    layout: BarLayout,
    registers: MmioRegion<'static>,
    memory: MmioRegion<'static>,
    dma: DmaRegion<'static>,
}

// SAFETY: the block is only accessed through raw pointers with the ordering
// rules of `MmioRegion`/`DmaRegion`; `base` is owned and freed once.
unsafe impl Send for HeapBar {}
// SAFETY: as above.
unsafe impl Sync for HeapBar {}

impl HeapBar {
    /// Allocates a zeroed block for `layout`.
    ///
    /// With the default alignment the allocator takes zeroed pages from the
    /// OS as they are (`calloc`); asked for page alignment, it would write
    /// zeros over the whole block (the 264 MiB of the `sim` device: 0.2 s
    /// and all of it resident at every open). So the block is a page
    /// larger, and its page-aligned part is used.
    pub fn new(layout: BarLayout) -> io::Result<Self> {
        let oom = || io::Error::new(io::ErrorKind::OutOfMemory, "cannot allocate the BAR block");
        let len = layout.total_len().checked_add(PAGE).ok_or_else(oom)?;
        let alloc = Layout::from_size_align(len, 16).map_err(|_| oom())?;
        // SAFETY: the size is non-zero (the header page alone is 4 KiB).
        let base = unsafe { alloc_zeroed(alloc) };
        if base.is_null() {
            return Err(oom());
        }
        // SAFETY: less than a page past `base`, which is a page longer than
        // the layout needs.
        let ptr = unsafe { base.add(base.addr().next_multiple_of(PAGE) - base.addr()) };
        // SAFETY: the block lives until `drop`, which no window outlives: the
        // 'static windows are only handed out re-borrowed from `&self`. It is
        // only accessed through raw pointers.
        let windows = unsafe { super::shm::windows(ptr, &layout) };
        match windows {
            Ok((registers, memory, dma)) => Ok(Self {
                base,
                alloc,
                layout,
                registers,
                memory,
                dma,
            }),
            Err(e) => {
                // SAFETY: allocated above with `alloc`, never shared.
                unsafe { dealloc(base, alloc) };
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
        unsafe { dealloc(self.base, self.alloc) };
    }
}
