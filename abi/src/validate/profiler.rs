//! Validators for the pluggable profiler C API (`TF_InitProfiler`).

use super::error::{Rule, ValidationError};
use super::name::check_name_ptr;
use super::rules::*;
use crate::tf::*;

/// `TF_ProfilerRegistrationParams` after `TF_InitProfiler`: TF's struct with
/// both destroy functions set.
pub fn tf_profiler_registration_params(
    params: &TF_ProfilerRegistrationParams,
) -> Result<(), ValidationError> {
    covering_size::<TF_ProfilerRegistrationParams>(
        params.struct_size,
        TF_PROFILER_REGISTRATION_PARAMS_REQUIRED,
    )?;
    required_fns(params, TF_PROFILER_REGISTRATION_PARAMS_REQUIRED, false)
}

/// `TP_Profiler`: size, then `device_type` set and `[A-Z][A-Z_]*`.
///
/// # Safety
/// `device_type` is null or points to a NUL-terminated string.
pub unsafe fn tp_profiler(profiler: &TP_Profiler) -> Result<(), ValidationError> {
    exact_size::<TP_Profiler>(profiler.struct_size)?;
    // SAFETY: caller's contract.
    unsafe { check_name_ptr("TP_Profiler", "device_type", profiler.device_type) }
}

/// `TP_ProfilerFns`.
pub fn tp_profiler_fns(fns: &TP_ProfilerFns) -> Result<(), ValidationError> {
    exact_size::<TP_ProfilerFns>(fns.struct_size)?;
    required_fns(fns, TP_PROFILER_FNS_REQUIRED, false)
}

/// Everything TF checks after `TF_InitProfiler` returns: the params, then
/// `*params.profiler`, then `*params.profiler_fns`.
///
/// # Safety
/// `params.profiler` and `params.profiler_fns` are each null or valid, and
/// the profiler's `device_type` satisfies [`tp_profiler`]'s contract.
pub unsafe fn tf_init_profiler_result(
    params: &TF_ProfilerRegistrationParams,
) -> Result<(), ValidationError> {
    tf_profiler_registration_params(params)?;
    let null =
        |field| ValidationError::new("TF_ProfilerRegistrationParams", field, Rule::NullPointer);
    // SAFETY: caller's contract.
    let profiler = unsafe { params.profiler.as_ref() }.ok_or(null("profiler"))?;
    let fns = unsafe { params.profiler_fns.as_ref() }.ok_or(null("profiler_fns"))?;
    // SAFETY: caller's contract.
    unsafe { tp_profiler(profiler) }?;
    tp_profiler_fns(fns)
}
