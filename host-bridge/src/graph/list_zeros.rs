//! Zeros of a list a loop only reads, made on our device.
//!
//! A loop's gradient starts the accumulator of its input list (`list_grads.rs`)
//! as `ZerosLike(Exit(list))`, a `variant` `ZerosLike`. TF 2.19 and later
//! give a plugin no way to run that (`kernels/ops/variant.rs`), so it ran on
//! the CPU, and each loop copied every element of the list to the host and
//! back (a Keras BiLSTM's step: 320 copies of 4 KiB).
//!
//! Where the loop passes the list through unchanged (its `NextIteration`
//! takes the `Switch`'s output through `Identity`s only) and the list is a
//! `TensorListFromTensor(t, shape)` on our device, its zeros are
//! `TensorListFromTensor(ZerosLike(t), shape)`: the same list (every element
//! set, to zeros of its shape), made by one device fill.

use super::device::is_ours;
use super::edges::Input;
use super::nodes::{type_attr, type_value};
use super::proto::{DataType, GraphDef, NodeDef};
use std::collections::{HashMap, HashSet};

/// Rewrites each such `ZerosLike`, where `runs(node)` says our device has a
/// kernel for each new node; returns how many it rewrote.
pub fn zeros_of_read_only_lists(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
    mut runs: impl FnMut(&NodeDef) -> bool,
) -> usize {
    let variant = DataType::DtVariant as i32;
    let mut rewrites = Vec::new();
    {
        let by_name: HashMap<&str, &NodeDef> =
            graph.node.iter().map(|n| (n.name.as_str(), n)).collect();
        for (index, node) in graph.node.iter().enumerate() {
            if node.op != "ZerosLike"
                || type_attr(node, "T") != Some(variant)
                || preserve.contains(&node.name)
            {
                continue;
            }
            let Some(list) = read_only_source(&by_name, node, device_type) else {
                continue;
            };
            let mut list_inputs = list.input.iter().filter(|t| !t.starts_with('^'));
            let (Some(tensor), Some(shape)) = (list_inputs.next(), list_inputs.next()) else {
                continue;
            };
            let zeros = NodeDef {
                name: format!("{}/elements", node.name),
                op: "ZerosLike".into(),
                input: vec![tensor.clone()],
                device: list.device.clone(),
                attr: [("T".to_string(), type_value(DataType::DtFloat as i32))].into(),
                ..Default::default()
            };
            let mut from = list.clone();
            from.name = node.name.clone();
            from.input = vec![zeros.name.clone(), shape.clone()];
            from.input
                .extend(node.input.iter().filter(|t| t.starts_with('^')).cloned());
            if by_name.contains_key(zeros.name.as_str()) || !runs(&zeros) || !runs(&from) {
                continue;
            }
            rewrites.push((index, from, zeros));
        }
    }
    let count = rewrites.len();
    for (index, from, zeros) in rewrites {
        // The ZerosLike's name stays, so its consumers read the new list.
        graph.node[index] = from;
        graph.node.push(zeros);
    }
    count
}

