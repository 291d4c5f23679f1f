//! Validators for the StreamExecutor C API (`SE_InitPlugin` and the
//! `SP_PlatformFns` callbacks).

use super::error::{Rule, ValidationError};
use super::name::check_name_ptr;
use super::rules::*;
use crate::tf::*;

/// `SE_PlatformRegistrationParams` after `SE_InitPlugin`: TF's struct (its
/// `struct_size` stays TF's), with the two destroy functions set.
pub fn se_platform_registration_params(
    params: &SE_PlatformRegistrationParams,
) -> Result<(), ValidationError> {
    covering_size::<SE_PlatformRegistrationParams>(
        params.struct_size,
        SE_PLATFORM_REGISTRATION_PARAMS_REQUIRED,
    )?;
    required_fns(params, SE_PLATFORM_REGISTRATION_PARAMS_REQUIRED, false)
}

/// `SP_Platform`: size, then `name` and `type` set and `[A-Z][A-Z_]*`.
///
/// # Safety
/// `name` and `type` are each null or point to a NUL-terminated string.
pub unsafe fn sp_platform(platform: &SP_Platform) -> Result<(), ValidationError> {
    exact_size::<SP_Platform>(platform.struct_size)?;
    let null = |field| Err(ValidationError::new("SP_Platform", field, Rule::NullName));
    if platform.name.is_null() {
        return null("name");
    }
    if platform.r#type.is_null() {
        return null("type");
    }
    // SAFETY: caller's contract.
    unsafe {
        check_name_ptr("SP_Platform", "name", platform.name)?;
        check_name_ptr("SP_Platform", "type", platform.r#type)
    }
}

/// `SP_PlatformFns`.
pub fn sp_platform_fns(fns: &SP_PlatformFns) -> Result<(), ValidationError> {
    exact_size::<SP_PlatformFns>(fns.struct_size)?;
    required_fns(fns, SP_PLATFORM_FNS_REQUIRED, false)
}

/// `SP_StreamExecutor`; the unified-memory functions are required only
/// when `platform.supports_unified_memory` is set.
pub fn sp_stream_executor(
    se: &SP_StreamExecutor,
    platform: &SP_Platform,
) -> Result<(), ValidationError> {
    exact_size::<SP_StreamExecutor>(se.struct_size)?;
    required_fns(
        se,
        SP_STREAM_EXECUTOR_REQUIRED,
        platform.supports_unified_memory != 0,
    )
}

/// `SP_DeviceFns` (every function is optional).
pub fn sp_device_fns(fns: &SP_DeviceFns) -> Result<(), ValidationError> {
    exact_size::<SP_DeviceFns>(fns.struct_size)?;
    required_fns(fns, SP_DEVICE_FNS_REQUIRED, false)
}

/// `SP_TimerFns`.
pub fn sp_timer_fns(fns: &SP_TimerFns) -> Result<(), ValidationError> {
    exact_size::<SP_TimerFns>(fns.struct_size)?;
    required_fns(fns, SP_TIMER_FNS_REQUIRED, false)
}

/// Everything TF checks after `SE_InitPlugin` returns, in TF's order:
/// the params, then `*params.platform`, then `*params.platform_fns`.
///
/// # Safety
/// `params.platform` and `params.platform_fns` are each null or point to a
/// valid struct, and the platform's names satisfy [`sp_platform`]'s contract.
pub unsafe fn se_init_plugin_result(
    params: &SE_PlatformRegistrationParams,
) -> Result<(), ValidationError> {
    se_platform_registration_params(params)?;
    let null =
        |field| ValidationError::new("SE_PlatformRegistrationParams", field, Rule::NullPointer);
    // SAFETY: caller's contract.
    let platform = unsafe { params.platform.as_ref() }.ok_or(null("platform"))?;
    let fns = unsafe { params.platform_fns.as_ref() }.ok_or(null("platform_fns"))?;
    // SAFETY: caller's contract.
    unsafe { sp_platform(platform) }?;
    sp_platform_fns(fns)
}
