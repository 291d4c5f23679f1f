//! Fuzzes the graph pass on what TF hands it: a serialized `GraphDef`.
//!
//! Structure-aware: the input describes a graph over the ops the pass
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

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tensorplug_host_bridge::graph::proto::attr_value::{ListValue, Value};
use tensorplug_host_bridge::graph::proto::{AttrValue, DataType, GraphDef, NodeDef};
use tensorplug_host_bridge::graph::rewrite;

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

fn attr(value: Value) -> AttrValue {
    AttrValue { value: Some(value) }
}

fn node(i: usize, spec: &Spec) -> NodeDef {
    let op = OPS[usize::from(spec.op) % OPS.len()];
    let mut input = Vec::new();
    if i > 0 {
        for &(from, port) in spec.inputs.iter().take(4) {
            let from = usize::from(from) % i;
            input.push(match port % 3 {
                0 => format!("n{from}"),
                k => format!("n{from}:{k}"),
            });
        }
        for &from in spec.controls.iter().take(2) {
            input.push(format!("^n{}", usize::from(from) % i));
        }
    }
    let dtype = [DataType::DtFloat, DataType::DtHalf, DataType::DtInt32, DataType::DtInt8]
        [usize::from(spec.dtype) % 4] as i32;
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
        assert!(names.contains(kept.as_str()), "preserved node {kept} is gone");
    }
    for n in &out.node {
        for input in &n.input {
            let name = input.trim_start_matches('^');
            let name = name.split(':').next().unwrap_or(name);
            assert!(names.contains(name), "{} reads {input}, which is gone", n.name);
        }
    }
}

fuzz_target!(|input: Input| {
    let graph = GraphDef {
        node: input.nodes.iter().take(48).enumerate().map(|(i, s)| node(i, s)).collect(),
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
    let Ok((_, Some(out))) = rewrite(&bytes, &preserve, "FPGA") else {
        return;
    };
    let out = GraphDef::decode(out.as_slice()).expect("a rewritten graph decodes");
    if mutated {
        // The input may have had dangling names; the output must decode.
        return;
    }
    check(&out, &preserve);
    let again = rewrite(&out.encode_to_vec(), &preserve, "FPGA").expect("the output is a graph");
    assert!(again.1.is_none(), "a second pass changed the graph: {:?}", again.0);
});
