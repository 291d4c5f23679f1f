//! Which of TF's grappler passes run once the FPGA is registered: all of
//! them, at TF's defaults, except the layout optimizer when the devices
//! register as `GPU` (`TENSORPLUG_AS_GPU`): for a `GPU` it moves
//! convolutions to NCHW, which our kernels do not take, and it acts on
//! `GPU` nodes only, so nothing of the CPU's is lost.
//!
//! TF applies a plugin's configs to the whole meta-optimizer of any process
//! that has the device (`CGraphOptimizerRegister`, `meta_optimizer.cc`), so
//! a pass switched off here would be lost for every CPU node of the process
//! too. Instead, what TF's passes leave on our device without a kernel is
//! fixed up by our own pass, which runs after theirs
//! ([`runnable`](super::runnable)). `docs/graph-optimizer.md`, "TF's passes".

use tensorplug_abi::tf::TP_OptimizerConfigs;

/// Our `TP_OptimizerConfigs`: every field `TF_TriState_Default`, but
/// `layout_optimizer` off when the devices are `GPU`s.
pub fn optimizer_configs() -> TP_OptimizerConfigs {
    let mut configs = TP_OptimizerConfigs::new();
    if crate::identity::device_type() == "GPU" {
        configs.layout_optimizer = tensorplug_abi::tf::TF_TriState::TF_TriState_Off;
    }
    configs
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_abi::tf::{TF_TriState, TP_OPTIMIZER_CONFIGS_STRUCT_SIZE};

    #[test]
    fn no_pass_is_switched_off() {
        let configs = optimizer_configs();
        assert_eq!(configs.struct_size, TP_OPTIMIZER_CONFIGS_STRUCT_SIZE);
        let default = TF_TriState::TF_TriState_Default;
        let fields = [
            ("disable_model_pruning", configs.disable_model_pruning),
            ("implementation_selector", configs.implementation_selector),
            ("function_optimization", configs.function_optimization),
            (
                "common_subgraph_elimination",
                configs.common_subgraph_elimination,
            ),
            ("arithmetic_optimization", configs.arithmetic_optimization),
            ("debug_stripper", configs.debug_stripper),
            ("constant_folding", configs.constant_folding),
            ("shape_optimization", configs.shape_optimization),
            ("auto_mixed_precision", configs.auto_mixed_precision),
            (
                "auto_mixed_precision_onednn_bfloat16",
                configs.auto_mixed_precision_onednn_bfloat16,
            ),
            ("auto_mixed_precision_mkl", configs.auto_mixed_precision_mkl),
            ("pin_to_host_optimization", configs.pin_to_host_optimization),
            ("layout_optimizer", configs.layout_optimizer),
            ("remapping", configs.remapping),
            ("loop_optimization", configs.loop_optimization),
            ("dependency_optimization", configs.dependency_optimization),
            ("auto_parallel", configs.auto_parallel),
            ("memory_optimization", configs.memory_optimization),
            (
                "scoped_allocator_optimization",
                configs.scoped_allocator_optimization,
            ),
        ];
        assert_eq!(
            fields.len(),
            19,
            "TP_OptimizerConfigs has 19 TF_TriState fields"
        );
        for (name, value) in fields {
            assert_eq!(value, default, "{name}");
        }
    }
}
