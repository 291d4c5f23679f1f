//! Batch-norm folding for inference graphs. After a `Conv2D` or
//! `DepthwiseConv2dNative` with a constant filter, on our device:
//! - `FusedBatchNormV3` (`is_training = false`, constant parameters) becomes
//!   the filter scaled per output channel by `f = rsqrt(variance + ε) ·
//!   scale`, then `BiasAdd` of `offset − mean · f` under the batch norm's name;
//! - `Mul` by a per-channel constant becomes the scaled filter, and `Add` of
//!   one a `BiasAdd`: what TF's remapper and constant folding leave of an
//!   inference batch norm before our pass runs.
//!
//! The chain fusion then makes `Conv2D → BiasAdd (→ Relu)` one
//! `_FusedConv2D`. Only frozen graphs have such constants
//! (`convert_variables_to_constants_v2`, constants in a `tf.function`);
//! graphs that read variables are left as they are.
//! `docs/graph-optimizer.md`, "Batch norm".

use super::device;
use super::edges::{Input, Uses};
use super::nodes::{attr_of, is_nhwc, type_value, unique, value};
use super::proto::{DataType, GraphDef, NodeDef, attr_value};
use std::collections::{HashMap, HashSet};

/// The batch-norm ops folded (same inputs and attributes as V3 for this).
const BATCH_NORMS: [&str; 3] = ["FusedBatchNormV3", "FusedBatchNormV2", "FusedBatchNorm"];

/// Folds every matching batch norm, channel scale and channel bias on a
/// `device_type` device; returns how many nodes it rewrote. Preserved
/// nodes (fetches) are never removed.
pub fn fold_batch_norms(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
) -> usize {
    let mut folded = 0;
    for step in [Step::BatchNorm, Step::Scale, Step::Bias] {
        let rewrites: Vec<Rewrite> = {
            let graph = Graph::index(&graph.node, preserve, device_type);
            (0..graph.nodes.len())
                .filter_map(|i| graph.plan(step, i))
                .collect()
        };
        folded += rewrites.len();
        apply(graph, rewrites);
    }
    folded
}

/// Which pattern a step folds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// `conv → FusedBatchNormV3` (inference): a scaled filter and a `BiasAdd`.
    BatchNorm,
    /// `conv → Mul(c[k])`: a scaled filter (TF's own passes leave this
    /// after a depthwise convolution when they decompose a batch norm).
    Scale,
    /// `conv → Add(c[k])`: a `BiasAdd`, which the chain fusion takes.
    Bias,
}

/// One rewrite of node `at` (which keeps its name and outputs), reading
/// `conv` with its filter replaced; `conv` is removed when `at` becomes it.
struct Rewrite {
    at: usize,
    conv: usize,
    filter: Option<(Vec<i64>, Vec<f32>)>,
    bias: Option<Vec<f32>>,
}

/// The graph with the indexes the plans read.
struct Graph<'a> {
    nodes: &'a [NodeDef],
    by_name: HashMap<&'a str, usize>,
    uses: Uses<'a>,
    preserve: &'a HashSet<String>,
    device_type: &'a str,
}

impl<'a> Graph<'a> {
    fn index(nodes: &'a [NodeDef], preserve: &'a HashSet<String>, device_type: &'a str) -> Self {
        let by_name = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let uses = Uses::index(nodes);
        Self {
            nodes,
            by_name,
            uses,
            preserve,
            device_type,
        }
    }

