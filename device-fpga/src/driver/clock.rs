//! Time for bounded waits: a tiny [`Clock`] trait that works on an MCU (any
//! `embedded_hal::delay::DelayNs` plus a retry budget) and on a host
//! (`std::time::Instant`).

use embedded_hal::delay::DelayNs;

/// A monotonic time source for the driver's timeouts.
pub trait Clock {
    /// Nanoseconds since an arbitrary, fixed origin; never decreases.
    fn now_ns(&mut self) -> u64;
    /// Called between two polls of a wait, `polls` being the polls so far:
    /// spin, yield or sleep briefly. Must return in bounded time.
    fn relax(&mut self, polls: u32);
}

/// A [`Clock`] made of a delay provider: time advances only by the delays
/// it performs (`step_ns` per poll), so a wait of `t` costs at most about
/// `t / step_ns` polls whatever the bus speed. For MCUs without a timer
/// peripheral the driver can read.
#[derive(Debug)]
pub struct DelayClock<D> {
    delay: D,
    step_ns: u32,
    elapsed_ns: u64,
}

impl<D: DelayNs> DelayClock<D> {
    /// Polls every `step_ns` nanoseconds (at least 1).
    pub fn new(delay: D, step_ns: u32) -> Self {
        Self {
            delay,
            step_ns: step_ns.max(1),
            elapsed_ns: 0,
        }
    }
}

impl<D: DelayNs> Clock for DelayClock<D> {
    fn now_ns(&mut self) -> u64 {
        self.elapsed_ns
    }

    fn relax(&mut self, _polls: u32) {
        self.delay.delay_ns(self.step_ns);
        self.elapsed_ns = self.elapsed_ns.saturating_add(u64::from(self.step_ns));
    }
}

/// The host clock: `std::time::Instant`. Spins for the first polls of a
/// wait (lowest latency), then yields, then sleeps 20 µs per poll so a long
/// wait costs no CPU core.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy)]
pub struct StdClock {
    origin: std::time::Instant,
}

#[cfg(feature = "std")]
impl Default for StdClock {
    fn default() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

#[cfg(feature = "std")]
impl Clock for StdClock {
    fn now_ns(&mut self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn relax(&mut self, polls: u32) {
        match polls {
            0..256 => core::hint::spin_loop(),
            256..2048 => std::thread::yield_now(),
            _ => std::thread::sleep(core::time::Duration::from_micros(20)),
        }
    }
}

/// A running timeout: `budget_ns` from the moment it was started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    start_ns: u64,
    budget_ns: u64,
    polls: u32,
    last_look: bool,
}

impl Deadline {
    pub(crate) fn start(clock: &mut impl Clock, budget_ns: u64) -> Self {
        Self {
            start_ns: clock.now_ns(),
            budget_ns,
            polls: 0,
            last_look: false,
        }
    }

    /// False once the budget is spent and the caller has polled once more
    /// since (a host descheduled past the deadline between two polls must
    /// not time out work that finished meanwhile); otherwise relaxes and
    /// returns true.
    pub(crate) fn keep_waiting(&mut self, clock: &mut impl Clock) -> bool {
        if clock.now_ns().saturating_sub(self.start_ns) >= self.budget_ns {
            if self.last_look {
                return false;
            }
            self.last_look = true;
            return true;
        }
        clock.relax(self.polls);
        self.polls = self.polls.saturating_add(1);
        true
    }

    pub(crate) const fn budget_us(&self) -> u64 {
        self.budget_ns / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct CountingDelay(u64);
    impl DelayNs for CountingDelay {
        fn delay_ns(&mut self, ns: u32) {
            self.0 += u64::from(ns);
        }
    }

    #[test]
    fn delay_clock_deadline_spends_exactly_its_budget() {
        let mut clock = DelayClock::new(CountingDelay(0), 1_000);
        let mut deadline = Deadline::start(&mut clock, 10_000);
        let mut polls = 0;
        while deadline.keep_waiting(&mut clock) {
            polls += 1;
        }
        // Ten relaxed polls within the budget, then one last look.
        assert_eq!(polls, 11);
        assert_eq!(clock.delay.0, 10_000);
        assert_eq!(deadline.budget_us(), 10);
    }

    #[test]
    fn a_deadline_passed_while_descheduled_still_gets_one_more_poll() {
        let mut clock = DelayClock::new(CountingDelay(0), 1_000);
        let mut deadline = Deadline::start(&mut clock, 10_000);
        clock.elapsed_ns = 1_000_000; // the host slept far past the budget
        assert!(deadline.keep_waiting(&mut clock), "one more look");
        assert!(!deadline.keep_waiting(&mut clock));
    }
}
