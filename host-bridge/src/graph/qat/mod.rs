//! int8 from quantized graphs: the chains tensorflow-model-optimization's
//! `quantize_model` writes (QAT) and the `QuantizeV2`/`Dequantize` pairs
//! Intel Neural Compressor writes for ITEX (QDQ), rewritten into the
//! device's int8 ops, with `Quantize`/`Dequantize` only where a float op
//! reads or writes them (`docs/graph-optimizer.md`, "int8 from QAT and QDQ
//! graphs").
//!
//! A match ends at an activation quantizer (a `FakeQuantWithMinMaxVars`,
//! 8 bits, not narrow range; or a per-tensor `SCALED` `Dequantize` of a
//! `QuantizeV2`), read back through `MaxPool`/`Reshape`/`Identity`, then
//! - `Conv2D | DepthwiseConv2dNative | MatMul` (its input a quantized
//!   tensor, optionally through a `Pad`, its filter a narrow-range weight
//!   fake-quant, a weight QDQ pair, or plain float weights), then
//!   `BiasAdd` or an inference `FusedBatchNormV3`, then `Relu | Relu6`,
//!   each optional;
//! - `AddV2 | Add` of two quantized tensors, then `Relu | Relu6`.
//!
//! A quantized tensor is an activation quantizer's output, or `MaxPool`,
//! `Reshape` or `Identity` of one (they keep its quantization, as in
//! TFLite). The int8 weights and blocks are computed on the CPU at run time
//! from the float values the graph reads ([`crate::kernels::qat`]), so the
//! rewrite needs no constants and follows a model that trains on.
//!
//! Training graphs are left alone: their chain nodes have more than one
//! consumer (the gradients), and a graph with fake-quant gradients is not
//! rewritten at all.

pub(super) mod emit;
mod folded;
pub(super) mod pack;

use super::device::is_ours;
use super::edges::{Input, Uses};
use super::nodes::{attr_of, is_nhwc};
use super::proto::{DataType, NodeDef, attr_value};
use std::collections::{HashMap, HashSet};
use tensorplug_core::accelerator::Activation;

/// The graph with the lookups matching needs.
pub(super) struct Index<'a> {
    pub nodes: &'a [NodeDef],
    pub by_name: HashMap<&'a str, usize>,
    pub uses: Uses<'a>,
    pub preserve: &'a HashSet<String>,
    device_type: &'a str,
}

/// An activation quantizer: a fake-quant, or a QDQ pair's `Dequantize`.
#[derive(Clone, Debug)]
pub(super) struct Quantizer {
    /// Its node's name.
    pub node: String,
    /// The float tensor it quantizes.
    pub input: String,
    /// Its range's `min` and `max` inputs.
    pub min: String,
    pub max: String,
    /// How the range is stated: a `range_modes` entry of the `Qat` ops.
    pub mode: &'static str,
    /// A QDQ pair's `ensure_minimum_range`.
    pub ensure_minimum_range: f32,
    /// A QDQ pair's `QuantizeV2`.
    pub quantize: Option<usize>,
}

/// What feeds a matched op's int8 weights.
#[derive(Clone, Debug)]
pub(super) struct Weights {
    /// The float weights (a weight fake-quant's output, or the weights).
    pub tensor: String,
    /// The weight fake-quant's or `QuantizeV2`'s `(min, max)` inputs.
    pub range: Option<(String, String)>,
    /// A QDQ pair's `QuantizeV2` attributes: `(narrow_range, round_mode,
    /// ensure_minimum_range)`.
    pub scaled: Option<(bool, String, f32)>,
    /// The weight fake-quant's op, when `tensor` is its input and
    /// `QatWeights` applies it (only the convolution read it).
    pub fake_quant: Option<String>,
}

/// A batch norm folded into the weights and bias.
#[derive(Clone, Debug)]
pub(super) enum BatchNorm {
    /// An inference `FusedBatchNorm`'s inputs, folded on the CPU.
    Stats {
        scale: String,
        offset: String,
        mean: String,
        variance: String,
        epsilon: f32,
    },
    /// TF's own split of one over constants (`folded.rs`): its factor and
    /// bias as they are.
    Split { factor: String, bias: String },
}

