//! The pass on GraphDefs traced by TF 2.21 (`testdata/`, written by
//! `tests/python/graph_fixtures.py`, devices set as TF's placer writes them).

use super::fuse::{FUSED_OP, Fusions, Heads, fuse_chains};
use super::optimize::rewrite;
use super::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value::Value};
use super::test_nodes::float_node;
use crate::error::Error;
use prost::Message;
use std::collections::{HashMap, HashSet};

const FIXTURES: [(&str, &[u8]); 9] = [
    ("dense_relu", include_bytes!("testdata/dense_relu.pb")),
    ("mlp", include_bytes!("testdata/mlp.pb")),
    ("shared_matmul", include_bytes!("testdata/shared_matmul.pb")),
    ("shared_bias", include_bytes!("testdata/shared_bias.pb")),
    ("cross_device", include_bytes!("testdata/cross_device.pb")),
    (
        "transpose_control",
        include_bytes!("testdata/transpose_control.pb"),
    ),
    ("cpu_only", include_bytes!("testdata/cpu_only.pb")),
    (
        "chain_of_three",
        include_bytes!("testdata/chain_of_three.pb"),
    ),
    // A graph_in our optimizer received inside TF (a function body).
    (
        "tf_function_body",
        include_bytes!("testdata/tf_function_body.pb"),
    ),
];

fn fixture(name: &str) -> GraphDef {
    let (_, bytes) = FIXTURES
        .iter()
        .find(|(n, _)| *n == name)
        .expect("fixture exists");
    GraphDef::decode(*bytes).expect("fixture decodes")
}

fn fuse(graph: &mut GraphDef, preserve: &[&str]) -> Fusions {
    let preserve: HashSet<String> = preserve.iter().map(|s| (*s).to_owned()).collect();
    fuse_chains(graph, &preserve, "FPGA", Heads::ALL, &[DataType::DtFloat]).expect("valid graph")
}

fn node<'a>(graph: &'a GraphDef, name: &str) -> &'a NodeDef {
    graph
        .node
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

fn by_name(graph: &GraphDef) -> HashMap<&str, &NodeDef> {
    graph.node.iter().map(|n| (n.name.as_str(), n)).collect()
}

fn ops(graph: &GraphDef) -> Vec<&str> {
    graph.node.iter().map(|n| n.op.as_str()).collect()
}

fn attr<'a>(node: &'a NodeDef, key: &str) -> &'a Value {
    node.attr
        .get(key)
        .and_then(|a| a.value.as_ref())
        .unwrap_or_else(|| panic!("no attr {key}"))
}

fn fused_ops(node: &NodeDef) -> Vec<String> {
    match attr(node, "fused_ops") {
        Value::List(list) => list
            .s
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        other => panic!("fused_ops is {other:?}"),
    }
}

/// Asserts the remapper's attribute set on a fused node.
fn assert_fused(node: &NodeDef, ops: &[&str], transpose_b: bool) {
    assert_eq!(node.op, FUSED_OP);
    assert_eq!(fused_ops(node), ops);
    assert_eq!(*attr(node, "T"), Value::Type(DataType::DtFloat as i32));
    assert_eq!(*attr(node, "transpose_a"), Value::B(false));
    assert_eq!(*attr(node, "transpose_b"), Value::B(transpose_b));
    assert_eq!(*attr(node, "num_args"), Value::I(1));
    assert_eq!(*attr(node, "epsilon"), Value::F(0.0));
    assert_eq!(
        node.attr.len(),
        6,
        "exactly the remapper's attrs: {:?}",
        node.attr.keys()
    );
    assert_eq!(node.device, "/job:localhost/replica:0/task:0/device:FPGA:0");
}

/// Every node of `before` not in `changed` is in `after`, unchanged.
fn assert_untouched_except(before: &GraphDef, after: &GraphDef, changed: &[&str]) {
    let after = by_name(after);
    for node in &before.node {
        if !changed.contains(&node.name.as_str()) {
            assert_eq!(
                after.get(node.name.as_str()),
                Some(&node),
                "{} changed",
                node.name
            );
        }
    }
}

