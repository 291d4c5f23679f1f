use super::emit::rewrite_qat;
use crate::graph::nodes::type_value;
use crate::graph::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value};
use crate::graph::test_nodes::{CPU, FPGA, find, node};
use std::collections::HashSet;

type Value = attr_value::Value;

fn with(mut n: NodeDef, attrs: &[(&str, Value)]) -> NodeDef {
    for (k, v) in attrs {
        n.attr.insert(
            k.to_string(),
            AttrValue {
                value: Some(v.clone()),
            },
        );
    }
    n
}

/// A float op on the FPGA.
fn float(name: &str, op: &str, input: &[&str], attrs: &[(&str, Value)]) -> NodeDef {
    let n = with(node(name, op, input), attrs);
    with(
        n,
        &[("T", type_value(DataType::DtFloat as i32).value.unwrap())],
    )
}

fn on_cpu(mut n: NodeDef) -> NodeDef {
    n.device = CPU.into();
    n
}

/// An activation fake-quant of `x` with range variables `<name>_min/max`.
fn act_fq(name: &str, x: &str) -> [NodeDef; 3] {
    let (min, max) = (format!("{name}_min"), format!("{name}_max"));
    [
        on_cpu(node(&min, "ReadVariableOp", &[])),
        on_cpu(node(&max, "ReadVariableOp", &[])),
        on_cpu(with(
            node(name, "FakeQuantWithMinMaxVars", &[x, &min, &max]),
            &[("num_bits", Value::I(8)), ("narrow_range", Value::B(false))],
        )),
    ]
}

/// Per-channel weight variables `<name>` and their fake-quant `<name>_fq`.
fn weights(name: &str) -> [NodeDef; 4] {
    let (min, max, fq) = (
        format!("{name}_min"),
        format!("{name}_max"),
        format!("{name}_fq"),
    );
    [
        on_cpu(node(name, "ReadVariableOp", &[])),
        on_cpu(node(&min, "ReadVariableOp", &[])),
        on_cpu(node(&max, "ReadVariableOp", &[])),
        on_cpu(with(
            node(
                &fq,
                "FakeQuantWithMinMaxVarsPerChannel",
                &[name, &min, &max],
            ),
            &[("num_bits", Value::I(8)), ("narrow_range", Value::B(true))],
        )),
    ]
}

fn s(text: &str) -> Value {
    Value::S(text.as_bytes().to_vec())
}

fn ints(values: &[i64]) -> Value {
    Value::List(attr_value::ListValue {
        i: values.to_vec(),
        ..Default::default()
    })
}

/// x → fq_in → Conv2D(w_fq) → BiasAdd → Relu → fq_out → Identity `out`.
fn conv_graph() -> GraphDef {
    let mut node_list = vec![on_cpu(node("x", "Placeholder", &[]))];
    node_list.extend(act_fq("fq_in", "x"));
    node_list.extend(weights("w"));
    node_list.push(float(
        "conv",
        "Conv2D",
        &["fq_in", "w_fq"],
        &[("strides", ints(&[1, 2, 2, 1])), ("padding", s("SAME"))],
    ));
    node_list.push(on_cpu(node("bias", "ReadVariableOp", &[])));
    node_list.push(float("bias_add", "BiasAdd", &["conv", "bias"], &[]));
    node_list.push(float("relu", "Relu", &["bias_add"], &[]));
    node_list.extend(act_fq("fq_out", "relu"));
    node_list.push(float("out", "Identity", &["fq_out", "^relu"], &[]));
    GraphDef {
        node: node_list,
        ..Default::default()
    }
}

fn preserve(names: &[&str]) -> HashSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn attr<'g>(n: &'g NodeDef, key: &str) -> &'g Value {
    n.attr[key].value.as_ref().unwrap()
}

fn has(graph: &GraphDef, name: &str) -> bool {
    graph.node.iter().any(|n| n.name == name)
}

