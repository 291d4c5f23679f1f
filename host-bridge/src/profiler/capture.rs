//! What a running session collects: each device's events (drained from its
//! hardware ring) and the host-API spans (drained from the per-thread host
//! rings), in bounded buffers, filled by a drainer thread while the session
//! runs and by `stop`.

use super::clock::WallClock;
use crate::devices::DeviceError;
use crate::host_spans::HOST_EVENTS;
use crate::registry::Device;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use tensorplug_core::event::Event;

/// Events kept per device (and for the host) per session: 1 Mi records =
/// 16 MiB. Later events are dropped and counted (warning in the XSpace).
pub const MAX_EVENTS: usize = 1 << 20;
/// How often the drainer empties the rings while a session runs. The device
/// ring holds 1024 events and each host thread's ring 1024, so this keeps
/// up with ~100k events/s per ring.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(5);
/// Events moved per driver call.
const CHUNK: usize = 256;

/// One device's events in one session.
#[derive(Debug, Default)]
pub struct DeviceEvents {
    /// Device events in ticks, in ring order.
    pub events: Vec<Event>,
    /// Dropped by the device ring, or past [`MAX_EVENTS`].
    pub dropped: u64,
}

/// Everything drained so far in this session.
#[derive(Debug, Default)]
pub struct Buffers {
    /// Per session device, in session order.
    pub devices: Vec<DeviceEvents>,
    /// Host-API spans, timestamps already on TF's clock.
    pub host: Vec<Event>,
    /// Host records dropped by full rings or past [`MAX_EVENTS`].
    pub host_dropped: u64,
    /// The first drain error (profiling continues without that device).
    pub error: Option<String>,
}

/// Drains `device`'s hardware ring into `out` (lock held only per chunk).
pub fn drain_device(device: &Device, out: &mut DeviceEvents) -> Result<(), DeviceError> {
    let mut chunk = [Event::default(); CHUNK];
    loop {
        let drained = device.core().lock().accel().drain_events(&mut chunk)?;
        out.dropped = out.dropped.saturating_add(drained.dropped);
        let got = &chunk[..drained.events.min(CHUNK)];
        push_bounded(&mut out.events, &mut out.dropped, got);
        if drained.events < CHUNK {
            return Ok(());
        }
    }
}

/// Discards whatever `device`'s ring holds (events from before the session).
pub fn discard_device(device: &Device) -> Result<(), DeviceError> {
    drain_device(device, &mut DeviceEvents::default())
}

/// Drains the host rings; timestamps are mapped onto TF's clock.
/// Returns false if another consumer holds the rings (nothing drained).
pub fn drain_host(clock: WallClock, out: &mut Vec<Event>, dropped: &mut u64) -> bool {
    let Some(mut consumer) = HOST_EVENTS.consumer() else {
        return false;
    };
    let mut chunk = [Event::default(); CHUNK];
    loop {
        let got = consumer.drain(&mut chunk);
        for event in &mut chunk[..got] {
            event.timestamp = clock.to_wall(event.timestamp);
        }
        push_bounded(out, dropped, &chunk[..got]);
        if got < CHUNK {
            break;
        }
    }
    true
}

/// Host records the rings have dropped since the process started (the
/// session takes the difference between stop and start).
pub fn host_drops_total() -> u64 {
    HOST_EVENTS
        .consumer()
        .map_or(0, |consumer| consumer.dropped() as u64)
}

fn push_bounded(out: &mut Vec<Event>, dropped: &mut u64, events: &[Event]) {
    let room = MAX_EVENTS.saturating_sub(out.len());
    let kept = events.len().min(room);
    out.extend_from_slice(&events[..kept]);
    *dropped = dropped.saturating_add((events.len() - kept) as u64);
}

/// The session's buffers, shared with the drainer thread.
pub type Shared = Arc<Mutex<Buffers>>;

/// Locks the buffers (a panic elsewhere does not wedge profiling).
pub fn lock(shared: &Shared) -> MutexGuard<'_, Buffers> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drains every device and the host rings once into `shared`. Device locks
/// and the buffer lock are never held together.
pub fn drain_all(devices: &[Arc<Device>], clock: WallClock, shared: &Shared) {
    for (index, device) in devices.iter().enumerate() {
        let mut fresh = DeviceEvents::default();
        let result = drain_device(device, &mut fresh);
        let mut buffers = lock(shared);
        if let Some(slot) = buffers.devices.get_mut(index) {
            slot.dropped = slot.dropped.saturating_add(fresh.dropped);
            let DeviceEvents { events, dropped } = slot;
            push_bounded(events, dropped, &fresh.events);
        }
        if let Err(error) = result {
            buffers
                .error
                .get_or_insert_with(|| format!("{}: {error}", device.core().label()));
        }
    }
    let mut host = Vec::new();
    let mut host_dropped = 0;
    drain_host(clock, &mut host, &mut host_dropped);
    let mut buffers = lock(shared);
    let Buffers {
        host: kept,
        host_dropped: kept_dropped,
        ..
    } = &mut *buffers;
    *kept_dropped = kept_dropped.saturating_add(host_dropped);
    push_bounded(kept, kept_dropped, &host);
}

/// The thread that drains the rings every [`DRAIN_PERIOD`] while a session runs.
pub struct Drainer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Drainer {
    /// Starts draining `devices` into `shared`. `None` if no thread could be
    /// spawned: `stop` then drains everything once (rings may have dropped).
    pub fn spawn(devices: Vec<Arc<Device>>, clock: WallClock, shared: Shared) -> Option<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tensorplug-profiler".into())
            .spawn(move || {
                let (flag, wake) = &*signal;
                let mut stopped = flag.lock().unwrap_or_else(PoisonError::into_inner);
                while !*stopped {
                    let (guard, _) = wake
                        .wait_timeout(stopped, DRAIN_PERIOD)
                        .unwrap_or_else(PoisonError::into_inner);
                    stopped = guard;
                    if *stopped {
                        break;
                    }
                    drop(stopped);
                    drain_all(&devices, clock, &shared);
                    stopped = flag.lock().unwrap_or_else(PoisonError::into_inner);
                }
            })
            .ok()?;
        Some(Self {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it (its last drain finishes first).
    pub fn stop(mut self) {
        self.signal_and_join();
    }

    fn signal_and_join(&mut self) {
        let (flag, wake) = &*self.stop;
        *flag.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Drainer {
    fn drop(&mut self) {
        self.signal_and_join();
    }
}
