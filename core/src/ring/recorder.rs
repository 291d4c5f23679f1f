//! Turning recording on and off at the cost of one relaxed load.

use super::error::RingError;
use super::producer::Producer;
use crate::sync::AtomicBool;
use crate::sync::Ordering::Relaxed;
use core::fmt;

/// A global on/off switch for recording, shared by every [`Recorder`].
///
/// Flipping it is a hint, not a barrier: a recorder notices within a few
/// records (Relaxed ordering). Sessions that need a clean cut drain the rings
/// after turning recording off.
pub struct RecordingSwitch(AtomicBool);

impl RecordingSwitch {
    /// A switch in the given position. `const`, for `static`s.
    #[cfg(not(loom))]
    pub const fn new(enabled: bool) -> Self {
        Self(AtomicBool::new(enabled))
    }

    /// A switch in the given position (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new(enabled: bool) -> Self {
        Self(AtomicBool::new(enabled))
    }

    /// Starts recording.
    pub fn enable(&self) {
        self.0.store(true, Relaxed);
    }

    /// Stops recording; records made afterwards cost one load each.
    pub fn disable(&self) {
        self.0.store(false, Relaxed);
    }

    /// Whether recording is on: one relaxed load.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.0.load(Relaxed)
    }
}

impl fmt::Debug for RecordingSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RecordingSwitch")
            .field(&self.is_enabled())
            .finish()
    }
}

/// A [`Producer`] gated by a [`RecordingSwitch`].
///
/// [`Recorder::record_with`] builds the record (and reads the clock) only
/// when recording is on, so a disabled recorder costs one relaxed load.
pub struct Recorder<'a, T, const N: usize> {
    switch: &'a RecordingSwitch,
    producer: Producer<'a, T, N>,
}

impl<'a, T: Copy, const N: usize> Recorder<'a, T, N> {
    /// Gates `producer` with `switch`.
    pub fn new(switch: &'a RecordingSwitch, producer: Producer<'a, T, N>) -> Self {
        Self { switch, producer }
    }

    /// If recording is on, builds a record with `make` and pushes it (a
    /// full ring drops and counts it). Returns whether it was stored.
    #[inline(always)]
    pub fn record_with(&mut self, make: impl FnOnce() -> T) -> bool {
        if !self.switch.is_enabled() {
            return false;
        }
        self.producer.push(make()).is_ok()
    }

    /// [`Recorder::record_with`] for a record already built.
    #[inline(always)]
    pub fn record(&mut self, item: T) -> bool {
        self.record_with(|| item)
    }

    /// Pushes `item` whatever the switch says.
    pub fn push(&mut self, item: T) -> Result<(), RingError> {
        self.producer.push(item)
    }

    /// The producer, back.
    pub fn into_producer(self) -> Producer<'a, T, N> {
        self.producer
    }
}

impl<T, const N: usize> fmt::Debug for Recorder<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("switch", self.switch)
            .field("producer", &self.producer)
            .finish()
    }
}