#[test]
fn a_qat_conv_chain_becomes_an_int8_conv_with_float_edges() {
    let mut graph = conv_graph();
    // The Identity reads relu's control edge too: relu must stay single-use
    // for data; a control use makes it not single-use, so drop it here.
    graph.node.last_mut().unwrap().input.pop();
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA"), 1);
    let conv = find(&graph, "fq_out/int8");
    assert_eq!(conv.op, "_TensorplugFPGAConv2DInt8");
    assert_eq!(conv.device, FPGA);
    assert_eq!(
        conv.input,
        ["fq_in/int8", "fq_out/int8/weights", "fq_out/int8/block"]
    );
    assert_eq!(attr(conv, "strides"), &ints(&[1, 2, 2, 1]));
    assert_eq!(attr(conv, "padding"), &s("SAME"));
    // The input is quantized on the device with its range's block.
    let quantize = find(&graph, "fq_in/int8");
    assert_eq!(quantize.op, "_TensorplugFPGAQuantize");
    assert_eq!(quantize.input, ["x", "fq_in/int8/quantize_block"]);
    let block = find(&graph, "fq_in/int8/quantize_block");
    assert_eq!(
        (block.op.as_str(), block.device.as_str()),
        ("_TensorplugFPGAQatTensorBlock", FPGA)
    );
    assert_eq!(block.input, ["fq_in_min", "fq_in_max"]);
    // Weights and block on the device (their inputs in host memory), from
    // the weights and their fake-quant's range (the weights op applies the
    // fake-quant only the convolution read), the bias, and both
    // activation ranges.
    let w = find(&graph, "fq_out/int8/weights");
    assert_eq!(
        (w.op.as_str(), w.device.as_str()),
        ("_TensorplugFPGAQatWeights", FPGA)
    );
    assert_eq!(w.input, ["w", "fq_out/int8/empty", "w_min", "w_max"]);
    assert_eq!(attr(w, "depthwise"), &Value::B(false));
    assert_eq!(attr(w, "apply_fake_quant"), &s("per_channel"));
    let block = find(&graph, "fq_out/int8/block");
    assert_eq!(block.op, "_TensorplugFPGAQatConvBlock");
    assert_eq!(block.device, FPGA);
    assert_eq!(
        block.input,
        [
            "fq_in_min",
            "fq_in_max",
            "fq_out/int8/weights:1",
            "bias",
            "fq_out_min",
            "fq_out_max"
        ]
    );
    assert_eq!(attr(block, "activation"), &s("RELU"));
    assert_eq!(attr(block, "rounding"), &Value::I(0));
    // The fetched value is the Dequantize of the int8 result, by the same name.
    let out = find(&graph, "fq_out");
    assert_eq!(out.op, "_TensorplugFPGADequantize");
    assert_eq!(out.input, ["fq_out/int8", "fq_out/int8/dequantize_block"]);
    for gone in ["conv", "bias_add", "relu", "fq_in", "w_fq"] {
        assert!(!has(&graph, gone), "{gone} is still there");
    }
}

#[test]
fn a_weight_fake_quant_something_else_reads_stays_and_feeds_the_weights() {
    for other_reader in ["w_fq", "^w_fq"] {
        let mut graph = conv_graph();
        graph.node.last_mut().unwrap().input.pop();
        graph
            .node
            .push(on_cpu(node("also", "Identity", &[other_reader])));
        assert_eq!(
            rewrite_qat(&mut graph, &preserve(&["out", "also"]), "FPGA"),
            1
        );
        let w = find(&graph, "fq_out/int8/weights");
        assert_eq!(w.input, ["w_fq", "fq_out/int8/empty", "w_min", "w_max"]);
        assert!(!w.attr.contains_key("apply_fake_quant"));
        assert!(has(&graph, "w_fq"), "{other_reader}");
    }
}

#[test]
fn chains_with_other_readers_and_training_graphs_are_left_alone() {
    // The control edge on relu: it has a second reader.
    let mut graph = conv_graph();
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA"), 0);
    // A fetched relu.
    let mut graph = conv_graph();
    graph.node.last_mut().unwrap().input.pop();
    assert_eq!(
        rewrite_qat(&mut graph, &preserve(&["out", "relu"]), "FPGA"),
        0
    );
    // Fake-quant gradients: a training graph.
    let mut graph = conv_graph();
    graph.node.last_mut().unwrap().input.pop();
    graph.node.push(on_cpu(node(
        "g",
        "FakeQuantWithMinMaxVarsGradient",
        &["out", "relu"],
    )));
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA"), 0);
    // On another device type.
    let mut graph = conv_graph();
    graph.node.last_mut().unwrap().input.pop();
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "NPU"), 0);
}

