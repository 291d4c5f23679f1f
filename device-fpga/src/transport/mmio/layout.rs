//! How a host-memory stand-in for a BAR is laid out (heap block or
//! shared-memory file): a header page, then the register window, the
//! device-memory aperture and the DMA window, each page-aligned.

use std::io;

/// Page granularity of every part.
const PAGE: usize = 4096;
/// The header occupies the first page.
const HEADER_LEN: usize = PAGE;
/// First bytes of a shared-memory BAR file.
pub(super) const MAGIC: [u8; 8] = *b"TPLUGBAR";
/// Version of this layout.
pub(super) const LAYOUT_VERSION: u32 = 1;
/// Bytes of the header that carry data (magic, version, pad, three sizes).
pub(super) const HEADER_BYTES: usize = 8 + 4 + 4 + 3 * 8;

/// Sizes of the three parts of a host-memory BAR; offsets follow from them.
///
/// Bus addresses of the DMA window are its byte offsets in the layout (the
/// file offset for [`ShmBar`](super::ShmBar)), so both processes agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarLayout {
    registers: usize,
    memory: usize,
    dma: usize,
}

impl BarLayout {
    /// A layout with the given part sizes in bytes (each rounded up to a
    /// page). Fails if the total overflows `usize`.
    pub fn new(registers: usize, memory: usize, dma: usize) -> io::Result<Self> {
        let layout = Self {
            registers,
            memory,
            dma,
        };
        layout
            .checked_total()
            .map(|_| layout)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "BAR layout overflows"))
    }

    /// Size of the register window.
    pub const fn registers_len(&self) -> usize {
        self.registers
    }
    /// Size of the device-memory aperture.
    pub const fn memory_len(&self) -> usize {
        self.memory
    }
    /// Size of the DMA window.
    pub const fn dma_len(&self) -> usize {
        self.dma
    }

    /// Byte offset of the register window.
    pub const fn registers_offset(&self) -> usize {
        HEADER_LEN
    }
    /// Byte offset of the memory aperture.
    pub fn memory_offset(&self) -> usize {
        HEADER_LEN + self.registers.next_multiple_of(PAGE)
    }
    /// Byte offset of the DMA window; also its bus address.
    pub fn dma_offset(&self) -> usize {
        self.memory_offset() + self.memory.next_multiple_of(PAGE)
    }
    /// Total size in bytes.
    pub fn total_len(&self) -> usize {
        self.dma_offset() + self.dma.next_multiple_of(PAGE)
    }

    fn checked_total(&self) -> Option<usize> {
        let pages = |n: usize| n.checked_next_multiple_of(PAGE);
        HEADER_LEN
            .checked_add(pages(self.registers)?)?
            .checked_add(pages(self.memory)?)?
            .checked_add(pages(self.dma)?)
    }

    /// The header bytes: magic, version, 4 zero bytes, then the three sizes
    /// as little-endian `u64`s.
    pub(super) fn header(&self) -> [u8; HEADER_BYTES] {
        let mut h = [0; HEADER_BYTES];
        h[..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
        for (i, size) in [self.registers, self.memory, self.dma]
            .into_iter()
            .enumerate()
        {
            h[16 + 8 * i..24 + 8 * i].copy_from_slice(&(size as u64).to_le_bytes());
        }
        h
    }

    /// Parses a header written by [`BarLayout::header`].
    pub(super) fn from_header(h: &[u8; HEADER_BYTES]) -> io::Result<Self> {
        let bad = |msg: &'static str| io::Error::new(io::ErrorKind::InvalidData, msg);
        if h[..8] != MAGIC {
            return Err(bad("not a tensorplug BAR file (bad magic)"));
        }
        let mut word = [0; 4];
        word.copy_from_slice(&h[8..12]);
        if u32::from_le_bytes(word) != LAYOUT_VERSION {
            return Err(bad("unsupported BAR file layout version"));
        }
        let mut sizes = [0usize; 3];
        for (i, size) in sizes.iter_mut().enumerate() {
            let mut b = [0; 8];
            b.copy_from_slice(&h[16 + 8 * i..24 + 8 * i]);
            *size =
                usize::try_from(u64::from_le_bytes(b)).map_err(|_| bad("BAR part too large"))?;
        }
        Self::new(sizes[0], sizes[1], sizes[2]).map_err(|_| bad("BAR layout overflows"))
    }
}
