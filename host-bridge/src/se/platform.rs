//! `SP_Platform` and the `SP_PlatformFns` callbacks: device count, devices,
//! device fns, stream executors, timer fns.

use crate::backend::{self, Names};
use crate::error::{Error, Result};
use crate::{ffi, registry};
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use tensorplug_abi::tf::*;
use tensorplug_abi::{tf_field, validate};

/// Our `SP_Platform` under the claimed `names`: BFC allocator over our
/// allocations, with memory growth (TF asks for device memory as it needs
/// it), no unified memory.
pub fn platform(names: &Names) -> SP_Platform {
    SP_Platform {
        name: names.platform_name.as_ptr(),
        r#type: names.device_type.as_ptr(),
        supports_unified_memory: 0,
        use_bfc_allocator: 1,
        force_memory_growth: 1,
        ..SP_Platform::new()
    }
}

/// Our `SP_PlatformFns`.
pub fn platform_fns() -> SP_PlatformFns {
    SP_PlatformFns {
        get_device_count: Some(get_device_count),
        create_device: Some(create_device),
        destroy_device: Some(destroy_device),
        create_device_fns: Some(create_device_fns),
        destroy_device_fns: Some(destroy_device_fns),
        create_stream_executor: Some(create_stream_executor),
        destroy_stream_executor: Some(destroy_stream_executor),
        create_timer_fns: Some(create_timer_fns),
        destroy_timer_fns: Some(destroy_timer_fns),
        ..SP_PlatformFns::new()
    }
}

pub(super) unsafe extern "C" fn destroy_platform(_platform: *mut SP_Platform) {
    // The platform's strings are static: nothing to free.
}

pub(super) unsafe extern "C" fn destroy_platform_fns(_fns: *mut SP_PlatformFns) {}

unsafe extern "C" fn get_device_count(
    _platform: *const SP_Platform,
    count: *mut c_int,
    status: *mut TF_Status,
) {
    let body = || {
        let n = c_int::try_from(registry::devices().len())
            .map_err(|_| Error::Internal("device count overflows int".into()))?;
        // SAFETY: TF passes a writable int.
        unsafe { count.as_mut() }
            .ok_or_else(|| Error::InvalidArgument("null device_count".into()))
            .map(|out| *out = n)
    };
    // SAFETY: TF's live status.
    unsafe { ffi::with_status(status, "get_device_count", body) }
}

unsafe extern "C" fn create_device(
    _platform: *const SP_Platform,
    params: *mut SE_CreateDeviceParams,
    status: *mut TF_Status,
) {
    // SAFETY: TF's params and status.
    unsafe { ffi::with_status(status, "create_device", || fill_device(params)) }
}

/// Fills TF's `SP_Device` for `params.ordinal` (`device_handle` holds one
/// strong reference to our [`Device`](registry::Device)).
///
/// # Safety
/// `params` is null or TF's `SE_CreateDeviceParams` with a valid `device`.
pub unsafe fn fill_device(params: *mut SE_CreateDeviceParams) -> Result<()> {
    // SAFETY: caller's contract.
    let view = unsafe { Versioned::from_raw(params) }.map_err(Error::abi)?;
    let ordinal = view
        .require(tf_field!(SE_CreateDeviceParams, ordinal))
        .map_err(Error::abi)?;
    let out = view
        .require(tf_field!(SE_CreateDeviceParams, device))
        .map_err(Error::abi)?;
    let device = registry::device(ordinal).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "no {} device with ordinal {ordinal} ({} open; TENSORPLUG_DEVICE lists them)",
            backend::device_type(),
            registry::devices().len()
        ))
    })?;
    // SAFETY: TF's SP_Device, valid for its struct_size.
    let mut sp_device = unsafe { Versioned::from_raw(out) }.map_err(Error::abi)?;
    let filled = SP_Device {
        ordinal,
        device_handle: Arc::into_raw(device.clone()).cast_mut().cast::<c_void>(),
        hardware_name: device.hardware_name().as_ptr(),
        device_vendor: backend::installed()
            .map_or(c"tensorplug", |plugin| plugin.vendor)
            .as_ptr(),
        pci_bus_id: std::ptr::null(),
        ..SP_Device::new()
    };
    if !sp_device.covers(tf_field!(SP_Device, device_handle)) {
        // SAFETY: undo the reference we just took.
        drop(unsafe {
            Arc::from_raw(filled.device_handle.cast_const().cast::<registry::Device>())
        });
        return Err(Error::abi("TF's SP_Device has no device_handle field"));
    }
    sp_device.write_covered(&filled);
    Ok(())
}