#[test]
fn a_batch_norm_folds_and_a_pad_becomes_explicit_padding() {
    let mut list = vec![on_cpu(node("x", "Placeholder", &[]))];
    list.extend(act_fq("fq_in", "x"));
    list.push(with(
        node("paddings", "Const", &[]),
        &[(
            "value",
            Value::Tensor(crate::graph::proto::TensorProto {
                dtype: DataType::DtInt32 as i32,
                tensor_shape: Some(shape_proto(&[4, 2])),
                int_val: vec![0, 0, 0, 1, 1, 0, 0, 0],
                ..Default::default()
            }),
        )],
    ));
    list.push(float("pad", "Pad", &["fq_in", "paddings"], &[]));
    list.push(on_cpu(node("dw", "ReadVariableOp", &[])));
    list.push(float(
        "depthwise",
        "DepthwiseConv2dNative",
        &["pad", "dw"],
        &[("strides", ints(&[1, 2, 2, 1])), ("padding", s("VALID"))],
    ));
    for v in ["gamma", "beta", "mean", "var"] {
        list.push(on_cpu(node(v, "ReadVariableOp", &[])));
    }
    list.push(float(
        "bn",
        "FusedBatchNormV3",
        &["depthwise", "gamma", "beta", "mean", "var"],
        &[
            ("is_training", Value::B(false)),
            ("epsilon", Value::F(1e-3)),
        ],
    ));
    list.push(float("relu6", "Relu6", &["bn"], &[]));
    list.extend(act_fq("fq_out", "relu6"));
    let mut graph = GraphDef {
        node: list,
        ..Default::default()
    };
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["fq_out"]), "FPGA"), 1);
    let conv = find(&graph, "fq_out/int8");
    assert_eq!(conv.op, "_TensorplugFPGADepthwiseConv2DInt8");
    assert_eq!(attr(conv, "padding"), &s("EXPLICIT"));
    assert_eq!(
        attr(conv, "explicit_paddings"),
        &ints(&[0, 0, 0, 1, 1, 0, 0, 0])
    );
    // Plain weights (no fake-quant): no range; the batch norm's factor.
    let w = find(&graph, "fq_out/int8/weights");
    assert_eq!(
        w.input,
        [
            "dw",
            "fq_out/int8/bn/factor",
            "fq_out/int8/empty",
            "fq_out/int8/empty"
        ]
    );
    assert_eq!(attr(w, "depthwise"), &Value::B(true));
    let block = find(&graph, "fq_out/int8/block");
    assert_eq!(block.input[3], "fq_out/int8/bn/bias");
    assert_eq!(attr(block, "activation"), &s("RELU6"));
    // factor = gamma · rsqrt(var + ε); bias = beta − mean · factor, on the CPU.
    let factor = find(&graph, "fq_out/int8/bn/factor");
    assert_eq!((factor.op.as_str(), factor.device.as_str()), ("Mul", CPU));
    assert_eq!(factor.input, ["gamma", "fq_out/int8/bn/rsqrt"]);
    assert_eq!(
        find(&graph, "fq_out/int8/bn/rsqrt").input,
        ["fq_out/int8/bn/variance_epsilon"]
    );
    assert_eq!(
        find(&graph, "fq_out/int8/bn/variance_epsilon").input,
        ["var", "fq_out/int8/bn/epsilon"]
    );
    assert_eq!(
        find(&graph, "fq_out/int8/bn/bias").input,
        ["beta", "fq_out/int8/bn/mean_factor"]
    );
    for gone in ["pad", "depthwise", "bn", "relu6"] {
        assert!(!has(&graph, gone), "{gone} is still there");
    }
    // The fetch stays, as a Dequantize.
    assert_eq!(find(&graph, "fq_out").op, "_TensorplugFPGADequantize");
}

