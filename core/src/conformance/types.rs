//! What a case is run with and what it ends in: [`Config`], [`Fixture`],
//! [`Outcome`]. A leaf the cases and their support import.

use core::fmt;
use core::time::Duration;
use std::println;
use std::string::String;

use crate::accelerator::{Accelerator, QueueId};

/// How the suite drives the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Bound of every wait that is meant to succeed (default 10 s: generous
    /// for a debug build on a loaded machine).
    pub timeout: Duration,
    /// The timeout of waits that are meant to time out (default 100 ms).
    pub short_timeout: Duration,
    /// The queue every case uses (default queue 0).
    pub queue: QueueId,
    /// The largest copy of the round-trip case, in bytes (default 1 MiB);
    /// capped at a quarter of the device's allocatable memory. The
    /// on-device copy case's largest copy is 64 KiB + 1 at most, and no
    /// more than this + 1 (a slow link: a few KiB).
    pub large_copy: usize,
    /// The element-wise ops' longest input, in elements (default 1000).
    /// Each element crosses the link twice per op; over a UART under QEMU
    /// (about 12 KB/s) a few dozen keep the case's shapes and ranks at a
    /// fraction of the time.
    pub long_vector: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            short_timeout: Duration::from_millis(100),
            queue: QueueId(0),
            large_copy: 1 << 20,
            long_vector: 1000,
        }
    }
}

/// A device under test, plus the hooks of the cases that need more than
/// the [`Accelerator`] trait.
pub trait Fixture {
    /// The accelerator under test.
    type Device: Accelerator;

    /// The device.
    fn device(&mut self) -> &mut Self::Device;

    /// Arranges for the next command the device is given (the suite gives
    /// it a [`fill`](crate::accelerator::Transfer::fill)) never to
    /// complete, silently, as a hung device or a lost completion would: its
    /// fence never signals and nothing reports an error. Returns false (the
    /// default) when the fixture cannot; the timeout case is then skipped.
    fn stall_next_command(&mut self) -> bool {
        false
    }

    /// Disarms a stall that may still be pending; called after the timeout
    /// case, once the device has been reset.
    fn clear_stall(&mut self) {}
}

/// A bare device as a [`Fixture`] without hooks.
#[derive(Debug)]
pub struct Bare<'a, A>(pub &'a mut A);

impl<A: Accelerator> Fixture for Bare<'_, A> {
    type Device = A;
    fn device(&mut self) -> &mut A {
        self.0
    }
}

/// How one case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every check held; the message says what was checked.
    Passed(String),
    /// The case does not apply to this device or fixture; the reason.
    Skipped(String),
    /// A check failed, or the device panicked; what went wrong.
    Failed(String),
}

impl Outcome {
    /// Whether the case failed.
    pub const fn is_failed(&self) -> bool {
        matches!(self, Self::Failed(_))
    }

    /// Whether the case was skipped.
    pub const fn is_skipped(&self) -> bool {
        matches!(self, Self::Skipped(_))
    }

    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Self::Passed(m) | Self::Skipped(m) | Self::Failed(m) => m,
        }
    }

    /// Panics if the case failed; prints why it was skipped, if it was.
    #[track_caller]
    pub fn assert_ok(&self, case: &str) {
        match self {
            Self::Passed(_) => {}
            Self::Skipped(why) => println!("conformance case {case} SKIPPED: {why}"),
            Self::Failed(why) => panic!("conformance case {case} FAILED: {why}"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Passed(m) => write!(f, "PASS  {m}"),
            Self::Skipped(m) => write!(f, "SKIP  {m}"),
            Self::Failed(m) => write!(f, "FAIL  {m}"),
        }
    }
}
