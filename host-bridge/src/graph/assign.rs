//! The pass that lets a training step update variables on our device:
//! `AssignAddVariableOp`/`AssignSubVariableOp` placed there become
//! `ReadVariableOp → AddV2/Sub → AssignVariableOp`. The TF 2.20+ wheels
//! export no `kernels_experimental.h` symbol to update a variable in place
//! (tensorflow#126374); reading and assigning a resource variable work on
//! any pluggable device. `docs/ops.md`, "Variables and training".
//!
//! Ordering is kept: the read takes the original node's control inputs, the
//! assign keeps its name (so every `^name` edge still waits for the update).
//! The arithmetic runs on our device when it has a kernel for that dtype
//! (`on_device`), else on the CPU of the same task (an `int64` step counter).
//! It carries [`WAIT_ATTR`]: our kernel then waits for the device, so a
//! device fault fails the step before the assign swaps the variable's buffer.

use super::device::{self, cpu_of};
use super::nodes::{type_attr, type_value, unique, waits_of};
use super::proto::{AttrValue, GraphDef, NodeDef, attr_value};
use crate::kernels::WAIT_ATTR;
use std::collections::{HashMap, HashSet};

/// Suffixes of the two nodes a rewrite adds.
const READ: &str = "tensorplug_read";
const UPDATE: &str = "tensorplug_update";

