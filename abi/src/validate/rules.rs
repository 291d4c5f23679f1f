//! The required-field tables (one per struct, checked at compile time
//! against the struct's field table) and the generic checks behind every
//! validator.

use super::error::{Requirement, Rule, ValidationError};
use crate::tf::layout::{CStruct, FieldLayout, StructLayout, str_eq};
use crate::tf::*;

/// A function pointer field that must be non-null, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Required {
    pub field: &'static str,
    pub requirement: Requirement,
}

const fn tf(field: &'static str) -> Required {
    Required {
        field,
        requirement: Requirement::TfChecks,
    }
}
const fn unified(field: &'static str) -> Required {
    Required {
        field,
        requirement: Requirement::TfChecksWithUnifiedMemory,
    }
}
const fn unchecked(field: &'static str) -> Required {
    Required {
        field,
        requirement: Requirement::TfCallsUnchecked,
    }
}
const fn older(field: &'static str) -> Required {
    Required {
        field,
        requirement: Requirement::OlderTfChecks,
    }
}

/// `SE_PlatformRegistrationParams` (TF: `ValidateSEPlatformRegistrationParams`).
pub const SE_PLATFORM_REGISTRATION_PARAMS_REQUIRED: &[Required] =
    &[tf("destroy_platform"), tf("destroy_platform_fns")];

/// `SP_PlatformFns` (TF: `ValidateSPPlatformFns`, plus what TF calls unchecked).
pub const SP_PLATFORM_FNS_REQUIRED: &[Required] = &[
    tf("create_device"),
    tf("destroy_device"),
    tf("create_stream_executor"),
    tf("destroy_stream_executor"),
    tf("create_device_fns"),
    tf("destroy_device_fns"),
    unchecked("get_device_count"),
    unchecked("destroy_timer_fns"),
    older("create_timer_fns"),
];

/// `SP_StreamExecutor` (TF: `ValidateSPStreamExecutor`), in TF's order.
pub const SP_STREAM_EXECUTOR_REQUIRED: &[Required] = &[
    tf("allocate"),
    tf("deallocate"),
    tf("get_allocator_stats"),
    tf("host_memory_allocate"),
    tf("host_memory_deallocate"),
    unified("unified_memory_allocate"),
    unified("unified_memory_deallocate"),
    tf("device_memory_usage"),
    tf("create_stream"),
    tf("destroy_stream"),
    tf("create_stream_dependency"),
    tf("get_stream_status"),
    tf("create_event"),
    tf("destroy_event"),
    tf("get_event_status"),
    tf("record_event"),
    tf("wait_for_event"),
    tf("memcpy_dtoh"),
    tf("memcpy_htod"),
    tf("sync_memcpy_dtoh"),
    tf("sync_memcpy_htod"),
    tf("block_host_for_event"),
    tf("synchronize_all_activity"),
    tf("host_callback"),
    tf("mem_zero"),
    tf("memset"),
    tf("memset32"),
];

/// `SP_TimerFns` (older TF: `ValidateSPTimerFns`).
pub const SP_TIMER_FNS_REQUIRED: &[Required] = &[older("nanoseconds")];

/// `SP_DeviceFns`: every function is optional.
pub const SP_DEVICE_FNS_REQUIRED: &[Required] = &[];

/// `TP_Optimizer` (TF: `ValidateTPOptimizer`).
pub const TP_OPTIMIZER_REQUIRED: &[Required] = &[tf("optimize_func")];

/// `TP_ProfilerFns` (TF: `ValidateTPProfilerFns`).
pub const TP_PROFILER_FNS_REQUIRED: &[Required] =
    &[tf("start"), tf("stop"), tf("collect_data_xspace")];

/// `TF_ProfilerRegistrationParams` (TF: `ValidateTPProfilerRegistrationParams`).
pub const TF_PROFILER_REGISTRATION_PARAMS_REQUIRED: &[Required] =
    &[tf("destroy_profiler"), tf("destroy_profiler_fns")];

