//! Timers: `start_timer`/`stop_timer` stamp the host clock on the completion
//! thread when the stream's earlier work has completed, so the interval is
//! the device time of the work between them as the host observes it.

use super::handles;
use crate::error::{Error, Result};
use crate::ffi;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tensorplug_abi::tf::*;

/// The two stamps of a timer.
#[derive(Debug, Default)]
pub struct TimerState {
    stamps: Mutex<(Option<Instant>, Option<Instant>)>,
    stamped: Condvar,
}

/// The object behind an `SP_Timer`.
#[derive(Debug)]
pub struct Timer {
    state: Arc<TimerState>,
    timeout: Duration,
}

impl Timer {
    fn stamp(state: &TimerState, stop: bool) {
        let mut stamps = state.stamps.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Some(Instant::now());
        if stop {
            stamps.1 = now
        } else {
            *stamps = (now, None)
        }
        state.stamped.notify_all();
    }

    /// Nanoseconds between the stamps, waiting (bounded) for the stop stamp.
    pub fn nanoseconds(&self) -> Result<u64> {
        let stamps = self
            .state
            .stamps
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (stamps, _) = self
            .state
            .stamped
            .wait_timeout_while(stamps, self.timeout, |s| s.0.is_none() || s.1.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        match *stamps {
            (Some(start), Some(stop)) => Ok(u64::try_from(
                stop.saturating_duration_since(start).as_nanos(),
            )
            .unwrap_or(u64::MAX)),
            _ => Err(Error::InvalidArgument(
                "the timer was not started and stopped".into(),
            )),
        }
    }
}

/// Our `SP_TimerFns`.
pub fn timer_fns() -> SP_TimerFns {
    SP_TimerFns {
        nanoseconds: Some(nanoseconds),
        ..SP_TimerFns::new()
    }
}

unsafe extern "C" fn nanoseconds(timer: SP_Timer) -> u64 {
    ffi::swallow("timer nanoseconds", 0, || {
        // SAFETY: TF passes a live timer from `create_timer`.
        unsafe { timer.cast::<Timer>().as_ref() }
            .ok_or_else(|| Error::InvalidArgument("null SP_Timer".into()))?
            .nanoseconds()
    })
}

pub(super) unsafe extern "C" fn create_timer(
    device: *const SP_Device,
    timer: *mut SP_Timer,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device and out-parameter.
        let device = unsafe { handles::device(device) }?;
        let out = unsafe { timer.as_mut() }
            .ok_or_else(|| Error::InvalidArgument("null SP_Timer* out-parameter".into()))?;
        let raw = Box::into_raw(Box::new(Timer {
            state: Arc::default(),
            timeout: device.core().timeout(),
        }));
        device.adopt_handle(raw as usize);
        *out = raw.cast();
        Ok(())
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_timer", body) }
}

pub(super) unsafe extern "C" fn destroy_timer(device: *const SP_Device, timer: SP_Timer) {
    ffi::swallow("destroy_timer", (), || {
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        if !timer.is_null() && device.release_handle(timer as usize) {
            // SAFETY: boxed by `create_timer`, released once; pending stamps hold their own Arc.
            drop(unsafe { Box::from_raw(timer.cast::<Timer>()) });
        }
        Ok(())
    })
}

/// # Safety
/// TF's arguments.
unsafe fn stamp_after_stream(
    device: *const SP_Device,
    stream: SP_Stream,
    timer: SP_Timer,
    stop: bool,
) -> Result<()> {
    // SAFETY: caller's contract.
    let device = unsafe { handles::device(device) }?;
    let stream = unsafe { handles::stream(device, stream) }?;
    let timer = unsafe { timer.cast::<Timer>().as_ref() }
        .ok_or_else(|| Error::InvalidArgument("null SP_Timer".into()))?;
    let state = timer.state.clone();
    stream.then_host(move |_| Timer::stamp(&state, stop));
    Ok(())
}

pub(super) unsafe extern "C" fn start_timer(
    device: *const SP_Device,
    stream: SP_Stream,
    timer: SP_Timer,
    status: *mut TF_Status,
) {
    // SAFETY: TF's arguments and status.
    unsafe {
        ffi::with_status(status, "start_timer", || {
            stamp_after_stream(device, stream, timer, false)
        })
    }
}

pub(super) unsafe extern "C" fn stop_timer(
    device: *const SP_Device,
    stream: SP_Stream,
    timer: SP_Timer,
    status: *mut TF_Status,
) {
    // SAFETY: TF's arguments and status.
    unsafe {
        ffi::with_status(status, "stop_timer", || {
            stamp_after_stream(device, stream, timer, true)
        })
    }
}
