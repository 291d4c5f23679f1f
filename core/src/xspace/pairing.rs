//! Begin/end pairing: turns a stream of events into spans on lines.

use super::layout::{HOST_API_LINE_ID, MEMCPY_LINE_ID, OP_METADATA_BASE, Placement, placement};
use crate::clock::ClockMap;
use crate::event::Event;
use alloc::collections::BTreeMap;

/// One paired span, ready to encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub line: u16,
    pub metadata_id: i64,
    pub offset_ps: i64,
    pub duration_ps: i64,
    /// `bytes_transferred` for copies.
    pub bytes: Option<u64>,
}

/// What went wrong in a stream; never fatal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anomalies {
    /// Begins with no end (still running at stop, or the end was dropped).
    pub unmatched_begins: u64,
    /// Ends with no begin.
    pub unmatched_ends: u64,
    /// Unknown kinds, or host kinds in the device stream and vice versa.
    pub skipped: u64,
    /// Spans starting before the session, ending before they began, or too
    /// far in the future for `i64` picoseconds: their times were clamped.
    pub clamped: u64,
}

impl Anomalies {
    pub(crate) fn add(&mut self, other: &Self) {
        self.unmatched_begins += other.unmatched_begins;
        self.unmatched_ends += other.unmatched_ends;
        self.skipped += other.skipped;
        self.clamped += other.clamped;
    }
}

/// How a stream's timestamps become picoseconds since the session start.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Timebase {
    /// Device ticks through a clock map.
    Device(ClockMap),
    /// Host nanoseconds.
    Host,
}

impl Timebase {
    #[inline]
    fn ps_since(&self, start_host_ns: u64, timestamp: u64) -> i128 {
        match self {
            Self::Device(clock) => clock.ps_since(start_host_ns, timestamp),
            Self::Host => (i128::from(timestamp) - i128::from(start_host_ns)) * 1_000,
        }
    }

    const fn accepts(&self, placement: Placement) -> bool {
        matches!(
            (self, placement),
            (Self::Device(_), Placement::Op | Placement::Copy(_))
                | (Self::Host, Placement::Host(..))
        )
    }
}

#[derive(Clone, Copy)]
struct Open {
    timestamp: u64,
    arg: u32,
}

/// Open spans: a few in flight per queue is the normal case, so a small
/// linearly searched array, spilling into a `BTreeMap` beyond that.
#[derive(Default)]
struct Pending {
    small: heapless::Vec<(u32, Open), 16>,
    spill: BTreeMap<u32, Open>,
}

impl Pending {
    /// Inserts; returns true if an open span with the same key was replaced.
    #[inline]
    fn insert(&mut self, key: u32, open: Open) -> bool {
        if let Some(slot) = self.small.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = open;
            return true;
        }
        if self.spill.is_empty() || !self.spill.contains_key(&key) {
            if let Err((key, open)) = self.small.push((key, open)) {
                return self.spill.insert(key, open).is_some();
            }
            return false;
        }
        self.spill.insert(key, open).is_some()
    }

    #[inline]
    fn remove(&mut self, key: u32) -> Option<Open> {
        if let Some(index) = self.small.iter().position(|(k, _)| *k == key) {
            return Some(self.small.swap_remove(index).1);
        }
        if self.spill.is_empty() {
            return None;
        }
        self.spill.remove(&key)
    }

    fn len(&self) -> usize {
        self.small.len() + self.spill.len()
    }
}

/// Pairs `events` and calls `emit` for each span, in end order.
///
/// Begins and ends match on (kind, queue, op_id); a second begin with the
/// same key replaces the first, which counts as unmatched.
pub(crate) fn for_each_span<E>(
    events: &[Event],
    timebase: Timebase,
    start_host_ns: u64,
    mut emit: impl FnMut(Span) -> Result<(), E>,
) -> Result<Anomalies, E> {
    let mut open = Pending::default();
    let mut anomalies = Anomalies::default();
    for event in events {
        let Some(kind) = event.kind() else {
            anomalies.skipped += 1;
            continue;
        };
        let (place, is_begin) = placement(kind);
        if !timebase.accepts(place) {
            anomalies.skipped += 1;
            continue;
        }
        // Begin and end of one kind share the key (kind byte rounded to the begin).
        let family = u32::from(event.kind - u8::from(!is_begin));
        let key = family << 24 | u32::from(event.queue) << 16 | u32::from(event.op_id);
        let pending = Open {
            timestamp: event.timestamp,
            arg: event.arg,
        };
        if is_begin {
            if open.insert(key, pending) {
                anomalies.unmatched_begins += 1;
            }
            continue;
        }
        let Some(begin) = open.remove(key) else {
            anomalies.unmatched_ends += 1;
            continue;
        };
        let start = timebase.ps_since(start_host_ns, begin.timestamp);
        let end = timebase.ps_since(start_host_ns, event.timestamp);
        let (offset_ps, duration_ps, clamped) = clamp(start, end);
        anomalies.clamped += u64::from(clamped);
        let (line, metadata_id, bytes) = match place {
            Placement::Op => (
                u16::from(event.queue),
                OP_METADATA_BASE + i64::from(event.op_id),
                None,
            ),
            Placement::Copy(id) => (MEMCPY_LINE_ID, id, Some(u64::from(begin.arg))),
            Placement::Host(id, has_bytes) => (
                HOST_API_LINE_ID,
                id,
                has_bytes.then_some(u64::from(begin.arg)),
            ),
        };
        emit(Span {
            line,
            metadata_id,
            offset_ps,
            duration_ps,
            bytes,
        })?;
    }
    anomalies.unmatched_begins += open.len() as u64;
    Ok(anomalies)
}

/// Clamps a span to `0..=i64::MAX` ps with a non-negative duration.
#[inline]
fn clamp(start: i128, end: i128) -> (i64, i64, bool) {
    let max = i128::from(i64::MAX);
    let clamped_start = start.clamp(0, max);
    let clamped_end = end.clamp(clamped_start, max);
    let changed = clamped_start != start || clamped_end != end;
    // Both are within 0..=i64::MAX here, so the casts are exact.
    let offset = clamped_start as i64;
    (offset, (clamped_end - clamped_start) as i64, changed)
}
