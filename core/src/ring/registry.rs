//! One ring per host thread (`std`): TensorFlow runs kernels on many threads,
//! and per-thread SPSC rings keep every record path free of contended
//! read-modify-writes. See `docs/event-rings.md` for why this beats an MPSC
//! ring here.

use super::buffer::Ring;
use super::consumer::Consumer;
use super::error::RingError;
use super::producer::Producer;
use super::recorder::RecordingSwitch;
use crate::sync::Ordering::{Acquire, Relaxed, Release};
use crate::sync::{AtomicBool, AtomicUsize};
use core::fmt;

struct Entry<T, const N: usize> {
    /// Set while a [`ThreadProducer`] owns `ring`.
    taken: AtomicBool,
    ring: Ring<T, N>,
}

/// `THREADS` rings of `N` records each, handed out one per producing thread.
///
/// A thread calls [`RingRegistry::register`] once and keeps the
/// [`ThreadProducer`] (typically in a `thread_local!`); dropping it (at
/// thread exit) frees the ring for another thread, and records still in it
/// are drained as usual. One [`RegistryConsumer`] drains all rings.
/// Per-thread order is kept; there is no order across threads (records carry
/// timestamps).
pub struct RingRegistry<T, const N: usize, const THREADS: usize> {
    entries: [Entry<T, N>; THREADS],
    consumer_taken: AtomicBool,
    /// Records dropped because all `THREADS` rings were taken.
    unregistered_drops: AtomicUsize,
}

impl<T: Copy, const N: usize, const THREADS: usize> RingRegistry<T, N, THREADS> {
    const AT_LEAST_ONE_RING: () = assert!(THREADS > 0, "RingRegistry needs THREADS >= 1");

    /// An empty registry. `const`, for `static`s.
    pub const fn new() -> Self {
        let () = Self::AT_LEAST_ONE_RING;
        Self {
            entries: [const {
                Entry {
                    taken: AtomicBool::new(false),
                    ring: Ring::new(),
                }
            }; THREADS],
            consumer_taken: AtomicBool::new(false),
            unregistered_drops: AtomicUsize::new(0),
        }
    }

    /// A producer for the calling thread: a ring of its own if one is free,
    /// otherwise a handle that drops (and counts) every record it is given.
    pub fn register(&self) -> ThreadProducer<'_, T, N> {
        let owned = self.entries.iter().find_map(|entry| {
            // Acquire: the previous owner's writes (its `head`, `dropped`)
            // happen before ours.
            entry
                .taken
                .compare_exchange(false, true, Acquire, Relaxed)
                .ok()
                // SAFETY: `taken` makes us the ring's only producer until the
                // handle's drop releases it.
                .map(|_| (&entry.taken, unsafe { entry.ring.producer_unchecked() }))
        });
        ThreadProducer {
            owned,
            unregistered_drops: &self.unregistered_drops,
        }
    }

    /// The consumer of every ring, or `None` while another one is alive.
    pub fn consumer(&self) -> Option<RegistryConsumer<'_, T, N, THREADS>> {
        self.consumer_taken
            .compare_exchange(false, true, Acquire, Relaxed)
            .ok()?;
        Some(RegistryConsumer {
            registry: self,
            next: 0,
        })
    }

    /// Rings currently owned by a thread.
    pub fn rings_in_use(&self) -> usize {
        self.entries
            .iter()
            .filter(|entry| entry.taken.load(Relaxed))
            .count()
    }
}

impl<T: Copy, const N: usize, const THREADS: usize> Default for RingRegistry<T, N, THREADS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize, const THREADS: usize> fmt::Debug for RingRegistry<T, N, THREADS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingRegistry")
            .field("capacity_per_ring", &N)
            .field("rings", &THREADS)
            .finish_non_exhaustive()
    }
}

