//! The nodes the matches become: per match its parameter nodes (the `Qat`
//! ops on the int8 op's device, their inputs in host memory; a batch
//! norm's folding on the CPU) and the int8 op; per quantized tensor an int8 version (`Quantize` of a float
//! one, or the int8 `MaxPool`/`Reshape` of one); a `Dequantize` in place of
//! each replaced fake-quant something float still reads.

use super::{BatchNorm, Compute, Index, Match, Quantizer};
use crate::graph::device::cpu_of;
use crate::graph::nodes::{constant, unique};
use crate::graph::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value};
use crate::kernels::ops::int8::op_name;
use crate::kernels::qat::{ADD_BLOCK, CONV_BLOCK, TENSOR_BLOCK, WEIGHTS};
use std::collections::{HashMap, HashSet};
use tensorplug_core::accelerator::Activation;
use tensorplug_core::quant::Rounding;

/// Rewrites every match on a `device_type` device into int8 ops; returns
/// how many. Preserved nodes (fetches) are kept, as
/// `Dequantize` of their int8 value when the rewrite replaced them.
pub fn rewrite_qat(graph: &mut GraphDef, preserve: &HashSet<String>, device_type: &str) -> usize {
    let matches = {
        let index = Index::new(&graph.node, preserve, device_type);
        if index.is_training() {
            return 0;
        }
        (0..graph.node.len())
            .filter_map(|i| index.match_at(i))
            .collect::<Vec<_>>()
    };
    if matches.is_empty() {
        return 0;
    }
    let count = matches.len();
    apply(graph, preserve, device_type, matches);
    count
}

/// The requantization each int8 op rounds with: TF 2.21's TFLite rounds
/// its `FULLY_CONNECTED` once and the others twice (measured,
/// `docs/device-numerics.md`).
fn rounding(compute: &Compute) -> Rounding {
    match compute {
        Compute::MatMul { .. } => Rounding::Single,
        _ => Rounding::Double,
    }
}

/// Applies `matches` to `graph`.
pub fn apply(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
    matches: Vec<Match>,
) {
    let (removed, replaced, added) = {
        let index = Index::new(&graph.node, preserve, device_type);
        let mut e = Emitter {
            names: graph.node.iter().map(|n| n.name.clone()).collect(),
            index: &index,
            device_type,
            int8: HashMap::new(),
            added: Vec::new(),
        };
        for m in &matches {
            let name = &index.nodes[m.out_fq].name;
            let int8 = unique(&mut e.names, name, "int8");
            e.int8.insert(name.clone(), int8);
        }
        for m in &matches {
            e.emit(m);
        }
        let mut removed = e.removed(&matches);
        let replaced: Vec<(usize, NodeDef)> = matches
            .iter()
            .filter(|m| !removed.contains(&m.out_fq))
            .map(|m| (m.out_fq, e.dequantize(m)))
            .collect();
        // A QDQ pair's `QuantizeV2` goes with its `Dequantize`.
        let gone: Vec<usize> = removed
            .iter()
            .copied()
            .chain(replaced.iter().map(|(at, _)| *at))
            .collect();
        for at in gone {
            if let Some(q) = index.quantizer(at).and_then(|q| q.quantize)
                && !index.preserve.contains(&index.nodes[q].name)
                && index
                    .uses
                    .of(&index.nodes[q].name)
                    .iter()
                    .all(|u| u.consumer == at)
            {
                removed.insert(q);
            }
        }
        (removed, replaced, e.added)
    };
    for (at, node) in replaced {
        graph.node[at] = node;
    }
    let mut at = 0;
    graph.node.retain(|_| {
        at += 1;
        !removed.contains(&(at - 1))
    });
    graph.node.extend(added);
}

struct Emitter<'i, 'a> {
    index: &'i Index<'a>,
    device_type: &'i str,
    names: HashSet<String>,
    /// Node name → the name of its int8 version.
    int8: HashMap<String, String>,
    added: Vec<NodeDef>,
}

impl Emitter<'_, '_> {
    fn op(&self, suffix: &str) -> String {
        op_name(self.device_type, suffix)
            .to_string_lossy()
            .into_owned()
    }

    fn add(&mut self, node: NodeDef) -> String {
        let name = node.name.clone();
        self.added.push(node);
        name
    }

    fn name(&mut self, base: &str, suffix: &str) -> String {
        unique(&mut self.names, base, suffix)
    }

