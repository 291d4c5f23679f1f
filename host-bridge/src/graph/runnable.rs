//! The last step of our pass: every node on our device must have a kernel
//! there. TF's own passes (arithmetic optimizer, constant folding, remapper)
//! stay on for the whole graph and run before ours in each meta-optimizer
//! iteration, after placement, so they can leave a node on our device whose
//! new op has no kernel for it (an `AddN` from a chain of adds). Such a node
//! is turned back into ops we run when that is exact (`AddN` of floats →
//! `AddV2` chain), else it is moved to the CPU of its task, where TF's
//! partitioner adds the copies. `docs/graph-optimizer.md`, "TF's passes".

use super::device::{cpu_of, is_ours};
use super::nodes::{type_attr, type_value, unique};
use super::proto::{DataType, GraphDef, NodeDef};
use std::collections::HashSet;

/// What [`keep_runnable`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// `AddN` nodes split into `AddV2` chains on our device.
    pub addn_split: usize,
    /// `(op, node)` of each node moved to the CPU.
    pub moved: Vec<(String, String)>,
}

/// Suffix of the `AddV2` nodes an `AddN` split adds (the last keeps the name).
const ADD: &str = "tensorplug_add";

/// Makes every node on a `device_type` device runnable there.
/// `has_kernel(node)` answers whether TF has a kernel for it on our device;
/// `float_add` whether our device has an `AddV2` kernel for `float`.
pub fn keep_runnable(
    graph: &mut GraphDef,
    device_type: &str,
    mut has_kernel: impl FnMut(&NodeDef) -> bool,
    float_add: bool,
) -> Changes {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut added = Vec::new();
    let mut changes = Changes::default();
    for node in &mut graph.node {
        if !is_ours(&node.device, device_type) || has_kernel(node) {
            continue;
        }
        let float = type_attr(node, "T") == Some(DataType::DtFloat as i32);
        if node.op == "AddN" && float && float_add {
            added.extend(split_add_n(node, &mut names));
            changes.addn_split += 1;
        } else {
            node.device = cpu_of(&node.device, device_type);
            changes.moved.push((node.op.clone(), node.name.clone()));
        }
    }
    graph.node.extend(added);
    changes
}

