//! Validators for the graph optimizer C API (`TF_InitGraph`).

use super::error::{Rule, ValidationError};
use super::name::check_name_ptr;
use super::rules::*;
use crate::tf::*;

/// `TP_OptimizerRegistrationParams` after `TF_InitGraph`: TF's struct with
/// `device_type` set (TF checks non-null; we also check `[A-Z][A-Z_]*`,
/// since it must name a registered device type).
///
/// # Safety
/// `device_type` is null or points to a NUL-terminated string.
pub unsafe fn tp_optimizer_registration_params(
    params: &TP_OptimizerRegistrationParams,
) -> Result<(), ValidationError> {
    let size = params.struct_size;
    if size == 0 {
        return Err(ValidationError::new(
            "TP_OptimizerRegistrationParams",
            "struct_size",
            Rule::StructSizeUnset {
                constant: "TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE",
                expected: TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE,
            },
        ));
    }
    let needed = core::mem::offset_of!(TP_OptimizerRegistrationParams, device_type)
        + core::mem::size_of::<*const core::ffi::c_char>();
    if size < needed {
        return Err(ValidationError::new(
            "TP_OptimizerRegistrationParams",
            "struct_size",
            Rule::StructSizeTooSmall {
                constant: "TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE",
                needed,
                found: size,
            },
        ));
    }
    // SAFETY: caller's contract.
    unsafe {
        check_name_ptr(
            "TP_OptimizerRegistrationParams",
            "device_type",
            params.device_type,
        )
    }
}

/// `TP_Optimizer`.
pub fn tp_optimizer(optimizer: &TP_Optimizer) -> Result<(), ValidationError> {
    exact_size::<TP_Optimizer>(optimizer.struct_size)?;
    required_fns(optimizer, TP_OPTIMIZER_REQUIRED, false)
}

/// `TP_OptimizerConfigs` (any `TF_TriState` value is accepted: TF treats
/// unknown values as the default).
pub fn tp_optimizer_configs(configs: &TP_OptimizerConfigs) -> Result<(), ValidationError> {
    exact_size::<TP_OptimizerConfigs>(configs.struct_size)
}

/// Everything TF checks after `TF_InitGraph` returns: the params, then
/// `*params.optimizer`, then `*params.optimizer_configs`.
///
/// # Safety
/// `params.optimizer` and `params.optimizer_configs` are each null or valid,
/// and `device_type` satisfies [`tp_optimizer_registration_params`]'s contract.
pub unsafe fn tf_init_graph_result(
    params: &TP_OptimizerRegistrationParams,
) -> Result<(), ValidationError> {
    // SAFETY: caller's contract.
    unsafe { tp_optimizer_registration_params(params) }?;
    let null =
        |field| ValidationError::new("TP_OptimizerRegistrationParams", field, Rule::NullPointer);
    // SAFETY: caller's contract.
    let optimizer = unsafe { params.optimizer.as_ref() }.ok_or(null("optimizer"))?;
    let configs = unsafe { params.optimizer_configs.as_ref() }.ok_or(null("optimizer_configs"))?;
    tp_optimizer(optimizer)?;
    tp_optimizer_configs(configs)
}
