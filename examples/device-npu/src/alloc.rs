//! First-fit allocation over the NPU's memory: a sorted table of live blocks.

use crate::NpuError;
use heapless::Vec;

/// Live allocations the NPU tracks.
pub const MAX_BLOCKS: usize = 256;

/// Live blocks as `(offset, len)`, sorted by offset.
pub struct Blocks {
    size: u64,
    live: Vec<(u64, u64), MAX_BLOCKS>,
}

impl Blocks {
    pub fn new(size: u64) -> Self {
        Self {
            size,
            live: Vec::new(),
        }
    }

    /// The first gap that fits `bytes` at `align`; its offset.
    pub fn allocate(&mut self, bytes: u64, align: u64) -> Result<u64, NpuError> {
        let align = align.max(1);
        if !align.is_power_of_two() {
            return Err(NpuError::BadAlignment(align));
        }
        let bytes = bytes.max(1);
        let mut start = 0u64;
        for (index, &(offset, len)) in self.live.iter().enumerate() {
            let at = start.next_multiple_of(align);
            if at.checked_add(bytes).is_some_and(|end| end <= offset) {
                return self.insert(index, at, bytes);
            }
            start = offset + len;
        }
        let at = start.next_multiple_of(align);
        match at.checked_add(bytes) {
            Some(end) if end <= self.size => self.insert(self.live.len(), at, bytes),
            _ => Err(NpuError::OutOfMemory { bytes }),
        }
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
            .ok_or(NpuError::OutOfRange(crate::BASE + offset))?;
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
            .ok_or(NpuError::OutOfRange(crate::BASE + offset))
    }

    /// Bytes in live blocks.
    pub fn used(&self) -> u64 {
        self.live.iter().map(|&(_, len)| len).sum()
    }
}
