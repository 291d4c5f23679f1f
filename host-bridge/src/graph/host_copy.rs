//! The pass that runs TF's variable ops (gathers, scatters, fused optimizer
//! updates, stateful random ops: [`VARIABLE_OPS`]) for variables on our
//! device: each such node placed there runs TF's own CPU kernel against a
//! host copy of its variables, which is written back when the op writes.
//!
//! ```text
//! X(v, a, ^c)   →   X/tensorplug_read  = ReadVariableOp(v, ^c, ^a)       (our device)
//!                   X/tensorplug_host  = VarHandleOp(anonymous)          (CPU)
//!                   X/tensorplug_load  = AssignVariableOp(host, read)    (CPU)
//!                   X/tensorplug_on_host = X(host, a, ^load)             (CPU)
//!   if X writes:    X/tensorplug_value = ReadVariableOp(host, ^on_host)  (CPU)
//!                   X/tensorplug_store = AssignVariableOp(v, value)      (our device)
//!                   X = Identity(on_host, ^store) | NoOp(^store)         (CPU)
//! ```
//!
//! A read-only op (`ResourceGather`) keeps its name and needs no store. The
//! reads wait for all the original waited for (its control inputs and the
//! producers of its other inputs: TF's dependency optimizer drops a control
//! edge that a data path implies) and the last node keeps its name, so TF's
//! automatic control dependencies still order it. The host
//! variable is anonymous: each run gets its own, freed with its handle, so
//! concurrent runs share nothing. The result is the CPU's, bit for bit; the
//! price is a copy of each variable to the host and, for writes, back.
//! `docs/ops.md`, "Variables and training".

use super::device::{cpu_of, is_ours};
use super::nodes::{type_attr, type_value, unique, waits_of};
use super::proto::{AttrValue, DataType, GraphDef, NodeDef, TensorShapeProto, attr_value};
use crate::variable_ops::{self, Dtype, VariableOp};
use std::collections::{HashMap, HashSet};

/// TF's `ResourceHandle::ANONYMOUS_NAME`: a `VarHandleOp` with this
/// `shared_name` makes a new variable owned by its handle on every run.
pub const ANONYMOUS_NAME: &str = "cd2c89b7-88b7-44c8-ad83-06c2a9158347";

/// Rewrites every variable op on a `device_type` device; returns how many.
pub fn run_on_host_copies(graph: &mut GraphDef, device_type: &str) -> usize {
    let ours = |n: &NodeDef| variable_ops::find(&n.op).is_some() && is_ours(&n.device, device_type);
    if !graph.node.iter().any(ours) {
        return 0;
    }
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut added = Vec::new();
    let mut count = 0;
    for node in &mut graph.node {
        if let Some(op) = variable_ops::find(&node.op).filter(|_| ours(node)) {
            count += usize::from(rewrite(node, op, device_type, &mut names, &mut added));
        }
    }
    graph.node.extend(added);
    count
}

/// Rewrites `node`, an `op` on our device, adding nodes to `added`; false
/// (nothing changed) when its attrs or inputs are not what the op has.
fn rewrite(
    node: &mut NodeDef,
    op: &VariableOp,
    device_type: &str,
    names: &mut HashSet<String>,
    added: &mut Vec<NodeDef>,
) -> bool {
    let Some(dtype) = dtype_of(node, op.dtype) else {
        return false;
    };
    let output = match op.output.map(|d| dtype_of(node, d)) {
        Some(None) => return false,
        Some(Some(t)) => Some(t),
        None => None,
    };
    let data: Vec<String> = node
        .input
        .iter()
        .filter(|i| !i.starts_with('^'))
        .cloned()
        .collect();
    if op.variables.iter().any(|&slot| slot >= data.len()) {
        return false;
    }
    let mut nodes = Added {
        names,
        added,
        base: node.name.clone(),
        device: node.device.clone(),
        cpu: cpu_of(&node.device, device_type),
        dtype,
    };
    // The reads wait for all the original waited for.
    let waits = waits_of(&node.input, op.variables);
    let mut host_inputs = data.clone();
    let mut loads = Vec::new();
    for &slot in op.variables {
        let (host, load) = nodes.load(&data[slot], &waits);
        host_inputs[slot] = host;
        loads.push(format!("^{load}"));
    }
    host_inputs.extend(loads);
    if !op.writes {
        node.device = nodes.cpu;
        node.input = host_inputs;
        return true;
    }
    let mut on_host = node.clone();
    on_host.name = unique(nodes.names, &node.name, "tensorplug_on_host");
    on_host.device = nodes.cpu.clone();
    on_host.input = host_inputs;
    let stores: Vec<String> = op
        .variables
        .iter()
        .map(|&slot| {
            let host = &on_host.input[slot];
            format!("^{}", nodes.store(&data[slot], host, &on_host.name))
        })
        .collect();
    *node = last_node(node, &on_host.name, output, stores, &nodes.cpu);
    nodes.added.push(on_host);
    true
}

