//! The NPU's timestamp counter.

/// Ticks per second of the NPU's timestamp counter.
pub const CLOCK_HZ: u64 = 1_000_000;

/// The NPU's timestamp counter, in ticks of [`CLOCK_HZ`]; must not go
/// backwards. On an MCU: a hardware timer; on the host: [`StdClock`].
pub trait NpuClock {
    /// The current tick count.
    fn now_ticks(&mut self) -> u64;
}

/// Host time as the NPU clock: microseconds since [`StdClock::new`].
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub struct StdClock(std::time::Instant);

#[cfg(feature = "std")]
impl StdClock {
    /// A clock reading 0 now.
    pub fn new() -> Self {
        Self(std::time::Instant::now())
    }
}

#[cfg(feature = "std")]
impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "std")]
impl NpuClock for StdClock {
    fn now_ticks(&mut self) -> u64 {
        // u64 microseconds last 584 000 years.
        self.0.elapsed().as_micros() as u64
    }
}
