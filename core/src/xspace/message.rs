//! The small prost messages (plane/line headers, metadata, warnings), shared
//! by the streaming encoder, and the full-tree reference path.

use super::layout::*;
use super::pairing::{Anomalies, Span, Timebase, for_each_span};
use super::proto::{XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata};
use super::proto::{x_event, x_stat};
use super::types::{DeviceTrace, OpInfo, XSpaceBuilder};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Which event metadata a plane uses: one bit per fixed id and per op index
/// (op metadata ids are `OP_METADATA_BASE + op_id`, `op_id` a `u16`), so
/// noting a span is a bit set, not a tree insert.
pub(crate) struct UsedMetadata {
    fixed: [bool; FIXED_EVENTS.len() + 1],
    ops: Vec<u64>,
}

impl Default for UsedMetadata {
    fn default() -> Self {
        Self {
            fixed: Default::default(),
            ops: alloc::vec![0; (usize::from(u16::MAX) + 1) / 64],
        }
    }
}

impl UsedMetadata {
    #[inline]
    pub fn note(&mut self, metadata_id: i64) {
        if let Some(used) = usize::try_from(metadata_id)
            .ok()
            .and_then(|id| self.fixed.get_mut(id))
        {
            *used = true;
        } else if let Ok(index) = usize::try_from(metadata_id - OP_METADATA_BASE)
            && let Some(word) = self.ops.get_mut(index / 64)
        {
            *word |= 1 << (index % 64);
        }
    }

    /// The op indexes noted, ascending.
    fn ops(&self) -> impl Iterator<Item = u32> + '_ {
        self.ops.iter().zip(0u32..).flat_map(|(&word, base)| {
            let mut rest = word;
            core::iter::from_fn(move || {
                let bit = rest.trailing_zeros();
                (rest != 0).then(|| {
                    rest &= rest - 1;
                    base * 64 + bit
                })
            })
        })
    }
}

pub(crate) fn plane_name(device: &DeviceTrace<'_>) -> String {
    format!("{PLANE_PREFIX}{}", plane_number(device.device_index))
}

/// Fields 1 and 2 of the plane (encoded before the lines).
pub(crate) fn plane_header(device: &DeviceTrace<'_>) -> XPlane {
    XPlane {
        id: i64::from(plane_number(device.device_index)),
        name: plane_name(device),
        ..XPlane::default()
    }
}