// Every table names real function-pointer-sized fields (a typo fails the build).
const _: () = {
    assert_fields(
        &SE_PlatformRegistrationParams::LAYOUT,
        SE_PLATFORM_REGISTRATION_PARAMS_REQUIRED,
    );
    assert_fields(&SP_PlatformFns::LAYOUT, SP_PLATFORM_FNS_REQUIRED);
    assert_fields(&SP_StreamExecutor::LAYOUT, SP_STREAM_EXECUTOR_REQUIRED);
    assert_fields(&SP_TimerFns::LAYOUT, SP_TIMER_FNS_REQUIRED);
    assert_fields(&TP_Optimizer::LAYOUT, TP_OPTIMIZER_REQUIRED);
    assert_fields(&TP_ProfilerFns::LAYOUT, TP_PROFILER_FNS_REQUIRED);
    assert_fields(
        &TF_ProfilerRegistrationParams::LAYOUT,
        TF_PROFILER_REGISTRATION_PARAMS_REQUIRED,
    );
};

const fn assert_fields(layout: &StructLayout, required: &[Required]) {
    let mut i = 0;
    while i < required.len() {
        let field = find(layout.fields, required[i].field);
        assert!(field.is_some(), "required field missing from the struct");
        if let Some(field) = field {
            assert!(field.size == core::mem::size_of::<usize>());
        }
        i += 1;
    }
}

const fn find(fields: &'static [FieldLayout], name: &str) -> Option<&'static FieldLayout> {
    let mut i = 0;
    while i < fields.len() {
        if str_eq(fields[i].name, name) {
            return Some(&fields[i]);
        }
        i += 1;
    }
    None
}

/// `struct_size` of a struct the plugin fills: non-zero (TF) and exactly
/// this build's constant (ours).
pub(crate) fn exact_size<T: CStruct>(found: usize) -> Result<(), ValidationError> {
    let Some(constant) = T::LAYOUT.struct_size else {
        return Ok(());
    };
    let rule = if found == 0 {
        Rule::StructSizeUnset {
            constant: constant.name,
            expected: constant.value,
        }
    } else if found != constant.value {
        Rule::StructSizeMismatch {
            constant: constant.name,
            expected: constant.value,
            found,
        }
    } else {
        return Ok(());
    };
    Err(ValidationError::new(T::LAYOUT.name, "struct_size", rule))
}

/// `struct_size` of a struct TF passed and the plugin completes: non-zero
/// (TF) and covering every field in `plugin_sets` (ours).
pub(crate) fn covering_size<T: CStruct>(
    found: usize,
    plugin_sets: &[Required],
) -> Result<(), ValidationError> {
    let Some(constant) = T::LAYOUT.struct_size else {
        return Ok(());
    };
    if found == 0 {
        let rule = Rule::StructSizeUnset {
            constant: constant.name,
            expected: constant.value,
        };
        return Err(ValidationError::new(T::LAYOUT.name, "struct_size", rule));
    }
    let needed = plugin_sets
        .iter()
        .filter_map(|r| T::LAYOUT.field(r.field))
        .map(FieldLayout::end)
        .max()
        .unwrap_or(0);
    if found < needed {
        let rule = Rule::StructSizeTooSmall {
            constant: constant.name,
            needed,
            found,
        };
        return Err(ValidationError::new(T::LAYOUT.name, "struct_size", rule));
    }
    Ok(())
}

/// Every field of `required` is non-null in `value` (unified-memory ones
/// only when `unified_memory`).
pub(crate) fn required_fns<T: CStruct>(
    value: &T,
    required: &[Required],
    unified_memory: bool,
) -> Result<(), ValidationError> {
    let bytes = (value as *const T).cast::<u8>();
    for req in required {
        if req.requirement == Requirement::TfChecksWithUnifiedMemory && !unified_memory {
            continue;
        }
        let Some(field) = T::LAYOUT.field(req.field) else {
            continue; // Unreachable: checked at compile time above.
        };
        // SAFETY: the field lies inside `*value` (its table says so) and a
        // function-pointer field has no padding bytes.
        let field_bytes =
            unsafe { core::slice::from_raw_parts(bytes.add(field.offset), field.size) };
        if field_bytes.iter().all(|&b| b == 0) {
            let rule = Rule::NullFunction {
                requirement: req.requirement,
            };
            return Err(ValidationError::new(T::LAYOUT.name, field.name, rule));
        }
    }
    Ok(())
}