/// Rewrites `node` (`AddN` of `x1..xn`) in place into the last of
/// `((x1 + x2) + x3) ... + xn`, returning the others. The first add takes
/// the control inputs; the last keeps the name, so consumers are unchanged.
/// The sum is the same up to f32 rounding order (`docs/device-numerics.md`).
fn split_add_n(node: &mut NodeDef, names: &mut HashSet<String>) -> Vec<NodeDef> {
    let (data, controls): (Vec<String>, Vec<String>) =
        node.input.drain(..).partition(|i| !i.starts_with('^'));
    let t = type_value(DataType::DtFloat as i32);
    let mut added = Vec::new();
    let mut sum = data.first().cloned().unwrap_or_default();
    let mut controls = Some(controls);
    for (i, term) in data.iter().enumerate().skip(1) {
        let mut input = vec![sum, term.clone()];
        if i == 1 {
            input.extend(controls.take().unwrap_or_default());
        }
        if i + 1 == data.len() {
            node.op = "AddV2".into();
            node.input = input;
            node.attr = [("T".to_string(), t.clone())]
                .into_iter()
                .chain(node.attr.drain().filter(|(key, _)| key.starts_with('_')))
                .collect();
            return added;
        }
        let name = unique(names, &node.name, ADD);
        added.push(NodeDef {
            name: name.clone(),
            op: "AddV2".into(),
            input,
            device: node.device.clone(),
            attr: [("T".to_string(), t.clone())].into(),
            ..Default::default()
        });
        sum = name;
    }
    // One input: AddN(x) is x.
    node.op = "Identity".into();
    node.input = data;
    node.input.extend(controls.unwrap_or_default());
    node.attr = [("T".to_string(), t)].into();
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::proto::{AttrValue, attr_value};

    const FPGA: &str = "/job:localhost/replica:0/task:0/device:FPGA:0";
    const CPU: &str = "/job:localhost/replica:0/task:0/device:CPU:0";

    fn node(name: &str, op: &str, input: &[&str], device: &str) -> NodeDef {
        NodeDef {
            name: name.into(),
            op: op.into(),
            input: input.iter().map(|s| s.to_string()).collect(),
            device: device.into(),
            attr: [(
                "T".to_string(),
                AttrValue {
                    value: Some(attr_value::Value::Type(DataType::DtFloat as i32)),
                },
            )]
            .into(),
            ..Default::default()
        }
    }

    fn find<'g>(graph: &'g GraphDef, name: &str) -> &'g NodeDef {
        graph.node.iter().find(|n| n.name == name).unwrap()
    }

    #[test]
    fn add_n_becomes_an_add_v2_chain_that_keeps_its_name_and_edges() {
        let mut graph = GraphDef {
            node: vec![
                node("sum", "AddN", &["a", "b:1", "c", "^ctl"], FPGA),
                node("use", "Relu", &["sum", "^sum"], FPGA),
            ],
            ..Default::default()
        };
        let changes = keep_runnable(&mut graph, "FPGA", |n| n.op != "AddN", true);
        assert_eq!(changes.addn_split, 1);
        assert!(changes.moved.is_empty());
        let first = find(&graph, "sum/tensorplug_add");
        assert_eq!((first.op.as_str(), first.device.as_str()), ("AddV2", FPGA));
        assert_eq!(first.input, ["a", "b:1", "^ctl"]);
        let last = find(&graph, "sum");
        assert_eq!(last.op, "AddV2");
        assert_eq!(last.input, ["sum/tensorplug_add", "c"]);
        assert_eq!(find(&graph, "use").input, ["sum", "^sum"]);
    }

    #[test]
    fn a_node_with_no_kernel_here_moves_to_the_cpu_of_its_task() {
        let mut graph = GraphDef {
            node: vec![
                node("neg", "Neg", &["x"], FPGA),
                node("relu", "Relu", &["neg"], FPGA),
                node("cpu", "Neg", &["x"], CPU),
                node("ints", "AddN", &["x", "y"], FPGA),
            ],
            ..Default::default()
        };
        graph.node[3].attr.insert(
            "T".into(),
            AttrValue {
                value: Some(attr_value::Value::Type(DataType::DtInt32 as i32)),
            },
        );
        let changes = keep_runnable(&mut graph, "FPGA", |n| n.op == "Relu", true);
        assert_eq!(
            changes.moved,
            [("Neg".into(), "neg".into()), ("AddN".into(), "ints".into())]
        );
        assert_eq!(find(&graph, "neg").device, CPU);
        assert_eq!(find(&graph, "ints").device, CPU, "int AddN is not split");
        assert_eq!(find(&graph, "relu").device, FPGA);
        assert_eq!(graph.node.len(), 4);
    }

    #[test]
    fn without_a_float_add_kernel_add_n_moves_too() {
        let mut graph = GraphDef {
            node: vec![node("sum", "AddN", &["a", "b"], FPGA)],
            ..Default::default()
        };
        let changes = keep_runnable(&mut graph, "FPGA", |_| false, false);
        assert_eq!(changes.moved.len(), 1);
        assert_eq!(graph.node[0].device, CPU);
    }

    #[test]
    fn add_n_of_one_input_is_an_identity() {
        let mut graph = GraphDef {
            node: vec![node("sum", "AddN", &["a", "^ctl"], FPGA)],
            ..Default::default()
        };
        keep_runnable(&mut graph, "FPGA", |n| n.op != "AddN", true);
        assert_eq!(graph.node[0].op, "Identity");
        assert_eq!(graph.node[0].input, ["a", "^ctl"]);
    }
}
