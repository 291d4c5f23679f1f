//! A BAR in a shared-memory file, so a model in another process can stand
//! in for the card: both processes map the same file `MAP_SHARED`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use memmap2::MmapRaw;

use super::bar::Bar;
use super::layout::BarLayout;
use super::layout::HEADER_BYTES;
use super::region::MmioRegion;
use crate::transport::{DmaRegion, Error};

/// A shared mapping of a BAR file: a header page (magic `TPLUGBAR`, layout
/// version, part sizes), then the register window, the memory aperture and
/// the DMA window (see [`BarLayout`]). DMA bus addresses are file offsets.
///
/// The device side (a model in another process) calls [`ShmBar::open`] on
/// the same path and serves the windows.
#[derive(Debug)]
pub struct ShmBar {
    // Keeps the mapping alive; the windows below point into it.
    _map: MmapRaw,
    layout: BarLayout,
    registers: MmioRegion<'static>,
    memory: MmioRegion<'static>,
    dma: DmaRegion<'static>,
}

impl ShmBar {
    /// Creates (or truncates) the file at `path`, sizes it for `layout`
    /// (zero-filled), writes the header and maps it shared.
    pub fn create(path: impl AsRef<Path>, layout: BarLayout) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(layout.total_len() as u64)?;
        std::io::Write::write_all(&mut &file, &layout.header())?;
        Self::map(&file, layout)
    }

    /// Maps an existing BAR file, taking the layout from its header.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let mut header = [0; HEADER_BYTES];
        (&file).read_exact(&mut header)?;
        let layout = BarLayout::from_header(&header)?;
        if file.metadata()?.len() != layout.total_len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "BAR file size does not match its header",
            ));
        }
        Self::map(&file, layout)
    }

    fn map(file: &File, layout: BarLayout) -> io::Result<Self> {
        let map = MmapRaw::map_raw(file)?;
        if map.len() < layout.total_len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "BAR file too short",
            ));
        }
        // SAFETY: the mapping lives as long as `Self` (field `_map`), and the
        // 'static windows are only handed out re-borrowed from `&self`. It is
        // shared with other processes, which access it through their own
        // mappings, never through references in ours.
        let (registers, memory, dma) =
            unsafe { windows(map.as_mut_ptr(), &layout) }.map_err(io::Error::other)?;
        Ok(Self {
            _map: map,
            layout,
            registers,
            memory,
            dma,
        })
    }

    /// The layout read from (or written to) the header.
    pub const fn layout(&self) -> &BarLayout {
        &self.layout
    }
}

impl Bar for ShmBar {
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

/// The three windows of a block laid out by `layout` at `base`.
///
/// # Safety
/// `base..base + layout.total_len()` must satisfy
/// [`MmioRegion::new_memory_backed`]'s and [`DmaRegion::new`]'s contracts
/// for as long as the windows are used (the model serving the block accesses
/// registers atomically, `model::host`).
pub(super) unsafe fn windows(
    base: *mut u8,
    layout: &BarLayout,
) -> Result<(MmioRegion<'static>, MmioRegion<'static>, DmaRegion<'static>), Error> {
    // SAFETY: the caller's contract covers the whole block.
    let whole = unsafe { MmioRegion::new_memory_backed(base, layout.total_len()) }?;
    let registers = whole.window(layout.registers_offset(), layout.registers_len())?;
    let memory = whole.window(layout.memory_offset(), layout.memory_len())?;
    // SAFETY: `dma_offset + dma_len <= total_len`, inside the block.
    let dma_base = unsafe { base.add(layout.dma_offset()) };
    // SAFETY: as above, by the caller's contract.
    let dma = unsafe { DmaRegion::new(dma_base, layout.dma_len(), layout.dma_offset() as u64) }?;
    Ok((registers, memory, dma))
}
