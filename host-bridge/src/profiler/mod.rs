//! The pluggable profiler: `TF_InitProfiler` registers a profiler for device
//! type `FPGA` whose `start`/`stop`/`collect_data_xspace` record every open
//! device's hardware event ring and the host-API spans
//! ([`crate::host_spans`]), map device ticks onto TF's clock with sync pairs,
//! and hand TF one XSpace built by `tensorplug_core::xspace`.
//!
//! - [`ops`]: the op-tag interner kernels call ([`op_tag`]);
//! - `clock`: TF's wall clock and sync pairs;
//! - `capture`: bounded buffers and the drainer thread;
//! - `state`: the session state machine and TF's two-call collect;
//! - `collect`: the planned XSpace kept between the two calls.
//!
//! Flow and guarantees: `docs/profiler-plugin.md`.

mod capture;
mod clock;
mod collect;
pub mod ops;
mod state;

#[cfg(test)]
mod tests;

#[cfg(feature = "internals")]
pub use clock::{WallClock, sync_pair};
pub use ops::op_tag;
pub use state::{Profiler, with_profiler};

use crate::error::{Error, Result};
use crate::{ffi, identity};
use tensorplug_abi::tf::{
    TF_ProfilerRegistrationParams, TF_Status, TP_MAJOR, TP_Profiler, TP_ProfilerFns, Versioned,
};
use tensorplug_abi::{tf_field, validate};

/// `TF_InitProfiler` (emitted by [`export_plugin!`](crate::export_plugin)):
/// registers the profiler for the plugin's device type.
///
/// # Safety
/// Called by TF with its registration params and a live status.
pub unsafe fn tf_init_profiler(params: *mut TF_ProfilerRegistrationParams, status: *mut TF_Status) {
    // SAFETY: TF's contract.
    unsafe { ffi::with_status(status, "TF_InitProfiler", || init_profiler(params)) }
}

/// The body of `TF_InitProfiler`.
///
/// # Safety
/// `params` is null or TF's registration params, whose `profiler` and
/// `profiler_fns` are null or point to structs TF allocated with
/// `struct_size` set.
pub unsafe fn init_profiler(params: *mut TF_ProfilerRegistrationParams) -> Result<()> {
    // SAFETY: caller's contract.
    let mut view = unsafe { Versioned::from_raw(params) }.map_err(Error::abi)?;
    match view.require(tf_field!(TF_ProfilerRegistrationParams, major_version)) {
        Ok(TP_MAJOR) => {}
        Ok(other) => {
            return Err(Error::Abi(format!(
                "TensorFlow's pluggable profiler API is {other}.x, tensorplug speaks \
                 {TP_MAJOR}.x: use the tensorflow version tensorplug was built for"
            )));
        }
        Err(e) => return Err(Error::abi(e)),
    }
    let profiler_out = view
        .require(tf_field!(TF_ProfilerRegistrationParams, profiler))
        .map_err(Error::abi)?;
    let fns_out = view
        .require(tf_field!(TF_ProfilerRegistrationParams, profiler_fns))
        .map_err(Error::abi)?;

    let ours = profiler();
    let our_fns = profiler_fns();
    // SAFETY: `device_type` is our static C string.
    unsafe { validate::tp_profiler(&ours) }.map_err(Error::abi)?;
    validate::tp_profiler_fns(&our_fns).map_err(Error::abi)?;
    // SAFETY: TF's structs, valid for their struct_size (caller's contract).
    unsafe {
        ffi::write_tf_struct(profiler_out, &ours)?;
        ffi::write_tf_struct(fns_out, &our_fns)?;
    }
    view.set(
        tf_field!(TF_ProfilerRegistrationParams, destroy_profiler),
        Some(destroy_profiler),
    )
    .map_err(Error::abi)?;
    view.set(
        tf_field!(TF_ProfilerRegistrationParams, destroy_profiler_fns),
        Some(destroy_profiler_fns),
    )
    .map_err(Error::abi)?;

    // What TF checks next, checked first: a failure here is our bug.
    let filled = view.read_covered();
    // SAFETY: the pointers are TF's (valid) and the name ours (static).
    unsafe { validate::tf_init_profiler_result(&filled) }.map_err(Error::abi)
}

/// Our `TP_Profiler`: the plugin's device type, no per-instance data (the
/// state is process-wide, so TF's early destroy calls cannot free it).
pub fn profiler() -> TP_Profiler {
    TP_Profiler {
        device_type: identity::device_type_c().as_ptr(),
        ..TP_Profiler::new()
    }
}

/// Our `TP_ProfilerFns`.
pub fn profiler_fns() -> TP_ProfilerFns {
    TP_ProfilerFns {
        start: Some(start),
        stop: Some(stop),
        collect_data_xspace: Some(collect_data_xspace),
        ..TP_ProfilerFns::new()
    }
}

/// `start`.
///
/// # Safety
/// TF's contract: `status` is live.
pub unsafe extern "C" fn start(_profiler: *const TP_Profiler, status: *mut TF_Status) {
    // SAFETY: TF's contract.
    unsafe { ffi::with_status(status, "profiler start", || with_profiler(Profiler::start)) }
}

/// `stop`.
///
/// # Safety
/// TF's contract: `status` is live.
pub unsafe extern "C" fn stop(_profiler: *const TP_Profiler, status: *mut TF_Status) {
    // SAFETY: TF's contract.
    unsafe { ffi::with_status(status, "profiler stop", || with_profiler(Profiler::stop)) }
}

/// `collect_data_xspace`: with a null `buffer`, writes the XSpace's size to
/// `*size_in_bytes`; otherwise encodes into `buffer[..*size_in_bytes]` and
/// writes the bytes used.
///
/// # Safety
/// TF's contract: `size_in_bytes` is valid; a non-null `buffer` is writable
/// for `*size_in_bytes` bytes; `status` is live.
pub unsafe extern "C" fn collect_data_xspace(
    _profiler: *const TP_Profiler,
    buffer: *mut u8,
    size_in_bytes: *mut usize,
    status: *mut TF_Status,
) {
    // SAFETY: TF's contract.
    unsafe {
        ffi::with_status(status, "profiler collect_data_xspace", || {
            // SAFETY: TF's contract (checked for null).
            let size = size_in_bytes.as_mut().ok_or_else(|| {
                Error::InvalidArgument("collect_data_xspace got a null size_in_bytes".into())
            })?;
            if buffer.is_null() {
                *size = with_profiler(Profiler::collect_size)?;
                return Ok(());
            }
            // SAFETY: TF's contract: `buffer` holds `*size` writable bytes.
            let out = std::slice::from_raw_parts_mut(buffer, *size);
            *size = with_profiler(|profiler| profiler.collect_into(out))?;
            Ok(())
        })
    }
}

/// `destroy_profiler`: TF calls it (twice) right after `TF_InitProfiler`
/// while still using the profiler, so it frees nothing.
///
/// # Safety
/// Any pointer (unused).
pub unsafe extern "C" fn destroy_profiler(_profiler: *mut TP_Profiler) {}

/// `destroy_profiler_fns`: as [`destroy_profiler`], frees nothing.
///
/// # Safety
/// Any pointer (unused).
pub unsafe extern "C" fn destroy_profiler_fns(_profiler_fns: *mut TP_ProfilerFns) {}
