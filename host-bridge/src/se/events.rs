//! Events: a recorded event stands for the recording stream's newest fence.

use super::handles;
use crate::error::{Error, Result};
use crate::ffi;
use crate::host_spans::{HostSpan, SpanKind};
use crate::registry::Device;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tensorplug_abi::tf::*;
use tensorplug_core::accelerator::{Fence, QueueId};

/// What an event stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventState {
    /// Never recorded: complete (as a CUDA event is).
    #[default]
    Unrecorded,
    /// Recorded on `queue`; complete once `fence` is (at once when `None`:
    /// the stream had no work).
    Recorded {
        /// The recording stream's queue.
        queue: QueueId,
        /// The stream's newest fence at record time.
        fence: Option<Fence>,
    },
}

/// The object behind an `SP_Event`: what it stands for, and since when
/// a status poll has found its work pending.
#[derive(Debug, Default)]
pub struct Event(Mutex<(EventState, Option<Instant>)>);

impl Event {
    fn get(&self) -> EventState {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).0
    }

    fn set(&self, state: EventState) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = (state, None);
    }

    /// How long status polls have found the work pending, this one included.
    fn pending_for(&self) -> Duration {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        guard.1.get_or_insert_with(Instant::now).elapsed()
    }

    /// Non-blocking status. Failed work, and work pending for longer than
    /// the wait budget (it times out as a wait does: the device is reset
    /// and the incident recorded), counts as complete (logged):
    /// TF's event manager aborts the process on `SE_EVENT_ERROR`. A device
    /// fault or a refused op is recorded by the poll that saw it and
    /// reported, naming its op, by the copy or sync that waits for that
    /// work; a link's failure (a frame damaged or lost) is reported by the
    /// next wait ([`DeviceCore::defer`](crate::registry::DeviceCore::defer)).
    pub fn status(&self, device: &Device) -> Result<SE_EventStatus> {
        let EventState::Recorded {
            fence: Some(fence), ..
        } = self.get()
        else {
            return Ok(SE_EventStatus::SE_EVENT_COMPLETE);
        };
        let core = device.core();
        match core.poll(fence) {
            // Pending only as long as a wait would be (a device that
            // stopped answering, a frozen MCU whose link's polls do not
            // fail, would keep TF polling forever): within the budget, and
            // not at all within a failed reset's.
            Ok(false) => {
                let what = "an event's work";
                let error = match core.fail_fast(fence, what) {
                    Some(error) => error,
                    None if self.pending_for() < core.timeout() => {
                        return Ok(SE_EventStatus::SE_EVENT_PENDING);
                    }
                    None => core.timed_out(fence, what),
                };
                crate::log::warn(format_args!("an event's work failed: {error}"));
                Ok(SE_EventStatus::SE_EVENT_COMPLETE)
            }
            Ok(true) => Ok(SE_EventStatus::SE_EVENT_COMPLETE),
            Err(error) => {
                crate::log::warn(format_args!("an event's work failed: {error}"));
                device.core().defer(&error);
                Ok(SE_EventStatus::SE_EVENT_COMPLETE)
            }
        }
    }
}

/// # Safety
/// `event` is null or came from `create_event` and is not destroyed.
unsafe fn event<'a>(event: SP_Event) -> Result<&'a Event> {
    // SAFETY: caller's contract.
    unsafe { event.cast::<Event>().as_ref() }
        .ok_or_else(|| Error::InvalidArgument("TensorFlow passed a null SP_Event".into()))
}

pub(super) unsafe extern "C" fn create_event(
    device: *const SP_Device,
    event: *mut SP_Event,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device and out-parameter.
        let device = unsafe { handles::device(device) }?;
        let out = unsafe { event.as_mut() }
            .ok_or_else(|| Error::InvalidArgument("null SP_Event* out-parameter".into()))?;
        let raw = Box::into_raw(Box::new(Event::default()));
        device.adopt_handle(raw as usize);
        *out = raw.cast();
        Ok(())
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_event", body) }
}

pub(super) unsafe extern "C" fn destroy_event(device: *const SP_Device, event: SP_Event) {
    ffi::swallow("destroy_event", (), || {
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        if !event.is_null() && device.release_handle(event as usize) {
            // SAFETY: boxed by `create_event`, released exactly once.
            drop(unsafe { Box::from_raw(event.cast::<Event>()) });
        }
        Ok(())
    })
}

/// On a plugin error (a bad handle, a panic) the answer is "complete",
/// logged, like failed work: `SE_EVENT_ERROR` aborts TF, `PENDING` would
/// make it poll forever, and "complete" is safe here because every host
/// buffer access ends before its enqueue returns (both copy paths are
/// synchronous) and device work stays ordered by the queues.
pub(super) unsafe extern "C" fn get_event_status(
    device: *const SP_Device,
    event: SP_Event,
) -> SE_EventStatus {
    ffi::swallow(
        "get_event_status",
        SE_EventStatus::SE_EVENT_COMPLETE,
        || {
            // SAFETY: TF's device and event.
            let device = unsafe { handles::device(device) }?;
            unsafe { self::event(event) }?.status(device)
        },
    )
}

pub(super) unsafe extern "C" fn record_event(
    device: *const SP_Device,
    stream: SP_Stream,
    event: SP_Event,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device, stream and event.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        stream.status()?;
        unsafe { self::event(event) }?.set(EventState::Recorded {
            queue: stream.queue(),
            fence: stream.last_fence(),
        });
        Ok(())
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "record_event", body) }
}

pub(super) unsafe extern "C" fn wait_for_event(
    device: *const SP_Device,
    stream: SP_Stream,
    event: SP_Event,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device, stream and event.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        match unsafe { self::event(event) }?.get() {
            EventState::Recorded {
                queue,
                fence: Some(fence),
            } => {
                let _span = HostSpan::begin(SpanKind::Sync, device.ordinal(), 0);
                stream.wait_for(queue, fence)
            }
            _ => Ok(()),
        }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "wait_for_event", body) }
}

pub(super) unsafe extern "C" fn block_host_for_event(
    device: *const SP_Device,
    event: SP_Event,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device and event.
        let device = unsafe { handles::device(device) }?;
        match unsafe { self::event(event) }?.get() {
            EventState::Recorded {
                fence: Some(fence), ..
            } => {
                let _span = HostSpan::begin(SpanKind::Sync, device.ordinal(), 0);
                device.core().wait(fence, "the event")
            }
            _ => Ok(()),
        }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "block_host_for_event", body) }
}
