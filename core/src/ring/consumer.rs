//! The reading half of a [`Ring`].

use super::buffer::Ring;
use crate::sync::Ordering::{Acquire, Relaxed, Release};
use core::fmt;

/// Reads records out of a [`Ring`] in the order they were pushed; there is
/// at most one per ring.
///
/// Keeps its own `tail` and a cached copy of the producer's `head`, so it
/// reads the producer's line only when the cached view runs dry.
pub struct Consumer<'a, T, const N: usize> {
    ring: &'a Ring<T, N>,
    tail: usize,
    cached_head: usize,
}

impl<'a, T: Copy, const N: usize> Consumer<'a, T, N> {
    pub(super) fn new(ring: &'a Ring<T, N>) -> Self {
        let tail = ring.tail.load(Relaxed);
        Self {
            ring,
            tail,
            cached_head: tail,
        }
    }

    /// Records available, refreshing the cached `head` if fewer than
    /// `wanted` are known.
    #[inline]
    fn available(&mut self, wanted: usize) -> usize {
        let known = self.cached_head.wrapping_sub(self.tail);
        if known >= wanted {
            return known;
        }
        // Acquire: pairs with the producer's Release store of `head`, so the
        // slot writes are visible before we read them.
        self.cached_head = self.ring.producer_side.head.load(Acquire);
        self.cached_head.wrapping_sub(self.tail)
    }

    /// Reads the record at `index` (which must be in `tail..cached_head`).
    #[inline(always)]
    fn read(&self, index: usize) -> T {
        let slot = &self.ring.slots[index & Ring::<T, N>::MASK];
        // SAFETY: `index` is in `tail..head`: the producer initialised the
        // slot, published it with Release, and does not touch it again until
        // we move `tail` past it.
        slot.with(|ptr| unsafe { (*ptr).assume_init_read() })
    }

    /// Marks everything before `tail` as read, giving the slots back.
    #[inline(always)]
    fn release(&mut self, count: usize) {
        self.tail = self.tail.wrapping_add(count);
        // Release: our slot reads happen before the producer reuses them.
        self.ring.tail.store(self.tail, Release);
    }

    /// The oldest record, if any.
    pub fn pop(&mut self) -> Option<T> {
        if self.available(1) == 0 {
            return None;
        }
        let item = self.read(self.tail);
        self.release(1);
        Some(item)
    }

    /// Moves up to `out.len()` records, oldest first, into `out`; returns
    /// how many. An empty ring (or an empty `out`) gives 0.
    pub fn drain(&mut self, out: &mut [T]) -> usize {
        let count = self.available(out.len()).min(out.len());
        for (offset, dst) in out[..count].iter_mut().enumerate() {
            *dst = self.read(self.tail.wrapping_add(offset));
        }
        if count > 0 {
            self.release(count);
        }
        count
    }

    /// Calls `sink` on every record available now, oldest first; returns how
    /// many. Records pushed meanwhile are left for the next call.
    pub fn drain_each(&mut self, mut sink: impl FnMut(T)) -> usize {
        let count = self.available(usize::MAX);
        for offset in 0..count {
            sink(self.read(self.tail.wrapping_add(offset)));
        }
        if count > 0 {
            self.release(count);
        }
        count
    }

    /// Records waiting to be read (a snapshot; the producer may add more).
    pub fn len(&mut self) -> usize {
        self.available(usize::MAX)
    }

    /// True when no record is waiting (a snapshot).
    pub fn is_empty(&mut self) -> bool {
        self.available(1) == 0
    }

    /// Records dropped because the ring was full, since it was created
    /// (wrapping). Exact once the producer has stopped and synchronised with
    /// this thread; otherwise a recent value.
    pub fn dropped(&self) -> usize {
        self.ring.producer_side.dropped.load(Relaxed)
    }
}

impl<T, const N: usize> fmt::Debug for Consumer<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &N)
            .field("tail", &self.tail)
            .finish()
    }
}
