//! Every validator rule of the StreamExecutor structs, broken one at a time.

mod common;

use common::*;
use tensorplug_abi::tf::layout::CStruct;
use tensorplug_abi::tf::*;
use tensorplug_abi::validate::{self, ErrorKind, Requirement, Rule, ValidationError};

/// TF 2.21's `ValidateSPStreamExecutor` list, from its error strings.
const TF_CHECKED_SE: &[&str] = &[
    "allocate",
    "deallocate",
    "get_allocator_stats",
    "host_memory_allocate",
    "host_memory_deallocate",
    "device_memory_usage",
    "create_stream",
    "destroy_stream",
    "create_stream_dependency",
    "get_stream_status",
    "create_event",
    "destroy_event",
    "get_event_status",
    "record_event",
    "wait_for_event",
    "memcpy_dtoh",
    "memcpy_htod",
    "sync_memcpy_dtoh",
    "sync_memcpy_htod",
    "block_host_for_event",
    "synchronize_all_activity",
    "host_callback",
    "mem_zero",
    "memset",
    "memset32",
];
const UNIFIED: &[&str] = &["unified_memory_allocate", "unified_memory_deallocate"];
const OPTIONAL_SE: &[&str] = &[
    "create_timer",
    "destroy_timer",
    "start_timer",
    "stop_timer",
    "memcpy_dtod",
    "sync_memcpy_dtod",
    "block_host_until_done",
];

fn err(s: &'static str, field: &'static str, rule: Rule) -> Result<(), ValidationError> {
    Err(ValidationError::new(s, field, rule))
}

fn null_fn(requirement: Requirement) -> Rule {
    Rule::NullFunction { requirement }
}

#[test]
fn valid_structs_pass() {
    let (mut platform, mut fns) = (platform(), platform_fns());
    let params = se_params(&mut platform, &mut fns);
    // SAFETY: the pointers and names are valid.
    assert_eq!(unsafe { validate::se_init_plugin_result(&params) }, Ok(()));
    assert_eq!(
        validate::sp_stream_executor(&stream_executor(), &platform),
        Ok(())
    );
    assert_eq!(validate::sp_device_fns(&SP_DeviceFns::new()), Ok(()));
    let mut timer = SP_TimerFns::new();
    fill_fns(&mut timer, &[]);
    assert_eq!(validate::sp_timer_fns(&timer), Ok(()));
}

#[test]
fn every_tf_checked_stream_executor_function_is_required() {
    let platform = platform();
    for &field in TF_CHECKED_SE {
        let mut se = stream_executor();
        null_field(&mut se, field);
        let got = validate::sp_stream_executor(&se, &platform);
        let want = err("SP_StreamExecutor", field, null_fn(Requirement::TfChecks));
        assert_eq!(got, want, "{field}");
    }
}

#[test]
fn unified_memory_functions_are_required_only_with_unified_memory() {
    let mut platform = platform();
    for &field in UNIFIED {
        let mut se = stream_executor();
        null_field(&mut se, field);
        platform.supports_unified_memory = 0;
        assert_eq!(
            validate::sp_stream_executor(&se, &platform),
            Ok(()),
            "{field}"
        );
        platform.supports_unified_memory = 1;
        let want = err(
            "SP_StreamExecutor",
            field,
            null_fn(Requirement::TfChecksWithUnifiedMemory),
        );
        assert_eq!(validate::sp_stream_executor(&se, &platform), want);
    }
}

#[test]
fn optional_stream_executor_functions_may_be_null() {
    let mut se = stream_executor();
    for &field in OPTIONAL_SE.iter().chain(UNIFIED) {
        null_field(&mut se, field);
    }
    assert_eq!(validate::sp_stream_executor(&se, &platform()), Ok(()));
    // Every field is either required, unified-only or optional: nothing unclassified.
    let classified = TF_CHECKED_SE.len() + UNIFIED.len() + OPTIONAL_SE.len() + 2;
    assert_eq!(SP_StreamExecutor::LAYOUT.fields.len(), classified);
}

#[test]
fn platform_fns_required_by_tf_and_by_what_tf_calls() {
    let cases = [
        ("create_device", Requirement::TfChecks),
        ("destroy_device", Requirement::TfChecks),
        ("create_stream_executor", Requirement::TfChecks),
        ("destroy_stream_executor", Requirement::TfChecks),
        ("create_device_fns", Requirement::TfChecks),
        ("destroy_device_fns", Requirement::TfChecks),
        ("get_device_count", Requirement::TfCallsUnchecked),
        ("destroy_timer_fns", Requirement::TfCallsUnchecked),
        ("create_timer_fns", Requirement::OlderTfChecks),
    ];
    for (field, requirement) in cases {
        let mut fns = platform_fns();
        null_field(&mut fns, field);
        let want = err("SP_PlatformFns", field, null_fn(requirement));
        assert_eq!(validate::sp_platform_fns(&fns), want, "{field}");
    }
}

