//! `TF_InitGraph` against params laid out as TF's `InitGraphPlugin` does.

use super::{init_graph, optimizer};
use crate::error::Error;
use std::ffi::CStr;
use tensorplug_abi::tf::{
    GO_MAJOR, GO_MINOR, GO_PATCH, TF_TriState, TP_Optimizer, TP_OptimizerConfigs,
    TP_OptimizerRegistrationParams,
};
use tensorplug_abi::validate;

/// What `InitGraphPlugin` allocates: params pointing at two zeroed structs
/// with only `struct_size` set.
struct TfSide {
    params: TP_OptimizerRegistrationParams,
    optimizer: Box<TP_Optimizer>,
    configs: Box<TP_OptimizerConfigs>,
}

impl TfSide {
    fn new() -> Self {
        let mut optimizer = Box::new(TP_Optimizer::new());
        let mut configs = Box::new(TP_OptimizerConfigs::new());
        let params = TP_OptimizerRegistrationParams {
            major_version: GO_MAJOR,
            minor_version: GO_MINOR,
            patch_version: GO_PATCH,
            optimizer: &mut *optimizer,
            optimizer_configs: &mut *configs,
            ..TP_OptimizerRegistrationParams::new()
        };
        Self {
            params,
            optimizer,
            configs,
        }
    }

    fn init(&mut self) -> crate::Result<()> {
        // SAFETY: params point to live, sized structs.
        unsafe { init_graph(&mut self.params) }
    }
}

#[test]
fn fills_what_tf_checks_and_validates() {
    let mut tf = TfSide::new();
    tf.init().expect("init");
    // SAFETY: device_type is our static C string.
    let device = unsafe { CStr::from_ptr(tf.params.device_type) };
    assert_eq!(device, c"FPGA");
    assert!(tf.optimizer.optimize_func.is_some());
    assert!(tf.optimizer.create_func.is_some() && tf.optimizer.destroy_func.is_some());
    assert_eq!(tf.configs.remapping, TF_TriState::TF_TriState_Default);
    assert_eq!(
        tf.configs.arithmetic_optimization,
        TF_TriState::TF_TriState_Default
    );
    assert_eq!(
        tf.configs.layout_optimizer,
        TF_TriState::TF_TriState_Default
    );
    // SAFETY: as above.
    unsafe { validate::tf_init_graph_result(&tf.params) }.expect("valid for TF");
}

#[test]
fn create_and_destroy_are_idempotent() {
    let ours = optimizer();
    let (create, destroy) = (
        ours.create_func.expect("create"),
        ours.destroy_func.expect("destroy"),
    );
    // SAFETY: our callbacks take no input but the pointer create returned.
    unsafe {
        let first = create();
        let second = create();
        assert!(!first.is_null());
        assert_eq!(first, second);
        destroy(first);
        destroy(first);
        destroy(std::ptr::null_mut());
    }
}

#[test]
fn unset_struct_size_is_an_abi_error() {
    let mut tf = TfSide::new();
    tf.params.struct_size = 0;
    assert!(matches!(tf.init(), Err(Error::Abi(_))));

    let mut tf = TfSide::new();
    tf.optimizer.struct_size = 0;
    assert!(matches!(tf.init(), Err(Error::Abi(_))));
}

#[test]
fn other_major_version_is_refused() {
    let mut tf = TfSide::new();
    tf.params.major_version = GO_MAJOR + 1;
    let error = tf.init().unwrap_err();
    assert!(matches!(error, Error::Abi(_)));
    assert!(
        error.to_string().contains("graph optimizer API is 1.x"),
        "{error}"
    );
    assert!(
        tf.optimizer.optimize_func.is_none(),
        "nothing written on refusal"
    );
}

#[test]
fn null_params_and_null_structs_are_errors() {
    // SAFETY: null is allowed by init_graph's contract.
    assert!(unsafe { init_graph(std::ptr::null_mut()) }.is_err());
    let mut tf = TfSide::new();
    tf.params.optimizer = std::ptr::null_mut();
    assert!(tf.init().is_err());
}