/// The float32 `TensorListFromTensor` on our device that `zeros_like`'s
/// input is, through a loop that passes it through unchanged:
/// `Exit ← Switch:0 ← Merge(Enter ← it, NextIteration ← Identity* ← Switch:1)`.
fn read_only_source<'g>(
    by_name: &HashMap<&str, &'g NodeDef>,
    zeros_like: &'g NodeDef,
    device_type: &str,
) -> Option<&'g NodeDef> {
    let data = |node: &NodeDef, slot: usize| -> Option<(&'g NodeDef, u32)> {
        match Input::parse(
            node.input
                .iter()
                .filter(|t| !t.starts_with('^'))
                .nth(slot)?,
        ) {
            Input::Data { node, port } => Some((by_name.get(node)?, port)),
            _ => None,
        }
    };
    let one = |node: &'g NodeDef, slot, op: &str, port| {
        data(node, slot).filter(|&(n, p)| n.op == op && p == port)
    };
    let (exit, _) = one(zeros_like, 0, "Exit", 0)?;
    let (switch, _) = one(exit, 0, "Switch", 0)?;
    let (merge, _) = one(switch, 0, "Merge", 0)?;
    if merge.input.iter().filter(|t| !t.starts_with('^')).count() != 2 {
        return None;
    }
    let (enter, _) = one(merge, 0, "Enter", 0)?;
    let (next, _) = one(merge, 1, "NextIteration", 0)?;
    let (mut back, mut port) = data(next, 0)?;
    while back.op == "Identity" {
        (back, port) = data(back, 0)?;
    }
    if back.name != switch.name || port != 1 {
        return None;
    }
    let (list, _) = one(enter, 0, "TensorListFromTensor", 0)?;
    let float = Some(DataType::DtFloat as i32);
    (is_ours(&list.device, device_type) && type_attr(list, "element_dtype") == float)
        .then_some(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_nodes::{CPU, FPGA, find, node, typed};

    /// A Keras RNN's forward loop over its input list, and the zeros its
    /// gradient starts from.
    fn read_only_loop() -> GraphDef {
        let mut zeros = typed(
            node("zeros_like", "ZerosLike", &["exit"]),
            "T",
            DataType::DtVariant,
        );
        zeros.device = CPU.into();
        GraphDef {
            node: vec![
                typed(
                    node("list", "TensorListFromTensor", &["x", "shape"]),
                    "element_dtype",
                    DataType::DtFloat,
                ),
                node("enter", "Enter", &["list"]),
                node("merge", "Merge", &["enter", "next"]),
                node("switch", "Switch", &["merge", "cond"]),
                node("body_input", "Identity", &["switch:1", "^ctl"]),
                node("next", "NextIteration", &["body_input"]),
                node("read", "TensorListGetItem", &["body_input", "i", "shape"]),
                node("exit", "Exit", &["switch"]),
                zeros,
                node("grad_enter", "Enter", &["zeros_like"]),
            ],
            ..Default::default()
        }
    }

    fn all(_: &NodeDef) -> bool {
        true
    }

    #[test]
    fn zeros_of_a_read_only_list_are_made_from_its_tensor_on_our_device() {
        let mut graph = read_only_loop();
        assert_eq!(
            zeros_of_read_only_lists(&mut graph, &HashSet::new(), "FPGA", all),
            1
        );
        let list = find(&graph, "zeros_like");
        assert_eq!(list.op, "TensorListFromTensor");
        assert_eq!(list.input, ["zeros_like/elements", "shape"]);
        assert_eq!(list.device, FPGA);
        let zeros = find(&graph, "zeros_like/elements");
        assert_eq!(
            (zeros.op.as_str(), zeros.device.as_str()),
            ("ZerosLike", FPGA)
        );
        assert_eq!(zeros.input, ["x"]);
        assert_eq!(find(&graph, "grad_enter").input, ["zeros_like"]);
    }

    #[test]
    fn a_list_the_loop_changes_keeps_tf_s_zeros() {
        // The body sets an element: the list at the exit is not the input's.
        let mut graph = read_only_loop();
        graph
            .node
            .push(node("set", "TensorListSetItem", &["body_input", "i", "v"]));
        graph.node[5].input = vec!["set".into()];
        let before = graph.clone();
        assert_eq!(
            zeros_of_read_only_lists(&mut graph, &HashSet::new(), "FPGA", all),
            0
        );
        assert_eq!(graph, before);
        // Fetched, or without a kernel for the new nodes: unchanged too.
        let fetched = HashSet::from(["zeros_like".to_string()]);
        let mut graph = read_only_loop();
        assert_eq!(
            zeros_of_read_only_lists(&mut graph, &fetched, "FPGA", all),
            0
        );
        let mut graph = read_only_loop();
        let no_zeros = |n: &NodeDef| n.op != "ZerosLike";
        assert_eq!(
            zeros_of_read_only_lists(&mut graph, &HashSet::new(), "FPGA", no_zeros),
            0
        );
    }
}
