//! bfloat16 and float16 ops that TF's placer put on our device (through
//! the half-precision kernels, `kernels/ops/half.rs`) become float32 ops
//! between casts: each such node gets `Cast`s to float32 on its half
//! inputs and one back on its output, all on its device, and its `T`
//! becomes float32, so the later passes see the float32 op. The result is
//! the float32 op's rounded once to the half type, as the kernel computes
//! it and as TF's CPU kernels compute these types. Half ops on the CPU are
//! left there: a user's scope put them there, or our device lacks them.
//! Keras' `mixed_bfloat16` and `mixed_float16` policies write such graphs.
//! `docs/graph-optimizer.md`, "Half precision".

use super::device::is_ours;
use super::edges::Input;
use super::nodes::{type_attr, type_value, unique};
use super::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value};
use std::collections::{HashMap, HashSet};
use tensorplug_core::accelerator::{BUILTIN, DType};
use tensorplug_core::reference::cast::through_half;

/// Suffixes of the casts the pass adds.
const TO_F32: &str = "tensorplug_to_f32";
const FROM_F32: &str = "tensorplug_from_f32";

/// The ops the pass lowers and which of their inputs are of type `T` (the
/// others are shapes or axes); output 0 is of type `T`. The same ops as
/// the half-precision kernels' (a test checks). The fused forms are the
/// chains the pass fuses first; our device fuses one bias (`num_args` 1,
/// which `runs_f32` checks), so their `T` inputs are the first three.
const LOWERED: &[(&str, &[usize])] = &[
    ("Conv2D", &[0, 1]),
    ("_FusedConv2D", &[0, 1, 2]),
    ("_FusedMatMul", &[0, 1, 2]),
    ("DepthwiseConv2dNative", &[0, 1]),
    ("Conv2DBackpropInput", &[1, 2]),
    ("Conv2DBackpropFilter", &[0, 2]),
    ("MatMul", &[0, 1]),
    ("BatchMatMulV2", &[0, 1]),
    ("BiasAdd", &[0, 1]),
    ("BiasAddGrad", &[0]),
    ("Relu", &[0]),
    ("Relu6", &[0]),
    ("ReluGrad", &[0, 1]),
    ("Sigmoid", &[0]),
    ("Tanh", &[0]),
    ("Softmax", &[0]),
    ("MaxPool", &[0]),
    ("AvgPool", &[0]),
    ("MaxPoolGrad", &[0, 1, 2]),
    ("AvgPoolGrad", &[1]),
    ("AddV2", &[0, 1]),
    ("Sub", &[0, 1]),
    ("Mul", &[0, 1]),
    ("RealDiv", &[0, 1]),
    ("Maximum", &[0, 1]),
    ("Minimum", &[0, 1]),
    ("Neg", &[0]),
    ("Square", &[0]),
    ("Sum", &[0]),
    ("Mean", &[0]),
    ("LeakyRelu", &[0]),
    ("LeakyReluGrad", &[0, 1]),
];

