//! TF's clock and device sync pairs.
//!
//! Host spans are stamped with [`host_now_ns`] (monotonic ns since the
//! process's profiling epoch). TF stamps its own events with wall-clock ns
//! since the Unix epoch (`GetCurrentTimeNanos`), so a session fixes one
//! [`WallClock`] offset at start and maps every host time through it: times
//! stay monotonic within the session and line up with TF's `/host:CPU` plane.

use crate::devices::{DeviceError, DynAccelerator};
use crate::profiling::host_now_ns;
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

/// One sync pair: the device counter read between two host reads, all on
/// TF's clock. The caller holds the device lock, so nothing else is queued
/// on the bus between the reads.
pub fn sync_pair(clock: WallClock, accel: &mut DynAccelerator) -> Result<SyncPair, DeviceError> {
    let before = clock.wall_now();
    let ticks = accel.timestamp()?;
    let after = clock.wall_now();
    Ok(SyncPair::new(ticks, before, after))
}
