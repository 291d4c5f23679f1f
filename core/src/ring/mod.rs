//! Fixed-capacity, lock-free, single-producer single-consumer event rings.
//!
//! * [`Ring`] holds `N` records (`N` a power of two, checked at compile
//!   time), never allocates and can live in a `static`.
//! * [`Ring::split`] hands out one [`Producer`] and one [`Consumer`]. The
//!   producer never blocks: on a full ring [`Producer::push`] drops the record
//!   and counts it, so `pushed == delivered + dropped` always holds.
//! * Only atomic loads and stores are used, so rings work on targets without
//!   compare-and-swap and with an interrupt handler as the producer (or the
//!   consumer) on a single-core MCU.
//! * [`Recorder`] adds an on/off [`RecordingSwitch`]: disabled recording
//!   costs one relaxed load.
//! * With `std`, `RingRegistry` gives each host thread its own ring.
//!
//! Memory ordering, drop accounting and capacity rules: `docs/event-rings.md`.
//!
//! ```
//! use tensorplug_core::event::{Event, EventKind};
//! use tensorplug_core::ring::Ring;
//!
//! let mut ring: Ring<Event, 4> = Ring::new();
//! let (mut producer, mut consumer) = ring.split();
//! for t in 0..6 {
//!     // The last two do not fit: dropped and counted, never blocking.
//!     let _ = producer.push(Event::new(EventKind::OpBegin, t, 0, 0, 0));
//! }
//! let mut out = [Event::default(); 8];
//! assert_eq!(consumer.drain(&mut out), 4);
//! assert_eq!(out[3].timestamp, 3);
//! assert_eq!(consumer.dropped(), 2);
//! ```

mod consumer;
mod padded;
mod producer;
mod recorder;
#[cfg(all(feature = "std", not(loom)))]
mod registry;
#[cfg(test)]
mod tests;

pub use consumer::Consumer;
pub use producer::Producer;
pub use recorder::{Recorder, RecordingSwitch};
#[cfg(all(feature = "std", not(loom)))]
pub use registry::{RegistryConsumer, RingRegistry, ThreadProducer};

use crate::sync::{AtomicUsize, UnsafeCell};
use core::fmt;
use core::mem::MaybeUninit;
use padded::CachePadded;

/// Why a record was not stored. The record has been dropped and counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RingError {
    /// The ring was full.
    Full,
    /// Every per-thread ring of a [`RingRegistry`] was taken.
    NoFreeRing,
}

/// Category of a [`RingError`], in the embedded-hal style.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RingErrorKind {
    /// The ring had no room: the consumer did not drain it in time.
    Full,
    /// The producer has no ring: the registry has fewer rings than threads.
    NoRing,
}

impl RingError {
    /// The error's category.
    pub const fn kind(&self) -> RingErrorKind {
        match self {
            Self::Full => RingErrorKind::Full,
            Self::NoFreeRing => RingErrorKind::NoRing,
        }
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Full => "event ring full: record dropped",
            Self::NoFreeRing => "no free per-thread event ring: record dropped",
        })
    }
}

impl core::error::Error for RingError {}

/// Indices and the drop counter the producer writes (one cache line).
struct ProducerSide {
    /// Count of records ever written (wrapping); slot = `head & (N - 1)`.
    head: AtomicUsize,
    /// Count of records ever dropped (wrapping). Written only by the producer.
    dropped: AtomicUsize,
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
    producer_side: CachePadded<ProducerSide>,
    /// Count of records ever read (wrapping). Written only by the consumer.
    tail: CachePadded<AtomicUsize>,
    slots: [UnsafeCell<MaybeUninit<T>>; N],
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
    const MASK: usize = N - 1;

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

    /// The producer and consumer handles. Records already in the ring stay
    /// there, so the ring can be split again after both handles are dropped.
    ///
    /// For an interrupt handler, split a `&'static mut Ring` (from
    /// `static_cell` or `cortex_m::singleton!`) and move the producer into
    /// the handler's state.
    pub fn split(&mut self) -> (Producer<'_, T, N>, Consumer<'_, T, N>) {
        // SAFETY: `&mut self` is held for the handles' lifetime, so these are
        // the only producer and consumer.
        unsafe { (self.producer_unchecked(), self.consumer_unchecked()) }
    }

    /// A producer handle without borrowing the ring mutably.
    ///
    /// # Safety
    /// No other [`Producer`] of this ring may exist while this one is alive,
    /// and the previous one must have been dropped on a thread that
    /// synchronised with this one.
    pub(crate) unsafe fn producer_unchecked(&self) -> Producer<'_, T, N> {
        Producer::new(self)
    }

    /// A consumer handle without borrowing the ring mutably.
    ///
    /// # Safety
    /// As for [`Ring::producer_unchecked`], for consumers.
    pub(crate) unsafe fn consumer_unchecked(&self) -> Consumer<'_, T, N> {
        Consumer::new(self)
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
