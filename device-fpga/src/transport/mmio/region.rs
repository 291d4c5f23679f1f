//! A window of memory-mapped I/O, accessed only through raw pointers.

use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::transport::Error;

/// A window of MMIO space (a PCIe BAR, or part of one), or of memory that
/// stands in for it (a shared-memory file, a heap block).
///
/// Registers are read and written with `read_volatile`/`write_volatile` of
/// aligned `u32`s on raw pointers; bulk windows are copied with
/// `copy_nonoverlapping` on raw pointers. No reference (`&`/`&mut`) into the
/// window is ever created, so the compiler can neither invent nor elide
/// accesses. Every access is bounds-checked and returns an error instead of
/// touching memory outside the window.
///
/// This type adds no fences; [`MmioTransport`](super::MmioTransport) does
/// (see its docs). A device model using a region directly must add its own.
#[derive(Clone, Copy, Debug)]
pub struct MmioRegion<'a> {
    base: NonNull<u8>,
    len: usize,
    _io: PhantomData<&'a [core::cell::UnsafeCell<u8>]>,
}

// SAFETY: the region is a pointer to I/O memory that `new`'s contract makes
// valid from any thread for 'a; accesses are volatile or raw copies.
unsafe impl Send for MmioRegion<'_> {}
// SAFETY: as above.
unsafe impl Sync for MmioRegion<'_> {}

impl<'a> MmioRegion<'a> {
    /// The window `base..base + len`.
    ///
    /// Fails with [`Error::Misaligned`] if `base` is not 4-byte aligned and
    /// with [`Error::OutOfRange`] if it is null.
    ///
    /// # Safety
    /// For `'a`:
    /// - `base..base + len` must be mapped and valid for volatile reads and
    ///   writes of bytes and aligned `u32`s, from any thread;
    /// - nobody may hold a Rust reference into it (other parties, such as the
    ///   device or another process, access it only through raw pointers or
    ///   hardware);
    /// - reads and writes must have no side effects beyond the device's own
    ///   register semantics (no access may fault).
    pub unsafe fn new(base: *mut u8, len: usize) -> Result<Self, Error> {
        let base = NonNull::new(base).ok_or(Error::out_of_range(0, len))?;
        if !base.as_ptr().addr().is_multiple_of(4) {
            return Err(Error::Misaligned {
                addr: base.as_ptr().addr() as u64,
            });
        }
        Ok(Self {
            base,
            len,
            _io: PhantomData,
        })
    }

    /// Size of the window in bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// The window's first byte, for a device model serving the window (e.g.
    /// through `AtomicU32::from_ptr`); the `new` contract still applies.
    pub const fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Whether the window is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sub-window `offset..offset + len`. `offset` must be 4-byte
    /// aligned so the sub-window's registers stay aligned.
    pub fn window(&self, offset: usize, len: usize) -> Result<MmioRegion<'a>, Error> {
        if !offset.is_multiple_of(4) {
            return Err(Error::Misaligned {
                addr: offset as u64,
            });
        }
        self.check(offset, len)?;
        Ok(Self {
            // SAFETY: `check` proved `offset + len <= self.len`, so the
            // pointer stays inside (or one past) the window.
            base: unsafe { self.base.add(offset) },
            len,
            _io: PhantomData,
        })
    }

    /// Volatile read of the little-endian `u32` at byte `offset`.
    pub fn read_u32(&self, offset: usize) -> Result<u32, Error> {
        let ptr = self.u32_ptr(offset)?;
        // SAFETY: `u32_ptr` checked bounds and alignment; `new`'s contract
        // makes the window valid for volatile reads.
        Ok(u32::from_le(unsafe { ptr.read_volatile() }))
    }

    /// Volatile write of `value`, little-endian, to byte `offset`.
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<(), Error> {
        let ptr = self.u32_ptr(offset)?;
        // SAFETY: as in `read_u32`.
        unsafe { ptr.write_volatile(value.to_le()) };
        Ok(())
    }

    /// Copies `buf.len()` bytes from byte `offset` into `buf`.
    ///
    /// A raw copy (it may use wide or unaligned accesses): for memory
    /// apertures, not for registers.
    pub fn read_bytes(&self, offset: usize, buf: &mut [u8]) -> Result<(), Error> {
        self.check(offset, buf.len())?;
        // SAFETY: bounds checked; the window is only reached through raw
        // pointers, so it cannot overlap the Rust slice `buf`.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset),
                buf.as_mut_ptr(),
                buf.len(),
            );
        }
        Ok(())
    }

    /// Copies `data` to byte `offset`. A raw copy, like
    /// [`MmioRegion::read_bytes`].
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        self.check(offset, data.len())?;
        // SAFETY: as in `read_bytes`.
        unsafe {
            core::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.base.as_ptr().add(offset),
                data.len(),
            );
        }
        Ok(())
    }

    fn u32_ptr(&self, offset: usize) -> Result<*mut u32, Error> {
        if !offset.is_multiple_of(4) {
            return Err(Error::Misaligned {
                addr: offset as u64,
            });
        }
        self.check(offset, 4)?;
        // SAFETY: in bounds (checked above); base and offset are 4-aligned.
        Ok(unsafe { self.base.as_ptr().add(offset) }.cast::<u32>())
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::out_of_range(offset as u64, len)),
        }
    }
}
