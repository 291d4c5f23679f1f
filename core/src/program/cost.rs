//! The link-cost model: does running a segment on the device pay for the
//! link it crosses? A segment run as a program costs, each step, its round
//! trips, the bytes of its inputs and outputs, and its device time; left
//! on the host it costs its host time. Weights are not counted: they cross
//! once. The LiteRT delegate's partitioning uses it (`docs/delegate.md`,
//! "The cost model").
//!
//! [`probe`] measures a link through the device's own `Memory` and
//! `Transfer` calls; [`estimate`] is plain arithmetic on what it measured.

#[cfg(feature = "alloc")]
use crate::accelerator::{Accelerator, DeviceAddr, QueueId};
use core::time::Duration;

/// What a link costs, as measured (or as the user says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkCost {
    /// One request and its answer: a 4-byte copy on the device and its
    /// wait, through the device's queue, in nanoseconds.
    pub round_trip_ns: u64,
    /// Sustained copy rate, in bytes per second, both directions' mean.
    pub bytes_per_s: u64,
}

/// Compute rates, in flops per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rates {
    /// The host's, for the nodes the host would run instead.
    pub host_flops_per_s: u64,
    /// The device's; `None`: not declared, its compute is not counted.
    pub device_flops_per_s: Option<u64>,
}

/// A segment's work in one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Arithmetic (a multiply-add is 2).
    pub flops: u64,
    /// Input and output bytes that cross the link.
    pub bytes: u64,
    /// Round trips (1 for a stored program: inputs, start, outputs).
    pub round_trips: u32,
}

/// One step of a segment, both ways, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Round trips, bytes and (if declared) compute on the device.
    pub device_ns: u64,
    /// Compute on the host.
    pub host_ns: u64,
}

impl Estimate {
    /// The device is faster for this segment.
    pub fn pays(&self) -> bool {
        self.device_ns < self.host_ns
    }
}

/// `amount` at `per_s` a second, in nanoseconds (saturating; a rate of 0
/// is infinitely slow).
fn ns(amount: u64, per_s: u64) -> u64 {
    if per_s == 0 {
        return u64::MAX;
    }
    let ns = u128::from(amount) * 1_000_000_000 / u128::from(per_s);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// What `work` costs a step on the device behind `link` and on the host.
pub fn estimate(link: &LinkCost, rates: &Rates, work: &Work) -> Estimate {
    let compute = rates
        .device_flops_per_s
        .map_or(0, |rate| ns(work.flops, rate));
    let device_ns = link
        .round_trip_ns
        .saturating_mul(u64::from(work.round_trips))
        .saturating_add(ns(work.bytes, link.bytes_per_s))
        .saturating_add(compute);
    Estimate {
        device_ns,
        host_ns: ns(work.flops, rates.host_flops_per_s),
    }
}

/// How [`probe`] may spend the device.
#[derive(Clone, Copy, Debug)]
pub struct ProbeLimits {
    /// The largest copy it tries.
    pub max_bytes: usize,
    /// It stops growing the copy once one takes this long.
    pub enough_ns: u64,
    /// Each wait's timeout.
    pub timeout: Duration,
}

impl ProbeLimits {
    /// At most 64 KiB, a copy of 20 ms is enough, 5 s a wait.
    pub const DEFAULT: Self = Self {
        max_bytes: 64 * 1024,
        enough_ns: 20_000_000,
        timeout: Duration::from_secs(5),
    };
}

/// Measures `dev`'s link on `queue`: the round trip is the median of five
/// 4-byte copies on the device, each waited for (the queue and the link,
/// no bytes across it); the rate comes from a copy there and back that grows 4×
/// from 1 KiB until it takes [`ProbeLimits::enough_ns`], reaches
/// [`ProbeLimits::max_bytes`] or a quarter of the device's memory, or the
/// device refuses the allocation. `now_ns` is any monotonic clock. What it
/// allocates, it frees.
#[cfg(feature = "alloc")]
pub fn probe<A: Accelerator + ?Sized>(
    dev: &mut A,
    queue: QueueId,
    now_ns: &mut dyn FnMut() -> u64,
    limits: &ProbeLimits,
) -> Result<LinkCost, A::Error> {
    let small = dev.allocate(8, 64)?;
    let mut trips = [0u64; 5];
    let mut result = Ok(());
    for t in &mut trips {
        let start = now_ns();
        result = dev
            .copy_on_device(queue, DeviceAddr(small.0 + 4), small, 4)
            .and_then(|fence| dev.wait_or_reset(fence, limits.timeout));
        *t = now_ns().saturating_sub(start);
        if result.is_err() {
            break;
        }
    }
    dev.deallocate(small)?;
    result?;
    trips.sort_unstable();
    let round_trip_ns = trips[2];
    let cap = limits
        .max_bytes
        .min(usize::try_from(dev.info().memory_bytes / 4).unwrap_or(usize::MAX));
    let mut best: Option<(u64, u64)> = None;
    let mut len = 1024;
    while len <= cap {
        let Ok(addr) = dev.allocate(len as u64, 64) else {
            break;
        };
        let mut data = alloc::vec![0u8; len];
        let start = now_ns();
        let copied = dev
            .write_blocking(queue, addr, &data, limits.timeout)
            .and_then(|()| dev.read_blocking(queue, &mut data, addr, limits.timeout));
        let took = now_ns().saturating_sub(start);
        dev.deallocate(addr)?;
        copied?;
        // Less its two round trips, unless they would be over half of it
        // (then the round trip measured a slow spell: the whole copy is a
        // lower bound on the rate, never an impossible one).
        let turns = 2 * round_trip_ns;
        let moving = match turns <= took / 2 {
            true => took - turns,
            false => took,
        };
        best = Some((2 * len as u64, moving.max(1)));
        if took >= limits.enough_ns {
            break;
        }
        len *= 4;
    }
    let bytes_per_s = match best {
        Some((bytes, ns)) => {
            u64::try_from(u128::from(bytes) * 1_000_000_000 / u128::from(ns)).unwrap_or(u64::MAX)
        }
        None => u64::MAX,
    };
    Ok(LinkCost {
        round_trip_ns,
        bytes_per_s,
    })
}

#[cfg(test)]
mod tests;