    fn emit(&mut self, m: &Match) {
        let fq = &self.index.nodes[m.out_fq];
        let head = &self.index.nodes[m.head];
        let (device, cpu) = (head.device.clone(), cpu_of(&head.device, self.device_type));
        let int8_name = self.int8[&fq.name].clone();
        // The op's own output, when pools or reshapes follow it.
        let result = int8_name.clone();
        let int8_name = if m.after.is_empty() {
            result.clone()
        } else {
            self.name(&result, "head")
        };
        let out = self.index.range_of(m.out_fq);
        let inputs: Vec<String> = m.inputs.iter().map(|x| self.int8_of(x, &device)).collect();
        let ranges: Vec<Quantizer> = m
            .inputs
            .iter()
            .filter_map(|x| self.index.quantized_root(x))
            .map(|root| self.index.range_of(root))
            .collect();
        let activation = activation_attr(m.activation);
        let round = (
            "rounding",
            attr_value::Value::I(rounding(&m.compute) as i64),
        );
        let all: Vec<&Quantizer> = ranges.iter().chain([&out]).collect();
        let [modes, names, ensure] = range_attrs(&all);
        if let Compute::Add = m.compute {
            let block = self.name(&int8_name, "block");
            let (x, y) = (&ranges[0], &ranges[1]);
            self.add(node(
                &block,
                &self.op(ADD_BLOCK),
                &device,
                &[&x.min, &x.max, &y.min, &y.max, &out.min, &out.max],
                &[activation, round, modes, names, ensure],
            ));
            let op = self.op("AddInt8");
            self.add(node(
                &int8_name,
                &op,
                &device,
                &[&inputs[0], &inputs[1], &block],
                &[],
            ));
            self.after(m, int8_name, &result);
            return;
        }
        let weights = m.weights.as_ref().expect("a convolution has weights");
        let empty = self.name(&int8_name, "empty");
        self.add(empty_constant(&empty, &cpu));
        let (factor, folded_bias) = match &m.batch_norm {
            Some(bn) => {
                let (f, b) = self.fold(bn, &int8_name, &cpu);
                (f, Some(b))
            }
            None => (empty.clone(), None),
        };
        let (range_min, range_max) = weights
            .range
            .clone()
            .unwrap_or_else(|| (empty.clone(), empty.clone()));
        let quantized = self.name(&int8_name, "weights");
        let depthwise = matches!(m.compute, Compute::Depthwise);
        let mut weight_attrs = vec![("depthwise", attr_value::Value::B(depthwise))];
        if let Some(op) = &weights.fake_quant {
            let kind: &[u8] = if op.ends_with("PerChannel") {
                b"per_channel"
            } else {
                b"per_tensor"
            };
            weight_attrs.push(("apply_fake_quant", attr_value::Value::S(kind.to_vec())));
        }
        if let Some((narrow, round_mode, ensure)) = &weights.scaled {
            weight_attrs.extend([
                ("mode", attr_value::Value::S(b"scaled".to_vec())),
                ("narrow_range", attr_value::Value::B(*narrow)),
                (
                    "round_mode",
                    attr_value::Value::S(round_mode.as_bytes().to_vec()),
                ),
                ("ensure_minimum_range", attr_value::Value::F(*ensure)),
            ]);
        }
        self.add(node(
            &quantized,
            &self.op(WEIGHTS),
            &device,
            &[&weights.tensor, &factor, &range_min, &range_max],
            &weight_attrs,
        ));
        let bias = folded_bias.or(m.bias.clone()).unwrap_or(empty);
        let block = self.name(&int8_name, "block");
        let x = &ranges[0];
        let scales = format!("{quantized}:1");
        self.add(node(
            &block,
            &self.op(CONV_BLOCK),
            &device,
            &[&x.min, &x.max, &scales, &bias, &out.min, &out.max],
            &[activation, round, modes, names, ensure],
        ));
        let (suffix, attrs) = match m.compute {
            Compute::Conv2D => ("Conv2DInt8", window_attrs(head, m.pad)),
            Compute::Depthwise => ("DepthwiseConv2DInt8", window_attrs(head, m.pad)),
            Compute::MatMul { transpose_b } => (
                "MatMulInt8",
                vec![("transpose_b", attr_value::Value::B(transpose_b))],
            ),
            Compute::Add => unreachable!("handled above"),
        };
        let op = self.op(suffix);
        let n = node(
            &int8_name,
            &op,
            &device,
            &[&inputs[0], &quantized, &block],
            &[],
        );
        self.add(with_attrs(n, attrs));
        self.after(m, int8_name, &result);
    }

