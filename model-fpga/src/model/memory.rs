//! Device memory as the model reaches it: one range at a time.
//!
//! The model never holds a reference to the whole of device memory while it
//! runs: on a memory-backed BAR the driver writes other parts of the same
//! memory (new command entries, copies into idle buffers) from another
//! thread or process. A command borrows exactly its operand ranges, for as
//! long as it runs; ring entries are copied in and out.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::Range;
use core::ptr::NonNull;

/// Storage the [`Model`](super::Model) runs commands on.
///
/// Any `AsMut<[u8]> + AsRef<[u8]>` the model owns is one (a static array,
/// [`AlignedMemory`](super::AlignedMemory)); [`SharedWindow`] is one for
/// memory the host writes concurrently.
///
/// # Safety
/// `base` must return a pointer valid for reads and writes of `size()`
/// bytes for as long as the `&mut self` borrow it came from lasts, and no
/// Rust reference to those bytes may be used elsewhere meanwhile.
pub unsafe trait DeviceMemory {
    /// Size in bytes (`DEVICE_MEM_SIZE`).
    fn size(&self) -> usize;
    /// The first byte.
    fn base(&mut self) -> NonNull<u8>;
}

// SAFETY: the pointer comes from a `&mut [u8]` of `size()` bytes that the
// model owns; it is used only while the model's `&mut` borrow lasts.
unsafe impl<T: AsMut<[u8]> + AsRef<[u8]>> DeviceMemory for T {
    fn size(&self) -> usize {
        self.as_ref().len()
    }
    fn base(&mut self) -> NonNull<u8> {
        NonNull::from(self.as_mut()).cast()
    }
}

/// Device memory that another party (the driver, through raw pointers)
/// reads and writes while the model runs: the memory aperture of a heap or
/// shared-memory BAR.
#[derive(Debug)]
pub struct SharedWindow<'a> {
    base: NonNull<u8>,
    size: usize,
    _memory: PhantomData<&'a [UnsafeCell<u8>]>,
}

impl<'a> SharedWindow<'a> {
    /// The `size` bytes at `base`.
    ///
    /// # Safety
    /// For `'a`, `base..base + size` must be valid for reads and writes;
    /// nobody else may hold a Rust reference into it; and other parties may
    /// touch only bytes the device does not own at that moment by the
    /// device ABI's rules (operands of submitted, uncompleted commands and
    /// device-owned ring entries are the device's), ordered with the
    /// device through register accesses with `Release`/`Acquire` semantics.
    pub const unsafe fn new(base: NonNull<u8>, size: usize) -> Self {
        Self {
            base,
            size,
            _memory: PhantomData,
        }
    }
}

// SAFETY: `new`'s contract: valid for 'a, no references held elsewhere, and
// the model (the only user of `base`) borrows only device-owned bytes.
unsafe impl DeviceMemory for SharedWindow<'_> {
    fn size(&self) -> usize {
        self.size
    }
    fn base(&mut self) -> NonNull<u8> {
        self.base
    }
}

/// One command's (or ring access's) view of device memory: hands out
/// slices of single ranges, bounds-checked.
pub(crate) struct MemoryView<'m> {
    base: NonNull<u8>,
    size: usize,
    _memory: PhantomData<&'m mut [u8]>,
}

impl<'m> MemoryView<'m> {
    pub(crate) fn new<M: DeviceMemory + ?Sized>(memory: &'m mut M) -> Self {
        Self {
            size: memory.size(),
            base: memory.base(),
            _memory: PhantomData,
        }
    }

    fn check(&self, r: &Range<usize>) -> Option<()> {
        (r.start <= r.end && r.end <= self.size).then_some(())
    }

    /// The bytes of `r`, shared.
    pub(crate) fn bytes(&self, r: &Range<usize>) -> Option<&[u8]> {
        self.check(r)?;
        // SAFETY: in bounds; `DeviceMemory` makes the bytes valid while the
        // borrow of `self` lasts, and `&self` excludes `bytes_mut`.
        Some(unsafe { core::slice::from_raw_parts(self.base.as_ptr().add(r.start), r.len()) })
    }

    /// The bytes of `r`, exclusive.
    pub(crate) fn bytes_mut(&mut self, r: &Range<usize>) -> Option<&mut [u8]> {
        self.check(r)?;
        // SAFETY: as in `bytes`; `&mut self` makes it the only slice.
        Some(unsafe { core::slice::from_raw_parts_mut(self.base.as_ptr().add(r.start), r.len()) })
    }

    /// Copies `src` to `dst_start` (the ranges may overlap).
    pub(crate) fn copy_within(&mut self, src: &Range<usize>, dst_start: usize) -> Option<()> {
        self.check(src)?;
        self.check(&(dst_start..dst_start.checked_add(src.len())?))?;
        // SAFETY: both ranges in bounds; raw copy, no references.
        unsafe {
            let base = self.base.as_ptr();
            core::ptr::copy(base.add(src.start), base.add(dst_start), src.len());
        }
        Some(())
    }

    /// The output range `out` exclusive, with sources disjoint from it
    /// shared alongside.
    pub(crate) fn split(&mut self, out: &Range<usize>) -> Option<Split<'_>> {
        self.check(out)?;
        // SAFETY: in bounds; `Split::src` only hands out ranges disjoint
        // from this one.
        let out_bytes = unsafe {
            core::slice::from_raw_parts_mut(self.base.as_ptr().add(out.start), out.len())
        };
        Some(Split {
            base: self.base,
            size: self.size,
            out_range: out.clone(),
            out: out_bytes,
        })
    }
}

/// An output slice plus shared access to the ranges disjoint from it.
pub(crate) struct Split<'v> {
    base: NonNull<u8>,
    size: usize,
    out_range: Range<usize>,
    pub(crate) out: &'v mut [u8],
}

impl<'v> Split<'v> {
    /// A source range; `None` if it is out of bounds or overlaps the output.
    pub(crate) fn src(&self, r: &Range<usize>) -> Option<&'v [u8]> {
        let disjoint = r.end <= self.out_range.start || r.start >= self.out_range.end;
        if r.start > r.end || r.end > self.size || !disjoint {
            return None;
        }
        // SAFETY: in bounds and disjoint from `out`, the only exclusive
        // slice of this view while 'v lasts.
        Some(unsafe { core::slice::from_raw_parts(self.base.as_ptr().add(r.start), r.len()) })
    }
}
