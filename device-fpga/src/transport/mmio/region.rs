//! A window of memory-mapped I/O, accessed only through raw pointers.

use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::transport::Error;

/// A window of MMIO space (a PCIe BAR, or part of one), or of memory that
/// stands in for it (a shared-memory file, a heap block).
///
/// Registers are read and written as aligned `u32`s on raw pointers:
/// volatile for real MMIO ([`MmioRegion::new`]), relaxed atomic for memory
/// that a device model on another thread or process serves with atomics
/// ([`MmioRegion::new_memory_backed`]; a volatile access racing with an
/// atomic one is a data race in Rust's memory model). Bulk windows are
/// copied with `copy_nonoverlapping` on raw pointers. No reference
/// (`&`/`&mut`) into the window is ever created, so the compiler can neither
/// invent nor elide accesses. Every access is bounds-checked and returns an
/// error instead of touching memory outside the window.
///
/// This type adds no fences; [`MmioTransport`](super::MmioTransport) does
/// (see its docs). A device model using a region directly must add its own.
#[derive(Clone, Copy, Debug)]
pub struct MmioRegion<'a> {
    base: NonNull<u8>,
    len: usize,
    access: RegisterAccess,
    _io: PhantomData<&'a [core::cell::UnsafeCell<u8>]>,
}

/// How a region's 32-bit registers are accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RegisterAccess {
    /// `read_volatile`/`write_volatile`: real device registers.
    Volatile,
    /// Relaxed atomic loads/stores: memory served by a model with atomics.
    Atomic,
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
        // SAFETY: the caller's contract.
        unsafe { Self::with_access(base, len, RegisterAccess::Volatile) }
    }

    /// A window of ordinary memory standing in for MMIO (a heap block, a
    /// shared-memory file) whose registers a device model accesses with
    /// atomics: register reads and writes here are relaxed atomic accesses
    /// of aligned `u32`s (fences are the caller's, as with [`MmioRegion::new`]).
    ///
    /// # Safety
    /// As [`MmioRegion::new`]; in addition every other party must access the
    /// register words only atomically (or volatile from another process,
    /// where Rust's memory model does not reach).
    pub unsafe fn new_memory_backed(base: *mut u8, len: usize) -> Result<Self, Error> {
        // SAFETY: the caller's contract.
        unsafe { Self::with_access(base, len, RegisterAccess::Atomic) }
    }

    /// # Safety
    /// As [`MmioRegion::new`].
    unsafe fn with_access(
        base: *mut u8,
        len: usize,
        access: RegisterAccess,
    ) -> Result<Self, Error> {
        let base = NonNull::new(base).ok_or(Error::out_of_range(0, len))?;
        if !base.as_ptr().addr().is_multiple_of(4) {
            return Err(Error::Misaligned {
                addr: base.as_ptr().addr() as u64,
            });
        }
        Ok(Self {
            base,
            len,
            access,
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
            access: self.access,
            _io: PhantomData,
        })
    }

    /// Reads the little-endian `u32` at byte `offset` (volatile, or relaxed
    /// atomic for a memory-backed window).
    pub fn read_u32(&self, offset: usize) -> Result<u32, Error> {
        let ptr = self.u32_ptr(offset)?;
        let raw = match self.access {
            // SAFETY: `u32_ptr` checked bounds and alignment; `new`'s contract
            // makes the window valid for volatile reads.
            RegisterAccess::Volatile => unsafe { ptr.read_volatile() },
            // SAFETY: as above; `new_memory_backed`'s contract makes every
            // concurrent access to this word atomic.
            RegisterAccess::Atomic => unsafe { AtomicU32::from_ptr(ptr) }.load(Ordering::Relaxed),
        };
        Ok(u32::from_le(raw))
    }

    /// Writes `value`, little-endian, to byte `offset` (volatile, or relaxed
    /// atomic for a memory-backed window).
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<(), Error> {
        let ptr = self.u32_ptr(offset)?;
        match self.access {
            // SAFETY: as in `read_u32`.
            RegisterAccess::Volatile => unsafe { ptr.write_volatile(value.to_le()) },
            // SAFETY: as in `read_u32`.
            RegisterAccess::Atomic => {
                unsafe { AtomicU32::from_ptr(ptr) }.store(value.to_le(), Ordering::Relaxed)
            }
        }
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