#[test]
fn max_pool_and_add_keep_the_quantization_of_their_input() {
    let mut list = vec![on_cpu(node("x", "Placeholder", &[]))];
    list.extend(act_fq("fq_a", "x"));
    list.push(float(
        "pool",
        "MaxPool",
        &["fq_a"],
        &[
            ("ksize", ints(&[1, 1, 1, 1])),
            ("strides", ints(&[1, 1, 1, 1])),
            ("padding", s("VALID")),
        ],
    ));
    list.push(float("add", "AddV2", &["fq_a", "pool"], &[]));
    list.extend(act_fq("fq_sum", "add"));
    list.push(float("out", "Identity", &["fq_sum"], &[]));
    let mut graph = GraphDef {
        node: list,
        ..Default::default()
    };
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA"), 1);
    let add = find(&graph, "fq_sum/int8");
    assert_eq!(add.op, "_TensorplugFPGAAddInt8");
    assert_eq!(add.input, ["fq_a/int8", "pool/int8", "fq_sum/int8/block"]);
    let pool = find(&graph, "pool/int8");
    assert_eq!(pool.op, "_TensorplugFPGAMaxPoolInt8");
    assert_eq!(pool.input, ["fq_a/int8", "pool/int8/block"]);
    assert_eq!(attr(pool, "ksize"), &ints(&[1, 1, 1, 1]));
    let block = find(&graph, "fq_sum/int8/block");
    assert_eq!(block.op, "_TensorplugFPGAQatAddBlock");
    // x's range for both addends: the pool keeps it.
    assert_eq!(
        block.input,
        [
            "fq_a_min",
            "fq_a_max",
            "fq_a_min",
            "fq_a_max",
            "fq_sum_min",
            "fq_sum_max"
        ]
    );
    for gone in ["pool", "add", "fq_a"] {
        assert!(!has(&graph, gone), "{gone} is still there");
    }
}

/// `QuantizeV2 → Dequantize` of `x` (SCALED, `dtype`, per `axis`), named
/// `<name>_q` and `<name>`, with range constants `<name>_min/max`.
fn qdq(name: &str, x: &str, dtype: DataType, axis: Option<i64>) -> [NodeDef; 4] {
    let (min, max, q) = (
        format!("{name}_min"),
        format!("{name}_max"),
        format!("{name}_q"),
    );
    let mut attrs = vec![("T", Value::Type(dtype as i32)), ("mode", s("SCALED"))];
    if let Some(axis) = axis {
        attrs.push(("axis", Value::I(axis)));
    }
    let mut q_attrs = attrs.clone();
    q_attrs.push(("round_mode", s("HALF_TO_EVEN")));
    let (q1, q2) = (format!("{q}:1"), format!("{q}:2"));
    [
        on_cpu(node(&min, "Const", &[])),
        on_cpu(node(&max, "Const", &[])),
        on_cpu(with(node(&q, "QuantizeV2", &[x, &min, &max]), &q_attrs)),
        on_cpu(with(node(name, "Dequantize", &[&q, &q1, &q2]), &attrs)),
    ]
}

#[test]
fn a_qdq_graph_becomes_int8_ops_and_its_pairs_go() {
    let mut list = vec![on_cpu(node("x", "Placeholder", &[]))];
    list.extend(qdq("x_dq", "x", DataType::DtQint8, None));
    list.push(on_cpu(node("w", "Const", &[])));
    list.extend(qdq("w_dq", "w", DataType::DtQint8, Some(3)));
    list.push(float(
        "conv",
        "Conv2D",
        &["x_dq", "w_dq"],
        &[("padding", s("VALID"))],
    ));
    list.push(float("relu", "Relu", &["conv"], &[]));
    list.push(float(
        "pool",
        "MaxPool",
        &["relu"],
        &[("ksize", ints(&[1, 2, 2, 1])), ("padding", s("VALID"))],
    ));
    list.extend(qdq("y_dq", "pool", DataType::DtQuint8, None));
    list.push(float("out", "Identity", &["y_dq"], &[]));
    let mut graph = GraphDef {
        node: list,
        ..Default::default()
    };
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA"), 1);
    // The pool after the chain runs in int8 on the conv's output.
    let head = find(&graph, "y_dq/int8/head");
    assert_eq!(head.op, "_TensorplugFPGAConv2DInt8");
    assert_eq!(
        head.input,
        [
            "x_dq/int8",
            "y_dq/int8/head/weights",
            "y_dq/int8/head/block"
        ]
    );
    let pool = find(&graph, "y_dq/int8");
    assert_eq!(pool.op, "_TensorplugFPGAMaxPoolInt8");
    assert_eq!(pool.input[0], "y_dq/int8/head");
    let quantize = find(&graph, "x_dq/int8");
    assert_eq!(quantize.input, ["x", "x_dq/int8/quantize_block"]);
    let block = find(&graph, "x_dq/int8/quantize_block");
    assert_eq!(block.input, ["x_dq_min", "x_dq_max"]);
    assert_eq!(
        attr(block, "range_modes"),
        &Value::List(attr_value::ListValue {
            s: vec![b"qint8".to_vec()],
            ..Default::default()
        })
    );
    // The weights from QuantizeV2's input and range, in its mode.
    let w = find(&graph, "y_dq/int8/head/weights");
    assert_eq!(
        w.input,
        ["w", "y_dq/int8/head/empty", "w_dq_min", "w_dq_max"]
    );
    assert_eq!(attr(w, "mode"), &s("scaled"));
    assert_eq!(attr(w, "round_mode"), &s("HALF_TO_EVEN"));
    let block = find(&graph, "y_dq/int8/head/block");
    assert_eq!(
        attr(block, "range_modes"),
        &Value::List(attr_value::ListValue {
            s: vec![b"qint8".to_vec(), b"quint8".to_vec()],
            ..Default::default()
        })
    );
    assert_eq!(find(&graph, "y_dq").op, "_TensorplugFPGADequantize");
    for gone in [
        "conv", "relu", "pool", "x_dq", "x_dq_q", "w_dq", "w_dq_q", "y_dq_q",
    ] {
        assert!(!has(&graph, gone), "{gone} is still there");
    }
}