    /// The rewrite `step` makes of node `at`, if it matches.
    fn plan(&self, step: Step, at: usize) -> Option<Rewrite> {
        let node = &self.nodes[at];
        let wanted = match step {
            Step::BatchNorm => BATCH_NORMS.contains(&node.op.as_str()),
            Step::Scale => node.op == "Mul",
            Step::Bias => node.op == "Add" || node.op == "AddV2",
        };
        if !wanted || !f32_on(node, self.device_type) {
            return None;
        }
        let data: Vec<&String> = node.input.iter().filter(|i| !i.starts_with('^')).collect();
        if step == Step::BatchNorm {
            return self.plan_batch_norm(at, &data);
        }
        let [a, b] = data[..] else { return None };
        let (conv, other) = match self.conv_read_by(a, at) {
            Some(conv) => (conv, b),
            None => (self.conv_read_by(b, at)?, a),
        };
        let (filter_dims, filter) = self.filter(conv)?;
        let channels = out_channels(&self.nodes[conv], &filter_dims)?;
        let (dims, values) = constant_f32(self.nodes, &self.by_name, other)?;
        let per_channel =
            dims.last() == Some(&channels) && dims.iter().rev().skip(1).all(|&d| d == 1);
        if !per_channel {
            return None;
        }
        Some(match step {
            Step::Scale => Rewrite {
                at,
                conv,
                filter: Some((filter_dims, scaled(filter, &values))),
                bias: None,
            },
            _ => Rewrite {
                at,
                conv,
                filter: None,
                bias: Some(values),
            },
        })
    }

    fn plan_batch_norm(&self, at: usize, data: &[&String]) -> Option<Rewrite> {
        let node = &self.nodes[at];
        let inference = matches!(
            attr_of(node, "is_training"),
            Some(attr_value::Value::B(false))
        );
        if !inference || !is_nhwc(node) || self.preserve.contains(&node.name) {
            return None;
        }
        // Only output 0 may be read (the statistics pass through in inference).
        if self
            .uses
            .of(&node.name)
            .iter()
            .any(|u| u.port.is_some_and(|p| p != 0))
        {
            return None;
        }
        let [x, scale, offset, mean, var] = data[..] else {
            return None;
        };
        let conv = self.conv_read_by(x, at)?;
        let (filter_dims, filter) = self.filter(conv)?;
        let channels = out_channels(&self.nodes[conv], &filter_dims)?;
        let params: Vec<Vec<f32>> = [scale, offset, mean, var]
            .into_iter()
            .map(|input| constant_f32(self.nodes, &self.by_name, input))
            .map(|p| p.filter(|(dims, _)| dims[..] == [channels]).map(|(_, v)| v))
            .collect::<Option<_>>()?;
        let [scale, offset, mean, var] = &params[..] else {
            return None;
        };
        let epsilon = match attr_of(node, "epsilon") {
            Some(attr_value::Value::F(e)) => *e,
            _ => 1e-4, // the op's default
        };
        // TF's CPU kernel: factor = rsqrt(variance + ε) · scale, in f32.
        let factor: Vec<f32> = var
            .iter()
            .zip(scale)
            .map(|(&v, &s)| (1.0 / (v + epsilon).sqrt()) * s)
            .collect();
        let bias = offset
            .iter()
            .zip(mean)
            .zip(&factor)
            .map(|((&o, &m), &f)| o - m * f)
            .collect();
        Some(Rewrite {
            at,
            conv,
            filter: Some((filter_dims, scaled(filter, &factor))),
            bias: Some(bias),
        })
    }

    /// The convolution whose output 0 `input` is, when `consumer` is its
    /// only reader, on the same device, and it may be removed.
    fn conv_read_by(&self, input: &str, consumer: usize) -> Option<usize> {
        let Input::Data { node, port: 0 } = Input::parse(input) else {
            return None;
        };
        let conv = *self.by_name.get(node)?;
        let c = &self.nodes[conv];
        let only =
            matches!(self.uses.of(&c.name), [u] if u.consumer == consumer && u.port == Some(0));
        let ok = (c.op == "Conv2D" || c.op == "DepthwiseConv2dNative")
            && only
            && c.device == self.nodes[consumer].device
            && f32_on(c, self.device_type)
            && is_nhwc(c)
            && !self.preserve.contains(&c.name);
        ok.then_some(conv)
    }

    fn filter(&self, conv: usize) -> Option<(Vec<i64>, Vec<f32>)> {
        constant_f32(self.nodes, &self.by_name, self.nodes[conv].input.get(1)?)
    }
}

/// The output channels of a convolution with a filter of `dims`.
fn out_channels(conv: &NodeDef, dims: &[i64]) -> Option<i64> {
    match *dims {
        [_, _, ci, m] if conv.op == "DepthwiseConv2dNative" => Some(ci * m),
        [_, _, _, co] => Some(co),
        _ => None,
    }
}

