//! Turning TF's pointers back into bridge objects, with clear errors for
//! null or foreign handles.

use crate::error::{Error, Result};
use crate::registry::{Device, Stream};
use std::ffi::c_void;
use std::sync::Arc;
use tensorplug_abi::tf::{SP_Device, SP_DeviceMemoryBase, SP_Stream, VersionedRef};
use tensorplug_abi::tf_field;

/// The bridge's [`Stream`] behind an `SP_Stream` (for kernels: `TF_GetStream`).
///
/// # Safety
/// `stream` is null or was returned by our `create_stream` and not destroyed.
pub unsafe fn stream_from_raw<'a>(stream: SP_Stream) -> Option<&'a Stream> {
    // SAFETY: caller's contract: `create_stream` boxed a `Stream` there.
    unsafe { stream.cast::<Stream>().as_ref() }
}

/// The [`Device`] behind TF's `SP_Device` (its `device_handle`).
///
/// # Safety
/// `device` is null or an `SP_Device` that `create_device` filled and
/// `destroy_device` has not yet destroyed.
pub unsafe fn device<'a>(device: *const SP_Device) -> Result<&'a Device> {
    // SAFETY: caller's contract; TF shares the struct, we only read it.
    let view = unsafe { VersionedRef::from_ptr(device) }.map_err(|e| Error::Abi(e.to_string()))?;
    let handle = view
        .require(tf_field!(SP_Device, device_handle))
        .map_err(|e| Error::Abi(e.to_string()))?;
    if handle.is_null() {
        return Err(Error::InvalidArgument(
            "the SP_Device has no device handle (destroyed, or not created by tensorplug)".into(),
        ));
    }
    // SAFETY: `create_device` stored `Arc::into_raw`; the Arc lives until
    // `destroy_device`, which the caller's contract excludes.
    Ok(unsafe { &*handle.cast_const().cast::<Device>() })
}

/// A new reference to the device, for objects that may outlive the call.
///
/// # Safety
/// As [`device`].
pub unsafe fn device_arc(device: *const SP_Device) -> Result<Arc<Device>> {
    // SAFETY: caller's contract.
    let shared: &Device = unsafe { self::device(device) }?;
    let raw: *const Device = shared;
    // SAFETY: `raw` came from `Arc::into_raw` and that reference is alive.
    unsafe {
        Arc::increment_strong_count(raw);
        Ok(Arc::from_raw(raw))
    }
}

/// The [`Stream`] behind TF's `SP_Stream`, on whichever of our devices.
///
/// # Safety
/// `stream` is null or came from `create_stream` and is not destroyed.
pub unsafe fn any_stream<'a>(stream: SP_Stream) -> Result<&'a Stream> {
    // SAFETY: caller's contract: `create_stream` boxed a `Stream` there.
    unsafe { stream_from_raw(stream) }
        .ok_or_else(|| Error::InvalidArgument("TensorFlow passed a null SP_Stream".into()))
}

/// The [`Stream`] behind TF's `SP_Stream`; checks it belongs to `device`.
///
/// # Safety
/// `stream` is null or came from `create_stream` and is not destroyed.
pub unsafe fn stream<'a>(device: &Device, stream: SP_Stream) -> Result<&'a Stream> {
    // SAFETY: caller's contract: `create_stream` boxed a `Stream` there.
    let stream = unsafe { stream_from_raw(stream) }
        .ok_or_else(|| Error::InvalidArgument("TensorFlow passed a null SP_Stream".into()))?;
    if !std::ptr::eq(stream.device().as_ref(), device) {
        return Err(Error::InvalidArgument(format!(
            "the stream belongs to {}, not {}",
            stream.device().core().label(),
            device.core().label()
        )));
    }
    Ok(stream)
}

/// The `opaque` pointer of TF's `SP_DeviceMemoryBase`.
///
/// # Safety
/// `memory` is null or a valid `SP_DeviceMemoryBase` TF owns.
pub unsafe fn memory_opaque(memory: *const SP_DeviceMemoryBase, what: &str) -> Result<*mut c_void> {
    // SAFETY: caller's contract; TF shares the struct, we only read it.
    let view = unsafe { VersionedRef::from_ptr(memory) }
        .map_err(|e| Error::InvalidArgument(format!("{what}: {e}")))?;
    view.require(tf_field!(SP_DeviceMemoryBase, opaque))
        .map_err(|e| Error::Abi(e.to_string()))
}

/// `size` converted to `usize`.
pub fn byte_len(size: u64) -> Result<usize> {
    usize::try_from(size)
        .map_err(|_| Error::InvalidArgument(format!("{size} bytes do not fit this host")))
}
