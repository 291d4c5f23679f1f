//! The plugin profiler's process-wide state: `start`, `stop` and the two
//! `collect` calls on top of `tensorplug_core::session::Session`.

use super::capture::{self, Buffers, DeviceEvents, Drainer, Shared};
use super::clock::{WallClock, sync_pair};
use super::collect::{Collection, PlaneData};
use super::ops;
use crate::error::{Error, Result};
use crate::host_spans::{RECORDING, device_byte};
use crate::registry::{self, Device};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tensorplug_core::clock::SyncPair;
use tensorplug_core::event::Event;

/// How long a profiler stop waits for each device to finish the work
/// launched so far, so that its ops are in the profile.
pub const STOP_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);
use tensorplug_core::session::{DeviceSync, Session, SessionError};

/// Devices one session can hold.
pub const MAX_DEVICES: usize = 16;

/// Whether setting `PROFILER` (`TENSORPLUG_PROFILER`, read at every
/// `start`) lets sessions trace the devices: off traces none (TF's own
/// profiler still runs); unset or on traces every device that declares
/// profiling.
fn device_tracing_on() -> Result<bool> {
    crate::settings::flag(crate::settings::PROFILER, true)
}

/// A running or stopped session's resources.
struct Active {
    clock: WallClock,
    start_ns: u64,
    devices: Vec<Arc<Device>>,
    shared: Shared,
    drainer: Option<Drainer>,
    host_drops_at_start: u64,
}

/// The profiler's state.
#[derive(Default)]
pub struct Profiler {
    session: Session<MAX_DEVICES>,
    active: Option<Active>,
    /// Planned between TF's size call and its buffer call.
    collected: Option<Collection>,
}

static PROFILER: Mutex<Option<Profiler>> = Mutex::new(None);

/// Runs `f` on the process's profiler (TF calls from one thread, but the
/// lock makes any interleaving safe).
pub fn with_profiler<T>(f: impl FnOnce(&mut Profiler) -> T) -> T {
    let mut guard: MutexGuard<'_, Option<Profiler>> =
        PROFILER.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(Profiler::default))
}

fn session_error(error: SessionError) -> Error {
    Error::InvalidArgument(format!("profiler: {error}"))
}

