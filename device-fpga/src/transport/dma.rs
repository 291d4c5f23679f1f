//! A span of host memory that the device reaches by DMA.

use core::marker::PhantomData;
use core::ptr::NonNull;

use super::error::Error;

/// Host memory the device can read and write by DMA, addressed by *bus
/// addresses* (the addresses the device is given in descriptors).
///
/// Both sides use the same type: the driver stages data with
/// [`DmaRegion::write`] and reads results with [`DmaRegion::read`]; a model
/// of the device translates the bus addresses it was given the same way.
/// Copies are plain (non-volatile) byte copies on raw pointers; no reference
/// into the window is ever created.
///
/// # Ordering
/// The window is shared with the device, so accesses must be ordered by the
/// protocol: the writer finishes its copies, then issues a `Release` fence
/// and the register write (doorbell, completion) that hands the data over;
/// the reader observes that register, then issues an `Acquire` fence before
/// reading. [`MmioTransport`](super::mmio::MmioTransport) puts these fences
/// in `write_reg`/`read_reg`.
#[derive(Clone, Copy, Debug)]
pub struct DmaRegion<'a> {
    host: NonNull<u8>,
    len: usize,
    bus_base: u64,
    _memory: PhantomData<&'a [core::cell::UnsafeCell<u8>]>,
}

// SAFETY: the region is a pointer to memory shared with a device; `new`'s
// contract makes it valid for 'a from any thread, and all accesses are raw
// copies whose ordering the DMA protocol (see the type docs) provides.
unsafe impl Send for DmaRegion<'_> {}
// SAFETY: as above.
unsafe impl Sync for DmaRegion<'_> {}

impl<'a> DmaRegion<'a> {
    /// A window of `len` bytes at host pointer `host`, which the device sees
    /// at bus addresses `bus_base..bus_base + len`.
    ///
    /// Fails with [`Error::OutOfRange`] if `host` is null or the bus range
    /// overflows `u64`.
    ///
    /// # Safety
    /// For `'a`, `host..host + len` must be valid for reads and writes, from
    /// any thread, and not accessed through Rust references by anyone (only
    /// through raw pointers, by this type or a device).
    pub unsafe fn new(host: *mut u8, len: usize, bus_base: u64) -> Result<Self, Error> {
        let host = NonNull::new(host).ok_or(Error::out_of_range(0, len))?;
        bus_base
            .checked_add(len as u64)
            .ok_or(Error::out_of_range(bus_base, len))?;
        Ok(Self {
            host,
            len,
            bus_base,
            _memory: PhantomData,
        })
    }

    /// The bus address of the window's first byte.
    pub const fn bus_base(&self) -> u64 {
        self.bus_base
    }

    /// Size of the window in bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the window is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` into the window at bus address `bus_addr`.
    pub fn write(&self, bus_addr: u64, data: &[u8]) -> Result<(), Error> {
        let at = self.offset_of(bus_addr, data.len())?;
        // SAFETY: `offset_of` checked `at..at + len` lies in the window,
        // which `new`'s contract makes valid; `data` is a Rust slice, so it
        // does not overlap memory only reachable through raw pointers.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.host.as_ptr().add(at), data.len());
        }
        Ok(())
    }

    /// Copies `buf.len()` bytes from bus address `bus_addr` into `buf`.
    pub fn read(&self, bus_addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        let at = self.offset_of(bus_addr, buf.len())?;
        // SAFETY: as in `write`.
        unsafe {
            core::ptr::copy_nonoverlapping(self.host.as_ptr().add(at), buf.as_mut_ptr(), buf.len());
        }
        Ok(())
    }

    /// The byte offset of `bus_addr..bus_addr + len` in the window.
    fn offset_of(&self, bus_addr: u64, len: usize) -> Result<usize, Error> {
        let start = bus_addr
            .checked_sub(self.bus_base)
            .and_then(|o| usize::try_from(o).ok());
        match start {
            Some(start) if start.checked_add(len).is_some_and(|end| end <= self.len) => Ok(start),
            _ => Err(Error::out_of_range(bus_addr, len)),
        }
    }
}
