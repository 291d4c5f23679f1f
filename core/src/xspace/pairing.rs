//! Begin/end pairing: turns a stream of events into spans on lines.

use super::layout::{HOST_API_LINE_ID, MEMCPY_LINE_ID, OP_METADATA_BASE, Placement, placement};
use crate::clock::ClockMap;
use crate::event::{Event, EventKind};
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
    /// `tf_op` for ops: the id of the stat metadata that holds it.
    pub tf_op_ref: Option<i64>,
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

/// A [`Timebase`] bound to the session start, with the per-stream part of
/// the mapping computed once.
#[derive(Clone, Copy)]
enum StreamClock {
    /// `ps = ref_from_start + clock.ps_from_ref(ticks)`, exactly
    /// `ClockMap::ps_since`.
    Device {
        clock: ClockMap,
        ref_from_start: i128,
    },
    /// `ps = (ns - start) * 1000`.
    Host { start_host_ns: u64 },
}

impl StreamClock {
    fn new(timebase: Timebase, start_host_ns: u64) -> Self {
        match timebase {
            Timebase::Device(clock) => Self::Device {
                clock,
                ref_from_start: (i128::from(clock.ref_host_ns()) - i128::from(start_host_ns))
                    * 1_000,
            },
            Timebase::Host => Self::Host { start_host_ns },
        }
    }

    /// Which events this stream takes ([`KindInfo::stream`]).
    const fn stream(&self) -> u8 {
        match self {
            Self::Device { .. } => DEVICE_STREAM,
            Self::Host { .. } => HOST_STREAM,
        }
    }

    #[inline]
    fn ps_since_start(&self, timestamp: u64) -> i128 {
        match self {
            Self::Device {
                clock,
                ref_from_start,
            } => ref_from_start.saturating_add(clock.ps_from_ref(timestamp)),
            Self::Host { start_host_ns } => {
                (i128::from(timestamp) - i128::from(*start_host_ns)) * 1_000
            }
        }
    }
}

const DEVICE_STREAM: u8 = 1;
const HOST_STREAM: u8 = 2;

/// Everything pairing needs to know about one raw kind byte.
#[derive(Clone, Copy)]
struct KindInfo {
    place: Placement,
    is_begin: bool,
    /// [`DEVICE_STREAM`] or [`HOST_STREAM`]; 0 for unknown kinds.
    stream: u8,
    /// The begin kind's byte: begin and end of one span share it in the key.
    family: u8,
}

/// [`KindInfo`] of every kind byte, so pairing decodes a kind with one load.
const KINDS: [KindInfo; 256] = {
    let unknown = KindInfo {
        place: Placement::Op,
        is_begin: false,
        stream: 0,
        family: 0,
    };
    let mut table = [unknown; 256];
    let mut raw = 0;
    while raw < table.len() {
        if let Some(kind) = EventKind::from_u8(raw as u8) {
            let (place, is_begin) = placement(kind);
            table[raw] = KindInfo {
                place,
                is_begin,
                stream: match place {
                    Placement::Op | Placement::Copy(_) => DEVICE_STREAM,
                    Placement::Host(..) => HOST_STREAM,
                },
                family: raw as u8 - !is_begin as u8,
            };
        }
        raw += 1;
    }
    table
};

/// A begin waiting for its end.
#[derive(Clone, Copy)]
struct Open {
    timestamp: u64,
    arg: u32,
}

/// Capacity of the linearly searched part of [`Pending`].
const SMALL_PENDING: usize = 16;

/// Open spans: a few in flight per queue is the normal case, so a small
/// linearly searched table, spilling into a `BTreeMap` beyond that. A key is
/// in at most one of the two.
///
/// The table is three parallel arrays: a search reads only the keys, and
/// each field is stored and loaded at its own width (no 16-byte reload of a
/// record just stored as two fields, which can defeat store forwarding when
/// an end follows its begin).
struct Pending {
    keys: [u32; SMALL_PENDING],
    timestamps: [u64; SMALL_PENDING],
    args: [u32; SMALL_PENDING],
    /// Entries `..len` of the arrays are in use.
    len: usize,
    spill: BTreeMap<u32, Open>,
}

impl Pending {
    fn new() -> Self {
        Self {
            keys: [0; SMALL_PENDING],
            timestamps: [0; SMALL_PENDING],
            args: [0; SMALL_PENDING],
            len: 0,
            spill: BTreeMap::new(),
        }
    }

