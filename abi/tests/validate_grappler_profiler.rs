//! Every validator rule of the graph optimizer and profiler structs.

mod common;

use common::*;
use core::ffi::CStr;
use tensorplug_abi::tf::*;
use tensorplug_abi::validate::{self, Requirement, Rule, ValidationError};

fn err(s: &'static str, field: &'static str, rule: Rule) -> Result<(), ValidationError> {
    Err(ValidationError::new(s, field, rule))
}

const BAD_NAMES: [(&CStr, Rule); 4] = [
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
        c"fpga",
        Rule::NameInvalidByte {
            index: 0,
            byte: b'f',
        },
    ),
];

fn graph_params(
    optimizer: &mut TP_Optimizer,
    configs: &mut TP_OptimizerConfigs,
) -> TP_OptimizerRegistrationParams {
    TP_OptimizerRegistrationParams {
        major_version: GO_MAJOR,
        minor_version: GO_MINOR,
        patch_version: GO_PATCH,
        device_type: FPGA.as_ptr(),
        optimizer,
        optimizer_configs: configs,
        ..TP_OptimizerRegistrationParams::new()
    }
}

#[test]
fn valid_graph_and_profiler_structs_pass() {
    let (mut optimizer, mut configs) = (optimizer(), TP_OptimizerConfigs::new());
    let params = graph_params(&mut optimizer, &mut configs);
    // SAFETY: valid pointers and names.
    assert_eq!(unsafe { validate::tf_init_graph_result(&params) }, Ok(()));
    let (mut profiler, mut fns) = (profiler(), profiler_fns());
    let params = profiler_params(&mut profiler, &mut fns);
    // SAFETY: valid pointers and names.
    assert_eq!(
        unsafe { validate::tf_init_profiler_result(&params) },
        Ok(())
    );
}

#[test]
fn optimizer_needs_optimize_func_only() {
    let mut o = optimizer();
    o.create_func = None;
    o.destroy_func = None;
    assert_eq!(validate::tp_optimizer(&o), Ok(()));
    o.optimize_func = None;
    let rule = Rule::NullFunction {
        requirement: Requirement::TfChecks,
    };
    assert_eq!(
        validate::tp_optimizer(&o),
        err("TP_Optimizer", "optimize_func", rule)
    );
}

#[test]
fn optimizer_structs_sizes() {
    let o = TP_Optimizer {
        struct_size: 0,
        ..optimizer()
    };
    let rule = Rule::StructSizeUnset {
        constant: "TP_OPTIMIZER_STRUCT_SIZE",
        expected: TP_OPTIMIZER_STRUCT_SIZE,
    };
    assert_eq!(
        validate::tp_optimizer(&o),
        err("TP_Optimizer", "struct_size", rule)
    );
    // `sizeof` instead of TP_OPTIMIZER_CONFIGS_STRUCT_SIZE (96 vs 92 on LP64).
    let found = size_of::<TP_OptimizerConfigs>();
    let c = TP_OptimizerConfigs {
        struct_size: found,
        ..TP_OptimizerConfigs::new()
    };
    let rule = Rule::StructSizeMismatch {
        constant: "TP_OPTIMIZER_CONFIGS_STRUCT_SIZE",
        expected: TP_OPTIMIZER_CONFIGS_STRUCT_SIZE,
        found,
    };
    assert_ne!(found, TP_OPTIMIZER_CONFIGS_STRUCT_SIZE);
    assert_eq!(
        validate::tp_optimizer_configs(&c),
        err("TP_OptimizerConfigs", "struct_size", rule)
    );
    // Unknown tri-state values are accepted (TF treats them as the default).
    let c = TP_OptimizerConfigs {
        remapping: TF_TriState(7),
        ..TP_OptimizerConfigs::new()
    };
    assert_eq!(validate::tp_optimizer_configs(&c), Ok(()));
}

#[test]
fn graph_registration_device_type_rules() {
    let (mut optimizer, mut configs) = (optimizer(), TP_OptimizerConfigs::new());
    let mut params = graph_params(&mut optimizer, &mut configs);
    for (name, rule) in BAD_NAMES {
        params.device_type = name.as_ptr();
        let want = err("TP_OptimizerRegistrationParams", "device_type", rule);
        // SAFETY: NUL-terminated names.
        assert_eq!(
            unsafe { validate::tp_optimizer_registration_params(&params) },
            want
        );
    }
    params.device_type = core::ptr::null();
    let want = err(
        "TP_OptimizerRegistrationParams",
        "device_type",
        Rule::NullName,
    );
    // SAFETY: null is allowed.
    assert_eq!(
        unsafe { validate::tp_optimizer_registration_params(&params) },
        want
    );
}