#[test]
fn the_parameters_cpu_inputs_cross_to_the_device_in_one_pack() {
    use super::pack::pack_host_inputs;
    let mut graph = conv_graph();
    graph.node.last_mut().unwrap().input.pop();
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA"), 1);
    // The weights, their block and the two tensor blocks read a pack.
    assert_eq!(pack_host_inputs(&mut graph, "FPGA"), 4);
    let pack = find(&graph, "tensorplug_qat/pack");
    assert_eq!(
        (pack.op.as_str(), pack.device.as_str()),
        ("_TensorplugFPGAQatPack", CPU)
    );
    let entry = |tensor: &str| pack.input.iter().position(|t| t == tensor).unwrap() as i64;
    assert_eq!(attr(pack, "N"), &Value::I(pack.input.len() as i64));
    let w = find(&graph, "fq_out/int8/weights");
    assert_eq!(w.op, "_TensorplugFPGAQatWeightsPacked");
    assert_eq!(w.input, ["tensorplug_qat/pack"]);
    assert_eq!(attr(w, "M"), &Value::I(0));
    let map = ["w:0", "fq_out/int8/empty:0", "w_min:0", "w_max:0"].map(entry);
    assert_eq!(attr(w, "packed_inputs"), &ints(&map));
    assert_eq!(attr(w, "apply_fake_quant"), &s("per_channel"));
    // The scales the weights op makes stay a direct input.
    let block = find(&graph, "fq_out/int8/block");
    assert_eq!(block.op, "_TensorplugFPGAQatConvBlockPacked");
    assert_eq!(
        block.input,
        ["tensorplug_qat/pack", "fq_out/int8/weights:1"]
    );
    assert_eq!(attr(block, "M"), &Value::I(1));
    let map = [
        entry("fq_in_min:0"),
        entry("fq_in_max:0"),
        -1,
        entry("bias:0"),
        entry("fq_out_min:0"),
        entry("fq_out_max:0"),
    ];
    assert_eq!(attr(block, "packed_inputs"), &ints(&map));
    // Each tensor once, whoever reads it.
    let unique: HashSet<&String> = pack.input.iter().collect();
    assert_eq!(unique.len(), pack.input.len());
}

#[test]
fn loops_and_constant_only_parameters_are_not_packed() {
    use super::pack::pack_host_inputs;
    let mut graph = conv_graph();
    graph.node.last_mut().unwrap().input.pop();
    rewrite_qat(&mut graph, &preserve(&["out"]), "FPGA");
    let mut looped = graph.clone();
    looped.node.push(on_cpu(node("loop", "Merge", &["x", "x"])));
    assert_eq!(pack_host_inputs(&mut looped, "FPGA"), 0);
    // Every CPU input a constant: a frozen graph, folded by TF instead.
    for n in &mut graph.node {
        if n.device == CPU && n.op == "ReadVariableOp" {
            n.op = "Const".into();
        }
    }
    assert_eq!(pack_host_inputs(&mut graph, "FPGA"), 0);
    assert!(!has(&graph, "tensorplug_qat/pack"));
}

