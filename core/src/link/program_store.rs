//! The MCU's store of device programs: a fixed byte budget, programs back
//! to back, each validated when its last chunk arrives and named by its
//! CRC-32. `no_std`, no allocation.

use crate::accelerator::VendorOps;
use crate::program::{Limit, Limits, Program, ProgramError, Validated, validate};

/// Where a stored program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    crc: u32,
    start: usize,
    len: usize,
}

/// Why a chunk is not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadFault {
    /// The store has no room, or the chunk is not the next one.
    OutOfOrder,
    /// The whole program is refused.
    Refused(ProgramError),
}

/// Up to `SLOTS` programs in `BYTES` bytes.
#[derive(Debug)]
pub struct ProgramStore<const BYTES: usize, const SLOTS: usize = 8> {
    bytes: [u8; BYTES],
    entries: heapless::Vec<Entry, SLOTS>,
    /// Bytes of the program being loaded, and its length.
    staged: usize,
    staging: Option<usize>,
}

impl<const BYTES: usize, const SLOTS: usize> Default for ProgramStore<BYTES, SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BYTES: usize, const SLOTS: usize> ProgramStore<BYTES, SLOTS> {
    /// An empty store.
    pub const fn new() -> Self {
        Self {
            bytes: [0; BYTES],
            entries: heapless::Vec::new(),
            staged: 0,
            staging: None,
        }
    }

    /// Bytes the store holds at most.
    pub const fn capacity(&self) -> usize {
        BYTES
    }

    /// Bytes stored programs use.
    pub fn used(&self) -> usize {
        self.entries.last().map_or(0, |e| e.start + e.len)
    }

    /// Programs stored.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no program is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops every program.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.staging = None;
        self.staged = 0;
    }

    /// Takes one chunk; on the last one validates the program against
    /// `vendor` and `limits` (whose `bytes` are capped at the room left)
    /// and returns its CRC-32.
    ///
    /// # Errors
    /// [`LoadFault::OutOfOrder`] for a chunk that is not the next;
    /// [`LoadFault::Refused`] for a program too large for the room left
    /// (`TooLarge(Bytes)`, or `TooLarge(Buffers)` with every slot taken) or
    /// one [`validate`] refuses. Either drops the half-loaded program.
    pub fn load(
        &mut self,
        offset: u32,
        total: u32,
        data: &[u8],
        vendor: &VendorOps,
        limits: &Limits,
    ) -> Result<Option<u32>, LoadFault> {
        let (offset, total) = (offset as usize, total as usize);
        if offset == 0 {
            self.staging = Some(total);
            self.staged = 0;
            let room = BYTES - self.used();
            if total > room || total > limits.bytes as usize {
                return Err(self.drop_staged(ProgramError::TooLarge(Limit::Bytes)));
            }
            if self.entries.is_full() {
                return Err(self.drop_staged(ProgramError::TooLarge(Limit::Buffers)));
            }
        }
        let end = offset.checked_add(data.len());
        if self.staging != Some(total) || offset != self.staged || end.is_none_or(|e| e > total) {
            self.staging = None;
            return Err(LoadFault::OutOfOrder);
        }
        let start = self.used();
        self.bytes[start + offset..start + offset + data.len()].copy_from_slice(data);
        self.staged += data.len();
        if self.staged < total {
            return Ok(None);
        }
        self.staging = None;
        let crc = {
            let program =
                Program::parse(&self.bytes[start..start + total]).map_err(LoadFault::Refused)?;
            validate(program, vendor, limits).map_err(LoadFault::Refused)?;
            program.crc()
        };
        if !self.entries.iter().any(|e| e.crc == crc) {
            // Cannot fail: checked at offset 0.
            let _ = self.entries.push(Entry {
                crc,
                start,
                len: total,
            });
        }
        Ok(Some(crc))
    }

    /// The stored program `crc`, validated when it was loaded.
    pub fn get<'a>(&'a self, crc: u32, vendor: &'a VendorOps) -> Option<Validated<'a>> {
        let e = self.entries.iter().find(|e| e.crc == crc)?;
        let program = Program::parse(&self.bytes[e.start..e.start + e.len]).ok()?;
        Some(Validated::trusted(program, vendor))
    }

    fn drop_staged(&mut self, error: ProgramError) -> LoadFault {
        self.staging = None;
        LoadFault::Refused(error)
    }
}