unsafe extern "C" fn destroy_device(_platform: *const SP_Platform, device: *mut SP_Device) {
    ffi::swallow("destroy_device", (), || {
        // SAFETY: TF's SP_Device.
        let mut view = unsafe { Versioned::from_raw(device) }.map_err(Error::abi)?;
        let field = tf_field!(SP_Device, device_handle);
        let handle = view.require(field).map_err(Error::abi)?;
        if !handle.is_null() {
            // Null first: a second destroy sees nothing to release.
            view.set(field, std::ptr::null_mut()).map_err(Error::abi)?;
            // SAFETY: `fill_device` stored `Arc::into_raw` here.
            drop(unsafe { Arc::from_raw(handle.cast_const().cast::<registry::Device>()) });
        }
        Ok(())
    })
}

unsafe extern "C" fn get_numa_node(_device: *const SP_Device) -> i32 {
    -1
}

/// Our `SP_DeviceFns`: no NUMA affinity; bandwidth and GFLOPS unknown
/// (`DeviceInfo` does not report them yet), so left unset.
pub fn device_fns() -> SP_DeviceFns {
    SP_DeviceFns {
        get_numa_node: Some(get_numa_node),
        ..SP_DeviceFns::new()
    }
}

unsafe extern "C" fn create_device_fns(
    _platform: *const SP_Platform,
    params: *mut SE_CreateDeviceFnsParams,
    status: *mut TF_Status,
) {
    let body = || {
        let ours = device_fns();
        validate::sp_device_fns(&ours).map_err(Error::abi)?;
        // SAFETY: TF's params.
        let view = unsafe { Versioned::from_raw(params) }.map_err(Error::abi)?;
        let out = view
            .require(tf_field!(SE_CreateDeviceFnsParams, device_fns))
            .map_err(Error::abi)?;
        // SAFETY: TF's SP_DeviceFns.
        unsafe { crate::ffi::write_tf_struct(out, &ours) }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_device_fns", body) }
}

unsafe extern "C" fn destroy_device_fns(_platform: *const SP_Platform, _fns: *mut SP_DeviceFns) {}

unsafe extern "C" fn create_stream_executor(
    _platform: *const SP_Platform,
    params: *mut SE_CreateStreamExecutorParams,
    status: *mut TF_Status,
) {
    let body = || {
        let ours = super::executor::stream_executor();
        let names = backend::names()
            .ok_or_else(|| Error::Internal("stream executor before SE_InitPlugin".into()))?;
        validate::sp_stream_executor(&ours, &platform(names)).map_err(Error::abi)?;
        // SAFETY: TF's params.
        let view = unsafe { Versioned::from_raw(params) }.map_err(Error::abi)?;
        let out = view
            .require(tf_field!(SE_CreateStreamExecutorParams, stream_executor))
            .map_err(Error::abi)?;
        // SAFETY: TF's SP_StreamExecutor.
        unsafe { crate::ffi::write_tf_struct(out, &ours) }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_stream_executor", body) }
}

unsafe extern "C" fn destroy_stream_executor(
    _platform: *const SP_Platform,
    _se: *mut SP_StreamExecutor,
) {
}

unsafe extern "C" fn create_timer_fns(
    _platform: *const SP_Platform,
    timer_fns: *mut SP_TimerFns,
    status: *mut TF_Status,
) {
    let body = || {
        let ours = super::timers::timer_fns();
        validate::sp_timer_fns(&ours).map_err(Error::abi)?;
        // SAFETY: TF's SP_TimerFns.
        unsafe { crate::ffi::write_tf_struct(timer_fns, &ours) }
    };
    // SAFETY: TF's status.
    unsafe { ffi::with_status(status, "create_timer_fns", body) }
}

unsafe extern "C" fn destroy_timer_fns(_platform: *const SP_Platform, _fns: *mut SP_TimerFns) {}
