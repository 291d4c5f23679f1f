//! A loop's `int32` lists kept on the host.
//!
//! A `while` loop's gradient records the forward loop's integers (the
//! index `i`, each step's `TensorListLength` and `TensorListElementShape`)
//! by pushing them onto `int32` lists, and the backward loop pops them.
//! TF places those lists with the loop, on our device. An integer is in host
//! memory on a device (TF's `HostMemory` convention), but a list element is
//! in device memory: each push copied 4 or 8 bytes to the device, and each
//! pop copied them back, the host waiting for the device's queue. A Keras
//! BiLSTM's training step made about 240 such uploads and 80 such waits.
//!
//! Here each such list, with every node its handle flows through (the
//! loop's `Enter`, `Merge`, `Switch`, `NextIteration` and `Exit`, the list
//! ops), moves to the CPU, where the integers already are.
//!
//! A lowered loop also gives each `NextIteration` a control edge from the
//! body's control outputs (its stateful ops). Across devices TF sends such
//! an edge as a float in device memory, which would bring back one wait per
//! iteration, so a moved `NextIteration` drops its control edges from nodes
//! that stay on our device. The list's pushes and pops are ordered by the
//! handle they pass on; no stateful op reads the list, and the loop's other
//! variables keep their edges, so the next iteration's stateful ops still
//! wait for this one's.

use super::device::{cpu_of, is_ours};
use super::edges::{Input, Uses};
use super::lists::{MAKERS, carried, joined_elsewhere, makers};
use super::nodes::type_attr;
use super::proto::{DataType, GraphDef, NodeDef};
use std::collections::{BTreeSet, HashSet};

/// List ops that read the handle and give integers, not a handle.
const READERS: &[&str] = &[
    "TensorListGetItem",
    "TensorListLength",
    "TensorListElementShape",
    "TensorListStack",
];

/// Moves each `int32` list on a `device_type` device, and every node its
/// handle reaches, to the CPU; returns how many nodes moved. A list is left
/// where it is if its handle reaches an op not listed above, a `Merge` with
/// an input from elsewhere, a node on a third device, or a fetched node.
pub fn keep_int_lists_on_host(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
) -> usize {
    let int32 = Some(DataType::DtInt32 as i32);
    let makers = makers(&graph.node, |n| {
        type_attr(n, "element_dtype") == int32 && is_ours(&n.device, device_type)
    });
    if makers.is_empty() {
        return 0;
    }
    let mut moves = BTreeSet::new();
    {
        let uses = Uses::index(&graph.node);
        for maker in makers {
            if let Some(nodes) = reach(&graph.node, &uses, maker, preserve, device_type) {
                moves.extend(nodes);
            }
        }
    }
    let staying: HashSet<String> = (graph.node.iter().enumerate())
        .filter(|(i, n)| !moves.contains(i) && is_ours(&n.device, device_type))
        .map(|(_, n)| n.name.clone())
        .collect();
    let mut moved = 0;
    for index in moves {
        let node = &mut graph.node[index];
        if is_ours(&node.device, device_type) {
            node.device = cpu_of(&node.device, device_type);
            moved += 1;
        }
        if node.op == "NextIteration" {
            // The body's control outputs: see the module's docs.
            node.input.retain(|t| match Input::parse(t) {
                Input::Control(from) => !staying.contains(from),
                _ => true,
            });
        }
    }
    moved
}

