//! The host-side profiling hook: `EventKind::Host*` begin/end records around
//! launches, copies and synchronisations, in per-thread lock-free rings.
//!
//! Off by default; the profiler (`TF_InitProfiler`) turns [`RECORDING`] on,
//! drains [`HOST_EVENTS`] with its single consumer and turns it off. While
//! off, a span costs one relaxed load. Timestamps are nanoseconds since
//! [`host_epoch`]. A record's `queue` byte is the TF ordinal of the device
//! the call was for ([`device_byte`]), so the profiler puts each span on
//! its device's plane.

use std::cell::RefCell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::ring::{RecordingSwitch, RingRegistry, ThreadProducer};

/// Records per host thread.
pub const RING_CAPACITY: usize = 1024;
/// Host threads that get a ring; later threads' records are dropped and counted.
pub const RING_THREADS: usize = 64;

/// Whether host spans are recorded.
pub static RECORDING: RecordingSwitch = RecordingSwitch::new(false);
/// The host rings (one per recording thread).
pub static HOST_EVENTS: RingRegistry<Event, RING_CAPACITY, RING_THREADS> = RingRegistry::new();

static NEXT_SPAN: AtomicU16 = AtomicU16::new(0);

thread_local! {
    static PRODUCER: RefCell<Option<ThreadProducer<'static, Event, RING_CAPACITY>>> =
        const { RefCell::new(None) };
}

/// The instant host timestamps count from (fixed at first use).
pub fn host_epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`host_epoch`].
pub fn host_now_ns() -> u64 {
    u64::try_from(host_epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn push(event: Event) {
    // `try_with`: never panic during thread teardown.
    let _ = PRODUCER.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            let producer = slot.get_or_insert_with(|| HOST_EVENTS.register());
            // A full ring drops and counts the record; nothing to do here.
            let _ = producer.push(event);
        }
    });
}

/// The kinds a [`HostSpan`] can open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// An op launch.
    Launch,
    /// A copy (`arg` = bytes).
    Copy,
    /// A synchronisation.
    Sync,
}

impl SpanKind {
    fn kinds(self) -> (EventKind, EventKind) {
        match self {
            Self::Launch => (EventKind::HostLaunchBegin, EventKind::HostLaunchEnd),
            Self::Copy => (EventKind::HostCopyBegin, EventKind::HostCopyEnd),
            Self::Sync => (EventKind::HostSyncBegin, EventKind::HostSyncEnd),
        }
    }
}

/// The `queue` byte of host records for the device with TF ordinal
/// `ordinal` (an ordinal outside `0..=255` gives 255).
pub fn device_byte(ordinal: i32) -> u8 {
    u8::try_from(ordinal).unwrap_or(u8::MAX)
}

/// Records a begin event now and the matching end event on drop (when
/// recording is on at the start).
#[must_use = "the span ends when this is dropped"]
pub struct HostSpan {
    open: Option<(EventKind, u8, u16, u32)>,
}

impl HostSpan {
    /// Opens a span for the device with TF ordinal `device_ordinal`, with
    /// `arg` (bytes for copies, op index for launches).
    #[inline]
    pub fn begin(kind: SpanKind, device_ordinal: i32, arg: u32) -> Self {
        if !RECORDING.is_enabled() {
            return Self { open: None };
        }
        let (begin, end) = kind.kinds();
        let device = device_byte(device_ordinal);
        let op_id = NEXT_SPAN.fetch_add(1, Ordering::Relaxed);
        push(Event::new(begin, host_now_ns(), device, op_id, arg));
        Self {
            open: Some((end, device, op_id, arg)),
        }
    }
}

impl Drop for HostSpan {
    fn drop(&mut self) {
        if let Some((end, queue, op_id, arg)) = self.open {
            push(Event::new(end, host_now_ns(), queue, op_id, arg));
        }
    }
}

/// Saturating `u64 → u32` for span arguments.
pub fn arg32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}