/// The op a match computes.
#[derive(Clone, Debug)]
pub(super) enum Compute {
    Conv2D,
    Depthwise,
    MatMul { transpose_b: bool },
    Add,
}

/// One matched chain.
#[derive(Clone, Debug)]
pub(super) struct Match {
    /// The activation fake-quant it ends at.
    pub out_fq: usize,
    /// Its first node (the convolution, product or sum).
    pub head: usize,
    pub compute: Compute,
    /// The quantized inputs (the activation, or both addends).
    pub inputs: Vec<String>,
    pub weights: Option<Weights>,
    /// A folded `Pad`'s `[top, bottom, left, right]`.
    pub pad: Option<[i64; 4]>,
    pub bias: Option<String>,
    pub batch_norm: Option<BatchNorm>,
    pub activation: Activation,
    /// `MaxPool`s and `Reshape`s between the chain and its quantizer, in
    /// graph order (they keep the quantization; a QDQ graph quantizes
    /// after them).
    pub after: Vec<usize>,
    /// Every node the int8 op replaces (the fake-quant aside).
    pub chain: Vec<usize>,
}

const WEIGHT_FAKE_QUANTS: [&str; 2] = [
    "FakeQuantWithMinMaxVars",
    "FakeQuantWithMinMaxVarsPerChannel",
];
const BATCH_NORMS: [&str; 3] = ["FusedBatchNormV3", "FusedBatchNormV2", "FusedBatchNorm"];