    /// The int8 pools and reshapes of `m.after`, from `input`; the last is
    /// `result`.
    fn after(&mut self, m: &Match, mut input: String, result: &str) {
        for (i, &at) in m.after.iter().enumerate() {
            let name = if i + 1 == m.after.len() {
                result.to_string()
            } else {
                self.name(result, &format!("after_{i}"))
            };
            let n = &self.index.nodes[at];
            let made = self.passthrough(n, &name, &input);
            self.add(made);
            input = name;
        }
    }

    /// `n` (a `MaxPool` or `Reshape`) in int8, named `name`, reading `input`.
    fn passthrough(&mut self, n: &NodeDef, name: &str, input: &str) -> NodeDef {
        if n.op == "MaxPool" {
            let block = self.name(name, "block");
            self.add(int32_constant(
                &block,
                &n.device,
                &[0, 0, 0, -128, 127, 0, 0, 0],
            ));
            let keys = ["ksize", "strides", "padding", "data_format"];
            let pool = node(
                name,
                &self.op("MaxPoolInt8"),
                &n.device,
                &[input, &block],
                &[],
            );
            with_attrs(pool, copied(n, &keys))
        } else {
            let mut attrs = copied(n, &["Tshape"]);
            attrs.push(("T", attr_value::Value::Type(DataType::DtInt8 as i32)));
            let reshape = node(name, "Reshape", &n.device, &[input, &n.input[1]], &[]);
            with_attrs(reshape, attrs)
        }
    }

    /// The batch norm's factor `scale · rsqrt(variance + ε)` and bias
    /// `offset − mean · factor`, in f32 TF ops on the CPU (as the converter
    /// folds them).
    fn fold(&mut self, bn: &BatchNorm, base: &str, cpu: &str) -> (String, String) {
        let (scale, offset, mean, variance, epsilon) = match bn {
            BatchNorm::Split { factor, bias } => return (factor.clone(), bias.clone()),
            BatchNorm::Stats {
                scale,
                offset,
                mean,
                variance,
                epsilon,
            } => (scale, offset, mean, variance, *epsilon),
        };
        let float = || ("T", attr_value::Value::Type(DataType::DtFloat as i32));
        let eps = self.name(base, "bn/epsilon");
        self.add(float_constant(&eps, cpu, &[], &[epsilon]));
        let sum = self.name(base, "bn/variance_epsilon");
        self.add(node(&sum, "AddV2", cpu, &[variance, &eps], &[float()]));
        let rsqrt = self.name(base, "bn/rsqrt");
        self.add(node(&rsqrt, "Rsqrt", cpu, &[&sum], &[float()]));
        let factor = self.name(base, "bn/factor");
        self.add(node(&factor, "Mul", cpu, &[scale, &rsqrt], &[float()]));
        let shift = self.name(base, "bn/mean_factor");
        self.add(node(&shift, "Mul", cpu, &[mean, &factor], &[float()]));
        let bias = self.name(base, "bn/bias");
        self.add(node(&bias, "Sub", cpu, &[offset, &shift], &[float()]));
        (factor, bias)
    }

    /// The int8 version of the quantized tensor `text`, made for `device`.
    fn int8_of(&mut self, text: &str, device: &str) -> String {
        let at = self.index.producer(text).expect("a quantized tensor");
        let n = &self.index.nodes[at];
        if let Some(done) = self.int8.get(&n.name) {
            return done.clone();
        }
        if n.op == "Identity" {
            let input = n.input[0].clone();
            return self.int8_of(&input, device);
        }
        let name = self.name(&n.name, "int8");
        self.int8.insert(n.name.clone(), name.clone());
        let made = if let Some(q) = self.index.quantizer(at) {
            let block = self.tensor_block(at, "quantize", &name, device);
            node(
                &name,
                &self.op("Quantize"),
                device,
                &[&q.input, &block],
                &[],
            )
        } else {
            // MaxPool, Reshape
            let input = self.int8_of(&n.input[0], &n.device);
            self.passthrough(n, &name, &input)
        };
        self.add(made);
        name
    }

    /// A `QatTensorBlock` of activation quantizer `fq`'s range.
    fn tensor_block(&mut self, fq: usize, kind: &str, base: &str, device: &str) -> String {
        let q = self.index.range_of(fq);
        let block = self.name(base, &format!("{kind}_block"));
        let kind = ("kind", attr_value::Value::S(kind.as_bytes().to_vec()));
        let [modes, names, ensure] = range_attrs(&[&q]);
        let op = self.op(TENSOR_BLOCK);
        self.add(node(
            &block,
            &op,
            device,
            &[&q.min, &q.max],
            &[kind, modes, names, ensure],
        ))
    }

