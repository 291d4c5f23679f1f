//! The device's timestamp counter.
//!
//! The rule: the counter reads `max(source, end of the last modelled
//! command)`, where `source` is the embedder's [`TickSource`]. While idle
//! the device clock follows the source (real time on a host); a command
//! starts at the current counter and ends `duration` ticks later, so a busy
//! device's clock runs ahead of the source by the modelled work still
//! "in flight", and never goes backwards.

/// Where the model's time comes from: ticks at `TIMESTAMP_FREQ_HZ`, never
/// decreasing. On a host [`HostClock`]; on an MCU the embedder supplies one
/// (a timer), in tests a [`ManualClock`].
pub trait TickSource {
    /// Current ticks since this source's origin.
    fn now_ticks(&mut self) -> u64;

    /// Called whenever the counter's state changes: the source ticks at
    /// its last reset and where the last booked command ends. A source
    /// that lets another thread read the counter live publishes them here
    /// ([`LiveClock`]); by default nothing happens.
    fn counter_changed(&mut self, _origin: u64, _busy_until: u64) {}
}

/// A clock that only moves when told to: for tests and for embedders that
/// have no timer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ManualClock {
    ticks: u64,
}

impl ManualClock {
    /// A clock at tick 0.
    pub const fn new() -> Self {
        Self { ticks: 0 }
    }
    /// Moves the clock forward.
    pub fn advance(&mut self, ticks: u64) {
        self.ticks = self.ticks.saturating_add(ticks);
    }
}

impl TickSource for ManualClock {
    fn now_ticks(&mut self) -> u64 {
        self.ticks
    }
}

/// Real time from the host's monotonic clock, at `freq_hz` (reference 100 MHz).
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub struct HostClock {
    origin: std::time::Instant,
    freq_hz: u32,
}

#[cfg(feature = "std")]
impl HostClock {
    /// A clock whose tick 0 is now.
    pub fn new(freq_hz: u32) -> Self {
        Self {
            origin: std::time::Instant::now(),
            freq_hz,
        }
    }
}

#[cfg(feature = "std")]
impl TickSource for HostClock {
    fn now_ticks(&mut self) -> u64 {
        let nanos = self.origin.elapsed().as_nanos();
        u64::try_from(nanos * u128::from(self.freq_hz) / 1_000_000_000).unwrap_or(u64::MAX)
    }
}

/// The counter: a [`TickSource`] plus the end of the last modelled command,
/// offset so that it reads 0 at reset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceClock<C> {
    source: C,
    /// Source ticks at the last reset.
    origin: u64,
    /// Counter value at which the last command ended.
    busy_until: u64,
}

impl<C: TickSource> DeviceClock<C> {
    pub(crate) fn new(mut source: C) -> Self {
        let origin = source.now_ticks();
        source.counter_changed(origin, 0);
        Self {
            source,
            origin,
            busy_until: 0,
        }
    }

    /// Restarts the counter at 0.
    pub(crate) fn reset(&mut self) {
        self.origin = self.source.now_ticks();
        self.busy_until = 0;
        self.source.counter_changed(self.origin, 0);
    }

    /// The counter now.
    pub(crate) fn now(&mut self) -> u64 {
        let real = self.source.now_ticks().saturating_sub(self.origin);
        real.max(self.busy_until)
    }

    /// Books `duration` ticks of work starting now; returns `(begin, end)`.
    pub(crate) fn book(&mut self, duration: u64) -> (u64, u64) {
        let begin = self.now();
        let end = begin.saturating_add(duration);
        self.busy_until = end;
        self.source.counter_changed(self.origin, end);
        (begin, end)
    }

    pub(crate) fn source_mut(&mut self) -> &mut C {
        &mut self.source
    }
}

/// The counter of a model running on another thread, read live: from the
/// same [`HostClock`], and the origin and last command end that thread's
/// [`LiveClock`] publishes the moment they change. A snapshot of the
/// counter goes stale by however long the model thread is not scheduled
/// (hundreds of µs on a loaded host); this does not, and it already covers
/// every command booked (a booked command's events never end after it).
#[cfg(feature = "std")]
#[derive(Debug, Default)]
pub struct LiveCounter {
    clock: std::sync::OnceLock<HostClock>,
    origin: core::sync::atomic::AtomicU64,
    busy_until: core::sync::atomic::AtomicU64,
}

#[cfg(feature = "std")]
impl LiveCounter {
    /// The counter now; `None` before a [`LiveClock`] was made for it.
    pub fn now(&self) -> Option<u64> {
        use core::sync::atomic::Ordering::Acquire;
        let mut clock = *self.clock.get()?;
        let busy_until = self.busy_until.load(Acquire);
        let real = clock.now_ticks().saturating_sub(self.origin.load(Acquire));
        Some(real.max(busy_until))
    }
}

/// The model's tick source when another thread reads its counter live: a
/// [`HostClock`] that publishes the counter's state to a [`LiveCounter`].
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct LiveClock {
    clock: HostClock,
    counter: std::sync::Arc<LiveCounter>,
}

#[cfg(feature = "std")]
impl LiveClock {
    /// A clock at `freq_hz` whose counter `counter` reads.
    pub fn new(freq_hz: u32, counter: std::sync::Arc<LiveCounter>) -> Self {
        let clock = HostClock::new(freq_hz);
        let _ = counter.clock.set(clock);
        Self { clock, counter }
    }
}

#[cfg(feature = "std")]
impl TickSource for LiveClock {
    fn now_ticks(&mut self) -> u64 {
        self.clock.now_ticks()
    }

    fn counter_changed(&mut self, origin: u64, busy_until: u64) {
        use core::sync::atomic::Ordering::Release;
        // Origin first: a reader between the two stores sees the new
        // origin with the old end, which only errs towards later.
        self.counter.origin.store(origin, Release);
        self.counter.busy_until.store(busy_until, Release);
    }
}