#[test]
fn keras_dense_relu_becomes_one_fused_node() {
    let before = fixture("dense_relu");
    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 1,
            bias_only: 0,
            conv2d: 0
        }
    );

    let fused = node(&graph, "dense_1/Relu");
    assert_fused(fused, &["BiasAdd", "Relu"], false);
    assert_eq!(
        fused.input,
        [
            "x",
            "dense_1/Cast/ReadVariableOp",
            "dense_1/BiasAdd/ReadVariableOp"
        ]
    );
    assert_eq!(graph.node.len(), before.node.len() - 2);
    for gone in ["MatMul", "BiasAdd", "Relu"] {
        assert!(
            !ops(&graph).contains(&gone),
            "{gone} left in {:?}",
            ops(&graph)
        );
    }
    // The consumer still reads the root's name, now the fused node's output 0.
    assert_eq!(node(&graph, "Identity").input, ["dense_1/Relu", "^NoOp"]);
    assert_untouched_except(
        &before,
        &graph,
        &["dense_1/MatMul", "dense_1/BiasAdd", "dense_1/Relu"],
    );
}

#[test]
fn function_body_from_tf_fuses_into_retval_input() {
    let before = fixture("tf_function_body");
    assert!(ops(&before).contains(&"_Arg") && ops(&before).contains(&"_Retval"));
    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 1,
            bias_only: 0,
            conv2d: 0
        }
    );
    let fused = node(&graph, "dense_1/Relu");
    assert_fused(fused, &["BiasAdd", "Relu"], false);
    assert_eq!(
        fused.input,
        [
            "x",
            "dense_1/Cast/ReadVariableOp",
            "dense_1/BiasAdd/ReadVariableOp"
        ]
    );
    assert_eq!(node(&graph, "identity_RetVal").input, ["dense_1/Relu"]);
    assert_untouched_except(
        &before,
        &graph,
        &["dense_1/MatMul", "dense_1/BiasAdd", "dense_1/Relu"],
    );
}

#[test]
fn mlp_fuses_every_layer_and_softmax_layer_without_relu() {
    let before = fixture("mlp");
    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 2,
            bias_only: 1,
            conv2d: 0
        }
    );
    assert_fused(
        node(&graph, "sequential_1/dense_1_1/Relu"),
        &["BiasAdd", "Relu"],
        false,
    );
    assert_fused(
        node(&graph, "sequential_1/dense_2_1/Relu"),
        &["BiasAdd", "Relu"],
        false,
    );
    let last = node(&graph, "sequential_1/dense_3_1/BiasAdd");
    assert_fused(last, &["BiasAdd"], false);
    assert_eq!(last.input[0], "sequential_1/dense_2_1/Relu");
    assert_eq!(
        node(&graph, "sequential_1/dense_3_1/Softmax").input,
        ["sequential_1/dense_3_1/BiasAdd"]
    );
    assert_eq!(ops(&graph).iter().filter(|op| **op == FUSED_OP).count(), 3);
    assert_eq!(graph.node.len(), before.node.len() - 5);
}

#[test]
fn chained_layers_are_rewired_through_fused_names() {
    let mut graph = fixture("chain_of_three");
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 2,
            bias_only: 1,
            conv2d: 0
        }
    );
    assert_eq!(node(&graph, "r2").input[0], "r1");
    assert_eq!(node(&graph, "b3").input[0], "r2");
    assert_fused(node(&graph, "b3"), &["BiasAdd"], false);
    assert_eq!(node(&graph, "Identity").input, ["b3"]);
}

#[test]
fn transpose_and_control_dependencies_are_kept() {
    let before = fixture("transpose_control");
    assert_eq!(
        node(&before, "product").input,
        ["x", "product/b", "^marker"]
    );
    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 1,
            bias_only: 0,
            conv2d: 0
        }
    );
    let fused = node(&graph, "act");
    assert_fused(fused, &["BiasAdd", "Relu"], true);
    assert_eq!(fused.input, ["x", "product/b", "bias/bias", "^marker"]);
}

#[test]
fn intermediate_with_another_consumer_is_not_fused() {
    for name in ["shared_matmul", "cross_device", "cpu_only"] {
        let before = fixture(name);
        let mut graph = before.clone();
        assert_eq!(fuse(&mut graph, &[]), Fusions::default(), "{name}");
        assert_eq!(graph, before, "{name} changed");
    }
}

#[test]
fn bias_add_with_another_consumer_fuses_without_relu() {
    let before = fixture("shared_bias");
    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 0,
            bias_only: 1,
            conv2d: 0
        }
    );
    assert_fused(node(&graph, "bias"), &["BiasAdd"], false);
    assert_eq!(
        node(&graph, "act"),
        node(&before, "act"),
        "Relu stays, reading the fused node"
    );
    assert_untouched_except(&before, &graph, &["product", "bias"]);
}

