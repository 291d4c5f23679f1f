//! `tensorflow/c/experimental/pluggable_profiler/pluggable_profiler.h`: the
//! pluggable profiler C API.

use super::layout::c_struct;
use super::status::TF_Status;
use core::ffi::{c_char, c_void};

pub const TP_MAJOR: i32 = 0;
pub const TP_MINOR: i32 = 0;
pub const TP_PATCH: i32 = 1;

c_struct! {
    pub struct TP_Profiler {
        pub struct_size: usize,
        /// Free-form data set by the plugin.
        pub ext: *mut c_void,
        /// Device type, `[A-Z][A-Z_]*` (the RFC's `type` is out of date).
        pub device_type: *const c_char,
    }
    size TP_PROFILER_STRUCT_SIZE = device_type;
}

type Profiler = *const TP_Profiler;

c_struct! {
    pub struct TP_ProfilerFns {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub start: Option<unsafe extern "C" fn(profiler: Profiler, status: *mut TF_Status)>,
        pub stop: Option<unsafe extern "C" fn(profiler: Profiler, status: *mut TF_Status)>,
        /// Called twice: with a null `buffer` to ask the size, then to fill it.
        pub collect_data_xspace: Option<
            unsafe extern "C" fn(
                profiler: Profiler,
                buffer: *mut u8,
                size_in_bytes: *mut usize,
                status: *mut TF_Status,
            ),
        >,
    }
    size TP_PROFILER_FNS_STRUCT_SIZE = collect_data_xspace;
}

c_struct! {
    pub struct TF_ProfilerRegistrationParams {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub major_version: i32,
        pub minor_version: i32,
        pub patch_version: i32,
        /// Output, filled by the plugin.
        pub profiler: *mut TP_Profiler,
        /// Output, filled by the plugin.
        pub profiler_fns: *mut TP_ProfilerFns,
        pub destroy_profiler: Option<unsafe extern "C" fn(profiler: *mut TP_Profiler)>,
        pub destroy_profiler_fns: Option<unsafe extern "C" fn(profiler_fns: *mut TP_ProfilerFns)>,
    }
    size TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE = destroy_profiler_fns;
}

/// Signature of the plugin's exported `TF_InitProfiler` (a helper, not a
/// typedef of the header).
pub type TF_InitProfilerFn =
    unsafe extern "C" fn(params: *mut TF_ProfilerRegistrationParams, status: *mut TF_Status);
