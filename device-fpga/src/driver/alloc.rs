//! Device-memory allocator: first fit over a fixed-capacity table of live
//! blocks kept sorted by address (the free list is the gaps between them).
//! No heap; `N` bounds the number of live allocations.

use heapless::Vec;

use super::error::Error;

/// Every block is a multiple of this many bytes and aligned at least so
/// (a cache line; also keeps f32 tensors aligned).
pub const GRANULE: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    addr: u64,
    size: u64,
}

/// First-fit allocator over the device addresses `start..end`.
#[derive(Debug)]
pub struct Allocator<const N: usize> {
    start: u64,
    end: u64,
    blocks: Vec<Block, N>,
    used: u64,
}

impl<const N: usize> Allocator<N> {
    /// Manages `start..end` (rounded inwards to the granule).
    pub fn new(start: u64, end: u64) -> Self {
        let start = start.next_multiple_of(GRANULE);
        let end = (end / GRANULE * GRANULE).max(start);
        Self {
            start,
            end,
            blocks: Vec::new(),
            used: 0,
        }
    }

    /// Bytes under management.
    pub const fn total(&self) -> u64 {
        self.end - self.start
    }

    /// Bytes in live blocks (rounded up to the granule).
    pub const fn used(&self) -> u64 {
        self.used
    }

    /// Live allocations.
    pub fn live(&self) -> usize {
        self.blocks.len()
    }

    /// Allocates `bytes` (0 counts as 1) aligned to `align`, a power of two.
    pub fn allocate(&mut self, bytes: u64, align: u64) -> Result<u64, Error> {
        if !align.is_power_of_two() {
            return Err(Error::InvalidArgument);
        }
        let align = align.max(GRANULE);
        let size = bytes
            .max(1)
            .checked_next_multiple_of(GRANULE)
            .ok_or(self.out_of_memory(bytes))?;
        if self.blocks.is_full() {
            return Err(Error::TooManyAllocations);
        }
        let mut gap_start = self.start;
        let mut at = None;
        for (i, block) in self.blocks.iter().chain([&self.sentinel()]).enumerate() {
            if let Some(addr) = gap_start.checked_next_multiple_of(align)
                && addr.checked_add(size).is_some_and(|e| e <= block.addr)
            {
                at = Some((i, addr));
                break;
            }
            gap_start = block.addr + block.size;
        }
        let (index, addr) = at.ok_or(self.out_of_memory(bytes))?;
        self.blocks
            .insert(index, Block { addr, size })
            .map_err(|_| Error::TooManyAllocations)?;
        self.used += size;
        Ok(addr)
    }

    /// Frees the block starting at `addr`.
    pub fn deallocate(&mut self, addr: u64) -> Result<(), Error> {
        let index = self
            .blocks
            .binary_search_by_key(&addr, |b| b.addr)
            .map_err(|_| Error::UnknownAllocation { addr })?;
        let block = self.blocks.remove(index);
        self.used -= block.size;
        Ok(())
    }

    /// The size of the live block starting at `addr`, if any.
    pub fn block_size(&self, addr: u64) -> Option<u64> {
        self.blocks
            .binary_search_by_key(&addr, |b| b.addr)
            .ok()
            .map(|i| self.blocks[i].size)
    }

    /// The largest free gap, in bytes (ignoring alignment).
    pub fn largest_free(&self) -> u64 {
        let mut gap_start = self.start;
        let mut largest = 0;
        for block in self.blocks.iter().chain([&self.sentinel()]) {
            largest = largest.max(block.addr - gap_start);
            gap_start = block.addr + block.size;
        }
        largest
    }

    /// A zero-size block at the end, closing the last gap.
    const fn sentinel(&self) -> Block {
        Block {
            addr: self.end,
            size: 0,
        }
    }

    fn out_of_memory(&self, requested: u64) -> Error {
        Error::OutOfMemory {
            requested,
            largest_free: self.largest_free(),
        }
    }
}

#[cfg(test)]
mod tests;