/// Every node the handle made by `maker` reaches, or `None` if the list
/// must stay (see [`keep_int_lists_on_host`]).
fn reach(
    nodes: &[NodeDef],
    uses: &Uses<'_>,
    maker: usize,
    preserve: &HashSet<String>,
    device_type: &str,
) -> Option<BTreeSet<usize>> {
    let mut seen = BTreeSet::from([maker]);
    let mut todo = vec![maker];
    while let Some(index) = todo.pop() {
        let node = &nodes[index];
        let on_device = is_ours(&node.device, device_type) || node.device.contains("device:CPU:");
        if preserve.contains(&node.name) || !on_device {
            return None;
        }
        let carried = if MAKERS.contains(&node.op.as_str()) {
            Some(0)
        } else if let Some(port) = carried(&node.op) {
            port
        } else if READERS.contains(&node.op.as_str()) {
            continue;
        } else {
            return None;
        };
        for u in uses.of(&node.name) {
            let Some(port) = u.port else { continue };
            if carried.is_some_and(|p| p != port) || seen.contains(&u.consumer) {
                continue;
            }
            seen.insert(u.consumer);
            todo.push(u.consumer);
        }
    }
    // A `Merge` joins only this list's handles.
    (!joined_elsewhere(nodes, &seen)).then_some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_nodes::{CPU, FPGA, find, node, typed};

    /// A forward loop that pushes its index onto an `int32` list, and the
    /// backward loop that pops it to index a float list.
    fn index_lists() -> GraphDef {
        GraphDef {
            node: vec![
                typed(
                    node("acc", "EmptyTensorList", &["shape", "max"]),
                    "element_dtype",
                    DataType::DtInt32,
                ),
                node("enter", "Enter", &["acc"]),
                node("merge", "Merge", &["enter", "next"]),
                node("switch", "Switch", &["merge", "cond"]),
                node("body", "Identity", &["switch:1"]),
                node("push", "TensorListPushBack", &["body", "i"]),
                node("next", "NextIteration", &["push", "^body_control"]),
                node("exit", "Exit", &["switch"]),
                node("b_enter", "Enter", &["exit"]),
                node("b_merge", "Merge", &["b_enter", "b_next"]),
                node("b_switch", "Switch", &["b_merge", "b_cond"]),
                node("pop", "TensorListPopBack", &["b_switch:1", "shape"]),
                node("b_next", "NextIteration", &["pop"]),
                node("b_exit", "Exit", &["b_switch"]),
                node("get", "TensorListGetItem", &["floats", "pop:1", "shape"]),
                node("body_control", "NoOp", &[]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn an_index_list_and_its_loop_nodes_move_to_the_cpu() {
        let mut graph = index_lists();
        assert_eq!(
            keep_int_lists_on_host(&mut graph, &HashSet::new(), "FPGA"),
            14
        );
        for name in ["acc", "enter", "merge", "switch", "push", "pop", "b_exit"] {
            assert_eq!(find(&graph, name).device, CPU, "{name}");
        }
        // The popped index's reader, and the loops' conditions, stay.
        assert_eq!(find(&graph, "get").device, FPGA);
        // The body's control edge would cross the devices each iteration.
        assert_eq!(find(&graph, "next").input, ["push"]);
        assert_eq!(find(&graph, "body_control").device, FPGA);
    }

    #[test]
    fn lists_of_floats_fetched_lists_and_unknown_readers_stay() {
        let mut floats = index_lists();
        floats.node[0] = typed(
            node("acc", "EmptyTensorList", &["shape", "max"]),
            "element_dtype",
            DataType::DtFloat,
        );
        let before = floats.clone();
        assert_eq!(
            keep_int_lists_on_host(&mut floats, &HashSet::new(), "FPGA"),
            0
        );
        assert_eq!(floats, before);

        let mut fetched = index_lists();
        let preserve = HashSet::from(["b_exit".to_string()]);
        assert_eq!(keep_int_lists_on_host(&mut fetched, &preserve, "FPGA"), 0);

        let mut read = index_lists();
        read.node
            .push(node("odd", "TensorListConcatV2", &["exit", "shape", "l"]));
        assert_eq!(
            keep_int_lists_on_host(&mut read, &HashSet::new(), "FPGA"),
            0
        );

        // A `Merge` that also joins another list.
        let mut joined = index_lists();
        joined.node[2].input.push("other_list".into());
        assert_eq!(
            keep_int_lists_on_host(&mut joined, &HashSet::new(), "FPGA"),
            0
        );
    }
}
