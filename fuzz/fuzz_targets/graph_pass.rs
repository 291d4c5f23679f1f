//! Fuzzes the graph pass on what TF hands it: a serialized `GraphDef`.
//!
//! An input whose first byte is odd is the rest as GraphDef bytes: the
//! corpus is seeded with the graphs TF gave the pass in
//! `host-bridge/src/graph/testdata` (`cargo xtask fuzz` copies them in),
//! which libFuzzer then mutates.
//!
//! Otherwise structure-aware: the input describes a graph over the ops the pass
//! fuses and folds (convolutions, MatMul, BiasAdd, batch norms,
//! activations, constants), each on the FPGA or the CPU, with data and
//! control inputs to earlier nodes and the attributes those ops carry (or
//! miss); half the time the bytes themselves are mutated after encoding.
//!
//! Oracles: no panic; a rewritten graph decodes; every node the input
//! asked to preserve is still there; no input names a node that is not
//! (the input had none dangling); a second pass over the output changes
//! nothing.

#![no_main]

use std::collections::{HashMap, HashSet};

use libfuzzer_sys::arbitrary::{self, Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tensorplug_host_bridge::internals::graph::proto::attr_value::{ListValue, Value};
use tensorplug_host_bridge::internals::graph::proto::{AttrValue, DataType, GraphDef, NodeDef};
use tensorplug_host_bridge::internals::graph::rewrite;

const FPGA: &str = "/job:localhost/replica:0/task:0/device:FPGA:0";
const CPU: &str = "/job:localhost/replica:0/task:0/device:CPU:0";

const OPS: &[&str] = &[
    "Conv2D",
    "DepthwiseConv2dNative",
    "MatMul",
    "BiasAdd",
    "Add",
    "AddV2",
    "Relu",
    "Relu6",
    "FusedBatchNorm",
    "FusedBatchNormV3",
    "Mul",
    "Const",
    "Placeholder",
    "Identity",
    "Elu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "_FusedConv2D",
    "_FusedMatMul",
];

#[derive(Arbitrary, Debug)]
struct Input {
    nodes: Vec<Spec>,
    preserve: Vec<u8>,
    /// Byte edits applied to the encoded graph: (position, xor).
    edits: Vec<(u16, u8)>,
}

#[derive(Arbitrary, Debug)]
struct Spec {
    op: u8,
    /// Inputs as given (any count and port), not the op's arity.
    raw_inputs: bool,
    inputs: Vec<(u8, u8)>,
    controls: Vec<u8>,
    on_cpu: bool,
    dtype: u8,
    nchw: bool,
    padding: u8,
    strides: Option<[u8; 4]>,
    epsilon: Option<f32>,
    is_training: Option<bool>,
    transpose: (bool, bool),
    fused_ops: Vec<u8>,
}

/// Data inputs `op` takes.
fn arity(op: &str) -> usize {
    match op {
        "Const" | "Placeholder" => 0,
        "Conv2D" | "DepthwiseConv2dNative" | "MatMul" | "BiasAdd" | "Add" | "AddV2" | "Mul" => 2,
        "FusedBatchNorm" | "FusedBatchNormV3" => 5,
        "_FusedConv2D" | "_FusedMatMul" => 3,
        _ => 1,
    }
}

fn attr(value: Value) -> AttrValue {
    AttrValue { value: Some(value) }
}

fn node(i: usize, spec: &Spec) -> NodeDef {
    let op = OPS[usize::from(spec.op) % OPS.len()];
    let mut input = Vec::new();
    if i > 0 && spec.raw_inputs {
        // Anything: any count, any earlier node, any output port.
        for &(from, port) in spec.inputs.iter().take(4) {
            let from = usize::from(from) % i;
            input.push(match port % 3 {
                0 => format!("n{from}"),
                k => format!("n{from}:{k}"),
            });
        }
    } else if i > 0 {
        // The op's own arity, the first input a near node: chains form.
        let mut near = spec.inputs.iter().map(|&(from, _)| usize::from(from));
        for k in 0..arity(op) {
            let from = match (k, near.next()) {
                (0, Some(back)) => i - 1 - back % i.min(3),
                (0, None) => i - 1,
                (_, Some(any)) => any % i,
                (_, None) => 0,
            };
            input.push(format!("n{from}"));
        }
    }
    if i > 0 {
        for &from in spec.controls.iter().take(2) {
            input.push(format!("^n{}", usize::from(from) % i));
        }
    }
    let dtype = [
        DataType::DtFloat,
        DataType::DtHalf,
        DataType::DtInt32,
        DataType::DtInt8,
    ][usize::from(spec.dtype) % 4] as i32;
    let mut attrs = HashMap::from([("T".to_string(), attr(Value::Type(dtype)))]);
    if op == "Const" {
        attrs.insert("dtype".into(), attr(Value::Type(dtype)));
    }
    let format = if spec.nchw { "NCHW" } else { "NHWC" };
    attrs.insert("data_format".into(), attr(Value::S(format.into())));
    let padding = ["SAME", "VALID", "EXPLICIT"][usize::from(spec.padding) % 3];
    attrs.insert("padding".into(), attr(Value::S(padding.into())));
    if let Some(strides) = spec.strides {
        let list = ListValue {
            i: strides.iter().map(|&s| i64::from(s % 4)).collect(),
            ..Default::default()
        };
        attrs.insert("strides".into(), attr(Value::List(list)));
    }
    if let Some(eps) = spec.epsilon {
        attrs.insert("epsilon".into(), attr(Value::F(eps)));
    }
    if let Some(training) = spec.is_training {
        attrs.insert("is_training".into(), attr(Value::B(training)));
    }
    attrs.insert("transpose_a".into(), attr(Value::B(spec.transpose.0)));
    attrs.insert("transpose_b".into(), attr(Value::B(spec.transpose.1)));
    if !spec.fused_ops.is_empty() {
        let names = ["BiasAdd", "Relu", "Relu6", "FusedBatchNorm", "Elu", "Add"];
        let list = ListValue {
            s: spec
                .fused_ops
                .iter()
                .take(3)
                .map(|&k| names[usize::from(k) % names.len()].as_bytes().to_vec())
                .collect(),
            ..Default::default()
        };
        attrs.insert("fused_ops".into(), attr(Value::List(list)));
    }
    NodeDef {
        name: format!("n{i}"),
        op: op.into(),
        input,
        device: if spec.on_cpu { CPU } else { FPGA }.into(),
        attr: attrs,
        ..Default::default()
    }
}

/// Panics on a rewritten graph that breaks an invariant.
fn check(out: &GraphDef, preserve: &HashSet<String>) {
    let names: HashSet<&str> = out.node.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names.len(), out.node.len(), "node names are unique");
    for kept in preserve {
        assert!(
            names.contains(kept.as_str()),
            "preserved node {kept} is gone"
        );
    }
    for n in &out.node {
        for input in &n.input {
            let name = input.trim_start_matches('^');
            let name = name.split(':').next().unwrap_or(name);
            assert!(
                names.contains(name),
                "{} reads {input}, which is gone",
                n.name
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((&kind, bytes)) if kind % 2 == 1 => {
            // Graphs as TF gives them: preserve none, or the last node.
            if let Ok(graph) = GraphDef::decode(bytes) {
                let preserve: HashSet<String> = graph
                    .node
                    .last()
                    .filter(|_| kind & 2 != 0)
                    .map(|n| n.name.clone())
                    .into_iter()
                    .collect();
                pass(bytes, &preserve, dangling(&graph));
            } else {
                let _ = rewrite(bytes, &HashSet::new(), "FPGA");
            }
        }
        Some((_, bytes)) => {
            if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(bytes)) {
                structured(&input);
            }
        }
        None => {}
    }
});

