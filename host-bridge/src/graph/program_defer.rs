//! Work computed from constants only is left out of a pass's programs the
//! first time the pass sees it, so that TF's constant folding, which runs
//! before our pass in TF's next optimizer iteration, folds it away. A frozen
//! graph's batch-norm folds (`…/FusedBatchNormV3/VarPlusEpsilon`, which
//! TF's own optimizers split into `Mul`/`Add`/`Rsqrt`/`Sub` after its
//! constant folding ran) would otherwise be joined to the activations'
//! programs and computed every step. A node TF did not fold by the next
//! pass (it carries [`DEFERRED_ATTR`]) is not deferred again.
//! `docs/device-programs.md`, "Work on constants".

use super::device::is_ours;
use super::edges::Input;
use super::proto::{AttrValue, GraphDef, NodeDef, attr_value};
use crate::kernels::program::lower::static_op;
use std::collections::HashSet;

/// Marks a node a pass left to TF's constant folding once.
pub const DEFERRED_ATTR: &str = "_tensorplug_after_folding";

/// Ops that only rearrange or retype a constant: their outputs are
/// constants too.
const VIEWS: &[&str] = &["Identity", "Reshape", "Cast", "ExpandDims", "Squeeze"];

/// Marks and returns the nodes on `device` computed from constants only
/// (none of them marked by an earlier pass).
pub fn defer_constant_work(graph: &mut GraphDef, device: &str) -> HashSet<String> {
    let derived = from_constants(graph);
    let mut deferred = HashSet::new();
    for node in &mut graph.node {
        if node.op != "Const"
            && is_ours(&node.device, device)
            && derived.contains(&node.name)
            && !node.attr.contains_key(DEFERRED_ATTR)
        {
            node.attr.insert(
                DEFERRED_ATTR.into(),
                AttrValue {
                    value: Some(attr_value::Value::B(true)),
                },
            );
            deferred.insert(node.name.clone());
        }
    }
    deferred
}

/// Whether `node` computes its outputs from its data inputs alone, as a
/// program's ops and the views do (no state, no randomness).
fn pure(node: &NodeDef) -> bool {
    VIEWS.contains(&node.op.as_str()) || static_op(&node.op).is_some()
}

/// The names of the `Const`s and of the pure nodes whose data inputs all
/// come from them, through any depth.
fn from_constants(graph: &GraphDef) -> HashSet<String> {
    let mut derived: HashSet<String> = graph
        .node
        .iter()
        .filter(|n| n.op == "Const")
        .map(|n| n.name.clone())
        .collect();
    loop {
        let more: Vec<String> = graph
            .node
            .iter()
            .filter(|n| !derived.contains(&n.name) && pure(n))
            .filter(|n| {
                let mut data = n
                    .input
                    .iter()
                    .map(|i| Input::parse(i))
                    .filter(|i| !matches!(i, Input::Control(_)));
                let mut any = false;
                let all = data.all(|i| {
                    any = true;
                    matches!(i, Input::Data { node, .. } if derived.contains(node))
                });
                any && all
            })
            .map(|n| n.name.clone())
            .collect();
        if more.is_empty() {
            return derived;
        }
        derived.extend(more);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_nodes::float_node;

    fn graph() -> GraphDef {
        // A batch norm's fold from constants, then its use on the data.
        GraphDef {
            node: vec![
                float_node("x", "Placeholder", &[], &[]),
                float_node("var", "Const", &[], &[]),
                float_node("eps", "Const", &[], &[]),
                float_node("gamma", "Const", &[], &[]),
                float_node("plus", "AddV2", &["var", "eps"], &[]),
                float_node("rsqrt", "Rsqrt", &["plus"], &[]),
                float_node("scale", "Mul", &["rsqrt", "gamma"], &[]),
                float_node("y", "Mul", &["x", "scale"], &[]),
                float_node("r", "Relu", &["y"], &[]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_fold_from_constants_is_deferred_once_and_the_data_path_never() {
        let mut g = graph();
        let first = defer_constant_work(&mut g, "FPGA");
        let expected: HashSet<String> = ["plus", "rsqrt", "scale"].map(String::from).into();
        assert_eq!(first, expected);
        // TF did not fold them: the next pass takes them into programs.
        assert!(defer_constant_work(&mut g, "FPGA").is_empty());
    }

    #[test]
    fn a_stateful_or_control_only_node_is_not_a_constant() {
        let mut g = graph();
        g.node
            .push(float_node("noise", "RandomUniform", &["var"], &[]));
        g.node.push(float_node("n2", "Mul", &["noise", "eps"], &[]));
        g.node.push(float_node("waits", "Relu", &["^var"], &[]));
        let deferred = defer_constant_work(&mut g, "FPGA");
        assert!(!deferred.contains("n2") && !deferred.contains("waits"));
    }

    #[test]
    fn the_programs_leave_the_deferred_nodes_and_the_report_says_why() {
        use crate::graph::programs::{Decision, form_programs};
        let mut g = graph();
        g.node.push(float_node("out", "Identity", &["r"], &[]));
        let deferred = defer_constant_work(&mut g, "FPGA");
        let decisions = form_programs(
            &mut g,
            &["out".to_string()].into(),
            "FPGA",
            "_TensorplugFPGAProgram",
            &deferred,
        );
        let left: HashSet<&str> = decisions
            .iter()
            .filter_map(|d| match d {
                Decision::OpByOp { node, why, .. } if why.contains("constants only") => {
                    Some(node.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(left, ["plus", "rsqrt", "scale"].into());
        // `y` and `r` run as one program; the fold's nodes stay for TF.
        assert!(g.node.iter().any(|n| n.op == "_TensorplugFPGAProgram"));
        assert!(g.node.iter().any(|n| n.name == "rsqrt" && n.op == "Rsqrt"));
    }
}
