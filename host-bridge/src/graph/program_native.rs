//! A program node's native segment: its members as the TF nodes they
//! were, on their device, run op by op only when the program node says
//! the device refused the program (`ran` false), as TF lowers an `If`
//! (`Switch`/`Merge`):
//!
//! - `ran` gates every copy through a control edge from `Identity(
//!   Switch(true, ran):0)`, live only when `ran` is false: otherwise the
//!   copies are dead and run nothing;
//! - an input made off the program's device (host data, a CPU variable's
//!   read) reaches the copies through `Switch(x, ran):0` on its own
//!   device, so it crosses to the device only when they run (the program
//!   uploads it itself, and a CPU weight once);
//! - each result is `Merge(Switch(program:k, ran):1, copy)` on the
//!   program's device, which the program's readers read; it has the name
//!   of the member whose output it is, so their inputs read as before.
//!
//! `docs/device-programs.md`, "The native segment".

use super::edges::Input;
use super::nodes::{type_value, unique, value};
use super::proto::{DataType, GraphDef, NodeDef, TensorProto, TensorShapeProto, attr_value};
use crate::kernels::program::lower::{input_type, output_type, tf_data_type};
use std::collections::{HashMap, HashSet};

/// The program node `program` (on `device`) replaced `members` (as they
/// were, in a topological order), whose results are `outputs`
/// (`member:port`, the program's results in order). Adds the native
/// segment and its merges: a merge of port 0 takes its member's name,
/// which the readers still read; the readers of another port are pointed
/// at its merge.
pub fn attach(
    graph: &mut GraphDef,
    program: &str,
    device: &str,
    members: &[NodeDef],
    outputs: &[String],
) {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let ran = format!("{program}:{}", outputs.len());
    let mut added: Vec<NodeDef> = Vec::new();
    let base = format!("{program}/native");
    // TF places a `Switch` with its data input: a constant of the
    // program's device keeps the gate there, beside `ran`. Its control
    // input puts it in the program's frame (a `while` body's).
    let token = unique(&mut names, &base, "gate_token");
    let mut constant = bool_constant(&token, device);
    constant.input.push(format!("^{program}"));
    added.push(constant);
    let gate_switch = unique(&mut names, &base, "gate_switch");
    added.push(switch(&gate_switch, device, &token, &ran, DataType::DtBool));
    let gate = unique(&mut names, &base, "gate");
    let gate_input = vec![format!("{gate_switch}:0")];
    added.push(op_node(
        &gate,
        "Identity",
        device,
        gate_input,
        DataType::DtBool,
    ));
    let devices: HashMap<&str, (&str, &str)> = graph
        .node
        .iter()
        .map(|n| (n.name.as_str(), (n.device.as_str(), n.op.as_str())))
        .collect();
    let mut gated: HashMap<String, String> = HashMap::new();
    let copy_of: HashMap<&str, String> = members
        .iter()
        .map(|m| (m.name.as_str(), unique(&mut names, &base, &m.name)))
        .collect();
    for m in members {
        let mut copy = m.clone();
        copy.name = copy_of[m.name.as_str()].clone();
        for (slot, text) in copy.input.iter_mut().enumerate() {
            let Input::Data { node, port } = Input::parse(text) else {
                continue;
            };
            if let Some(c) = copy_of.get(node) {
                *text = format!("{c}:{port}");
                continue;
            }
            let Some(&(at, op)) = devices.get(node) else {
                continue;
            };
            if at == device || op == "Const" {
                continue;
            }
            let edge = format!("{node}:{port}");
            *text = gated
                .entry(edge.clone())
                .or_insert_with(|| {
                    let name = unique(&mut names, &base, &format!("{node}_{port}_switch"));
                    let t = tf_data_type(input_type(m, slot));
                    added.push(switch(&name, at, &edge, &ran, t));
                    format!("{name}:0")
                })
                .clone();
        }
        copy.input.push(format!("^{gate}"));
        added.push(copy);
    }
    let mut merges: HashMap<String, String> = HashMap::new();
    for (k, edge) in outputs.iter().enumerate() {
        let Input::Data { node, port } = Input::parse(edge) else {
            continue;
        };
        let Some(copy) = copy_of.get(node) else {
            continue;
        };
        let t = members
            .iter()
            .find(|m| m.name == node)
            .map_or(DataType::DtFloat, |m| tf_data_type(output_type(m)));
        let result = format!("{program}:{k}");
        let sw = unique(&mut names, &base, &format!("result_{k}_switch"));
        added.push(switch(&sw, device, &result, &ran, t));
        // A result of port 0 takes its member's name (free: the members
        // left the graph), which its readers still read: TF sorts a
        // commutative op's inputs by name (Grappler's canonicalization),
        // and an `AddN` of three or more sums in that order.
        let merge = if port == 0 {
            let free = names.insert(node.to_string());
            debug_assert!(free, "{node} is still in the graph");
            node.to_string()
        } else {
            let merge = unique(&mut names, &base, &format!("result_{k}"));
            merges.insert(result.clone(), format!("{merge}:0"));
            merge
        };
        let inputs = vec![format!("{sw}:1"), format!("{copy}:{port}")];
        let mut m = op_node(&merge, "Merge", device, inputs, t);
        m.attr.insert("N".into(), value(attr_value::Value::I(2)));
        added.push(m);
    }
    for node in &mut graph.node {
        for text in &mut node.input {
            if let Some(merged) = merges.get(text.as_str()) {
                *text = merged.clone();
            }
        }
    }
    graph.node.extend(added);
}

fn op_node(name: &str, op: &str, device: &str, input: Vec<String>, t: DataType) -> NodeDef {
    let mut node = NodeDef {
        name: name.into(),
        op: op.into(),
        device: device.into(),
        input,
        ..Default::default()
    };
    node.attr.insert("T".into(), type_value(t as i32));
    node
}

/// A scalar `true` on `device`.
fn bool_constant(name: &str, device: &str) -> NodeDef {
    let tensor = TensorProto {
        dtype: DataType::DtBool as i32,
        tensor_shape: Some(TensorShapeProto::default()),
        bool_val: vec![true],
        ..Default::default()
    };
    let mut node = NodeDef {
        name: name.into(),
        op: "Const".into(),
        device: device.into(),
        ..Default::default()
    };
    node.attr
        .insert("dtype".into(), type_value(DataType::DtBool as i32));
    node.attr
        .insert("value".into(), value(attr_value::Value::Tensor(tensor)));
    node
}

fn switch(name: &str, device: &str, data: &str, pred: &str, t: DataType) -> NodeDef {
    op_node(name, "Switch", device, vec![data.into(), pred.into()], t)
}
