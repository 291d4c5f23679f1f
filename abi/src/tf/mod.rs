//! `#[repr(C)]` mirrors of TensorFlow's modular C APIs (TF 2.21 headers).
//!
//! Type, field and constant names are exactly the C names, so one can grep
//! from a header to this crate. Every struct and enum records its field
//! table ([`layout`]); the layout check in `cargo xtask test` compares those
//! tables with what gcc says about the installed headers.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

pub mod layout;
mod versioned;

mod grappler;
mod profiler;
mod status;
mod stream_executor;
mod types;

pub use grappler::*;
pub use profiler::*;
pub use status::*;
pub use stream_executor::*;
pub use types::*;
pub use versioned::{Field, SizeError, Versioned, VersionedRef};

use layout::{CEnum, CStruct, EnumLayout, StructLayout};

/// A handle to field `$field` of struct `$ty`, for [`Versioned`].
///
/// `tf_field!(SP_Device, device_handle)`
#[macro_export]
macro_rules! tf_field {
    ($ty:ty, $field:ident) => {
        // SAFETY: offset and type both come from the field itself.
        unsafe {
            $crate::tf::Field::<$ty, _>::new_unchecked(
                $crate::tf::layout::c_name(stringify!($field)),
                core::mem::offset_of!($ty, $field),
                |s: &$ty| &s.$field,
            )
        }
    };
}

/// Every mirrored struct, for the layout check.
pub const STRUCTS: &[StructLayout] = &[
    // Shared types.
    TF_Buffer::LAYOUT,
    TF_StringView::LAYOUT,
    TF_AllocatorAttributes::LAYOUT,
    TF_InputRange_Args::LAYOUT,
    // stream_executor.h
    SP_TimerFns::LAYOUT,
    SP_AllocatorStats::LAYOUT,
    SP_DeviceMemoryBase::LAYOUT,
    SP_Device::LAYOUT,
    SE_CreateDeviceParams::LAYOUT,
    SP_DeviceFns::LAYOUT,
    SE_CreateDeviceFnsParams::LAYOUT,
    SP_StreamExecutor::LAYOUT,
    SE_CreateStreamExecutorParams::LAYOUT,
    SP_Platform::LAYOUT,
    SP_PlatformFns::LAYOUT,
    SE_PlatformRegistrationParams::LAYOUT,
    // grappler.h
    TP_OptimizerConfigs::LAYOUT,
    TP_Optimizer::LAYOUT,
    TP_OptimizerRegistrationParams::LAYOUT,
    // pluggable_profiler.h
    TP_Profiler::LAYOUT,
    TP_ProfilerFns::LAYOUT,
    TF_ProfilerRegistrationParams::LAYOUT,
];

/// Every mirrored enum, for the layout check.
pub const ENUMS: &[EnumLayout] = &[
    TSL_Code::LAYOUT,
    TF_DataType::LAYOUT,
    SE_EventStatus::LAYOUT,
    TF_TriState::LAYOUT,
];

/// The API version macros of the three headers.
pub const VERSION_CONSTS: &[(&str, i32)] = &[
    ("SE_MAJOR", SE_MAJOR),
    ("SE_MINOR", SE_MINOR),
    ("SE_PATCH", SE_PATCH),
    ("GO_MAJOR", GO_MAJOR),
    ("GO_MINOR", GO_MINOR),
    ("GO_PATCH", GO_PATCH),
    ("TP_MAJOR", TP_MAJOR),
    ("TP_MINOR", TP_MINOR),
    ("TP_PATCH", TP_PATCH),
];

// `TF_OFFSET_OF_END` is not `sizeof`: the values FACTS.md records (LP64).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(SP_PLATFORM_STRUCT_SIZE == 35);
    assert!(TP_OPTIMIZER_CONFIGS_STRUCT_SIZE == 92);
    assert!(TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE == 9);
};