/// One thread's producer from a [`RingRegistry`]. Frees its ring on drop.
pub struct ThreadProducer<'a, T, const N: usize> {
    owned: Option<(&'a AtomicBool, Producer<'a, T, N>)>,
    unregistered_drops: &'a AtomicUsize,
}

impl<T: Copy, const N: usize> ThreadProducer<'_, T, N> {
    /// Stores `item` in this thread's ring; a full ring, or no ring at all,
    /// drops it and counts the drop.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), RingError> {
        match &mut self.owned {
            Some((_, producer)) => producer.push(item),
            None => {
                // Shared by every ring-less thread: a real RMW (hosts have CAS).
                self.unregistered_drops.fetch_add(1, Relaxed);
                Err(RingError::NoFreeRing)
            }
        }
    }

    /// If `switch` is on, builds a record with `make` and pushes it; returns
    /// whether it was stored. Off, this costs one relaxed load.
    #[inline(always)]
    pub fn record_with(&mut self, switch: &RecordingSwitch, make: impl FnOnce() -> T) -> bool {
        switch.is_enabled() && self.push(make()).is_ok()
    }

    /// Whether this thread got a ring of its own.
    pub fn has_ring(&self) -> bool {
        self.owned.is_some()
    }
}

impl<T, const N: usize> Drop for ThreadProducer<'_, T, N> {
    fn drop(&mut self) {
        if let Some((taken, _)) = &self.owned {
            // Release: our `head`/`dropped` stores happen before the next
            // owner's Acquire in `register`.
            taken.store(false, Release);
        }
    }
}

impl<T, const N: usize> fmt::Debug for ThreadProducer<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadProducer")
            .field("has_ring", &self.owned.is_some())
            .finish()
    }
}

/// Drains every ring of a [`RingRegistry`]; at most one exists at a time.
pub struct RegistryConsumer<'a, T, const N: usize, const THREADS: usize> {
    registry: &'a RingRegistry<T, N, THREADS>,
    /// Ring to start the next drain at, so no ring starves the others.
    next: usize,
}

impl<T: Copy, const N: usize, const THREADS: usize> RegistryConsumer<'_, T, N, THREADS> {
    fn ring_consumer(&self, index: usize) -> Consumer<'_, T, N> {
        // SAFETY: `consumer_taken` makes us the only consumer of every ring.
        unsafe { self.registry.entries[index].ring.consumer_unchecked() }
    }

    /// Moves up to `out.len()` records into `out`, ring by ring (each ring's
    /// records in push order); returns how many.
    pub fn drain(&mut self, out: &mut [T]) -> usize {
        let mut filled = 0;
        for step in 0..THREADS {
            if filled == out.len() {
                break;
            }
            let index = (self.next + step) % THREADS;
            filled += self.ring_consumer(index).drain(&mut out[filled..]);
        }
        self.next = (self.next + 1) % THREADS;
        filled
    }

    /// Calls `sink` on every record available now; returns how many.
    pub fn drain_each(&mut self, mut sink: impl FnMut(T)) -> usize {
        (0..THREADS)
            .map(|index| self.ring_consumer(index).drain_each(&mut sink))
            .sum()
    }

    /// Records dropped so far: full rings plus threads that found no ring
    /// (wrapping). Exact once the producers have stopped.
    pub fn dropped(&self) -> usize {
        let in_rings = (0..THREADS)
            .map(|index| self.ring_consumer(index).dropped())
            .fold(0usize, usize::wrapping_add);
        in_rings.wrapping_add(self.registry.unregistered_drops.load(Relaxed))
    }
}

impl<T, const N: usize, const THREADS: usize> Drop for RegistryConsumer<'_, T, N, THREADS> {
    fn drop(&mut self) {
        self.registry.consumer_taken.store(false, Release);
    }
}

impl<T, const N: usize, const THREADS: usize> fmt::Debug for RegistryConsumer<'_, T, N, THREADS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryConsumer")
            .field("next", &self.next)
            .finish()
    }
}
