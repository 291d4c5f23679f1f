//! Streams, stream dependencies, host callbacks and synchronisation.

use super::handles;
use crate::error::{Error, Result};
use crate::ffi::{self, tf_api::OwnedStatus};
use crate::host_spans::{HostSpan, SpanKind};
use crate::log;
use crate::registry::Stream;
use std::ffi::c_void;
use tensorplug_abi::tf::*;

pub(super) unsafe extern "C" fn create_stream(
    device: *const SP_Device,
    stream: *mut SP_Stream,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device.
        let device = unsafe { handles::device_arc(device) }?;
        let out = unsafe { stream.as_mut() }
            .ok_or_else(|| Error::InvalidArgument("null SP_Stream* out-parameter".into()))?;
        let raw = Box::into_raw(Box::new(Stream::new(device.clone())));
        device.adopt_handle(raw as usize);
        *out = raw.cast();
        Ok(())
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_stream", body) }
}

pub(super) unsafe extern "C" fn destroy_stream(device: *const SP_Device, stream: SP_Stream) {
    ffi::swallow("destroy_stream", (), || {
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        // Only a live handle is freed: a second destroy is a no-op.
        if !stream.is_null() && device.release_handle(stream as usize) {
            // SAFETY: boxed by `create_stream`, released exactly once.
            drop(unsafe { Box::from_raw(stream.cast::<Stream>()) });
        }
        Ok(())
    })
}

pub(super) unsafe extern "C" fn create_stream_dependency(
    device: *const SP_Device,
    dependent: SP_Stream,
    other: SP_Stream,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device and streams.
        let device = unsafe { handles::device(device) }?;
        let dependent = unsafe { handles::stream(device, dependent) }?;
        // `other` may be a stream of another of our devices (TF's copies
        // between MirroredStrategy replicas): the host waits for it.
        let other = unsafe { handles::any_stream(other) }?;
        let _span = HostSpan::begin(SpanKind::Sync, device.ordinal(), 0);
        match other.last_fence() {
            Some(fence) if std::ptr::eq(other.device().as_ref(), device) => {
                dependent.wait_for(other.queue(), fence)
            }
            Some(fence) => dependent.record(
                other
                    .device()
                    .core()
                    .wait(fence, "work on another device this stream depends on"),
            ),
            None => Ok(()),
        }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_stream_dependency", body) }
}

pub(super) unsafe extern "C" fn get_stream_status(
    device: *const SP_Device,
    stream: SP_Stream,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device and stream.
        let device = unsafe { handles::device(device) }?;
        unsafe { handles::stream(device, stream) }?.status()
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "get_stream_status", body) }
}

pub(super) unsafe extern "C" fn block_host_until_done(
    device: *const SP_Device,
    stream: SP_Stream,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device and stream.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        let _span = HostSpan::begin(SpanKind::Sync, device.ordinal(), 0);
        stream.block_until_done()
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "block_host_until_done", body) }
}

pub(super) unsafe extern "C" fn synchronize_all_activity(
    device: *const SP_Device,
    status: *mut TF_Status,
) {
    let body = || {
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        let _span = HostSpan::begin(SpanKind::Sync, device.ordinal(), 0);
        match device.synchronize_all() {
            // TF replaces a failed sync's message with "PluggableDevice
            // SyncAll failed."; the failed op is reported, by name, by the
            // device-to-host copy of its result (`copies::memcpy_dtoh`).
            Err(error) if device.core().is_op_incident(&error) => {
                crate::log::warn(format_args!(
                    "synchronize_all_activity: {error} (reported where its results are read)"
                ));
                Ok(())
            }
            outcome => outcome,
        }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "synchronize_all_activity", body) }
}

/// TF's callback and its argument, moved to the completion thread.
struct HostCallback {
    function: unsafe extern "C" fn(*mut c_void, *mut TF_Status),
    arg: *mut c_void,
}

// SAFETY: TF's host callbacks may run on any thread (they do on GPU too).
unsafe impl Send for HostCallback {}

impl HostCallback {
    /// Calls TF's callback once with a fresh status; logs what it reports.
    fn call(self, label: &str, earlier: Result<()>) {
        if let Err(error) = &earlier {
            log::error(format_args!(
                "{label}: work before a host callback failed: {error}; running the callback anyway"
            ));
        }
        match OwnedStatus::new() {
            Ok(status) => {
                // SAFETY: TF's function and argument, called once, as TF expects.
                unsafe { (self.function)(self.arg, status.as_ptr()) };
                if let Err((code, message)) = status.to_result() {
                    log::warn(format_args!(
                        "{label}: host callback returned {code:?}: {message}"
                    ));
                }
            }
            Err(error) => log::error(format_args!("{label}: cannot run a host callback: {error}")),
        }
    }
}

pub(super) unsafe extern "C" fn host_callback(
    device: *const SP_Device,
    stream: SP_Stream,
    callback_fn: SE_StatusCallbackFn,
    callback_arg: *mut c_void,
) -> TF_Bool {
    ffi::swallow("host_callback", 0, || {
        // SAFETY: TF's device and stream.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        let function = callback_fn
            .ok_or_else(|| Error::InvalidArgument("null host callback function".into()))?;
        let callback = HostCallback {
            function,
            arg: callback_arg,
        };
        let label = device.core().label().to_owned();
        stream.then_host(move |earlier| callback.call(&label, earlier));
        Ok(1)
    })
}
