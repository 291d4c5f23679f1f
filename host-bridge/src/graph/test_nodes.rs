//! `NodeDef`s for the passes' unit tests.

use super::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value::Value};

/// A full device name of our device, as TF writes it after placement.
pub const FPGA: &str = "/job:localhost/replica:0/task:0/device:FPGA:0";
/// The CPU of the same task.
pub const CPU: &str = "/job:localhost/replica:0/task:0/device:CPU:0";

/// A node on [`FPGA`] with no attrs.
pub fn node(name: &str, op: &str, input: &[&str]) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: op.into(),
        input: input.iter().map(|s| s.to_string()).collect(),
        device: FPGA.into(),
        ..Default::default()
    }
}

/// `n` with the `type` attr `key` set to `dtype`.
pub fn typed(mut n: NodeDef, key: &str, dtype: super::proto::DataType) -> NodeDef {
    n.attr
        .insert(key.into(), super::nodes::type_value(dtype as i32));
    n
}

/// The node called `name`; panics naming it when there is none.
pub fn find<'g>(graph: &'g GraphDef, name: &str) -> &'g NodeDef {
    graph.node.iter().find(|n| n.name == name).expect(name)
}

/// A float node on [`FPGA`] (its `T` is `float`) with `attrs` besides.
pub fn float_node(name: &str, op: &str, input: &[&str], attrs: &[(&str, Value)]) -> NodeDef {
    let mut n = node(name, op, input);
    for (k, v) in attrs
        .iter()
        .cloned()
        .chain([("T", Value::Type(DataType::DtFloat as i32))])
    {
        n.attr.insert(k.to_owned(), AttrValue { value: Some(v) });
    }
    n
}
