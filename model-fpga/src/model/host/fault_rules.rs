//! `TENSORPLUG_SIM_FAULTS`: a **testing aid** that makes a `sim` device fail
//! on purpose, so tests can check how device errors reach TensorFlow.
//!
//! The value is a comma-separated list of `<switch>@<op>` rules. `<switch>`
//! is a one-shot fault switch of the model (`fault_next_command`,
//! `lose_next_completion`, `reset_mid_command`; see `docs/device-spec.md`),
//! `<op>` an op's catalogue name in lower case ([`names`]). Each rule fires once: right
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

/// Whether a rule's `<op>` names `kind`: its catalogue name in lower case,
/// words split by `_` anywhere (`matmul`, `fused_matmul`, `max_pool_grad`,
/// `conv2d`; as the conformance cases are named). Nothing per op to edit.
pub fn names(op: &str, kind: OpKind) -> bool {
    let name = kind.name();
    let mut rule = op.chars().filter(|&c| c != '_');
    name.chars()
        .all(|c| rule.next() == Some(c.to_ascii_lowercase()))
        && rule.next().is_none()
}

/// One `<switch>@<op>` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// The switches to set.
    pub faults: Faults,
    /// The op that triggers it ([`names`]).
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
    match rules.iter().position(|rule| names(&rule.op, kind)) {
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
    fn rules_name_ops_as_the_catalogue_does() {
        use tensorplug_core::accelerator::{Activation, OpSet, Unary, Window};
        let w = Window::new([1, 1]);
        assert!(names(
            "matmul",
            OpKind::MatMul {
                transpose_a: true,
                transpose_b: false
            }
        ));
        assert!(names(
            "fused_matmul",
            OpKind::FusedMatMul {
                transpose_a: false,
                transpose_b: false,
                relu: true
            }
        ));
        assert!(names("max_pool_grad", OpKind::MaxPoolGrad(w)));
        assert!(names("conv2d", OpKind::Conv2D(w)));
        assert!(names(
            "fused_conv2d",
            OpKind::FusedConv2D(w, Activation::Relu)
        ));
        assert!(!names("conv2d", OpKind::FusedConv2D(w, Activation::None)));
        assert!(!names("relu", OpKind::Unary(Unary::RELU6)));
        assert!(!names("relu6", OpKind::Unary(Unary::RELU)));
        // Every op has a name no other op answers to.
        for a in OpSet::ALL.iter() {
            let snake: String = a.name().chars().map(|c| c.to_ascii_lowercase()).collect();
            let hits = OpSet::ALL.iter().filter(|&b| names(&snake, b)).count();
            assert_eq!(hits, 1, "{}", a.name());
        }
    }
}
