//! The pass that keeps the variables a graph creates itself on the host:
//! every `VarHandleOp` placed on our device moves to the CPU of its task,
//! with every node its handle reaches (through `Identity`/`IdentityN`): the
//! reads, assigns and updates, which must run where the variable lives.
//!
//! Only TF1-style graphs create variables: a `Session`, the SavedModel V1
//! loader that the TFLite converter and TF Serving run. In TF2 (eager,
//! `tf.function`, Keras) variables are created eagerly and enter a graph
//! as `_Arg` handles, which this pass never sees. TF's C++ tools read such
//! a session's variables straight from the device's resource manager as
//! host memory: the TFLite converter's `LiftVariables` did, and crashed on
//! our device handles. TF itself keeps that session's state off its GPUs
//! (`device_count["GPU"] = 0`, which does not name our device type), so
//! the variables move to the CPU here, before partitioning. The math that
//! reads them stays on our device. `docs/graph-optimizer.md`.

use super::device::{cpu_of, is_ours};
use super::edges::Uses;
use super::proto::GraphDef;

/// Moves the `VarHandleOp`s on a `device_type` device, and every node their
/// handles reach, to the CPU; returns how many nodes moved.
pub fn keep_session_variables_on_host(graph: &mut GraphDef, device_type: &str) -> usize {
    let mut stack: Vec<(usize, Option<u32>)> = graph
        .node
        .iter()
        .enumerate()
        .filter(|(_, n)| n.op == "VarHandleOp" && is_ours(&n.device, device_type))
        .map(|(i, _)| (i, Some(0)))
        .collect();
    if stack.is_empty() {
        return 0;
    }
    let mut moved = vec![false; graph.node.len()];
    let uses = Uses::index(&graph.node);
    let mut to_move = Vec::new();
    // (node, the output port that carries the handle onward, if any).
    while let Some((index, port)) = stack.pop() {
        if std::mem::replace(&mut moved[index], true) {
            continue;
        }
        to_move.push(index);
        let Some(port) = port else { continue };
        for used in uses.of(&graph.node[index].name) {
            let consumer = &graph.node[used.consumer];
            if used.port != Some(port) || !is_ours(&consumer.device, device_type) {
                continue;
            }
            // A forwarding node passes the handle on: follow its output.
            let onward = match consumer.op.as_str() {
                "Identity" => Some(0),
                "IdentityN" => u32::try_from(used.slot).ok(),
                _ => None,
            };
            stack.push((used.consumer, onward));
        }
    }
    for &index in &to_move {
        let node = &mut graph.node[index];
        node.device = cpu_of(&node.device, device_type);
    }
    to_move.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_nodes::{CPU, FPGA, node};

    fn device_of<'g>(graph: &'g GraphDef, name: &str) -> &'g str {
        &graph
            .node
            .iter()
            .find(|n| n.name == name)
            .expect(name)
            .device
    }

    /// The converter's restore graph, cut down: handles forwarded through
    /// `Identity`, restored by `AssignVariableOp`, read for a `MatMul`.
    #[test]
    fn handles_and_their_users_move_and_the_math_stays() {
        let mut graph = GraphDef {
            node: vec![
                node("kernel", "VarHandleOp", &[]),
                node("input/_1", "Identity", &["kernel", "^ctl"]),
                node("restore", "AssignVariableOp", &["input/_1", "RestoreV2:1"]),
                node("pair", "IdentityN", &["x", "input/_1"]),
                node("read", "ReadVariableOp", &["pair:1"]),
                node("use_x", "Relu", &["pair:0"]),
                node("matmul", "MatMul", &["x", "read"]),
                node("after", "NoOp", &["^kernel"]),
            ],
            ..Default::default()
        };
        assert_eq!(keep_session_variables_on_host(&mut graph, "FPGA"), 5);
        for moved in ["kernel", "input/_1", "restore", "pair", "read"] {
            assert_eq!(device_of(&graph, moved), CPU, "{moved}");
        }
        for stays in ["use_x", "matmul", "after"] {
            assert_eq!(device_of(&graph, stays), FPGA, "{stays}");
        }
    }

    #[test]
    fn graphs_without_handles_on_our_device_are_unchanged() {
        let mut cpu_var = node("v", "VarHandleOp", &[]);
        cpu_var.device = CPU.into();
        let mut graph = GraphDef {
            node: vec![
                cpu_var,
                node("arg", "_Arg", &[]),
                node("read", "ReadVariableOp", &["arg"]),
            ],
            ..Default::default()
        };
        let before = graph.clone();
        assert_eq!(keep_session_variables_on_host(&mut graph, "FPGA"), 0);
        assert_eq!(graph, before);
    }
}