#[test]
fn nodes_to_preserve_are_never_removed() {
    let before = fixture("dense_relu");
    let mut graph = before.clone();
    assert_eq!(fuse(&mut graph, &["dense_1/MatMul"]), Fusions::default());
    assert_eq!(graph, before);

    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &["dense_1/BiasAdd"]),
        Fusions {
            with_relu: 0,
            bias_only: 1,
            conv2d: 0
        }
    );
    assert_eq!(node(&graph, "dense_1/Relu").op, "Relu");

    // The root keeps its name and output, so a preserved root still fuses.
    let mut graph = before.clone();
    assert_eq!(
        fuse(&mut graph, &["dense_1/Relu"]),
        Fusions {
            with_relu: 1,
            bias_only: 0,
            conv2d: 0
        }
    );
}

#[test]
fn only_f32_nhwc_chains_are_fused() {
    let mut doubles = fixture("dense_relu");
    for node in &mut doubles.node {
        if let Some(t) = node.attr.get_mut("T") {
            *t = AttrValue {
                value: Some(Value::Type(DataType::DtDouble as i32)),
            };
        }
    }
    let before = doubles.clone();
    assert_eq!(fuse(&mut doubles, &[]), Fusions::default());
    assert_eq!(doubles, before);

    let mut nchw = fixture("dense_relu");
    for node in nchw.node.iter_mut().filter(|n| n.op == "BiasAdd") {
        node.attr.insert(
            "data_format".into(),
            AttrValue {
                value: Some(Value::S(b"NCHW".to_vec())),
            },
        );
    }
    assert_eq!(fuse(&mut nchw, &[]), Fusions::default());
}

#[test]
fn control_edge_from_an_intermediate_keeps_it() {
    // `^MatMul` elsewhere: the MatMul must stay, so nothing fuses.
    let mut graph = fixture("dense_relu");
    let noop = graph
        .node
        .iter_mut()
        .find(|n| n.name == "NoOp")
        .expect("NoOp");
    noop.input.push("^dense_1/MatMul".into());
    let before = graph.clone();
    assert_eq!(fuse(&mut graph, &[]), Fusions::default());
    assert_eq!(graph, before);

    // `^BiasAdd` elsewhere: BiasAdd becomes the root (keeping its name, so
    // the control edge still holds) and Relu stays.
    let mut graph = fixture("dense_relu");
    let noop = graph
        .node
        .iter_mut()
        .find(|n| n.name == "NoOp")
        .expect("NoOp");
    noop.input.push("^dense_1/BiasAdd".into());
    assert_eq!(
        fuse(&mut graph, &[]),
        Fusions {
            with_relu: 0,
            bias_only: 1,
            conv2d: 0
        }
    );
    assert_fused(node(&graph, "dense_1/BiasAdd"), &["BiasAdd"], false);
    assert_eq!(node(&graph, "dense_1/Relu").op, "Relu");
}

#[test]
fn duplicate_node_names_are_an_error() {
    let mut graph = fixture("dense_relu");
    let copy = graph.node[0].clone();
    graph.node.push(copy);
    let error = fuse_chains(
        &mut graph,
        &HashSet::new(),
        "FPGA",
        Heads::ALL,
        &[DataType::DtFloat],
    )
    .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)));
    assert!(
        error.to_string().contains("two nodes are named `x`"),
        "{error}"
    );
}

#[test]
fn fixtures_round_trip_without_losing_fields() {
    // prost drops unknown fields: a field missing from our descriptors would
    // shrink the re-encoded graph.
    for (name, bytes) in FIXTURES {
        let graph = GraphDef::decode(bytes).expect("decodes");
        assert_eq!(graph.encoded_len(), bytes.len(), "{name}");
        assert_eq!(
            GraphDef::decode(graph.encode_to_vec().as_slice()).as_ref(),
            Ok(&graph),
            "{name}"
        );
    }
}

#[test]
fn rewrite_returns_none_when_nothing_matches() {
    let (_, bytes) = FIXTURES[6];
    let (fusions, out) = rewrite(bytes, &HashSet::new(), "FPGA").expect("valid");
    assert_eq!((fusions, out), (Fusions::default(), None));
    let (_, bytes) = FIXTURES[0];
    let (fusions, out) = rewrite(bytes, &HashSet::new(), "FPGA").expect("valid");
    assert_eq!(fusions.with_relu, 1);
    let out = GraphDef::decode(out.expect("rewritten").as_slice()).expect("decodes");
    assert_eq!(node(&out, "dense_1/Relu").op, FUSED_OP);
}

