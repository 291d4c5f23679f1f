//! Which of TF's grappler passes run once the FPGA is registered.
//!
//! TF applies a plugin's configs to the whole meta-optimizer of any process
//! that has the device (`CGraphOptimizerRegister`, `meta_optimizer.cc`), and
//! grappler runs *after* placement: an op a pass creates on an FPGA node has
//! no CPU fallback, it fails with "No registered '<op>' OpKernel for 'FPGA'".
//! So a pass is switched off when it can create ops outside our kernel set;
//! passes that only delete, dedup or re-place nodes stay at their default.
//! `docs/graph-optimizer.md` gives the reason for each field.

use tensorplug_abi::tf::{TF_TriState, TP_OptimizerConfigs};

/// The passes we switch off, with why (printed in the docs and tests).
pub const OFF: [(&str, &str); 3] = [
    (
        "arithmetic_optimization",
        "rewrites x+x into Mul, AddN chains, Neg/Reciprocal forms (FACTS.md: \
         'No registered Mul OpKernel for FPGA')",
    ),
    (
        "constant_folding",
        "its arithmetic simplification creates Neg, BroadcastTo, Snapshot and \
         similar ops on the folded node's device",
    ),
    (
        "remapping",
        "TF's remapper is the other fuser: our pass must see plain MatMul/BiasAdd/Relu \
         on the FPGA, and remapper patterns (_Fused*, _Mkl*) are not in our kernel set",
    ),
];

/// Our `TP_OptimizerConfigs`: the [`OFF`] passes `TF_TriState_Off`, every
/// other field `TF_TriState_Default`.
pub fn optimizer_configs() -> TP_OptimizerConfigs {
    let off = TF_TriState::TF_TriState_Off;
    TP_OptimizerConfigs {
        arithmetic_optimization: off,
        constant_folding: off,
        remapping: off,
        ..TP_OptimizerConfigs::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_abi::tf::TP_OPTIMIZER_CONFIGS_STRUCT_SIZE;

    #[test]
    fn exactly_the_listed_passes_are_off() {
        let configs = optimizer_configs();
        assert_eq!(configs.struct_size, TP_OPTIMIZER_CONFIGS_STRUCT_SIZE);
        let off = TF_TriState::TF_TriState_Off;
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
            let listed = OFF.iter().any(|(off_name, _)| *off_name == name);
            let expected = if listed { off } else { default };
            assert_eq!(value, expected, "{name}");
        }
    }
}
