//! A program node's native segment: its members as the TF nodes they
//! were, on their device, run op by op only when the program node says
//! the device refused the program (`ran` false), as TF lowers an `If`
//! (`Switch`/`Merge`):
//!
//! - `ran` gates every copy through a control edge from `Identity(
//!   Switch(true, ran):0)`, live only when `ran` is false: otherwise the
//!   copies are dead and run nothing (the copies read the program's
//!   inputs where they are: no tensor crosses a device for them);
//! - each result is `Merge(Switch(program:k, ran):1, copy)` on the
//!   program's device, which the program's readers read.
//!
//! `docs/device-programs.md`, "The native segment".

use super::edges::Input;
use super::nodes::{type_value, unique, value};
use super::proto::{DataType, GraphDef, NodeDef, TensorProto, TensorShapeProto, attr_value};
use std::collections::{HashMap, HashSet};

/// The program node `program` (on `device`) replaced `members` (as they
/// were, in a topological order), whose results are `outputs`
/// (`member:port`, the program's results in order). Adds the native
/// segment and points the program's readers at the merges.
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
    // program's device keeps the gate there, beside `ran`.
    let token = unique(&mut names, &base, "gate_token");
    added.push(bool_constant(&token, device));
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
    let copy_of: HashMap<&str, String> = members
        .iter()
        .map(|m| (m.name.as_str(), unique(&mut names, &base, &m.name)))
        .collect();
    for m in members {
        let mut copy = m.clone();
        copy.name = copy_of[m.name.as_str()].clone();
        for text in &mut copy.input {
            if let Input::Data { node, port } = Input::parse(text)
                && let Some(c) = copy_of.get(node)
            {
                *text = format!("{c}:{port}");
            }
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
        let result = format!("{program}:{k}");
        let sw = unique(&mut names, &base, &format!("result_{k}_switch"));
        added.push(switch(&sw, device, &result, &ran, DataType::DtFloat));
        let merge = unique(&mut names, &base, &format!("result_{k}"));
        let inputs = vec![format!("{sw}:1"), format!("{copy}:{port}")];
        let mut m = op_node(&merge, "Merge", device, inputs, DataType::DtFloat);
        m.attr.insert("N".into(), value(attr_value::Value::I(2)));
        added.push(m);
        merges.insert(result, format!("{merge}:0"));
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
