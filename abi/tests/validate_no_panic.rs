//! No validator panics, whatever the bytes of the struct.

use proptest::prelude::*;
use std::ffi::CString;
use tensorplug_abi::tf::layout::CStruct;
use tensorplug_abi::tf::*;
use tensorplug_abi::validate;

/// A `T` made of arbitrary bytes, with its name pointers replaced by `name`.
fn arbitrary<T: CStruct>(bytes: &[u8], name_fields: &[&str], name: *const i8) -> T {
    let mut value = T::zeroed();
    let base = (&mut value as *mut T).cast::<u8>();
    for f in T::LAYOUT.fields {
        let src = &bytes[f.offset..f.offset + f.size];
        // SAFETY: inside `value`; every bit pattern is valid for every field
        // (the `CStruct` contract) and no function pointer is ever called.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), base.add(f.offset), f.size) };
        if name_fields.contains(&f.name) {
            // SAFETY: a pointer-sized field inside `value`.
            unsafe { base.add(f.offset).cast::<*const i8>().write_unaligned(name) };
        }
    }
    value
}

proptest! {
    #[test]
    fn validators_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 512),
        name in proptest::collection::vec(1u8..=255, 0..12),
        null_name in any::<bool>(),
    ) {
        let name = CString::new(name).unwrap();
        let name_ptr = if null_name { core::ptr::null() } else { name.as_ptr() };
        // Only the name checks read through pointers; other pointers stay null-free of use.
        let platform: SP_Platform = arbitrary(&bytes, &["name", "type"], name_ptr);
        // SAFETY: names are null or valid C strings.
        let _ = unsafe { validate::sp_platform(&platform) };
        let _ = validate::sp_platform_fns(&arbitrary(&bytes, &[], name_ptr));
        let _ = validate::sp_stream_executor(&arbitrary(&bytes, &[], name_ptr), &platform);
        let _ = validate::sp_device_fns(&arbitrary(&bytes, &[], name_ptr));
        let _ = validate::sp_timer_fns(&arbitrary(&bytes, &[], name_ptr));
        let _ = validate::se_platform_registration_params(&arbitrary(&bytes, &[], name_ptr));
        let graph: TP_OptimizerRegistrationParams = arbitrary(&bytes, &["device_type"], name_ptr);
        // SAFETY: as above.
        let _ = unsafe { validate::tp_optimizer_registration_params(&graph) };
        let _ = validate::tp_optimizer(&arbitrary(&bytes, &[], name_ptr));
        let _ = validate::tp_optimizer_configs(&arbitrary(&bytes, &[], name_ptr));
        let _ = validate::tf_profiler_registration_params(&arbitrary(&bytes, &[], name_ptr));
        let profiler: TP_Profiler = arbitrary(&bytes, &["device_type"], name_ptr);
        // SAFETY: as above.
        let _ = unsafe { validate::tp_profiler(&profiler) };
        let _ = validate::tp_profiler_fns(&arbitrary(&bytes, &[], name_ptr));
    }
}