    /// The `Dequantize` that replaces a match's fake-quant, its name and
    /// control inputs kept.
    fn dequantize(&mut self, m: &Match) -> NodeDef {
        let fq = &self.index.nodes[m.out_fq];
        let device = self.index.nodes[m.head].device.clone();
        let int8 = self.int8[&fq.name].clone();
        let block = self.tensor_block(m.out_fq, "dequantize", &int8, &device);
        let mut n = node(
            &fq.name,
            &self.op("Dequantize"),
            &device,
            &[&int8, &block],
            &[],
        );
        n.input
            .extend(fq.input.iter().filter(|i| i.starts_with('^')).cloned());
        n
    }

    /// The chains, and every node with an int8 version that nothing else
    /// (and no fetch) reads any more.
    fn removed(&self, matches: &[Match]) -> HashSet<usize> {
        let mut removed: HashSet<usize> = matches.iter().flat_map(|m| m.chain.clone()).collect();
        let candidates: Vec<usize> = self
            .int8
            .keys()
            .filter_map(|name| self.index.by_name.get(name.as_str()).copied())
            .collect();
        loop {
            let more: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|c| !removed.contains(c))
                .filter(|&c| {
                    let name = &self.index.nodes[c].name;
                    !self.index.preserve.contains(name)
                        && self
                            .index
                            .uses
                            .of(name)
                            .iter()
                            .all(|u| removed.contains(&u.consumer))
                })
                .collect();
            if more.is_empty() {
                return removed;
            }
            removed.extend(more);
        }
    }
}

type Attr = (&'static str, attr_value::Value);

/// The `range_modes`, `range_names` and `ensure_minimum_range` of a block
/// op reading `ranges` in order (the matcher keeps one
/// `ensure_minimum_range` per match).
fn range_attrs(ranges: &[&Quantizer]) -> [Attr; 3] {
    let modes = attr_value::ListValue {
        s: ranges.iter().map(|q| q.mode.as_bytes().to_vec()).collect(),
        ..Default::default()
    };
    let names = attr_value::ListValue {
        s: ranges.iter().map(|q| q.node.as_bytes().to_vec()).collect(),
        ..Default::default()
    };
    let ensure = ranges
        .iter()
        .find(|q| q.quantize.is_some())
        .map_or(0.01, |q| q.ensure_minimum_range);
    [
        ("range_modes", attr_value::Value::List(modes)),
        ("range_names", attr_value::Value::List(names)),
        ("ensure_minimum_range", attr_value::Value::F(ensure)),
    ]
}

fn activation_attr(activation: Activation) -> Attr {
    let name = match activation {
        Activation::None => "NONE",
        Activation::Relu => "RELU",
        Activation::Relu6 => "RELU6",
    };
    ("activation", attr_value::Value::S(name.as_bytes().to_vec()))
}

/// A convolution's window attributes, a folded pad made explicit.
fn window_attrs(conv: &NodeDef, pad: Option<[i64; 4]>) -> Vec<Attr> {
    let mut attrs = copied(conv, &["strides", "dilations", "data_format"]);
    match pad {
        Some([top, bottom, left, right]) => {
            attrs.push(("padding", attr_value::Value::S(b"EXPLICIT".to_vec())));
            let list = attr_value::ListValue {
                i: vec![0, 0, top, bottom, left, right, 0, 0],
                ..Default::default()
            };
            attrs.push(("explicit_paddings", attr_value::Value::List(list)));
        }
        None => attrs.extend(copied(conv, &["padding", "explicit_paddings"])),
    }
    attrs
}

fn copied(node: &NodeDef, keys: &[&'static str]) -> Vec<Attr> {
    keys.iter()
        .filter_map(|&k| Some((k, node.attr.get(k)?.value.clone()?)))
        .collect()
}

fn node(name: &str, op: &str, device: &str, inputs: &[&str], attrs: &[Attr]) -> NodeDef {
    with_attrs(
        NodeDef {
            name: name.into(),
            op: op.into(),
            device: device.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        attrs.to_vec(),
    )
}

fn with_attrs(mut n: NodeDef, attrs: Vec<Attr>) -> NodeDef {
    for (k, v) in attrs {
        n.attr.insert(k.into(), AttrValue { value: Some(v) });
    }
    n
}

fn float_constant(name: &str, device: &str, dims: &[i64], values: &[f32]) -> NodeDef {
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    constant(name, device, DataType::DtFloat, dims, bytes)
}

fn empty_constant(name: &str, device: &str) -> NodeDef {
    float_constant(name, device, &[0], &[])
}

fn int32_constant(name: &str, device: &str, values: &[i32]) -> NodeDef {
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    constant(
        name,
        device,
        DataType::DtInt32,
        &[values.len() as i64],
        bytes,
    )
}
