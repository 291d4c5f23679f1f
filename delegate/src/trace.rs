//! The `profile_file` option: the device's events of every invoke as a
//! Chrome trace (the JSON `chrome://tracing` and Perfetto open), each
//! launch named by its TFLite node (its `op_id` is the node's index,
//! `kernel.rs`), on the device's clock. Copies are not in it.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use tensorplug_core::event::{Event, EventKind};

/// At most this many trace events are kept; later ones are counted.
pub const MAX_EVENTS: usize = 100_000;

/// The events so far.
#[derive(Debug)]
pub struct Trace {
    clock_hz: u64,
    events: Vec<Value>,
    /// Begins waiting for their ends, by (queue, op id).
    open: BTreeMap<(u8, u16), u64>,
    /// Events the device's ring dropped, and those past [`MAX_EVENTS`].
    pub dropped: u64,
}

impl Trace {
    /// An empty trace of a device whose clock ticks at `clock_hz`.
    pub fn new(clock_hz: u64) -> Self {
        Self {
            clock_hz: clock_hz.max(1),
            events: Vec::new(),
            open: BTreeMap::new(),
            dropped: 0,
        }
    }

    /// Adds the device's `event`; `name(node)` names a node's command.
    pub fn add(&mut self, event: &Event, name: impl Fn(u16) -> String) {
        let key = (event.queue, event.op_id);
        let (begin, end) = match EventKind::from_u8(event.kind) {
            Some(EventKind::OpBegin) => (true, false),
            Some(EventKind::OpEnd) => (false, true),
            // Copies carry no node (a program's copy has tag 0).
            _ => (false, false),
        };
        if begin {
            self.open.insert(key, event.timestamp);
        }
        if !end {
            return;
        }
        let Some(start) = self.open.remove(&key) else {
            return;
        };
        if self.events.len() >= MAX_EVENTS {
            self.dropped += 1;
            return;
        }
        let us = |ticks: u64| ticks as f64 * 1e6 / self.clock_hz as f64;
        self.events.push(json!({
            "name": name(event.op_id),
            "ph": "X",
            "pid": 1,
            "tid": event.queue,
            "ts": us(start),
            "dur": us(event.timestamp.saturating_sub(start)),
            "args": { "node": event.op_id },
        }));
    }

    /// Writes it to `path` (through a temporary file).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let json = json!({
            "traceEvents": self.events,
            "displayTimeUnit": "ns",
            "otherData": { "delegate": "tensorplug", "dropped_events": self.dropped },
        });
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&json)?)?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begin_and_end_pair_into_one_named_event_on_the_device_clock() {
        let mut t = Trace::new(1_000_000); // 1 tick = 1 µs
        let e = |kind: EventKind, ts: u64, op: u16| Event::new(kind, ts, 0, op, 0);
        let name = |n: u16| format!("CONV_2D (node {n})");
        t.add(&e(EventKind::OpBegin, 10, 3), name);
        t.add(&e(EventKind::OpEnd, 25, 4), name); // no begin: skipped
        t.add(&e(EventKind::OpEnd, 25, 3), name);
        assert_eq!(t.events.len(), 1);
        let v = &t.events[0];
        assert_eq!(v["name"], "CONV_2D (node 3)");
        assert_eq!(
            (v["ts"].as_f64(), v["dur"].as_f64()),
            (Some(10.0), Some(15.0))
        );
    }
}
