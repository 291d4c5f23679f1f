//! First-fit allocation over the NPU's memory: a sorted, fixed-capacity table
//! of live blocks. Freeing removes the block, so its bytes can be reused.

use crate::error::NpuError;
use heapless::Vec;

/// Live allocations the NPU tracks at once.
pub const MAX_BLOCKS: usize = 256;

/// Live blocks as `(offset, len)`, sorted by offset, in `0..size`.
pub struct Blocks {
    /// Device address of offset 0; alignment applies to `base + offset`.
    base: u64,
    size: u64,
    live: Vec<(u64, u64), MAX_BLOCKS>,
}

impl Blocks {
    pub fn new(base: u64, size: u64) -> Self {
        Self {
            base,
            size,
            live: Vec::new(),
        }
    }

    /// Takes the first gap that fits `bytes` with `base + offset` aligned to
    /// `align`; returns the offset. A zero-byte request takes one byte, so
    /// every live allocation has its own address.
    pub fn allocate(&mut self, bytes: u64, align: u64) -> Result<u64, NpuError> {
        let align = align.max(1);
        if !align.is_power_of_two() {
            return Err(NpuError::BadAlignment(align));
        }
        let bytes = bytes.max(1);
        let mut gap_start = 0;
        for (index, &(offset, len)) in self.live.iter().enumerate() {
            if let Some(at) = self.fit(gap_start, offset, bytes, align) {
                return self.insert(index, at, bytes);
            }
            gap_start = offset + len;
        }
        match self.fit(gap_start, self.size, bytes, align) {
            Some(at) => self.insert(self.live.len(), at, bytes),
            None => Err(NpuError::OutOfMemory { bytes }),
        }
    }

    /// The aligned offset of `bytes` in the gap `start..end`, if they fit.
    fn fit(&self, start: u64, end: u64, bytes: u64, align: u64) -> Option<u64> {
        let addr = self.base.checked_add(start)?;
        let at = addr.checked_next_multiple_of(align)? - self.base;
        at.checked_add(bytes)
            .filter(|&stop| stop <= end)
            .map(|_| at)
    }

    fn insert(&mut self, index: usize, at: u64, bytes: u64) -> Result<u64, NpuError> {
        self.live
            .insert(index, (at, bytes))
            .map_err(|_| NpuError::TooManyAllocations)?;
        Ok(at)
    }

    /// Frees the block that starts at `offset`.
    pub fn free(&mut self, offset: u64) -> Result<(), NpuError> {
        let index = self
            .live
            .iter()
            .position(|&(start, _)| start == offset)
            .ok_or(NpuError::OutOfRange(self.base.wrapping_add(offset)))?;
        self.live.remove(index);
        Ok(())
    }

    /// Ok when `offset..offset + len` lies inside one live block.
    pub fn check(&self, offset: u64, len: u64) -> Result<(), NpuError> {
        let end = offset.checked_add(len).ok_or(NpuError::Overflow)?;
        let inside = self
            .live
            .iter()
            .any(|&(start, size)| start <= offset && end <= start + size);
        inside
            .then_some(())
            .ok_or(NpuError::OutOfRange(self.base.wrapping_add(offset)))
    }

    /// Bytes in live blocks.
    pub fn used(&self) -> u64 {
        self.live.iter().map(|&(_, len)| len).sum()
    }
}