#[test]
fn registration_params_need_both_destroy_functions() {
    for field in ["destroy_platform", "destroy_platform_fns"] {
        let (mut platform, mut fns) = (platform(), platform_fns());
        let mut params = se_params(&mut platform, &mut fns);
        null_field(&mut params, field);
        let want = err(
            "SE_PlatformRegistrationParams",
            field,
            null_fn(Requirement::TfChecks),
        );
        assert_eq!(validate::se_platform_registration_params(&params), want);
        // SAFETY: valid pointers and names.
        assert_eq!(unsafe { validate::se_init_plugin_result(&params) }, want);
    }
}

#[test]
fn registration_params_size_is_tfs_but_must_cover_the_plugin_outputs() {
    let (mut platform, mut fns) = (platform(), platform_fns());
    let mut params = se_params(&mut platform, &mut fns);
    params.struct_size = 0;
    let want = err(
        "SE_PlatformRegistrationParams",
        "struct_size",
        Rule::StructSizeUnset {
            constant: "SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE",
            expected: SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE,
        },
    );
    assert_eq!(validate::se_platform_registration_params(&params), want);
    // An older TF whose struct ends before `destroy_platform_fns`.
    params.struct_size = SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE - 8;
    let want = err(
        "SE_PlatformRegistrationParams",
        "struct_size",
        Rule::StructSizeTooSmall {
            constant: "SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE",
            needed: SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE,
            found: SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE - 8,
        },
    );
    assert_eq!(validate::se_platform_registration_params(&params), want);
    // A newer TF's larger struct is fine: TF owns its size.
    params.struct_size = SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE + 8;
    assert_eq!(validate::se_platform_registration_params(&params), Ok(()));
}

#[test]
fn registration_result_needs_platform_and_platform_fns() {
    let (mut platform, mut fns) = (platform(), platform_fns());
    let mut params = se_params(&mut platform, &mut fns);
    params.platform_fns = core::ptr::null_mut();
    let want = err(
        "SE_PlatformRegistrationParams",
        "platform_fns",
        Rule::NullPointer,
    );
    // SAFETY: null or valid pointers.
    assert_eq!(unsafe { validate::se_init_plugin_result(&params) }, want);
    params.platform = core::ptr::null_mut();
    let want = err(
        "SE_PlatformRegistrationParams",
        "platform",
        Rule::NullPointer,
    );
    // SAFETY: as above.
    assert_eq!(unsafe { validate::se_init_plugin_result(&params) }, want);
}

/// `struct_size` 0, an older TF's smaller size, a newer TF's larger size.
fn size_rules<T>(
    constant: &'static str,
    expected: usize,
    mut validate: impl FnMut(usize) -> Result<(), ValidationError>,
    struct_name: &'static str,
) {
    let unset = Rule::StructSizeUnset { constant, expected };
    assert_eq!(validate(0), err(struct_name, "struct_size", unset));
    for found in [expected - 1, 16, expected + 8] {
        let rule = Rule::StructSizeMismatch {
            constant,
            expected,
            found,
        };
        assert_eq!(
            validate(found),
            err(struct_name, "struct_size", rule),
            "{found}"
        );
    }
    assert_eq!(validate(expected), Ok(()));
    let _ = core::marker::PhantomData::<T>;
}

#[test]
fn plugin_filled_structs_must_carry_this_builds_struct_size() {
    size_rules::<SP_Platform>(
        "SP_PLATFORM_STRUCT_SIZE",
        SP_PLATFORM_STRUCT_SIZE,
        |n| {
            let p = SP_Platform {
                struct_size: n,
                ..platform()
            };
            // SAFETY: valid names.
            unsafe { validate::sp_platform(&p) }
        },
        "SP_Platform",
    );
    size_rules::<SP_PlatformFns>(
        "SP_PLATFORM_FNS_STRUCT_SIZE",
        SP_PLATFORM_FNS_STRUCT_SIZE,
        |n| {
            validate::sp_platform_fns(&SP_PlatformFns {
                struct_size: n,
                ..platform_fns()
            })
        },
        "SP_PlatformFns",
    );
    size_rules::<SP_StreamExecutor>(
        "SP_STREAMEXECUTOR_STRUCT_SIZE",
        SP_STREAMEXECUTOR_STRUCT_SIZE,
        |n| {
            let se = SP_StreamExecutor {
                struct_size: n,
                ..stream_executor()
            };
            validate::sp_stream_executor(&se, &platform())
        },
        "SP_StreamExecutor",
    );
    size_rules::<SP_DeviceFns>(
        "SP_DEVICE_FNS_STRUCT_SIZE",
        SP_DEVICE_FNS_STRUCT_SIZE,
        |n| {
            validate::sp_device_fns(&SP_DeviceFns {
                struct_size: n,
                ..SP_DeviceFns::new()
            })
        },
        "SP_DeviceFns",
    );
    size_rules::<SP_TimerFns>(
        "SP_TIMER_FNS_STRUCT_SIZE",
        SP_TIMER_FNS_STRUCT_SIZE,
        |n| {
            let mut t = SP_TimerFns {
                struct_size: n,
                ..SP_TimerFns::new()
            };
            fill_fns(&mut t, &[]);
            validate::sp_timer_fns(&t)
        },
        "SP_TimerFns",
    );
}