#[test]
fn corrupt_graphs_give_errors_never_panics() {
    let mut errors = 0;
    for (_, bytes) in FIXTURES {
        for cut in 0..bytes.len() {
            errors += usize::from(rewrite(&bytes[..cut], &HashSet::new(), "FPGA").is_err());
        }
        for index in 0..bytes.len() {
            let mut flipped = bytes.to_vec();
            flipped[index] ^= 0x5a;
            errors += usize::from(rewrite(&flipped, &HashSet::new(), "FPGA").is_err());
        }
    }
    assert!(
        errors > 1000,
        "most corruptions must be reported, got {errors}"
    );
}

/// Every input of every node names a node of the graph.
fn assert_references_resolve(graph: &GraphDef, what: &str) {
    let names: HashSet<&str> = graph.node.iter().map(|n| n.name.as_str()).collect();
    for node in &graph.node {
        for input in &node.input {
            let producer = super::edges::Input::parse(input).node();
            assert!(
                names.contains(producer),
                "{what}: {} reads missing {input}",
                node.name
            );
        }
    }
}

#[test]
fn second_run_changes_nothing_and_references_resolve() {
    // Grappler runs the pass twice per graph; any preserve set must keep the
    // graph well-formed.
    for (name, _) in FIXTURES {
        let all: Vec<String> = fixture(name).node.iter().map(|n| n.name.clone()).collect();
        for stride in [0usize, 2, 3, 5] {
            let preserve: Vec<&str> = match stride {
                0 => Vec::new(),
                s => all.iter().step_by(s).map(String::as_str).collect(),
            };
            let mut graph = fixture(name);
            fuse(&mut graph, &preserve);
            assert_references_resolve(&graph, name);
            let once = graph.clone();
            assert_eq!(fuse(&mut graph, &preserve), Fusions::default(), "{name}");
            assert_eq!(graph, once, "{name}: second run changed the graph");
        }
    }
}

#[test]
fn conv2d_bias_relu6_becomes_one_fused_conv2d_with_the_conv_attrs() {
    let strides = Value::List(super::proto::attr_value::ListValue {
        i: vec![1, 2, 2, 1],
        ..Default::default()
    });
    let conv_attrs = [
        ("strides", strides.clone()),
        ("padding", Value::S(b"SAME".to_vec())),
    ];
    let nchw = [("data_format", Value::S(b"NCHW".to_vec()))];
    let mut graph = GraphDef {
        node: vec![
            float_node("x", "Placeholder", &[], &[]),
            float_node("w", "Const", &[], &[]),
            float_node("b", "Const", &[], &[]),
            float_node("conv", "Conv2D", &["x", "w", "^b"], &conv_attrs),
            float_node("bias", "BiasAdd", &["conv", "b"], &[]),
            float_node("act", "Relu6", &["bias"], &[]),
            // An NCHW convolution and a MatMul before Relu6 are left alone.
            float_node(
                "conv_nchw",
                "Conv2D",
                &["x", "w"],
                &[&conv_attrs[..], &nchw[..]].concat(),
            ),
            float_node("bias_nchw", "BiasAdd", &["conv_nchw", "b"], &nchw),
            float_node("mm", "MatMul", &["x", "w"], &[]),
            float_node("mm_bias", "BiasAdd", &["mm", "b"], &[]),
            float_node("mm_act", "Relu6", &["mm_bias"], &[]),
        ],
        ..Default::default()
    };
    let fusions = fuse(&mut graph, &[]);
    assert_eq!(
        fusions,
        Fusions {
            with_relu: 1,
            bias_only: 1,
            conv2d: 1
        }
    );
    let fused = node(&graph, "act");
    assert_eq!(fused.op, "_FusedConv2D");
    assert_eq!(fused.input, ["x", "w", "b", "^b"]);
    assert_eq!(fused_ops(fused), ["BiasAdd", "Relu6"]);
    assert_eq!(*attr(fused, "strides"), strides);
    assert_eq!(*attr(fused, "padding"), Value::S(b"SAME".to_vec()));
    assert_eq!(*attr(fused, "data_format"), Value::S(b"NHWC".to_vec()));
    let args = super::proto::attr_value::ListValue {
        r#type: vec![DataType::DtFloat as i32],
        ..Default::default()
    };
    assert_eq!(*attr(fused, "TArgs"), Value::List(args));
    assert_eq!(*attr(fused, "num_args"), Value::I(1));
    assert_eq!(
        ops(&graph).iter().filter(|op| **op == "Conv2D").count(),
        1,
        "{:?}",
        ops(&graph)
    );
    // The MatMul chain fused its bias only: Relu6 is not a _FusedMatMul op.
    assert_eq!(node(&graph, "mm_bias").op, FUSED_OP);
    assert_eq!(node(&graph, "mm_act").op, "Relu6");
}