/// The half types whose `Conv2D`/`MatMul → BiasAdd (→ Relu)` chains TF's
/// remapper fuses on this machine's CPU, where they round once: with
/// oneDNN on (`TF_ENABLE_ONEDNN_OPTS`, on by default on x86-64) and the
/// CPU features of TF's `IsDataTypeSupportedByOneDNNOnThisCPU`
/// (`tensorflow/core/util/util.cc`). The pass fuses the same chains on our
/// device, so the device rounds where TF's CPU does.
pub fn fused_by_tf_on_this_cpu() -> Vec<DataType> {
    let onednn = std::env::var("TF_ENABLE_ONEDNN_OPTS")
        .map(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"))
        .unwrap_or(true);
    let mut types = Vec::new();
    #[cfg(target_arch = "x86_64")]
    if onednn {
        let ne_convert = std::arch::is_x86_feature_detected!("avxneconvert");
        if std::arch::is_x86_feature_detected!("avx512f") || ne_convert {
            types.push(DataType::DtBfloat16);
        }
        let fp16 = std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512fp16");
        if fp16 || ne_convert {
            types.push(DataType::DtHalf);
        }
    }
    let _ = onednn;
    types
}

/// The half-precision types.
fn is_half(t: i32) -> bool {
    t == DataType::DtBfloat16 as i32 || t == DataType::DtHalf as i32
}

/// Lowers the half-precision nodes on a `device_type` device;
/// `runs_f32(node)` says whether our device runs `node` with `T` float32.
/// Nodes named in `preserve` (fetched) are left alone: their kernels cast.
/// Returns how many nodes it lowered.
pub fn lower_half_precision(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
    mut runs_f32: impl FnMut(&NodeDef) -> bool,
) -> usize {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut added = Vec::new();
    // The float32 producer of each lowered node's output, by its name.
    let mut renamed: HashMap<String, String> = HashMap::new();
    for node in &mut graph.node {
        let Some((_, inputs)) = LOWERED.iter().find(|(op, _)| *op == node.op) else {
            continue;
        };
        let Some(half) = type_attr(node, "T").filter(|&t| is_half(t)) else {
            continue;
        };
        if !is_ours(&node.device, device_type) || preserve.contains(&node.name) {
            continue;
        }
        let device = node.device.clone();
        let mut f32_node = node.clone();
        f32_node
            .attr
            .insert("T".into(), type_value(DataType::DtFloat as i32));
        // `_FusedConv2D` types its `args` with a list (`TArgs`) since TF 2.13.
        if let Some(attr_value::Value::List(list)) = f32_node
            .attr
            .get_mut("TArgs")
            .and_then(|v| v.value.as_mut())
        {
            list.r#type
                .iter_mut()
                .for_each(|t| *t = DataType::DtFloat as i32);
        }
        round_param(&mut f32_node, half);
        if !runs_f32(&f32_node) {
            continue;
        }
        for &i in *inputs {
            let Some(text) = node.input.get(i).cloned() else {
                continue;
            };
            let name = unique(&mut names, &node.name, &format!("{TO_F32}_{i}"));
            added.push(cast(&name, &text, half, DataType::DtFloat as i32, &device));
            node.input[i] = name;
        }
        node.attr = f32_node.attr;
        let back = unique(&mut names, &node.name, FROM_F32);
        added.push(cast(
            &back,
            &node.name,
            DataType::DtFloat as i32,
            half,
            &device,
        ));
        renamed.insert(node.name.clone(), back);
    }
    // Readers of a lowered node's output 0 read the cast back instead.
    for node in graph.node.iter_mut().chain(added.iter_mut()) {
        let own_cast = node.name.ends_with(FROM_F32);
        for text in &mut node.input {
            if let Input::Data {
                node: producer,
                port: 0,
            } = Input::parse(text)
                && let Some(back) = renamed.get(producer).filter(|_| !own_cast)
            {
                *text = back.clone();
            }
        }
    }
    let lowered = renamed.len();
    graph.node.extend(added);
    lowered
}

/// An element-wise op's float parameter (`LeakyRelu`'s `alpha`) rounded to
/// the `half` type, as TF's half kernels cast it (`static_cast<T>`): the
/// float32 op then multiplies two half values exactly and the result
/// rounds once, as TF's does.
fn round_param(node: &mut NodeDef, half: i32) {
    let Some(name) = BUILTIN
        .iter()
        .find(|d| d.name == node.op)
        .and_then(|d| d.param())
    else {
        return;
    };
    if let Some(attr_value::Value::F(alpha)) =
        node.attr.get_mut(name).and_then(|v| v.value.as_mut())
    {
        let to = if half == DataType::DtBfloat16 as i32 {
            DType::BF16
        } else {
            DType::F16
        };
        *alpha = through_half(to, *alpha);
    }
}

fn cast(name: &str, input: &str, from: i32, to: i32, device: &str) -> NodeDef {
    let mut attr = HashMap::new();
    attr.insert("SrcT".into(), type_value(from));
    attr.insert("DstT".into(), type_value(to));
    attr.insert(
        "Truncate".into(),
        AttrValue {
            value: Some(attr_value::Value::B(false)),
        },
    );
    NodeDef {
        name: name.into(),
        op: "Cast".into(),
        input: vec![input.into()],
        device: device.into(),
        attr,
        ..NodeDef::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_nodes::{CPU, FPGA, find, node};

    fn typed(mut n: NodeDef, device: &str, t: DataType) -> NodeDef {
        n.device = device.into();
        n.attr.insert("T".into(), type_value(t as i32));
        n
    }

    #[test]
    fn a_bfloat16_chain_on_our_device_runs_in_float32_between_casts() {
        let bf16 = DataType::DtBfloat16;
        let mut graph = GraphDef {
            node: vec![
                node("x", "Cast", &[]),
                typed(node("conv", "Conv2D", &["x", "w"]), FPGA, bf16),
                typed(node("relu", "Relu", &["conv", "^x"]), FPGA, bf16),
                typed(node("out", "Identity", &["relu:0"]), CPU, bf16),
            ],
            ..Default::default()
        };
        let n = lower_half_precision(&mut graph, &HashSet::new(), "FPGA", |_| true);
        assert_eq!(n, 2);
        let conv = find(&graph, "conv");
        assert_eq!(conv.device, FPGA);
        assert_eq!(type_attr(conv, "T"), Some(DataType::DtFloat as i32));
        assert_eq!(
            conv.input,
            ["conv/tensorplug_to_f32_0", "conv/tensorplug_to_f32_1"]
        );
        let to = find(&graph, "conv/tensorplug_to_f32_1");
        assert_eq!((to.op.as_str(), to.input[0].as_str()), ("Cast", "w"));
        assert_eq!(to.device, FPGA);
        assert_eq!(type_attr(to, "SrcT"), Some(bf16 as i32));
        // The Relu reads the conv's cast back, then casts it up again; the
        // Identity (not lowered) reads the Relu's cast back; control edges stay.
        let relu = find(&graph, "relu");
        assert_eq!(relu.input, ["relu/tensorplug_to_f32_0", "^x"]);
        assert_eq!(
            find(&graph, "relu/tensorplug_to_f32_0").input,
            ["conv/tensorplug_from_f32"]
        );
        assert_eq!(find(&graph, "out").input, ["relu/tensorplug_from_f32"]);
        let back = find(&graph, "relu/tensorplug_from_f32");
        assert_eq!(
            (back.input[0].as_str(), back.device.as_str()),
            ("relu", FPGA)
        );
        assert_eq!(type_attr(back, "DstT"), Some(bf16 as i32));
    }

    /// `alpha` rounds to the node's half type, as TF's half kernel casts it.
    #[test]
    fn a_half_leaky_relu_reads_alpha_rounded_to_its_type() {
        for (t, want) in [
            (DataType::DtBfloat16, 0.30078125),
            (DataType::DtHalf, 0.300_048_83),
        ] {
            let mut leaky = typed(node("leaky", "LeakyRelu", &["x"]), FPGA, t);
            leaky.attr.insert(
                "alpha".into(),
                AttrValue {
                    value: Some(attr_value::Value::F(0.3)),
                },
            );
            let mut graph = GraphDef {
                node: vec![node("x", "Cast", &[]), leaky],
                ..Default::default()
            };
            assert_eq!(
                lower_half_precision(&mut graph, &HashSet::new(), "FPGA", |_| true),
                1
            );
            let alpha = find(&graph, "leaky").attr["alpha"].value.clone();
            assert_eq!(alpha, Some(attr_value::Value::F(want)), "{t:?}");
        }
    }

    /// The chains the pass fuses in the half type: the bias is cast too,
    /// and `_FusedConv2D`'s `TArgs` becomes float32.
    #[test]
    fn a_bfloat16_fused_conv_on_our_device_runs_in_float32_with_its_bias() {
        let bf16 = DataType::DtBfloat16;
        let mut conv = typed(node("conv", "_FusedConv2D", &["x", "w", "b"]), FPGA, bf16);
        let targs = attr_value::ListValue {
            r#type: vec![bf16 as i32],
            ..Default::default()
        };
        conv.attr.insert(
            "TArgs".into(),
            AttrValue {
                value: Some(attr_value::Value::List(targs)),
            },
        );
        let mut graph = GraphDef {
            node: vec![
                node("x", "Cast", &[]),
                conv,
                typed(
                    node("dense", "_FusedMatMul", &["conv", "v", "c"]),
                    FPGA,
                    bf16,
                ),
            ],
            ..Default::default()
        };
        let n = lower_half_precision(&mut graph, &HashSet::new(), "FPGA", |_| true);
        assert_eq!(n, 2);
        let conv = find(&graph, "conv");
        assert_eq!(conv.input[2], "conv/tensorplug_to_f32_2");
        let Some(attr_value::Value::List(targs)) = conv.attr["TArgs"].value.as_ref() else {
            panic!("TArgs is a list");
        };
        assert_eq!(targs.r#type, [DataType::DtFloat as i32]);
        let dense = find(&graph, "dense");
        assert_eq!(
            dense.input,
            [
                "dense/tensorplug_to_f32_0",
                "dense/tensorplug_to_f32_1",
                "dense/tensorplug_to_f32_2"
            ]
        );
        assert_eq!(
            find(&graph, "dense/tensorplug_to_f32_0").input,
            ["conv/tensorplug_from_f32"]
        );
    }

    /// A half op on the CPU is where a user's scope, or TF for want of our
    /// kernel, put it: the pass leaves it there.
    #[test]
    fn half_ops_on_the_cpu_fetched_unrunnable_and_float32_are_left_alone() {
        let bf16 = DataType::DtBfloat16;
        let graph = GraphDef {
            node: vec![
                node("x", "Cast", &[]),
                typed(node("pinned", "MatMul", &["x", "x"]), CPU, bf16),
                typed(node("f32", "Relu", &["x"]), FPGA, DataType::DtFloat),
                typed(node("fetched", "Relu", &["x"]), FPGA, bf16),
                typed(node("other", "Sin", &["x"]), FPGA, bf16),
                typed(node("refused", "Relu6", &["x"]), FPGA, bf16),
            ],
            ..Default::default()
        };
        let preserve: HashSet<String> = ["fetched".to_string()].into();
        let mut g = graph.clone();
        let n = lower_half_precision(&mut g, &preserve, "FPGA", |n| n.op != "Relu6");
        assert_eq!((n, g.node.len()), (0, graph.node.len()));
        assert_eq!(g, graph);
    }

    #[test]
    fn the_pass_lowers_the_ops_the_half_kernels_are_registered_for() {
        let lowered: Vec<&str> = LOWERED.iter().map(|(op, _)| *op).collect();
        assert_eq!(lowered, crate::kernels::ops::half::OPS);
    }
}