impl Profiler {
    /// Starts a session on every open device that declares profiling (none,
    /// or `TENSORPLUG_PROFILER=off`: an empty session, collected as 0 bytes).
    pub fn start(&mut self) -> Result<()> {
        let devices = if device_tracing_on()? {
            registry::devices()
                .iter()
                .filter(|device| device.info().capabilities.profiling)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        self.start_on(devices)
    }

    /// Starts a session on `devices`.
    pub fn start_on(&mut self, devices: Vec<Arc<Device>>) -> Result<()> {
        if self.session.is_running() {
            return Err(session_error(SessionError::AlreadyRunning));
        }
        if devices.len() > MAX_DEVICES {
            return Err(session_error(SessionError::TooManyDevices));
        }
        // A new session forgets an uncollected one.
        self.collected = None;
        self.active = None;
        ops::reset_table();
        let clock = WallClock::now();
        let mut discard = Vec::new();
        capture::drain_host(clock, &mut discard, &mut 0);
        drop(discard);
        let host_drops_at_start = capture::host_drops_total();
        let start_ns = clock.wall_now();

        let mut syncs = Vec::with_capacity(devices.len());
        for (index, device) in devices.iter().enumerate() {
            match arm_device(device, clock) {
                Ok(pair) => syncs.push(DeviceSync {
                    pair,
                    frequency_hz: device.info().clock_hz,
                }),
                Err(error) => {
                    disarm(&devices[..index]);
                    return Err(error);
                }
            }
        }
        if let Err(error) = self.session.start(start_ns, &syncs) {
            disarm(&devices);
            return Err(session_error(error));
        }
        let shared: Shared = Arc::new(Mutex::new(Buffers {
            devices: devices.iter().map(|_| DeviceEvents::default()).collect(),
            ..Buffers::default()
        }));
        // Without devices there is nothing to record or drain.
        let drainer = if devices.is_empty() {
            None
        } else {
            RECORDING.enable();
            Drainer::spawn(devices.clone(), clock, shared.clone())
        };
        self.active = Some(Active {
            clock,
            start_ns,
            devices,
            shared,
            drainer,
            host_drops_at_start,
        });
        Ok(())
    }

    /// Stops recording (after the devices finish what the session launched,
    /// up to [`STOP_SETTLE`]), takes the stop sync pairs and drains what is
    /// left.
    pub fn stop(&mut self) -> Result<()> {
        if !self.session.is_running() {
            return Err(session_error(SessionError::NotStarted));
        }
        let Some(active) = self.active.as_mut() else {
            return Err(Error::Internal("profiler session without resources".into()));
        };
        // Ops launched in the session finish in it, as on a device whose
        // clock and events keep up (the tests' `fn()` without `.numpy()`).
        for device in &active.devices {
            if !device.core().settle(STOP_SETTLE) {
                crate::log::warn(format_args!(
                    "profiler stop: {} still busy after {} ms; ops still running are not in the profile",
                    device.core().label(),
                    STOP_SETTLE.as_millis()
                ));
            }
        }
        RECORDING.disable();
        if let Some(drainer) = active.drainer.take() {
            drainer.stop();
        }
        let mut pairs: Vec<SyncPair> = Vec::with_capacity(active.devices.len());
        let mut first_error = None;
        for device in &active.devices {
            let mut core = device.core().lock();
            let accel = core.accel();
            let _ = accel.set_profiling(false);
            // Pairs are positional: after a failed read, this and later
            // devices keep their nominal rate.
            let pair = sync_pair(active.clock, accel);
            match pair {
                Ok(pair) if first_error.is_none() => pairs.push(pair),
                Ok(_) => {}
                Err(error) => {
                    first_error.get_or_insert(device.core().error(error));
                }
            }
        }
        capture::drain_all(&active.devices, active.clock, &active.shared);
        let host_drops = capture::host_drops_total().saturating_sub(active.host_drops_at_start);
        capture::lock(&active.shared).host_dropped += host_drops;
        let stop_ns = active.clock.wall_now();
        self.session.stop(stop_ns, &pairs).map_err(session_error)?;
        if let Some(error) = first_error {
            crate::log::error(format_args!(
                "profiler stop: {error}; that device's clock uses its nominal rate"
            ));
        }
        Ok(())
    }

    /// TF's size call: plans the XSpace of the stopped session (once) and
    /// returns its size. Zero means nothing to send; state is released then.
    pub fn collect_size(&mut self) -> Result<usize> {
        if self.collected.is_none() {
            self.collected = Some(self.take_collection()?);
        }
        let size = self.collected.as_ref().map_or(0, |c| c.encoded_len);
        if size == 0 {
            // Nothing to send: keep only an empty marker (no heap) so a
            // buffer call, if TF makes one, answers 0 bytes too.
            self.collected = Some(Collection::new(0, Vec::new(), Vec::new()));
        }
        Ok(size)
    }

    /// TF's buffer call: encodes into `buffer` and releases everything.
    pub fn collect_into(&mut self, buffer: &mut [u8]) -> Result<usize> {
        let collection = match self.collected.take() {
            Some(collection) => collection,
            None => self.take_collection()?,
        };
        collection.encode_into(buffer)
    }

    /// Whether a session is running (tests).
    #[cfg(test)]
    pub fn is_running(&self) -> bool {
        self.session.is_running()
    }

    fn take_collection(&mut self) -> Result<Collection> {
        let window = self.session.collect().map_err(session_error)?;
        let Some(active) = self.active.take() else {
            return Err(Error::Internal("profiler session without resources".into()));
        };
        let buffers = std::mem::take(&mut *capture::lock(&active.shared));
        if let Some(error) = &buffers.error {
            crate::log::error(format_args!("profiler: draining events failed: {error}"));
        }
        let ordinals: Vec<i32> = active.devices.iter().map(|d| d.ordinal()).collect();
        let mut host = split_host_events(&ordinals, buffers.host).into_iter();
        // Host ring drops cannot be attributed: the first plane reports them.
        let mut dropped_host = Some(buffers.host_dropped);
        let planes = active
            .devices
            .iter()
            .zip(buffers.devices)
            .zip(window.clocks)
            .map(|((device, events), clock)| PlaneData {
                ordinal: crate::identity::plane_base()
                    + u32::try_from(device.ordinal()).unwrap_or(0),
                clock,
                device_events: events.events,
                host_events: host.next().unwrap_or_default(),
                dropped_device: events.dropped,
                dropped_host: dropped_host.take().unwrap_or(0),
            })
            .collect();
        Ok(Collection::new(active.start_ns, ops::take_table(), planes))
    }
}

/// Host spans per session device (in `ordinals` order), by the device byte
/// in their `queue` field ([`device_byte`]). Spans of a device outside the
/// session go with the first device, so nothing recorded is lost.
fn split_host_events(ordinals: &[i32], host: Vec<Event>) -> Vec<Vec<Event>> {
    let mut per_device = vec![Vec::new(); ordinals.len()];
    for event in host {
        let index = ordinals
            .iter()
            .position(|&o| device_byte(o) == event.queue)
            .unwrap_or(0);
        if let Some(slot) = per_device.get_mut(index) {
            slot.push(event);
        }
    }
    per_device
}

/// Discards stale events, takes the start sync pair and turns the device's
/// event recording on, under one hold of its lock.
fn arm_device(device: &Device, clock: WallClock) -> Result<SyncPair> {
    capture::discard_device(device).map_err(|e| device.core().error(e))?;
    let mut core = device.core().lock();
    let accel = core.accel();
    let pair = sync_pair(clock, accel).map_err(|e| device.core().error(e))?;
    accel
        .set_profiling(true)
        .map_err(|e| device.core().error(e))?;
    Ok(pair)
}

/// Turns recording back off on devices armed before a failed start.
fn disarm(devices: &[Arc<Device>]) {
    for device in devices {
        let _ = device.core().lock().accel().set_profiling(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_core::event::EventKind;

    fn span(device: u8, id: u16) -> Event {
        Event::new(EventKind::HostLaunchBegin, u64::from(id), device, id, 0)
    }

    #[test]
    fn host_spans_go_to_their_devices_plane_and_strays_to_the_first() {
        // Session devices with TF ordinals 1 and 0 (plane order != ordinal).
        let host = vec![span(0, 1), span(1, 2), span(0, 3), span(7, 4), span(255, 5)];
        let split = split_host_events(&[1, 0], host);
        let ids = |plane: &Vec<Event>| plane.iter().map(|e| e.op_id).collect::<Vec<_>>();
        assert_eq!(
            ids(&split[0]),
            [2, 4, 5],
            "ordinal 1, plus spans of no session device"
        );
        assert_eq!(ids(&split[1]), [1, 3], "ordinal 0");
        assert!(split_host_events(&[], vec![span(0, 1)]).is_empty());
    }
}
