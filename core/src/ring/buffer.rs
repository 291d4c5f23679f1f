//! The [`Ring`] itself: its slots and indices. A leaf; the halves that
//! read and write it are `producer.rs` and `consumer.rs`.

use super::padded::CachePadded;
use crate::sync::{AtomicUsize, UnsafeCell};
use core::fmt;
use core::mem::MaybeUninit;

/// Indices and the drop counter the producer writes (one cache line).
pub(super) struct ProducerSide {
    /// Count of records ever written (wrapping); slot = `head & (N - 1)`.
    pub(super) head: AtomicUsize,
    /// Count of records ever dropped (wrapping). Written only by the producer.
    pub(super) dropped: AtomicUsize,
}

/// A single-producer single-consumer ring of `N` records of type `T`.
///
/// `N` must be a power of two; anything else fails to compile when the ring
/// is created:
///
/// ```compile_fail,E0080
/// let ring = tensorplug_core::ring::Ring::<u32, 3>::new();
/// ```
pub struct Ring<T, const N: usize> {
    pub(super) producer_side: CachePadded<ProducerSide>,
    /// Count of records ever read (wrapping). Written only by the consumer.
    pub(super) tail: CachePadded<AtomicUsize>,
    pub(super) slots: [UnsafeCell<MaybeUninit<T>>; N],
}

// SAFETY: the ring hands each slot to exactly one side at a time (the
// producer writes slots in `tail..tail+N` not yet published, the consumer
// reads published ones in `tail..head`), with Release/Acquire on the indices.
// `Producer` and `Consumer` are unique per ring (`split` takes `&mut self`),
// so sharing `&Ring` between threads is sound when `T` may cross threads.
unsafe impl<T: Send, const N: usize> Sync for Ring<T, N> {}

impl<T: Copy, const N: usize> Ring<T, N> {
    /// Fails the build (post-monomorphisation) unless `N` is a power of two.
    const CAPACITY_IS_POWER_OF_TWO: () = assert!(
        N.is_power_of_two(),
        "Ring capacity N must be a power of two"
    );
    pub(super) const MASK: usize = N - 1;

    /// An empty ring. `const`, so it can initialise a `static`.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        let () = Self::CAPACITY_IS_POWER_OF_TWO;
        Self {
            producer_side: CachePadded::new(ProducerSide {
                head: AtomicUsize::new(0),
                dropped: AtomicUsize::new(0),
            }),
            tail: CachePadded::new(AtomicUsize::new(0)),
            slots: [const { UnsafeCell::new(MaybeUninit::uninit()) }; N],
        }
    }

    /// An empty ring (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        let () = Self::CAPACITY_IS_POWER_OF_TWO;
        Self {
            producer_side: CachePadded::new(ProducerSide {
                head: AtomicUsize::new(0),
                dropped: AtomicUsize::new(0),
            }),
            tail: CachePadded::new(AtomicUsize::new(0)),
            slots: core::array::from_fn(|_| UnsafeCell::new(MaybeUninit::uninit())),
        }
    }

    /// How many records the ring holds when full.
    pub const fn capacity(&self) -> usize {
        N
    }
}

#[cfg(not(loom))]
impl<T: Copy, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> fmt::Debug for Ring<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::sync::Ordering::Relaxed;
        f.debug_struct("Ring")
            .field("capacity", &N)
            .field("head", &self.producer_side.head.load(Relaxed))
            .field("tail", &self.tail.load(Relaxed))
            .field("dropped", &self.producer_side.dropped.load(Relaxed))
            .finish()
    }
}