/// `filter` with each output channel (its fastest index) times `factor`.
fn scaled(mut filter: Vec<f32>, factor: &[f32]) -> Vec<f32> {
    for (i, w) in filter.iter_mut().enumerate() {
        *w *= factor[i % factor.len()];
    }
    filter
}

/// Applies `rewrites`: new filter and bias constants, the rewritten nodes,
/// and the convolutions they replaced removed.
fn apply(graph: &mut GraphDef, rewrites: Vec<Rewrite>) {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut removed = vec![false; graph.node.len()];
    let mut added = Vec::new();
    for r in rewrites {
        let mut conv = graph.node[r.conv].clone();
        let at_name = graph.node[r.at].name.clone();
        let device = conv.device.clone();
        if let Some((dims, values)) = r.filter {
            let name = unique(&mut names, &conv.name, "tensorplug_folded_filter");
            added.push(constant(&name, &device, &dims, &values));
            conv.input[1] = name;
        }
        let controls: Vec<String> = graph.node[r.at]
            .input
            .iter()
            .filter(|i| i.starts_with('^'))
            .cloned()
            .collect();
        match r.bias {
            // The node becomes BiasAdd(conv, bias); the convolution stays.
            Some(bias) => {
                let name = unique(&mut names, &at_name, "tensorplug_folded_bias");
                added.push(constant(&name, &device, &[bias.len() as i64], &bias));
                let node = &mut graph.node[r.at];
                node.input = [conv.name.clone(), name]
                    .into_iter()
                    .chain(controls)
                    .collect();
                node.op = "BiasAdd".into();
                node.attr = [
                    ("T".to_string(), type_value(DataType::DtFloat as i32)),
                    (
                        "data_format".to_string(),
                        value(attr_value::Value::S(b"NHWC".to_vec())),
                    ),
                ]
                .into();
                graph.node[r.conv] = conv;
            }
            // The node becomes the convolution (a `Mul` folded into it).
            None => {
                conv.name = at_name;
                let new: Vec<String> = controls
                    .into_iter()
                    .filter(|c| !conv.input.contains(c))
                    .collect();
                conv.input.extend(new);
                graph.node[r.at] = conv;
                removed[r.conv] = true;
            }
        }
    }
    let mut index = 0;
    graph.node.retain(|_| {
        index += 1;
        !removed[index - 1]
    });
    graph.node.extend(added);
}

/// The f32 value of the `Const` that `input` reads (through `Identity`
/// nodes), with its dims.
fn constant_f32(
    nodes: &[NodeDef],
    by_name: &HashMap<&str, usize>,
    input: &str,
) -> Option<(Vec<i64>, Vec<f32>)> {
    let mut node = &nodes[*by_name.get(Input::parse(input).node())?];
    for _ in 0..8 {
        if node.op != "Identity" {
            break;
        }
        let next = node.input.iter().find(|i| !i.starts_with('^'))?;
        node = &nodes[*by_name.get(Input::parse(next).node())?];
    }
    if node.op != "Const" {
        return None;
    }
    let Some(attr_value::Value::Tensor(t)) = attr_of(node, "value") else {
        return None;
    };
    if t.dtype != DataType::DtFloat as i32 {
        return None;
    }
    let dims: Vec<i64> = t
        .tensor_shape
        .as_ref()?
        .dim
        .iter()
        .map(|d| d.size)
        .collect();
    let count = usize::try_from(dims.iter().product::<i64>()).ok()?;
    let values: Vec<f32> = if !t.tensor_content.is_empty() {
        t.tensor_content
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    } else if t.float_val.len() == 1 {
        vec![t.float_val[0]; count] // TF repeats the last value
    } else {
        t.float_val.clone()
    };
    (values.len() == count).then_some((dims, values))
}

/// A `Const` node of f32 `values`.
fn constant(name: &str, device: &str, dims: &[i64], values: &[f32]) -> NodeDef {
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    super::nodes::constant(name, device, DataType::DtFloat, dims, bytes)
}

