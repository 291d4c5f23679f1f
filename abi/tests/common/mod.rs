//! Valid structs for the validator tests: every function pointer set (to a
//! function that is never called), every size this build's constant.
#![allow(dead_code)]

use std::ffi::CStr;
use tensorplug_abi::tf::layout::CStruct;
use tensorplug_abi::tf::*;

extern "C" fn never_called() {}

/// Sets every pointer-sized field except `struct_size`, `ext` and the data
/// pointers in `except` to a non-null function address.
pub fn fill_fns<T: CStruct>(value: &mut T, except: &[&str]) {
    let base = (value as *mut T).cast::<u8>();
    let addr = (never_called as extern "C" fn()) as usize;
    for f in T::LAYOUT.fields {
        let skip = f.name == "struct_size" || f.name == "ext" || except.contains(&f.name);
        if skip || f.size != size_of::<usize>() {
            continue; // Not a function pointer (sizes, versions, data pointers).
        }
        // SAFETY: the field lies inside `*value`; a non-null address is a
        // valid `Option<fn>` (never called by these tests).
        unsafe { base.add(f.offset).cast::<usize>().write_unaligned(addr) };
    }
}

/// Zeroes one field by name.
pub fn null_field<T: CStruct>(value: &mut T, name: &str) {
    let f = T::LAYOUT.field(name).expect("field exists");
    // SAFETY: inside `*value`; all-zero is valid for every field.
    unsafe {
        (value as *mut T)
            .cast::<u8>()
            .add(f.offset)
            .write_bytes(0, f.size)
    };
}

pub const FPGA: &CStr = c"FPGA";

pub fn platform() -> SP_Platform {
    SP_Platform {
        name: FPGA.as_ptr(),
        r#type: FPGA.as_ptr(),
        ..SP_Platform::new()
    }
}

pub fn platform_fns() -> SP_PlatformFns {
    let mut fns = SP_PlatformFns::new();
    fill_fns(&mut fns, &[]);
    fns
}

pub fn stream_executor() -> SP_StreamExecutor {
    let mut se = SP_StreamExecutor::new();
    fill_fns(&mut se, &[]);
    se
}

/// TF's params after a correct `SE_InitPlugin`, pointing at `platform`/`fns`.
pub fn se_params(
    platform: &mut SP_Platform,
    fns: &mut SP_PlatformFns,
) -> SE_PlatformRegistrationParams {
    let mut params = SE_PlatformRegistrationParams {
        major_version: SE_MAJOR,
        minor_version: SE_MINOR,
        patch_version: SE_PATCH,
        platform,
        platform_fns: fns,
        ..SE_PlatformRegistrationParams::new()
    };
    fill_fns(&mut params, &["platform", "platform_fns"]);
    params
}

pub fn optimizer() -> TP_Optimizer {
    let mut optimizer = TP_Optimizer::new();
    fill_fns(&mut optimizer, &[]);
    optimizer
}

pub fn profiler() -> TP_Profiler {
    TP_Profiler {
        device_type: FPGA.as_ptr(),
        ..TP_Profiler::new()
    }
}

pub fn profiler_fns() -> TP_ProfilerFns {
    let mut fns = TP_ProfilerFns::new();
    fill_fns(&mut fns, &[]);
    fns
}

pub fn profiler_params(
    p: &mut TP_Profiler,
    fns: &mut TP_ProfilerFns,
) -> TF_ProfilerRegistrationParams {
    let mut params = TF_ProfilerRegistrationParams {
        major_version: TP_MAJOR,
        minor_version: TP_MINOR,
        patch_version: TP_PATCH,
        profiler: p,
        profiler_fns: fns,
        ..TF_ProfilerRegistrationParams::new()
    };
    fill_fns(&mut params, &["profiler", "profiler_fns"]);
    params
}