/// Rewrites every variable update on devices of `device_type`; returns how
/// many. `on_device(op, dtype)` says whether `op` (`AddV2` or `Sub`) of
/// `dtype` has a kernel on our device.
pub fn split_variable_updates(
    graph: &mut GraphDef,
    device_type: &str,
    mut on_device: impl FnMut(&str, i32) -> bool,
) -> usize {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut added = Vec::new();
    let mut count = 0;
    for node in &mut graph.node {
        let arithmetic = match node.op.as_str() {
            "AssignAddVariableOp" => "AddV2",
            "AssignSubVariableOp" => "Sub",
            _ => continue,
        };
        let data: Vec<&String> = node.input.iter().filter(|i| !i.starts_with('^')).collect();
        let Some(dtype) = type_attr(node, "dtype") else {
            continue;
        };
        if data.len() != 2 || !device::is_ours(&node.device, device_type) {
            continue;
        }
        let (resource, value) = (data[0].clone(), data[1].clone());
        let read_name = unique(&mut names, &node.name, READ);
        let update_name = unique(&mut names, &node.name, UPDATE);
        let update_device = if on_device(arithmetic, dtype) {
            node.device.clone()
        } else {
            cpu_of(&node.device, device_type)
        };
        // The read waits for all the update waited for, its value too.
        let mut read_input = vec![resource.clone()];
        read_input.extend(waits_of(&node.input, &[0]));
        added.push(NodeDef {
            name: read_name.clone(),
            op: "ReadVariableOp".into(),
            input: read_input,
            device: node.device.clone(),
            attr: HashMap::from([("dtype".into(), type_value(dtype))]),
            ..Default::default()
        });
        added.push(NodeDef {
            name: update_name.clone(),
            op: arithmetic.into(),
            input: vec![read_name, value],
            device: update_device,
            attr: HashMap::from([
                ("T".into(), type_value(dtype)),
                (
                    WAIT_ATTR.to_string_lossy().into_owned(),
                    AttrValue {
                        value: Some(attr_value::Value::B(true)),
                    },
                ),
            ]),
            ..Default::default()
        });
        let mut attr: HashMap<String, AttrValue> = node
            .attr
            .drain()
            .filter(|(key, _)| key.starts_with('_'))
            .collect();
        attr.insert("dtype".into(), type_value(dtype));
        attr.insert(
            "validate_shape".into(),
            AttrValue {
                value: Some(attr_value::Value::B(false)),
            },
        );
        node.op = "AssignVariableOp".into();
        node.input = vec![resource, update_name];
        node.attr = attr;
        count += 1;
    }
    graph.node.extend(added);
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::proto::DataType;

    const FPGA: &str = "/job:localhost/replica:0/task:0/device:FPGA:0";

    fn node(name: &str, op: &str, input: &[&str], dtype: DataType) -> NodeDef {
        NodeDef {
            name: name.into(),
            op: op.into(),
            input: input.iter().map(|s| s.to_string()).collect(),
            device: FPGA.into(),
            attr: HashMap::from([("dtype".into(), type_value(dtype as i32))]),
            ..Default::default()
        }
    }

    fn find<'g>(graph: &'g GraphDef, name: &str) -> &'g NodeDef {
        graph.node.iter().find(|n| n.name == name).expect(name)
    }

    #[test]
    fn an_update_becomes_read_arithmetic_assign_keeping_name_and_order() {
        let mut graph = GraphDef {
            node: vec![
                node("v", "VarHandleOp", &[], DataType::DtFloat),
                node("g", "Const", &[], DataType::DtFloat),
                node(
                    "step",
                    "AssignSubVariableOp",
                    &["v", "g", "^before"],
                    DataType::DtFloat,
                ),
                node("after", "NoOp", &["^step"], DataType::DtFloat),
            ],
            ..Default::default()
        };
        let n = split_variable_updates(&mut graph, "FPGA", |op, t| {
            op == "Sub" && t == DataType::DtFloat as i32
        });
        assert_eq!(n, 1);
        let read = find(&graph, "step/tensorplug_read");
        assert_eq!(
            (read.op.as_str(), read.input.clone()),
            (
                "ReadVariableOp",
                vec!["v".to_string(), "^g".into(), "^before".into()]
            )
        );
        let update = find(&graph, "step/tensorplug_update");
        assert_eq!(update.op, "Sub");
        assert_eq!(update.input, ["step/tensorplug_read", "g"]);
        assert_eq!(update.device, FPGA);
        let assign = find(&graph, "step");
        assert_eq!(assign.op, "AssignVariableOp");
        assert_eq!(assign.input, ["v", "step/tensorplug_update"]);
        assert_eq!(
            find(&graph, "after").input,
            ["^step"],
            "successors still wait"
        );
    }

    #[test]
    fn arithmetic_without_a_device_kernel_runs_on_the_cpu_of_the_task() {
        let mut graph = GraphDef {
            node: vec![node(
                "it",
                "AssignAddVariableOp",
                &["c", "one"],
                DataType::DtInt64,
            )],
            ..Default::default()
        };
        assert_eq!(split_variable_updates(&mut graph, "FPGA", |_, _| false), 1);
        let update = find(&graph, "it/tensorplug_update");
        assert_eq!(update.op, "AddV2");
        assert_eq!(
            update.device,
            "/job:localhost/replica:0/task:0/device:CPU:0"
        );
        assert_eq!(find(&graph, "it/tensorplug_read").device, FPGA);
    }

    #[test]
    fn updates_elsewhere_and_names_taken_are_handled() {
        let mut cpu = node("c", "AssignAddVariableOp", &["v", "x"], DataType::DtFloat);
        cpu.device = "/device:CPU:0".into();
        let mut graph = GraphDef {
            node: vec![
                cpu,
                node("a", "AssignAddVariableOp", &["v", "x"], DataType::DtFloat),
                node("a/tensorplug_read", "Const", &[], DataType::DtFloat),
            ],
            ..Default::default()
        };
        assert_eq!(split_variable_updates(&mut graph, "FPGA", |_, _| true), 1);
        assert_eq!(
            find(&graph, "c").op,
            "AssignAddVariableOp",
            "CPU nodes are TF's"
        );
        assert_eq!(find(&graph, "a").input, ["v", "a/tensorplug_update"]);
        assert_eq!(find(&graph, "a/tensorplug_read_1").op, "ReadVariableOp");
    }
}