#[test]
fn every_sixteen_parameter_ops_share_a_pack_and_a_shared_value_goes_in_each() {
    use super::pack::pack_host_inputs;
    let mut graph = GraphDef::default();
    graph
        .node
        .push(on_cpu(node("shared", "ReadVariableOp", &[])));
    for i in 0..17 {
        let read = format!("r{i}");
        graph.node.push(on_cpu(node(&read, "ReadVariableOp", &[])));
        let mut block = node(
            &format!("b{i}"),
            "_TensorplugFPGAQatTensorBlock",
            &[&read, "shared"],
        );
        block.device = FPGA.into();
        graph.node.push(block);
    }
    assert_eq!(pack_host_inputs(&mut graph, "FPGA"), 17);
    let (first, second) = (
        find(&graph, "tensorplug_qat/pack"),
        find(&graph, "tensorplug_qat/pack_1"),
    );
    assert_eq!(first.input.len(), 17);
    assert_eq!(second.input, ["r16:0", "shared:0"]);
    assert_eq!(find(&graph, "b15").input, ["tensorplug_qat/pack"]);
    assert_eq!(find(&graph, "b16").input, ["tensorplug_qat/pack_1"]);
    assert_eq!(attr(find(&graph, "b16"), "packed_inputs"), &ints(&[0, 1]));
}

/// A shape of `dims`.
fn shape_proto(dims: &[i64]) -> crate::graph::proto::TensorShapeProto {
    crate::graph::proto::TensorShapeProto {
        dim: dims
            .iter()
            .map(|&size| crate::graph::proto::tensor_shape_proto::Dim {
                size,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A float `Const` of shape `dims`.
fn constant(name: &str, dims: &[i64]) -> NodeDef {
    let shape = shape_proto(dims);
    with(
        node(name, "Const", &[]),
        &[(
            "value",
            Value::Tensor(crate::graph::proto::TensorProto {
                dtype: DataType::DtFloat as i32,
                tensor_shape: Some(shape),
                ..Default::default()
            }),
        )],
    )
}

/// A frozen graph's convolution as TF's optimizers leave it: constant
/// weights through their fake-quant, and its batch norm split into
/// `Add(Mul(conv, scaled), offset)`, `scaled` still computed from
/// constants, with `channels` values each.
fn frozen_conv(channels: i64) -> GraphDef {
    let mut list = vec![on_cpu(node("x", "Placeholder", &[]))];
    list.extend(act_fq("fq_in", "x"));
    list.push(constant("w", &[3, 3, 4, 8]));
    list.push(constant("w_min", &[8]));
    list.push(constant("w_max", &[8]));
    list.push(on_cpu(with(
        node(
            "w_fq",
            "FakeQuantWithMinMaxVarsPerChannel",
            &["w", "w_min", "w_max"],
        ),
        &[("num_bits", Value::I(8)), ("narrow_range", Value::B(true))],
    )));
    list.push(float(
        "conv",
        "Conv2D",
        &["fq_in", "w_fq"],
        &[("strides", ints(&[1, 1, 1, 1])), ("padding", s("SAME"))],
    ));
    list.push(constant("gamma", &[channels]));
    list.push(constant("var", &[channels]));
    list.push(constant("eps", &[]));
    list.push(float("plus", "AddV2", &["var", "eps"], &[]));
    list.push(float("rsqrt", "Rsqrt", &["plus"], &[]));
    list.push(float("scaled", "Mul", &["rsqrt", "gamma"], &[]));
    list.push(constant("offset", &[channels]));
    list.push(float("mul", "Mul", &["conv", "scaled"], &[]));
    list.push(float("bn", "Add", &["mul", "offset"], &[]));
    list.push(float("relu6", "Relu6", &["bn"], &[]));
    list.extend(act_fq("fq_out", "relu6"));
    GraphDef {
        node: list,
        ..Default::default()
    }
}

#[test]
fn a_batch_norm_tf_split_over_constants_folds_as_its_factor_and_bias() {
    let mut graph = frozen_conv(8);
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["fq_out"]), "FPGA"), 1);
    assert_eq!(find(&graph, "fq_out/int8").op, "_TensorplugFPGAConv2DInt8");
    let w = find(&graph, "fq_out/int8/weights");
    assert_eq!(w.input[..2], ["w", "scaled"]);
    assert_eq!(find(&graph, "fq_out/int8/block").input[3], "offset");
    for gone in ["conv", "mul", "bn", "relu6", "w_fq"] {
        assert!(!has(&graph, gone), "{gone} is still there");
    }
}

#[test]
fn a_split_batch_norm_of_another_width_is_not_folded() {
    let mut graph = frozen_conv(4);
    assert_eq!(rewrite_qat(&mut graph, &preserve(&["fq_out"]), "FPGA"), 0);
    assert_eq!(find(&graph, "conv").op, "Conv2D");
}