fn f32_on(node: &NodeDef, device_type: &str) -> bool {
    device::is_ours(&node.device, device_type)
        && matches!(attr_of(node, "T"), Some(attr_value::Value::Type(t)) if *t == DataType::DtFloat as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::fuse::{Heads, fuse_chains};

    const FPGA: &str = "/job:localhost/replica:0/task:0/device:FPGA:0";

    fn op(name: &str, op: &str, input: &[&str], attrs: &[(&str, attr_value::Value)]) -> NodeDef {
        NodeDef {
            name: name.into(),
            op: op.into(),
            input: input.iter().map(|i| (*i).to_owned()).collect(),
            device: FPGA.into(),
            attr: attrs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), value(v.clone())))
                .chain([("T".to_owned(), type_value(DataType::DtFloat as i32))])
                .collect(),
            ..Default::default()
        }
    }

    /// x → Conv2D(filter 1x1x1x2) → FusedBatchNormV3 → Relu, all constants.
    fn graph(training: bool) -> GraphDef {
        let vec2 = |name: &str, v: [f32; 2]| constant(name, FPGA, &[2], &v);
        let bn_attrs = [
            ("is_training", attr_value::Value::B(training)),
            ("epsilon", attr_value::Value::F(0.25)),
        ];
        GraphDef {
            node: vec![
                op("x", "Placeholder", &[], &[]),
                constant("w", FPGA, &[1, 1, 1, 2], &[2.0, 3.0]),
                op("conv", "Conv2D", &["x", "w"], &[]),
                vec2("scale", [1.0, 2.0]),
                vec2("offset", [0.5, -1.0]),
                vec2("mean", [1.0, 4.0]),
                vec2("var", [0.75, 3.75]),
                op(
                    "bn",
                    "FusedBatchNormV3",
                    &["conv", "scale", "offset", "mean", "var"],
                    &bn_attrs,
                ),
                op("relu", "Relu", &["bn"], &[]),
            ],
            ..Default::default()
        }
    }

    fn values(graph: &GraphDef, name: &str) -> Vec<f32> {
        let index: HashMap<&str, usize> = graph
            .node
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        constant_f32(&graph.node, &index, name)
            .expect("a constant")
            .1
    }

    #[test]
    fn conv_then_inference_batch_norm_becomes_one_fused_conv() {
        let mut g = graph(false);
        assert_eq!(fold_batch_norms(&mut g, &HashSet::new(), "FPGA"), 1);
        // f = rsqrt(var + 0.25) · scale = [1, 1]; bias = offset − mean · f.
        let conv = g.node.iter().find(|n| n.name == "conv").unwrap();
        assert_eq!(values(&g, &conv.input[1]), [2.0, 3.0]);
        let bn = g.node.iter().find(|n| n.name == "bn").unwrap();
        assert_eq!((bn.op.as_str(), bn.input[0].as_str()), ("BiasAdd", "conv"));
        assert_eq!(values(&g, &bn.input[1]), [-0.5, -5.0]);
        let fusions = fuse_chains(
            &mut g,
            &HashSet::new(),
            "FPGA",
            Heads::ALL,
            &[DataType::DtFloat],
        )
        .unwrap();
        assert_eq!(fusions.with_relu, 1);
        let fused = g.node.iter().find(|n| n.name == "relu").unwrap();
        assert_eq!(fused.op, "_FusedConv2D");
        assert!(!g.node.iter().any(|n| n.op == "FusedBatchNormV3"));
    }

    #[test]
    fn the_factor_scales_each_output_channel() {
        let mut g = graph(false);
        let var = g.node.iter_mut().find(|n| n.name == "var").unwrap();
        *var = constant("var", FPGA, &[2], &[3.75, 0.0]);
        fold_batch_norms(&mut g, &HashSet::new(), "FPGA");
        let conv = g.node.iter().find(|n| n.name == "conv").unwrap();
        // f = [1/2 · 1, 2 · 2] = [0.5, 4].
        assert_eq!(values(&g, &conv.input[1]), [1.0, 12.0]);
        let bn = g.node.iter().find(|n| n.name == "bn").unwrap();
        assert_eq!(values(&g, &bn.input[1]), [0.0, -17.0]);
    }

    #[test]
    fn training_statistics_variables_and_fetches_are_left_alone() {
        let none = HashSet::new();
        assert_eq!(fold_batch_norms(&mut graph(true), &none, "FPGA"), 0);
        // A statistic is read.
        let mut g = graph(false);
        g.node.push(op("stat", "Identity", &["bn:1"], &[]));
        assert_eq!(fold_batch_norms(&mut g, &none, "FPGA"), 0);
        // The filter is not a constant.
        let mut g = graph(false);
        g.node[1] = op("w", "ReadVariableOp", &["handle"], &[]);
        assert_eq!(fold_batch_norms(&mut g, &none, "FPGA"), 0);
        // The convolution's output is fetched too.
        let fetch: HashSet<String> = ["conv".to_owned()].into();
        assert_eq!(fold_batch_norms(&mut graph(false), &fetch, "FPGA"), 0);
        // On another device type.
        assert_eq!(fold_batch_norms(&mut graph(false), &none, "NPU"), 0);
    }

    /// What TF's passes leave of an inference batch norm after a depthwise
    /// convolution: x → Depthwise(2 channels) → Mul(c[1,1,1,2]) → Add(c[2]) → Relu6.
    #[test]
    fn channel_scale_and_bias_after_a_convolution_are_folded() {
        let mut g = GraphDef {
            node: vec![
                op("x", "Placeholder", &[], &[]),
                constant("w", FPGA, &[1, 1, 1, 2], &[2.0, 3.0]),
                op("dw", "DepthwiseConv2dNative", &["x", "w"], &[]),
                constant("k", FPGA, &[1, 1, 1, 2], &[0.5, -1.0]),
                op("mul", "Mul", &["k", "dw", "^x"], &[]),
                constant("b", FPGA, &[2], &[1.0, 2.0]),
                op("add", "AddV2", &["mul", "b"], &[]),
                op("act", "Relu6", &["add"], &[]),
            ],
            ..Default::default()
        };
        assert_eq!(fold_batch_norms(&mut g, &HashSet::new(), "FPGA"), 2);
        assert!(
            !g.node
                .iter()
                .any(|n| n.name == "dw" || n.op == "Mul" || n.op == "AddV2")
        );
        let conv = g.node.iter().find(|n| n.name == "mul").unwrap();
        assert_eq!(conv.op, "DepthwiseConv2dNative");
        assert_eq!(conv.input[0], "x");
        assert!(conv.input.contains(&"^x".to_owned()));
        assert_eq!(values(&g, &conv.input[1]), [1.0, -3.0]);
        let add = g.node.iter().find(|n| n.name == "add").unwrap();
        assert_eq!((add.op.as_str(), add.input[0].as_str()), ("BiasAdd", "mul"));
        assert_eq!(values(&g, &add.input[1]), [1.0, 2.0]);
    }

    #[test]
    fn a_scale_or_bias_that_is_not_per_channel_is_left_alone() {
        let graph = |k: NodeDef| GraphDef {
            node: vec![
                op("x", "Placeholder", &[], &[]),
                constant("w", FPGA, &[1, 1, 1, 2], &[2.0, 3.0]),
                op("conv", "Conv2D", &["x", "w"], &[]),
                k,
                op("add", "Add", &["conv", "k"], &[]),
            ],
            ..Default::default()
        };
        let none = HashSet::new();
        assert_eq!(
            fold_batch_norms(
                &mut graph(constant("k", FPGA, &[2], &[1.0, 2.0])),
                &none,
                "FPGA"
            ),
            1
        );
        // A full tensor, a column, another channel count, a variable.
        for k in [
            constant("k", FPGA, &[1, 1, 2, 2], &[1.0; 4]),
            constant("k", FPGA, &[2, 1], &[1.0; 2]),
            constant("k", FPGA, &[3], &[1.0; 3]),
            op("k", "ReadVariableOp", &["handle"], &[]),
        ] {
            let mut g = graph(k);
            assert_eq!(
                fold_batch_norms(&mut g, &none, "FPGA"),
                0,
                "{:?}",
                g.node[3]
            );
        }
    }
}
