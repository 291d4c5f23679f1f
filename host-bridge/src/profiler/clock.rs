//! TF's clock and device sync pairs.
//!
//! Host spans are stamped with [`host_now_ns`] (monotonic ns since the
//! process's profiling epoch). TF stamps its own events with wall-clock ns
//! since the Unix epoch (`GetCurrentTimeNanos`), so a session fixes one
//! [`WallClock`] offset at start and maps every host time through it: times
//! stay monotonic within the session and line up with TF's `/host:CPU` plane.

use crate::devices::{DeviceError, DynAccelerator};
use crate::host_spans::host_now_ns;
use std::time::{SystemTime, UNIX_EPOCH};
use tensorplug_core::clock::SyncPair;

/// Monotonic profiling ns → wall-clock ns since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WallClock {
    /// `wall - monotonic`, in ns (wraps; both are < 2^63 in practice).
    offset_ns: u64,
}

impl WallClock {
    /// Reads both clocks now: the wall clock between two monotonic reads, so
    /// the offset is off by at most half that window (a few ns).
    pub fn now() -> Self {
        let before = host_now_ns();
        let wall = unix_ns();
        let after = host_now_ns();
        let mono = before + after.saturating_sub(before) / 2;
        Self {
            offset_ns: wall.wrapping_sub(mono),
        }
    }

    /// A clock with a given offset (tests).
    #[cfg(test)]
    pub const fn with_offset(offset_ns: u64) -> Self {
        Self { offset_ns }
    }

    /// `mono_ns` (from [`host_now_ns`]) on TF's clock.
    pub const fn to_wall(self, mono_ns: u64) -> u64 {
        mono_ns.wrapping_add(self.offset_ns)
    }

    /// The current time on TF's clock.
    pub fn wall_now(self) -> u64 {
        self.to_wall(host_now_ns())
    }
}

/// Wall-clock ns since the Unix epoch (0 before 1970).
fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// How long [`sync_pair`] looks for a fresh, narrow reading.
pub const SYNC_BUDGET_NS: u64 = 100_000_000;
/// A host window this narrow ends the search (the pair's error is half of it).
pub const SYNC_GOOD_WINDOW_NS: u64 = 20_000;
/// Changes of the counter looked at, at most (a slow bus never gives a
/// narrow window: each window spans two reads).
pub const SYNC_MAX_CHANGES: u32 = 8;

/// One sync pair: a device counter value and the host window in which the
/// device had that value, all on TF's clock. The caller holds the device
/// lock, so nothing else is queued on the bus meanwhile.
///
/// A counter register need not be live: the `sim` device's is a snapshot
/// its model thread publishes once per service round, so a single read can
/// be milliseconds old when that thread sleeps or is descheduled (measured
/// up to 14 ms on a loaded 2-core machine), which shifted every device op
/// that much later on the timeline. So the counter is read until it
/// changes: the new value appeared between the start of the previous read
/// (which still saw the old one) and the end of this one, and that window
/// is the pair's. A live counter (real hardware) changes between two reads
/// at once. The narrowest window of up to [`SYNC_MAX_CHANGES`] changes
/// within [`SYNC_BUDGET_NS`] is kept, stopping early at one of
/// [`SYNC_GOOD_WINDOW_NS`]; if the counter never moves, the plain single
/// read is used.
pub fn sync_pair(clock: WallClock, accel: &mut DynAccelerator) -> Result<SyncPair, DeviceError> {
    let first_before = clock.wall_now();
    let mut seen = accel.timestamp()?;
    let first_after = clock.wall_now();
    let give_up = first_after.saturating_add(SYNC_BUDGET_NS);
    let mut previous_read_start = first_before;
    let mut best: Option<SyncPair> = None;
    let mut changes = 0;
    loop {
        let before = clock.wall_now();
        let ticks = accel.timestamp()?;
        let after = clock.wall_now();
        if ticks != seen {
            let pair = SyncPair::new(ticks, previous_read_start, after);
            if best.is_none_or(|b| pair.uncertainty_ns() < b.uncertainty_ns()) {
                best = Some(pair);
            }
            seen = ticks;
            changes += 1;
        }
        let narrow = best.is_some_and(|b| b.uncertainty_ns() * 2 <= SYNC_GOOD_WINDOW_NS);
        if narrow || changes >= SYNC_MAX_CHANGES || after >= give_up {
            break;
        }
        previous_read_start = before;
    }
    Ok(best.unwrap_or(SyncPair::new(seen, first_before, first_after)))
}