/// Fields 4, 5 and 6 of the plane (encoded after the lines).
pub(crate) fn plane_trailer(
    device: &DeviceTrace<'_>,
    ops: &[OpInfo<'_>],
    used: &UsedMetadata,
) -> XPlane {
    let mut event_metadata = BTreeMap::new();
    for (id, name) in FIXED_EVENTS {
        if used.fixed.get(id as usize).copied().unwrap_or(false) {
            event_metadata.insert(id, event_metadata_entry(id, name.to_string(), Vec::new()));
        }
    }
    let mut stat_metadata: BTreeMap<i64, XStatMetadata> = STATS
        .iter()
        .map(|&(id, name, description)| (id, stat_metadata_entry(id, name, description)))
        .collect();
    for index in used.ops() {
        let id = OP_METADATA_BASE + i64::from(index);
        let (name, tf_op, stats) = match ops.get(index as usize) {
            Some(op) => (op.name.to_string(), op.tf_op, op_stats(op)),
            None => (format!("op#{index}"), "", Vec::new()),
        };
        event_metadata.insert(id, event_metadata_entry(id, name, stats));
        // The target of the op events' `tf_op` ref; an empty name = no tf_op.
        stat_metadata.insert(id, stat_metadata_entry(id, tf_op, ""));
    }
    let dropped = device
        .dropped_device_events
        .saturating_add(device.dropped_host_events);
    let stats = if dropped > 0 {
        alloc::vec![uint64_stat(STAT_DROPPED_TRACES, dropped)]
    } else {
        Vec::new()
    };
    XPlane {
        event_metadata,
        stat_metadata,
        stats,
        ..XPlane::default()
    }
}

fn event_metadata_entry(id: i64, name: String, stats: Vec<XStat>) -> XEventMetadata {
    XEventMetadata {
        id,
        name,
        stats,
        ..XEventMetadata::default()
    }
}

fn stat_metadata_entry(id: i64, name: &str, description: &str) -> XStatMetadata {
    XStatMetadata {
        id,
        name: name.to_string(),
        description: description.to_string(),
    }
}

fn op_stats(op: &OpInfo<'_>) -> Vec<XStat> {
    let mut stats = Vec::new();
    if op.flops > 0 {
        stats.push(uint64_stat(STAT_FLOPS, op.flops));
    }
    if op.bytes_accessed > 0 {
        stats.push(uint64_stat(STAT_BYTES_ACCESSED, op.bytes_accessed));
    }
    stats
}

pub(crate) fn uint64_stat(metadata_id: i64, value: u64) -> XStat {
    XStat {
        metadata_id,
        value: Some(x_stat::Value::Uint64Value(value)),
    }
}

/// A line's fields before its events.
pub(crate) fn line_header(line: u16, start_host_ns: u64, duration_ps: i64) -> XLine {
    let name = match line {
        MEMCPY_LINE_ID => MEMCPY_LINE_NAME.to_string(),
        HOST_API_LINE_ID => HOST_API_LINE_NAME.to_string(),
        queue => format!("{QUEUE_LINE_PREFIX}{queue}"),
    };
    XLine {
        id: i64::from(line),
        name,
        timestamp_ns: i64::try_from(start_host_ns).unwrap_or(i64::MAX),
        duration_ps,
        ..XLine::default()
    }
}

/// One sentence per problem, prefixed with the plane name.
pub(crate) fn warnings(device: &DeviceTrace<'_>, anomalies: &Anomalies, out: &mut Vec<String>) {
    let plane = plane_name(device);
    let (device_drops, host_drops) = (device.dropped_device_events, device.dropped_host_events);
    if device_drops > 0 || host_drops > 0 {
        out.push(format!(
            "{plane}: {device_drops} device events and {host_drops} host API events were \
             dropped because the profiling rings were full; the timeline has gaps. \
             Profile a shorter window or drain the rings more often."
        ));
    }
    if anomalies.unmatched_begins > 0 {
        out.push(format!(
            "{plane}: {} begin events had no matching end (still running at stop, or the \
             end was dropped); those spans are not shown.",
            anomalies.unmatched_begins
        ));
    }
    if anomalies.unmatched_ends > 0 {
        out.push(format!(
            "{plane}: {} end events had no matching begin (the begin was dropped or \
             came before start); those spans are not shown.",
            anomalies.unmatched_ends
        ));
    }
    if anomalies.skipped > 0 {
        out.push(format!(
            "{plane}: {} events had an unknown kind or came on the wrong stream; they \
             were skipped.",
            anomalies.skipped
        ));
    }
    if anomalies.clamped > 0 {
        out.push(format!(
            "{plane}: {} spans started before the session or ended before they began; \
             their times were clamped.",
            anomalies.clamped
        ));
    }
}

/// Streams of one device: (events, timebase).
pub(crate) fn streams<'a>(device: &DeviceTrace<'a>) -> [(&'a [crate::event::Event], Timebase); 2] {
    [
        (device.device_events, Timebase::Device(device.clock)),
        (device.host_events, Timebase::Host),
    ]
}

pub(crate) fn span_to_event(span: &Span) -> XEvent {
    XEvent {
        metadata_id: span.metadata_id,
        duration_ps: span.duration_ps,
        stats: span
            .bytes
            .map(|bytes| uint64_stat(STAT_BYTES_TRANSFERRED, bytes))
            .into_iter()
            .chain(span.tf_op_ref.map(|reference| XStat {
                metadata_id: STAT_TF_OP,
                value: Some(x_stat::Value::RefValue(reference as u64)),
            }))
            .collect(),
        data: Some(x_event::Data::OffsetPs(span.offset_ps)),
    }
}

/// The reference path: every message materialised.
pub(crate) fn to_message(builder: &XSpaceBuilder<'_>) -> XSpace {
    let mut space = XSpace::default();
    for device in builder.devices {
        let mut lines: BTreeMap<u16, XLine> = BTreeMap::new();
        let mut used = UsedMetadata::default();
        let mut anomalies = Anomalies::default();
        for (events, timebase) in streams(device) {
            let found = for_each_span::<()>(events, timebase, builder.start_host_ns, |span| {
                used.note(span.metadata_id);
                let line = lines
                    .entry(span.line)
                    .or_insert_with(|| line_header(span.line, builder.start_host_ns, 0));
                let end = span.offset_ps.saturating_add(span.duration_ps);
                line.duration_ps = line.duration_ps.max(end);
                line.events.push(span_to_event(&span));
                Ok(())
            });
            if let Ok(found) = found {
                anomalies.add(&found);
            }
        }
        let mut plane = plane_header(device);
        plane.lines = lines.into_values().collect();
        let trailer = plane_trailer(device, builder.ops, &used);
        plane.event_metadata = trailer.event_metadata;
        plane.stat_metadata = trailer.stat_metadata;
        plane.stats = trailer.stats;
        space.planes.push(plane);
        warnings(device, &anomalies, &mut space.warnings);
    }
    space
}
