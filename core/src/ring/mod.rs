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

mod buffer;
mod consumer;
mod error;
mod padded;
mod producer;
mod recorder;
#[cfg(all(feature = "std", not(loom)))]
mod registry;
#[cfg(test)]
mod tests;

pub use buffer::Ring;
pub use consumer::Consumer;
pub use error::{RingError, RingErrorKind};
pub use producer::Producer;
pub use recorder::{Recorder, RecordingSwitch};
#[cfg(all(feature = "std", not(loom)))]
pub use registry::{RegistryConsumer, RingRegistry, ThreadProducer};

// The handles, beside their types (`buffer.rs`, the ring, imports neither).
impl<T: Copy, const N: usize> Ring<T, N> {
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