/// Whether some input of `graph` names a node it does not have.
fn dangling(graph: &GraphDef) -> bool {
    let names: HashSet<&str> = graph.node.iter().map(|n| n.name.as_str()).collect();
    graph.node.iter().flat_map(|n| &n.input).any(|input| {
        let name = input.trim_start_matches('^');
        !names.contains(name.split(':').next().unwrap_or(name))
    }) || names.len() != graph.node.len()
}

/// Runs the pass on `bytes`; checks the output (its links only when the
/// input's were whole) and that a second pass changes nothing.
fn pass(bytes: &[u8], preserve: &HashSet<String>, input_dangles: bool) {
    let Ok((_, Some(out))) = rewrite(bytes, preserve, "FPGA") else {
        return;
    };
    let out = GraphDef::decode(out.as_slice()).expect("a rewritten graph decodes");
    if input_dangles {
        return;
    }
    check(&out, preserve);
    let again = rewrite(&out.encode_to_vec(), preserve, "FPGA").expect("the output is a graph");
    assert!(
        again.1.is_none(),
        "a second pass changed the graph: {:?}",
        again.0
    );
}

fn structured(input: &Input) {
    let graph = GraphDef {
        node: input
            .nodes
            .iter()
            .take(48)
            .enumerate()
            .map(|(i, s)| node(i, s))
            .collect(),
        ..Default::default()
    };
    let count = graph.node.len();
    let preserve: HashSet<String> = input
        .preserve
        .iter()
        .filter(|_| count > 0)
        .map(|&i| format!("n{}", usize::from(i) % count.max(1)))
        .collect();
    let mut bytes = graph.encode_to_vec();
    let mutated = !input.edits.is_empty() && !bytes.is_empty();
    for &(at, xor) in &input.edits {
        let at = usize::from(at) % bytes.len().max(1);
        if let Some(b) = bytes.get_mut(at) {
            *b ^= xor;
        }
    }
    // After byte edits the input may dangle; the output must still decode.
    pass(&bytes, &preserve, mutated);
}
