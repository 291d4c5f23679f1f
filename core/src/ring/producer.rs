//! The writing half of a [`Ring`].

use super::buffer::Ring;
use super::error::RingError;
use crate::sync::Ordering::{Acquire, Relaxed, Release};
use core::fmt;
use core::mem::MaybeUninit;

/// Writes records into a [`Ring`]; there is at most one per ring.
///
/// Keeps its own copy of `head` and the drop count, and a cached copy of the
/// consumer's `tail`, so a push that finds room touches no line the consumer
/// writes.
pub struct Producer<'a, T, const N: usize> {
    ring: &'a Ring<T, N>,
    head: usize,
    cached_tail: usize,
    dropped: usize,
}

impl<'a, T: Copy, const N: usize> Producer<'a, T, N> {
    pub(super) fn new(ring: &'a Ring<T, N>) -> Self {
        // Our own side's values: only a previous producer wrote them, and it
        // synchronised with us (`Ring::producer_unchecked`'s contract).
        let head = ring.producer_side.head.load(Relaxed);
        Self {
            ring,
            head,
            cached_tail: ring.tail.load(Acquire),
            dropped: ring.producer_side.dropped.load(Relaxed),
        }
    }

    /// Stores `item`, or drops it and counts the drop if the ring is full.
    /// Never blocks; what is already in the ring is never overwritten.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), RingError> {
        if self.try_push(item).is_ok() {
            return Ok(());
        }
        // Only this producer writes the counter: load+store, no RMW needed.
        self.dropped = self.dropped.wrapping_add(1);
        self.ring.producer_side.dropped.store(self.dropped, Relaxed);
        Err(RingError::Full)
    }

    /// Stores `item`, or hands it back if the ring is full **without**
    /// counting a drop (for callers that retry or apply back-pressure).
    #[inline]
    pub fn try_push(&mut self, item: T) -> Result<(), T> {
        if self.head.wrapping_sub(self.cached_tail) == N {
            // Acquire: the consumer's reads of the freed slots happen before
            // we overwrite them.
            self.cached_tail = self.ring.tail.load(Acquire);
            if self.head.wrapping_sub(self.cached_tail) == N {
                return Err(item);
            }
        }
        let slot = &self.ring.slots[self.head & Ring::<T, N>::MASK];
        // SAFETY: slot `head` is outside `tail..head`, so the consumer does
        // not read it until we publish it below.
        slot.with_mut(|ptr| unsafe { ptr.write(MaybeUninit::new(item)) });
        self.head = self.head.wrapping_add(1);
        // Release: the slot write happens before the consumer sees `head`.
        self.ring.producer_side.head.store(self.head, Release);
        Ok(())
    }

    /// Free slots, as of the last look at the consumer's index (a lower
    /// bound: the consumer may have freed more since).
    pub fn free_slots(&self) -> usize {
        N - self.head.wrapping_sub(self.cached_tail)
    }

    /// Records dropped by this ring so far (wrapping).
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

impl<T, const N: usize> fmt::Debug for Producer<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &N)
            .field("head", &self.head)
            .field("dropped", &self.dropped)
            .finish()
    }
}
