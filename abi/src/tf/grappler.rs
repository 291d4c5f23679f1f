//! `tensorflow/c/experimental/grappler/grappler.h`: the graph optimizer C API.

use super::layout::{c_enum, c_opaque, c_struct};
use super::status::TF_Status;
use super::types::TF_Buffer;
use core::ffi::{c_char, c_void};

pub const GO_MAJOR: i32 = 0;
pub const GO_MINOR: i32 = 0;
pub const GO_PATCH: i32 = 1;

c_enum! {
    /// `TF_TriState`: leave a grappler pass at its default, or force it off/on.
    pub struct TF_TriState(u32) {
        TF_TriState_Default = 0,
        TF_TriState_Off = 1,
        TF_TriState_On = 2,
    }
}

c_opaque! {
    /// `TF_GrapplerItem`: the graph being optimized, with its fetch nodes.
    TF_GrapplerItem,
    /// `TF_GraphProperties`: statically inferred shapes.
    TF_GraphProperties,
    /// `TF_FunctionLibraryDefinition`.
    TF_FunctionLibraryDefinition,
}

c_struct! {
    /// Which of TF's own grappler passes to run on graphs for this device.
    pub struct TP_OptimizerConfigs {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub disable_model_pruning: TF_TriState,
        pub implementation_selector: TF_TriState,
        pub function_optimization: TF_TriState,
        pub common_subgraph_elimination: TF_TriState,
        pub arithmetic_optimization: TF_TriState,
        pub debug_stripper: TF_TriState,
        pub constant_folding: TF_TriState,
        pub shape_optimization: TF_TriState,
        pub auto_mixed_precision: TF_TriState,
        pub auto_mixed_precision_onednn_bfloat16: TF_TriState,
        pub auto_mixed_precision_mkl: TF_TriState,
        pub pin_to_host_optimization: TF_TriState,
        pub layout_optimizer: TF_TriState,
        pub remapping: TF_TriState,
        pub loop_optimization: TF_TriState,
        pub dependency_optimization: TF_TriState,
        pub auto_parallel: TF_TriState,
        pub memory_optimization: TF_TriState,
        pub scoped_allocator_optimization: TF_TriState,
    }
    size TP_OPTIMIZER_CONFIGS_STRUCT_SIZE = scoped_allocator_optimization;
}

c_struct! {
    pub struct TP_Optimizer {
        pub struct_size: usize,
        pub ext: *mut c_void,
        /// `void* (*create_func)()`: returns the optimizer's state.
        pub create_func: Option<unsafe extern "C" fn() -> *mut c_void>,
        pub optimize_func: Option<
            unsafe extern "C" fn(
                optimizer: *mut c_void,
                graph_in: *const TF_Buffer,
                item: *const TF_GrapplerItem,
                graph_out: *mut TF_Buffer,
                status: *mut TF_Status,
            ),
        >,
        pub destroy_func: Option<unsafe extern "C" fn(optimizer: *mut c_void)>,
    }
    size TP_OPTIMIZER_STRUCT_SIZE = destroy_func;
}

c_struct! {
    pub struct TP_OptimizerRegistrationParams {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub major_version: i32,
        pub minor_version: i32,
        pub patch_version: i32,
        /// Set by the plugin: the device type the optimizer runs for.
        pub device_type: *const c_char,
        /// Output, set by the plugin.
        pub optimizer_configs: *mut TP_OptimizerConfigs,
        /// Output, set by the plugin.
        pub optimizer: *mut TP_Optimizer,
    }
    size TP_OPTIMIZER_REGISTRATION_PARAMS_STRUCT_SIZE = optimizer;
}

/// Signature of the plugin's exported `TF_InitGraph` (a helper, not a
/// typedef of the header).
pub type TF_InitGraphFn =
    unsafe extern "C" fn(params: *mut TP_OptimizerRegistrationParams, status: *mut TF_Status);