impl<'a> Index<'a> {
    pub fn new(nodes: &'a [NodeDef], preserve: &'a HashSet<String>, device_type: &'a str) -> Self {
        Self {
            nodes,
            by_name: nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.as_str(), i))
                .collect(),
            uses: Uses::index(nodes),
            preserve,
            device_type,
        }
    }

    /// A graph that trains its fake-quant ranges (their gradients).
    fn is_training(&self) -> bool {
        self.nodes
            .iter()
            .any(|n| n.op.starts_with("FakeQuant") && n.op.ends_with("Gradient"))
    }

    /// The node a data input reads, when it reads output 0.
    pub fn producer(&self, text: &str) -> Option<usize> {
        match Input::parse(text) {
            Input::Data { node, port: 0 } => self.by_name.get(node).copied(),
            _ => None,
        }
    }

    fn data_inputs(&self, at: usize) -> Vec<&'a String> {
        self.nodes[at]
            .input
            .iter()
            .filter(|i| !i.starts_with('^'))
            .collect()
    }

    /// An activation quantizer at `at`: a fake-quant (8 bits, not narrow
    /// range), or the `Dequantize` of a `QuantizeV2` (per tensor, `SCALED`,
    /// `qint8` or `quint8`) reading all three of its outputs.
    pub fn quantizer(&self, at: usize) -> Option<Quantizer> {
        let n = &self.nodes[at];
        let inputs = self.data_inputs(at);
        if inputs.len() != 3 {
            return None;
        }
        if n.op == "FakeQuantWithMinMaxVars" {
            let fq = int_attr(n, "num_bits").unwrap_or(8) == 8
                && !bool_attr(n, "narrow_range").unwrap_or(false);
            return fq.then(|| Quantizer {
                node: n.name.clone(),
                input: inputs[0].clone(),
                min: inputs[1].clone(),
                max: inputs[2].clone(),
                mode: "fake_quant",
                ensure_minimum_range: 0.01,
                quantize: None,
            });
        }
        let (q, mode, attrs) = self.qdq(at, false)?;
        let q_inputs = self.data_inputs(q);
        Some(Quantizer {
            node: n.name.clone(),
            input: q_inputs[0].clone(),
            min: q_inputs[1].clone(),
            max: q_inputs[2].clone(),
            mode,
            ensure_minimum_range: attrs.2,
            quantize: Some(q),
        })
    }

    /// `at` is `Dequantize(q:0, q:1, q:2)` of a `QuantizeV2` `q`, both
    /// `SCALED` with one type, per tensor (or, for `weights`, per axis):
    /// `q`, the range mode, and `q`'s `(narrow_range, round_mode,
    /// ensure_minimum_range)`.
    fn qdq(&self, at: usize, weights: bool) -> Option<(usize, &'static str, (bool, String, f32))> {
        let d = &self.nodes[at];
        if d.op != "Dequantize" || !scaled(d) {
            return None;
        }
        let inputs = self.data_inputs(at);
        let q = self.producer(inputs.first()?)?;
        let qn = &self.nodes[q];
        let reads_all = inputs.len() == 3
            && [1, 2].iter().all(|&port| {
                matches!(Input::parse(inputs[port]),
                    Input::Data { node, port: p } if node == qn.name && p == port as u32)
            });
        let per_tensor = |n: &NodeDef| int_attr(n, "axis").unwrap_or(-1) == -1;
        if qn.op != "QuantizeV2"
            || !scaled(qn)
            || !reads_all
            || self.data_inputs(q).len() != 3
            || attr_of(qn, "T") != attr_of(d, "T")
            || !(weights || (per_tensor(d) && per_tensor(qn)))
        {
            return None;
        }
        let narrow = bool_attr(qn, "narrow_range").unwrap_or(false);
        let mode = match attr_of(qn, "T")? {
            attr_value::Value::Type(t) if *t == DataType::DtQint8 as i32 => {
                if narrow {
                    "qint8_narrow"
                } else {
                    "qint8"
                }
            }
            attr_value::Value::Type(t) if *t == DataType::DtQuint8 as i32 && !weights => "quint8",
            _ => return None,
        };
        let round = match attr_of(qn, "round_mode") {
            Some(attr_value::Value::S(r)) => String::from_utf8_lossy(r).into_owned(),
            _ => "HALF_AWAY_FROM_ZERO".into(),
        };
        let ensure = match attr_of(qn, "ensure_minimum_range") {
            Some(attr_value::Value::F(e)) => *e,
            _ => 0.01,
        };
        Some((q, mode, (narrow, round, ensure)))
    }

    /// Whether `at` is an activation quantizer ([`Self::quantizer`]).
    pub fn is_quantizer(&self, at: usize) -> bool {
        self.quantizer(at).is_some()
    }

    /// The activation fake-quant whose quantization the tensor `text` has.
    pub fn quantized_root(&self, text: &str) -> Option<usize> {
        let mut at = self.producer(text)?;
        for _ in 0..16 {
            if self.is_quantizer(at) {
                return Some(at);
            }
            let n = &self.nodes[at];
            let keeps = match n.op.as_str() {
                "MaxPool" => self.float_on_device(at) && is_nhwc(n),
                "Reshape" | "Identity" => self.float_on_device(at),
                _ => false,
            };
            if !keeps {
                return None;
            }
            at = self.producer(self.data_inputs(at).first()?)?;
        }
        None
    }

    /// The quantizer at `at` (which [`Self::quantizer`] accepted).
    pub fn range_of(&self, at: usize) -> Quantizer {
        self.quantizer(at).expect("a quantizer")
    }

    fn float_on_device(&self, at: usize) -> bool {
        let n = &self.nodes[at];
        is_ours(&n.device, self.device_type)
            && matches!(
                attr_of(n, "T"),
                Some(attr_value::Value::Type(t)) if *t == DataType::DtFloat as i32
            )
    }

    /// `at` is read once, by `consumer`'s first input, and is not fetched.
    fn only_feeds(&self, at: usize, consumer: usize) -> bool {
        !self.preserve.contains(&self.nodes[at].name)
            && self.uses.sole_first_input(&self.nodes[at].name) == Some(consumer)
    }

    /// The chain ending at activation quantizer `fq`, if it matches.
    pub fn match_at(&self, fq: usize) -> Option<Match> {
        let quantizer = self.quantizer(fq)?;
        let mut next = quantizer.quantize.unwrap_or(fq);
        let mut at = self.producer(&quantizer.input)?;
        let mut chain = Vec::new();
        let mut after = Vec::new();
        for _ in 0..8 {
            let n = &self.nodes[at];
            let keeps = match n.op.as_str() {
                "MaxPool" => is_nhwc(n),
                "Reshape" | "Identity" => true,
                _ => false,
            };
            if !(keeps && self.float_on_device(at) && self.only_feeds(at, next)) {
                break;
            }
            chain.push(at);
            if n.op != "Identity" {
                after.push(at);
            }
            next = at;
            at = self.producer(self.data_inputs(at).first()?)?;
        }
        after.reverse();
        let step = |at: usize, next: &mut usize, chain: &mut Vec<usize>| -> Option<usize> {
            if !(self.float_on_device(at) && self.only_feeds(at, *next)) {
                return None;
            }
            chain.push(at);
            *next = at;
            self.producer(self.data_inputs(at).first()?)
        };
        let activation = match self.nodes[at].op.as_str() {
            "Relu" => Activation::Relu,
            "Relu6" => Activation::Relu6,
            _ => Activation::None,
        };
        if activation != Activation::None {
            at = step(at, &mut next, &mut chain)?;
        }
        let op = self.nodes[at].op.as_str();
        let split = self.split_batch_norm(at);
        if matches!(op, "AddV2" | "Add") && split.is_none() {
            step(at, &mut next, &mut chain)?;
            let inputs: Vec<String> = self.data_inputs(at).into_iter().cloned().collect();
            if inputs.len() != 2 || inputs.iter().any(|x| self.quantized_root(x).is_none()) {
                return None;
            }
            if !self.one_ensure(&inputs, &quantizer) {
                return None;
            }
            return Some(Match {
                out_fq: fq,
                head: at,
                compute: Compute::Add,
                inputs,
                weights: None,
                pad: None,
                bias: None,
                batch_norm: None,
                activation,
                after,
                chain,
            });
        }
        let (mut bias, mut batch_norm) = (None, None);
        if op == "BiasAdd" && is_nhwc(&self.nodes[at]) {
            bias = Some(self.data_inputs(at).get(1)?.to_string());
            at = step(at, &mut next, &mut chain)?;
        } else if BATCH_NORMS.contains(&op) {
            batch_norm = Some(self.batch_norm(at)?);
            at = step(at, &mut next, &mut chain)?;
        } else if let Some(split) = &split {
            at = step(at, &mut next, &mut chain)?;
            debug_assert_eq!(at, split.mul);
            at = step(at, &mut next, &mut chain)?;
            batch_norm = Some(BatchNorm::Split {
                factor: split.factor.clone(),
                bias: split.bias.clone(),
            });
        }
        let conv = &self.nodes[at];
        let compute = match conv.op.as_str() {
            "Conv2D" if is_nhwc(conv) => Compute::Conv2D,
            "DepthwiseConv2dNative" if is_nhwc(conv) => Compute::Depthwise,
            "MatMul" if !bool_attr(conv, "transpose_a").unwrap_or(false) => Compute::MatMul {
                transpose_b: bool_attr(conv, "transpose_b").unwrap_or(false),
            },
            _ => return None,
        };
        let head = at;
        step(at, &mut next, &mut chain)?;
        let inputs = self.data_inputs(head);
        let (x, w) = (inputs.first()?.to_string(), inputs.get(1)?.to_string());
        if let Some(split) = &split
            && self.output_channels(&w, &compute) != Some(split.channels)
        {
            return None;
        }
        let weights = self.weights(&w, head, &mut chain)?;
        let (x, pad) = match self.quantized_root(&x) {
            Some(_) => (x, None),
            None => {
                let (padded, pad, pad_node) = self.folded_pad(&x, head)?;
                chain.push(pad_node);
                (padded, Some(pad))
            }
        };
        if !self.one_ensure(std::slice::from_ref(&x), &quantizer) {
            return None;
        }
        Some(Match {
            out_fq: fq,
            head,
            compute,
            inputs: vec![x],
            weights: Some(weights),
            pad,
            bias,
            batch_norm,
            activation,
            after,
            chain,
        })
    }

    /// The QDQ ranges a match's block reads share one
    /// `ensure_minimum_range` (the block op has one).
    fn one_ensure(&self, inputs: &[String], out: &Quantizer) -> bool {
        let mut values = inputs
            .iter()
            .filter_map(|x| self.quantized_root(x))
            .filter_map(|root| self.quantizer(root))
            .chain([out.clone()])
            .filter(|q| q.quantize.is_some())
            .map(|q| q.ensure_minimum_range);
        let first = values.next();
        values.all(|v| Some(v) == first)
    }

    fn batch_norm(&self, at: usize) -> Option<BatchNorm> {
        let n = &self.nodes[at];
        if bool_attr(n, "is_training").unwrap_or(true) || !is_nhwc(n) {
            return None;
        }
        let inputs = self.data_inputs(at);
        let epsilon = match attr_of(n, "epsilon") {
            Some(attr_value::Value::F(e)) => *e,
            _ => 1e-4, // TF's default
        };
        Some(BatchNorm::Stats {
            scale: inputs.get(1)?.to_string(),
            offset: inputs.get(2)?.to_string(),
            mean: inputs.get(3)?.to_string(),
            variance: inputs.get(4)?.to_string(),
            epsilon,
        })
    }

    /// The weights `conv` reads as `w`: a QDQ pair's (which joins the
    /// chain when only `conv` reads it), a weight fake-quant's, or plain.
    fn weights(&self, w: &str, conv: usize, chain: &mut Vec<usize>) -> Option<Weights> {
        if let Some(d) = self.producer(w)
            && let Some((q, mode, scaled)) = self.qdq(d, true)
        {
            if mode == "quint8" {
                return None;
            }
            let read_only_by = |at: usize, consumer: usize| {
                let name = &self.nodes[at].name;
                !self.preserve.contains(name)
                    && self.uses.of(name).iter().all(|u| u.consumer == consumer)
            };
            if read_only_by(d, conv) && read_only_by(q, d) {
                chain.extend([d, q]);
            }
            let inputs = self.data_inputs(q);
            return Some(Weights {
                tensor: inputs[0].clone(),
                range: Some((inputs[1].clone(), inputs[2].clone())),
                scaled: Some(scaled),
                fake_quant: None,
            });
        }
        let plain = Weights {
            tensor: w.to_string(),
            range: None,
            scaled: None,
            fake_quant: None,
        };
        let Some(at) = self.producer(w) else {
            return Some(plain);
        };
        let n = &self.nodes[at];
        let inputs = self.data_inputs(at);
        let fq = WEIGHT_FAKE_QUANTS.contains(&n.op.as_str())
            && int_attr(n, "num_bits").unwrap_or(8) == 8
            && bool_attr(n, "narrow_range").unwrap_or(false)
            && inputs.len() == 3;
        if !fq {
            return Some(plain);
        }
        let range = Some((inputs[1].clone(), inputs[2].clone()));
        // Read by this convolution alone: `QatWeights` applies it, so it
        // no longer runs on the CPU every step.
        let only_conv = !self.preserve.contains(&n.name)
            && self.uses.of(&n.name).iter().all(|u| u.consumer == conv);
        if only_conv {
            chain.push(at);
            return Some(Weights {
                tensor: inputs[0].clone(),
                range,
                scaled: None,
                fake_quant: Some(n.op.clone()),
            });
        }
        Some(Weights { range, ..plain })
    }

    /// A `Pad` of a quantized tensor by constant spatial paddings, read
    /// only by the VALID convolution `conv`: (its input, the paddings, it).
    fn folded_pad(&self, x: &str, conv: usize) -> Option<(String, [i64; 4], usize)> {
        let pad = self.producer(x)?;
        let n = &self.nodes[pad];
        let valid = matches!(attr_of(&self.nodes[conv], "padding"),
            Some(attr_value::Value::S(p)) if p == b"VALID");
        if n.op != "Pad" || !valid || !self.float_on_device(pad) || !self.only_feeds(pad, conv) {
            return None;
        }
        let inputs = self.data_inputs(pad);
        let padded = inputs.first()?.to_string();
        self.quantized_root(&padded)?;
        let values = super::nodes::int_constant(&self.nodes[self.producer(inputs.get(1)?)?])?;
        match values[..] {
            [0, 0, top, bottom, left, right, 0, 0] => {
                Some((padded, [top, bottom, left, right], pad))
            }
            _ => None,
        }
    }
}

fn int_attr(node: &NodeDef, key: &str) -> Option<i64> {
    match attr_of(node, key)? {
        attr_value::Value::I(v) => Some(*v),
        _ => None,
    }
}

fn bool_attr(node: &NodeDef, key: &str) -> Option<bool> {
    match attr_of(node, key)? {
        attr_value::Value::B(v) => Some(*v),
        _ => None,
    }
}

fn scaled(node: &NodeDef) -> bool {
    matches!(attr_of(node, "mode"), Some(attr_value::Value::S(m)) if m == b"SCALED")
}

#[cfg(test)]
mod tests;