#[test]
fn graph_registration_sizes_from_older_and_newer_tf() {
    let (mut optimizer, mut configs) = (optimizer(), TP_OptimizerConfigs::new());
    let mut params = graph_params(&mut optimizer, &mut configs);
    let constant = "TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE";
    params.struct_size = 0;
    let rule = Rule::StructSizeUnset {
        constant,
        expected: TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE,
    };
    let want = err("TP_OptimizerRegistrationParams", "struct_size", rule);
    // SAFETY: valid names.
    assert_eq!(
        unsafe { validate::tp_optimizer_registration_params(&params) },
        want
    );
    params.struct_size = 24; // Ends before `device_type`.
    let needed = core::mem::offset_of!(TP_OptimizerRegistrationParams, device_type) + 8;
    let rule = Rule::StructSizeTooSmall {
        constant,
        needed,
        found: 24,
    };
    let want = err("TP_OptimizerRegistrationParams", "struct_size", rule);
    // SAFETY: valid names.
    assert_eq!(
        unsafe { validate::tp_optimizer_registration_params(&params) },
        want
    );
    params.struct_size = TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE + 16;
    // SAFETY: valid names.
    assert_eq!(
        unsafe { validate::tp_optimizer_registration_params(&params) },
        Ok(())
    );
}

#[test]
fn graph_result_needs_optimizer_and_configs() {
    let (mut optimizer, mut configs) = (optimizer(), TP_OptimizerConfigs::new());
    let mut params = graph_params(&mut optimizer, &mut configs);
    params.optimizer_configs = core::ptr::null_mut();
    let want = err(
        "TP_OptimizerRegistrationParams",
        "optimizer_configs",
        Rule::NullPointer,
    );
    // SAFETY: null or valid pointers.
    assert_eq!(unsafe { validate::tf_init_graph_result(&params) }, want);
    params.optimizer = core::ptr::null_mut();
    let want = err(
        "TP_OptimizerRegistrationParams",
        "optimizer",
        Rule::NullPointer,
    );
    // SAFETY: as above.
    assert_eq!(unsafe { validate::tf_init_graph_result(&params) }, want);
}

#[test]
fn profiler_fns_need_start_stop_collect() {
    for field in ["start", "stop", "collect_data_xspace"] {
        let mut fns = profiler_fns();
        null_field(&mut fns, field);
        let rule = Rule::NullFunction {
            requirement: Requirement::TfChecks,
        };
        assert_eq!(
            validate::tp_profiler_fns(&fns),
            err("TP_ProfilerFns", field, rule)
        );
    }
}

#[test]
fn profiler_registration_needs_both_destroy_functions() {
    for field in ["destroy_profiler", "destroy_profiler_fns"] {
        let (mut profiler, mut fns) = (profiler(), profiler_fns());
        let mut params = profiler_params(&mut profiler, &mut fns);
        null_field(&mut params, field);
        let rule = Rule::NullFunction {
            requirement: Requirement::TfChecks,
        };
        let want = err("TF_ProfilerRegistrationParams", field, rule);
        assert_eq!(validate::tf_profiler_registration_params(&params), want);
    }
}

#[test]
fn profiler_device_type_rules() {
    for (name, rule) in BAD_NAMES {
        let p = TP_Profiler {
            device_type: name.as_ptr(),
            ..profiler()
        };
        // SAFETY: NUL-terminated names.
        assert_eq!(
            unsafe { validate::tp_profiler(&p) },
            err("TP_Profiler", "device_type", rule)
        );
    }
    let p = TP_Profiler {
        device_type: core::ptr::null(),
        ..profiler()
    };
    // SAFETY: null is allowed.
    let want = err("TP_Profiler", "device_type", Rule::NullName);
    assert_eq!(unsafe { validate::tp_profiler(&p) }, want);
}

#[test]
fn profiler_structs_sizes() {
    let p = TP_Profiler {
        struct_size: 0,
        ..profiler()
    };
    let rule = Rule::StructSizeUnset {
        constant: "TP_PROFILER_STRUCT_SIZE",
        expected: TP_PROFILER_STRUCT_SIZE,
    };
    // SAFETY: valid names.
    assert_eq!(
        unsafe { validate::tp_profiler(&p) },
        err("TP_Profiler", "struct_size", rule)
    );
    let fns = TP_ProfilerFns {
        struct_size: 16,
        ..profiler_fns()
    };
    let rule = Rule::StructSizeMismatch {
        constant: "TP_PROFILER_FNS_STRUCT_SIZE",
        expected: TP_PROFILER_FNS_STRUCT_SIZE,
        found: 16,
    };
    assert_eq!(
        validate::tp_profiler_fns(&fns),
        err("TP_ProfilerFns", "struct_size", rule)
    );
    let (mut profiler, mut fns) = (profiler(), profiler_fns());
    let mut params = profiler_params(&mut profiler, &mut fns);
    params.struct_size = TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE - 8;
    let rule = Rule::StructSizeTooSmall {
        constant: "TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE",
        needed: TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE,
        found: TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE - 8,
    };
    let want = err("TF_ProfilerRegistrationParams", "struct_size", rule);
    assert_eq!(validate::tf_profiler_registration_params(&params), want);
}

#[test]
fn device_type_pattern_is_usable_in_const() {
    const { assert!(validate::check_device_type(b"FPGA").is_ok()) };
    assert_eq!(
        validate::check_device_type(b"A_B9"),
        Err(validate::NameError::InvalidByte {
            index: 3,
            byte: b'9'
        })
    );
}