/// The element type `source` names on `node`.
fn dtype_of(node: &NodeDef, source: Dtype) -> Option<i32> {
    match source {
        Dtype::Attr(key) => type_attr(node, key),
        Dtype::Int64 => Some(DataType::DtInt64 as i32),
    }
}

/// The nodes one rewrite adds.
struct Added<'a> {
    names: &'a mut HashSet<String>,
    added: &'a mut Vec<NodeDef>,
    base: String,
    device: String,
    cpu: String,
    dtype: i32,
}

impl Added<'_> {
    /// Reads `variable` on our device into a new host variable: returns
    /// the host variable's handle node and the node that fills it.
    fn load(&mut self, variable: &str, waits: &[String]) -> (String, String) {
        let read = self.add("tensorplug_read", "ReadVariableOp", &self.device.clone(), {
            let mut input = vec![variable.to_owned()];
            input.extend(waits.iter().cloned());
            input
        });
        let host = self.add(
            "tensorplug_host",
            "VarHandleOp",
            &self.cpu.clone(),
            Vec::new(),
        );
        self.set_attrs(&host, anonymous_handle_attrs());
        let load = self.add(
            "tensorplug_load",
            "AssignVariableOp",
            &self.cpu.clone(),
            vec![host.clone(), read],
        );
        self.set_attrs(&load, [validate_shape_off()]);
        (host, load)
    }

    /// Writes the host variable `host` back into `variable` after `after`;
    /// returns the store node.
    fn store(&mut self, variable: &str, host: &str, after: &str) -> String {
        let value = self.add(
            "tensorplug_value",
            "ReadVariableOp",
            &self.cpu.clone(),
            vec![host.to_owned(), format!("^{after}")],
        );
        let store = self.add(
            "tensorplug_store",
            "AssignVariableOp",
            &self.device.clone(),
            vec![variable.to_owned(), value],
        );
        self.set_attrs(&store, [validate_shape_off()]);
        store
    }

    /// Adds `<base>/<suffix>` with a `dtype` attr; returns its name.
    fn add(&mut self, suffix: &str, op: &str, device: &str, input: Vec<String>) -> String {
        let name = unique(self.names, &self.base, suffix);
        self.added.push(NodeDef {
            name: name.clone(),
            op: op.into(),
            input,
            device: device.into(),
            attr: HashMap::from([("dtype".into(), type_value(self.dtype))]),
            ..Default::default()
        });
        name
    }

    fn set_attrs(&mut self, name: &str, attrs: impl IntoIterator<Item = (String, AttrValue)>) {
        if let Some(node) = self.added.iter_mut().rev().find(|n| n.name == name) {
            node.attr.extend(attrs);
        }
    }
}

/// `VarHandleOp`'s attrs for an anonymous variable of any shape.
fn anonymous_handle_attrs() -> [(String, AttrValue); 3] {
    let value = |v| AttrValue { value: Some(v) };
    [
        (
            "shape".into(),
            value(attr_value::Value::Shape(TensorShapeProto {
                dim: Vec::new(),
                unknown_rank: true,
            })),
        ),
        ("container".into(), value(attr_value::Value::S(Vec::new()))),
        (
            "shared_name".into(),
            value(attr_value::Value::S(ANONYMOUS_NAME.into())),
        ),
    ]
}

fn validate_shape_off() -> (String, AttrValue) {
    (
        "validate_shape".into(),
        AttrValue {
            value: Some(attr_value::Value::B(false)),
        },
    )
}