    /// Index of `key` in the table; always below `len`.
    #[inline]
    fn find_small(&self, key: u32) -> Option<usize> {
        self.keys.get(..self.len)?.iter().position(|&k| k == key)
    }

    /// Stores `open` at `index` (`index < SMALL_PENDING`).
    #[inline]
    fn set(&mut self, index: usize, key: u32, open: Open) {
        self.keys[index] = key;
        self.timestamps[index] = open.timestamp;
        self.args[index] = open.arg;
    }

    /// Inserts; returns true if an open span with the same key was replaced.
    #[inline]
    fn insert(&mut self, key: u32, open: Open) -> bool {
        if let Some(index) = self.find_small(key) {
            self.set(index, key, open);
            return true;
        }
        if !self.spill.is_empty() && self.spill.contains_key(&key) {
            return self.spill.insert(key, open).is_some();
        }
        if self.len < SMALL_PENDING {
            self.set(self.len, key, open);
            self.len += 1;
            return false;
        }
        self.spill.insert(key, open).is_some()
    }

    #[inline]
    fn remove(&mut self, key: u32) -> Option<Open> {
        if let Some(index) = self.find_small(key) {
            let open = Open {
                timestamp: self.timestamps[index],
                arg: self.args[index],
            };
            // Fill the hole with the last entry.
            let last = self.len - 1;
            self.set(
                index,
                self.keys[last],
                Open {
                    timestamp: self.timestamps[last],
                    arg: self.args[last],
                },
            );
            self.len = last;
            return Some(open);
        }
        if self.spill.is_empty() {
            return None;
        }
        self.spill.remove(&key)
    }

    fn len(&self) -> usize {
        self.len + self.spill.len()
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
    let clock = StreamClock::new(timebase, start_host_ns);
    let stream = clock.stream();
    let mut open = Pending::new();
    let mut anomalies = Anomalies::default();
    for event in events {
        let info = KINDS[usize::from(event.kind)];
        if info.stream != stream {
            // Unknown kinds (stream 0) and kinds of the other stream.
            anomalies.skipped += 1;
            continue;
        }
        let key =
            u32::from(info.family) << 24 | u32::from(event.queue) << 16 | u32::from(event.op_id);
        let pending = Open {
            timestamp: event.timestamp,
            arg: event.arg,
        };
        if info.is_begin {
            if open.insert(key, pending) {
                anomalies.unmatched_begins += 1;
            }
            continue;
        }
        let Some(begin) = open.remove(key) else {
            anomalies.unmatched_ends += 1;
            continue;
        };
        let start = clock.ps_since_start(begin.timestamp);
        let end = clock.ps_since_start(event.timestamp);
        let (offset_ps, duration_ps, clamped) = clamp(start, end);
        anomalies.clamped += u64::from(clamped);
        let (line, metadata_id, bytes, tf_op_ref) = match info.place {
            Placement::Op => {
                let id = OP_METADATA_BASE + i64::from(event.op_id);
                (u16::from(event.queue), id, None, Some(id))
            }
            Placement::Copy(id) => (MEMCPY_LINE_ID, id, Some(u64::from(begin.arg)), None),
            Placement::Host(id, has_bytes) => (
                HOST_API_LINE_ID,
                id,
                has_bytes.then_some(u64::from(begin.arg)),
                None,
            ),
        };
        emit(Span {
            line,
            metadata_id,
            offset_ps,
            duration_ps,
            bytes,
            tf_op_ref,
        })?;
    }
    anomalies.unmatched_begins += open.len() as u64;
    Ok(anomalies)
}

/// Clamps a span to `0..=i64::MAX` ps with a non-negative duration.
#[inline]
fn clamp(start: i128, end: i128) -> (i64, i64, bool) {
    // The usual case, in 64-bit arithmetic: nothing to clamp.
    if let (Ok(start), Ok(end)) = (i64::try_from(start), i64::try_from(end))
        && 0 <= start
        && start <= end
    {
        return (start, end - start, false);
    }
    let max = i128::from(i64::MAX);
    let clamped_start = start.clamp(0, max);
    let clamped_end = end.clamp(clamped_start, max);
    let changed = clamped_start != start || clamped_end != end;
    // Both are within 0..=i64::MAX here, so the casts are exact.
    let offset = clamped_start as i64;
    (offset, (clamped_end - clamped_start) as i64, changed)
}
