//! `TENSORPLUG_SIM_FAULTS`: a **testing aid** that makes a `sim` device fail
//! on purpose, so tests can check how device errors reach TensorFlow.
//!
//! The value is a comma-separated list of `<switch>@<op>` rules. `<switch>`
//! is a one-shot fault switch of the model (`fault_next_command`,
//! `lose_next_completion`, `reset_mid_command`; see `docs/device-spec.md`),
//! `<op>` an [`OpKind`] name ([`op_kind_name`]). Each rule fires once: right
//! before the first launch of that op kind, the switch is set on the model
//! (and taken by its thread), so that launch's first command fails.
//! Unset or empty: no injection, the device is the plain `sim`.

use super::InProcessDevice;
use crate::model::Faults;
use std::borrow::ToOwned;
use std::format;
use std::string::String;
use std::vec::Vec;
use tensorplug_core::accelerator::OpKind;

/// The environment variable the host bridge's `sim` device reads.
pub const SIM_FAULTS_ENV: &str = "TENSORPLUG_SIM_FAULTS";

/// The name a rule uses for an op kind.
pub fn op_kind_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::MatMul { .. } => "matmul",
        OpKind::FusedMatMul { .. } => "fused_matmul",
        OpKind::BiasAdd => "bias_add",
        OpKind::Add => "add",
        OpKind::Sub => "sub",
        OpKind::Mul => "mul",
        OpKind::Maximum => "maximum",
        OpKind::Relu => "relu",
        OpKind::Softmax => "softmax",
        OpKind::ReduceSum => "reduce_sum",
        OpKind::Div => "div",
        OpKind::DivNoNan => "div_no_nan",
        OpKind::Pow => "pow",
        OpKind::ReluGrad => "relu_grad",
        OpKind::Sqrt => "sqrt",
        OpKind::Rsqrt => "rsqrt",
        OpKind::LogSoftmax => "log_softmax",
        OpKind::Relu6 => "relu6",
        OpKind::Sigmoid => "sigmoid",
        OpKind::Tanh => "tanh",
        OpKind::Conv2D(_) => "conv2d",
        OpKind::DepthwiseConv2D(_) => "depthwise_conv2d",
        OpKind::MaxPool(_) => "max_pool",
        OpKind::AvgPool(_) => "avg_pool",
        OpKind::Conv2DBackpropInput(_) => "conv2d_backprop_input",
        OpKind::Conv2DBackpropFilter(_) => "conv2d_backprop_filter",
        OpKind::MaxPoolGrad(_) => "max_pool_grad",
        OpKind::AvgPoolGrad(_) => "avg_pool_grad",
        OpKind::FusedConv2D(..) => "fused_conv2d",
        OpKind::Transpose(_) => "transpose",
        _ => "other",
    }
}

/// One `<switch>@<op>` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// The switches to set.
    pub faults: Faults,
    /// The [`op_kind_name`] that triggers it.
    pub op: String,
}

/// Parses a [`SIM_FAULTS_ENV`] value.
pub fn parse(value: &str) -> Result<Vec<FaultRule>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(|rule| {
            let (switch, op) = rule.trim().split_once('@').ok_or_else(|| {
                format!("`{rule}` is not `<switch>@<op>` (e.g. fault_next_command@softmax)")
            })?;
            let mut faults = Faults::default();
            match switch {
                "fault_next_command" => faults.fault_next_command = true,
                "lose_next_completion" => faults.lose_next_completion = true,
                "reset_mid_command" => faults.reset_mid_command = true,
                other => {
                    return Err(format!(
                        "unknown switch `{other}` (fault_next_command, lose_next_completion, \
                         reset_mid_command)"
                    ));
                }
            }
            if op.is_empty() {
                return Err(format!("`{rule}` names no op"));
            }
            Ok(FaultRule {
                faults,
                op: op.to_owned(),
            })
        })
        .collect()
}

/// Arms the model's switches for the first rule naming `kind`, and drops
/// that rule (each fires once). False when the model did not take them in time.
pub fn arm_for(device: &InProcessDevice, rules: &mut Vec<FaultRule>, kind: OpKind) -> bool {
    let name = op_kind_name(kind);
    match rules.iter().position(|rule| rule.op == name) {
        Some(at) => device.set_faults(rules.remove(at).faults),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_errors_say_what_is_accepted() {
        assert!(parse(" ").unwrap().is_empty());
        let rules = parse("fault_next_command@softmax, lose_next_completion@matmul").unwrap();
        assert_eq!(rules.len(), 2);
        assert!(rules[0].faults.fault_next_command && rules[0].op == "softmax");
        assert!(rules[1].faults.lose_next_completion && rules[1].op == "matmul");
        assert!(parse("softmax").unwrap_err().contains("<switch>@<op>"));
        assert!(
            parse("stuck_busy@relu")
                .unwrap_err()
                .contains("unknown switch")
        );
        assert!(
            parse("fault_next_command@")
                .unwrap_err()
                .contains("names no op")
        );
    }

    #[test]
    fn every_kind_has_a_distinct_name() {
        use tensorplug_core::accelerator::OpSet;
        let names: std::collections::HashSet<_> = OpSet::ALL.iter().map(op_kind_name).collect();
        assert_eq!(names.len(), OpSet::ALL.iter().count());
        assert!(!names.contains("other"));
    }
}