/// The node that keeps the original's name: its output (`Identity`) or
/// nothing (`NoOp`), after every store.
fn last_node(
    original: &NodeDef,
    on_host: &str,
    output: Option<i32>,
    stores: Vec<String>,
    cpu: &str,
) -> NodeDef {
    let mut attr: HashMap<String, AttrValue> = original
        .attr
        .iter()
        .filter(|(key, _)| key.starts_with('_'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (op, mut input) = match output {
        Some(dtype) => {
            attr.insert("T".into(), type_value(dtype));
            ("Identity", vec![on_host.to_owned()])
        }
        None => ("NoOp", Vec::new()),
    };
    input.extend(stores);
    NodeDef {
        name: original.name.clone(),
        op: op.into(),
        input,
        device: cpu.into(),
        attr,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::graph::test_nodes::{CPU, FPGA, find};

    fn node(name: &str, op: &str, input: &[&str], attrs: &[(&str, DataType)]) -> NodeDef {
        NodeDef {
            name: name.into(),
            op: op.into(),
            input: input.iter().map(|s| s.to_string()).collect(),
            device: FPGA.into(),
            attr: attrs
                .iter()
                .map(|(k, t)| (k.to_string(), type_value(*t as i32)))
                .collect(),
            ..Default::default()
        }
    }

    fn shared_name(node: &NodeDef) -> &[u8] {
        match node.attr.get("shared_name").and_then(|v| v.value.as_ref()) {
            Some(attr_value::Value::S(s)) => s,
            _ => panic!("no shared_name on {}", node.name),
        }
    }

    #[test]
    fn a_fused_update_runs_on_host_copies_and_writes_every_variable_back() {
        let f32 = DataType::DtFloat;
        let mut graph = GraphDef {
            node: vec![node(
                "adam",
                "ResourceApplyAdam",
                &["var", "m", "v", "b1p", "^prev"],
                &[("T", f32)],
            )],
            ..Default::default()
        };
        assert_eq!(run_on_host_copies(&mut graph, "FPGA"), 1);
        let on_host = find(&graph, "adam/tensorplug_on_host");
        assert_eq!(on_host.op, "ResourceApplyAdam");
        assert_eq!(on_host.device, CPU);
        assert_eq!(
            on_host.input,
            [
                "adam/tensorplug_host",
                "adam/tensorplug_host_1",
                "adam/tensorplug_host_2",
                "b1p",
                "^adam/tensorplug_load",
                "^adam/tensorplug_load_1",
                "^adam/tensorplug_load_2",
            ]
        );
        let read = find(&graph, "adam/tensorplug_read_1");
        assert_eq!(
            (read.input.as_slice(), read.device.as_str()),
            (&["m".to_string(), "^b1p".into(), "^prev".into()][..], FPGA)
        );
        let host = find(&graph, "adam/tensorplug_host");
        assert_eq!(
            (host.op.as_str(), host.device.as_str()),
            ("VarHandleOp", CPU)
        );
        assert_eq!(shared_name(host), ANONYMOUS_NAME.as_bytes());
        let store = find(&graph, "adam/tensorplug_store_2");
        assert_eq!(store.op, "AssignVariableOp");
        assert_eq!(
            (store.input[0].as_str(), store.device.as_str()),
            ("v", FPGA)
        );
        let value = find(&graph, &store.input[1]);
        assert_eq!(
            value.input,
            ["adam/tensorplug_host_2", "^adam/tensorplug_on_host"]
        );
        let last = find(&graph, "adam");
        assert_eq!(last.op, "NoOp");
        assert_eq!(
            last.input,
            [
                "^adam/tensorplug_store",
                "^adam/tensorplug_store_1",
                "^adam/tensorplug_store_2"
            ]
        );
    }

    #[test]
    fn a_gather_keeps_its_name_and_writes_nothing_back() {
        let mut graph = GraphDef {
            node: vec![node(
                "lookup",
                "ResourceGather",
                &["table", "ids"],
                &[
                    ("dtype", DataType::DtFloat),
                    ("Tindices", DataType::DtInt32),
                ],
            )],
            ..Default::default()
        };
        assert_eq!(run_on_host_copies(&mut graph, "FPGA"), 1);
        let lookup = find(&graph, "lookup");
        assert_eq!(lookup.op, "ResourceGather");
        assert_eq!(lookup.device, CPU);
        assert_eq!(
            lookup.input,
            ["lookup/tensorplug_host", "ids", "^lookup/tensorplug_load"]
        );
        assert!(graph.node.iter().all(|n| !n.name.contains("store")));
    }

    #[test]
    fn an_op_with_an_output_and_a_write_ends_in_an_identity() {
        let mut graph = GraphDef {
            node: vec![node(
                "rng",
                "RngReadAndSkip",
                &["state", "alg", "delta"],
                &[],
            )],
            ..Default::default()
        };
        assert_eq!(run_on_host_copies(&mut graph, "FPGA"), 1);
        let last = find(&graph, "rng");
        assert_eq!(last.op, "Identity");
        assert_eq!(
            last.input,
            ["rng/tensorplug_on_host", "^rng/tensorplug_store"]
        );
        assert_eq!(type_attr(last, "T"), Some(DataType::DtInt64 as i32));
        assert_eq!(
            type_attr(find(&graph, "rng/tensorplug_read"), "dtype"),
            Some(DataType::DtInt64 as i32)
        );
    }

    #[test]
    fn other_devices_other_ops_and_malformed_nodes_are_left_alone() {
        let mut cpu = node(
            "c",
            "ResourceScatterAdd",
            &["v", "i", "u"],
            &[("dtype", DataType::DtFloat)],
        );
        cpu.device = CPU.into();
        let mut graph = GraphDef {
            node: vec![
                cpu,
                node(
                    "r",
                    "ReadVariableOp",
                    &["v"],
                    &[("dtype", DataType::DtFloat)],
                ),
                node("no_dtype", "ResourceScatterAdd", &["v", "i", "u"], &[]),
                node(
                    "short",
                    "ResourceApplyAdam",
                    &["var"],
                    &[("T", DataType::DtFloat)],
                ),
            ],
            ..Default::default()
        };
        let before = graph.clone();
        assert_eq!(run_on_host_copies(&mut graph, "FPGA"), 0);
        assert_eq!(graph, before);
    }
}
