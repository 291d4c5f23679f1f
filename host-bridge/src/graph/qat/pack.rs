//! After the rewrite: the CPU values the `Qat` ops on our device read
//! (variables, ranges, batch-norm folds) gathered by one `QatPack` on the
//! CPU, and those ops turned into their packed forms. TF's partitioner
//! gives each CPU tensor a device reads its own `_Send`/`_Recv` pair; for
//! MobileNetV2 that was about 400 a step, now one.
//!
//! Left alone: graphs with loops or conditionals (a pack must not join
//! values of different frames, or wait on a dead branch), and `Qat` ops
//! that read no CPU value other than constants (a frozen QDQ graph's, which
//! TF's constant folding computes once).

use super::super::device::{cpu_of, is_ours};
use super::super::edges::Input;
use super::super::nodes::unique;
use super::super::proto::{AttrValue, GraphDef, NodeDef, attr_value};
use crate::kernels::ops::int8::op_name;
use crate::kernels::qat::{ADD_BLOCK, CONV_BLOCK, PACK, PACKED, TENSOR_BLOCK, WEIGHTS};
use std::collections::{HashMap, HashSet};

/// Ops that make a frame or a dead branch.
const CONTROL_FLOW: [&str; 7] = [
    "Enter",
    "Exit",
    "Switch",
    "Merge",
    "NextIteration",
    "RefEnter",
    "RefSwitch",
];

/// `Qat` ops per pack, in graph order: the first layers' parameters need
/// not wait for the whole model's (measured on QAT MobileNetV2, 120 `Qat`
/// ops: one pack or packs of 16 were within the noise of each other).
const READERS_PER_PACK: usize = 16;

/// Packs the CPU inputs of the `Qat` ops on `device_type` devices; returns
/// how many ops now read a pack.
pub fn pack_host_inputs(graph: &mut GraphDef, device_type: &str) -> usize {
    if graph
        .node
        .iter()
        .any(|n| CONTROL_FLOW.contains(&n.op.as_str()))
    {
        return 0;
    }
    let qat_ops: HashSet<String> = [WEIGHTS, CONV_BLOCK, ADD_BLOCK, TENSOR_BLOCK]
        .iter()
        .map(|s| name(device_type, s))
        .collect();
    // Producer name → (on a CPU, a constant).
    let producers: HashMap<&str, (bool, bool)> = graph
        .node
        .iter()
        .map(|n| {
            let cpu = !n.device.is_empty() && !is_ours(&n.device, device_type);
            (n.name.as_str(), (cpu, n.op == "Const"))
        })
        .collect();
    let from_cpu = |text: &str| match Input::parse(text) {
        Input::Data { node, port } => producers
            .get(node)
            .filter(|(cpu, _)| *cpu)
            .map(|&(_, constant)| (format!("{node}:{port}"), constant)),
        _ => None,
    };
    // Per device, in graph order: the ops to pack and their CPU tensors.
    let mut groups: HashMap<String, Vec<(usize, Vec<String>)>> = HashMap::new();
    for (at, n) in graph.node.iter().enumerate() {
        if !qat_ops.contains(&n.op) || !is_ours(&n.device, device_type) {
            continue;
        }
        let inputs: Vec<(String, bool)> = n.input.iter().filter_map(|i| from_cpu(i)).collect();
        if inputs.iter().all(|(_, constant)| *constant) {
            continue;
        }
        let tensors = inputs.into_iter().map(|(t, _)| t).collect();
        groups
            .entry(n.device.clone())
            .or_default()
            .push((at, tensors));
    }
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut devices: Vec<_> = groups.into_iter().collect();
    devices.sort();
    // Per reader: its new inputs and `packed_inputs`; per chunk: a pack.
    let mut edits = Vec::new();
    let mut packs = Vec::new();
    for (device, readers) in devices {
        for chunk in readers.chunks(READERS_PER_PACK) {
            let pack = unique(&mut names, "tensorplug_qat", "pack");
            let mut packed: Vec<String> = Vec::new();
            let mut index: HashMap<String, usize> = HashMap::new();
            for tensor in chunk.iter().flat_map(|(_, tensors)| tensors) {
                if !index.contains_key(tensor) {
                    index.insert(tensor.clone(), packed.len());
                    packed.push(tensor.clone());
                }
            }
            for &(at, _) in chunk {
                let mut inputs = vec![pack.clone()];
                let map: Vec<i64> = graph.node[at]
                    .input
                    .iter()
                    .map(|text| {
                        let tensor = from_cpu(text).map(|(t, _)| t);
                        match tensor.and_then(|t| index.get(&t).copied()) {
                            Some(entry) => entry as i64,
                            None => {
                                inputs.push(text.clone());
                                -1
                            }
                        }
                    })
                    .collect();
                edits.push((at, inputs, map));
            }
            let mut node = NodeDef {
                name: pack,
                op: name(device_type, PACK),
                device: cpu_of(&device, device_type),
                input: packed,
                ..Default::default()
            };
            let n = node.input.len() as i64;
            set(&mut node, "N", attr_value::Value::I(n));
            packs.push(node);
        }
    }
    let count = edits.len();
    for (at, inputs, map) in edits {
        let n = &mut graph.node[at];
        n.op = format!("{}{PACKED}", n.op);
        set(n, "M", attr_value::Value::I(inputs.len() as i64 - 1));
        n.input = inputs;
        let list = attr_value::ListValue {
            i: map,
            ..Default::default()
        };
        set(n, "packed_inputs", attr_value::Value::List(list));
    }
    graph.node.extend(packs);
    count
}

fn name(device_type: &str, suffix: &str) -> String {
    op_name(device_type, suffix).to_string_lossy().into_owned()
}

fn set(node: &mut NodeDef, key: &str, value: attr_value::Value) {
    node.attr
        .insert(key.into(), AttrValue { value: Some(value) });
}