#[test]
fn timer_fns_need_nanoseconds() {
    let want = err(
        "SP_TimerFns",
        "nanoseconds",
        null_fn(Requirement::OlderTfChecks),
    );
    assert_eq!(validate::sp_timer_fns(&SP_TimerFns::new()), want);
}

#[test]
fn platform_names_must_match_the_device_type_pattern() {
    let cases: [(&core::ffi::CStr, Rule); 5] = [
        (
            c"Fpga",
            Rule::NameInvalidByte {
                index: 1,
                byte: b'p',
            },
        ),
        (
            c"FPGA2",
            Rule::NameInvalidByte {
                index: 4,
                byte: b'2',
            },
        ),
        (c"", Rule::NameEmpty),
        (
            c"_FPGA",
            Rule::NameInvalidByte {
                index: 0,
                byte: b'_',
            },
        ),
        (
            c"FP:GA",
            Rule::NameInvalidByte {
                index: 2,
                byte: b':',
            },
        ),
    ];
    for (name, rule) in cases {
        let p = SP_Platform {
            name: name.as_ptr(),
            ..platform()
        };
        // SAFETY: NUL-terminated names.
        assert_eq!(
            unsafe { validate::sp_platform(&p) },
            err("SP_Platform", "name", rule)
        );
        let p = SP_Platform {
            r#type: name.as_ptr(),
            ..platform()
        };
        // SAFETY: as above.
        assert_eq!(
            unsafe { validate::sp_platform(&p) },
            err("SP_Platform", "type", rule)
        );
    }
    let p = SP_Platform {
        name: c"MY_FPGA".as_ptr(),
        r#type: c"F".as_ptr(),
        ..platform()
    };
    // SAFETY: as above.
    assert_eq!(unsafe { validate::sp_platform(&p) }, Ok(()));
}

#[test]
fn null_platform_names_are_reported_name_first() {
    let p = SP_Platform {
        name: core::ptr::null(),
        r#type: core::ptr::null(),
        ..platform()
    };
    // SAFETY: null names are allowed by the contract.
    assert_eq!(
        unsafe { validate::sp_platform(&p) },
        err("SP_Platform", "name", Rule::NullName)
    );
    let p = SP_Platform {
        r#type: core::ptr::null(),
        ..platform()
    };
    // SAFETY: as above.
    assert_eq!(
        unsafe { validate::sp_platform(&p) },
        err("SP_Platform", "type", Rule::NullName)
    );
}

#[test]
fn errors_say_what_to_do() {
    let mut se = stream_executor();
    null_field(&mut se, "memset");
    let e = validate::sp_stream_executor(&se, &platform()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NullFunction);
    assert_eq!(
        e.to_string(),
        "`SP_StreamExecutor.memset` is null: TensorFlow requires it and aborts the process \
         at plugin load; set it to a function"
    );
    let p = SP_Platform {
        name: c"Fpga".as_ptr(),
        ..platform()
    };
    // SAFETY: valid names.
    let e = unsafe { validate::sp_platform(&p) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidName);
    assert!(
        e.to_string()
            .contains("`SP_Platform.name` must match [A-Z][A-Z_]*"),
        "{e}"
    );
    assert!(e.to_string().contains("byte 1 is 'p'"), "{e}");
    let p = SP_Platform {
        struct_size: 24,
        ..platform()
    };
    // SAFETY: valid names.
    let e = unsafe { validate::sp_platform(&p) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StructSize);
    assert!(e.to_string().contains("older TensorFlow"), "{e}");
    assert!(
        e.to_string().contains("set it to SP_PLATFORM_STRUCT_SIZE"),
        "{e}"
    );
}
