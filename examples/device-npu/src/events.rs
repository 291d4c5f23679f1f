//! The NPU's profiling events: a fixed-capacity `tensorplug_core::ring`
//! gated by a `RecordingSwitch`. A full ring drops the event and counts it.
//!
//! On an MCU whose NPU interrupt records events, the ring would be a
//! `'static` split once, its producer moved into the handler. This example
//! owns both ends, so it splits per call (the ring keeps its records).

use tensorplug_core::accelerator::Drained;
use tensorplug_core::event::Event;
use tensorplug_core::ring::{Recorder, RecordingSwitch, Ring};

/// Events buffered between drains (16 bytes each).
pub const EVENT_CAPACITY: usize = 1024;

pub struct EventLog {
    ring: Ring<Event, EVENT_CAPACITY>,
    switch: RecordingSwitch,
    /// The ring's drop counter (wrapping) at the previous drain.
    drops_reported: usize,
}

impl EventLog {
    pub const fn new() -> Self {
        Self {
            ring: Ring::new(),
            switch: RecordingSwitch::new(false),
            drops_reported: 0,
        }
    }

    pub fn set_enabled(&mut self, enabled: bool) {
        if enabled {
            self.switch.enable();
        } else {
            self.switch.disable();
        }
    }

    /// Records `make()` if recording is on; off, it costs one relaxed load
    /// and `make` (which reads the clock) is not called.
    pub fn record(&mut self, make: impl FnOnce() -> Event) {
        let (producer, _) = self.ring.split();
        Recorder::new(&self.switch, producer).record_with(make);
    }

    /// Moves the oldest events into `out`; reports drops since the last drain.
    pub fn drain(&mut self, out: &mut [Event]) -> Drained {
        let (_, mut consumer) = self.ring.split();
        let events = consumer.drain(out);
        let dropped_total = consumer.dropped();
        let dropped = dropped_total.wrapping_sub(self.drops_reported) as u64;
        self.drops_reported = dropped_total;
        Drained { events, dropped }
    }
}
