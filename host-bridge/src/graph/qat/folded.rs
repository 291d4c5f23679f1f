//! A batch norm TF already split over constants: a frozen graph's
//! `FusedBatchNormV3` reaches our pass as `Add(Mul(conv, Scaled), Offset)`
//! (TF's own optimizers write it so; its `Scaled` and `Offset` are computed
//! from constants and folded by TF's next pass). The match takes the two as
//! the folded factor and bias, once it has proved from the constants'
//! shapes that both are one value per output channel.

use super::{Compute, Index};
use crate::graph::proto::{NodeDef, attr_value};

/// Ops whose output has the broadcast shape of their inputs.
const ELEMENTWISE: &[&str] = &[
    "Add",
    "AddV2",
    "Sub",
    "Mul",
    "RealDiv",
    "Rsqrt",
    "Sqrt",
    "Neg",
    "Reciprocal",
    "Square",
    "Maximum",
    "Minimum",
    "Identity",
];

/// Ops that keep their first input's shape.
const SHAPE_OF_FIRST: &[&str] = &[
    "FakeQuantWithMinMaxVars",
    "FakeQuantWithMinMaxVarsPerChannel",
    "Identity",
];

/// How deep a constant's shape is looked for.
const DEPTH: usize = 12;

/// A batch norm as TF split it: `x · factor + bias`.
#[derive(Clone, Debug)]
pub(in crate::graph) struct Split {
    /// The `Mul` (read first by the `Add`), its `x` its first input.
    pub mul: usize,
    pub factor: String,
    pub bias: String,
    /// Both have this many values, each one channel's.
    pub channels: i64,
}

impl Index<'_> {
    /// `Add(Mul(x, factor), bias)` at `at`, `factor` and `bias` computed
    /// from constants with the same rank-1 shape.
    pub(super) fn split_batch_norm(&self, at: usize) -> Option<Split> {
        let n = &self.nodes[at];
        if !matches!(n.op.as_str(), "Add" | "AddV2") || !self.float_on_device(at) {
            return None;
        }
        let inputs = self.data_inputs(at);
        let [product, bias] = inputs[..] else {
            return None;
        };
        let mul = self.producer(product)?;
        if self.nodes[mul].op != "Mul" || !self.float_on_device(mul) {
            return None;
        }
        let factor = *self.data_inputs(mul).get(1)?;
        let (f, b) = (
            self.constant_shape(factor, DEPTH)?,
            self.constant_shape(bias, DEPTH)?,
        );
        let channels = match (&f[..], &b[..]) {
            ([a], [b]) if a == b && *a > 0 => *a,
            _ => return None,
        };
        Some(Split {
            mul,
            factor: factor.clone(),
            bias: bias.clone(),
            channels,
        })
    }

    /// The output channels of `compute` with the filter `w`, where `w` is
    /// a constant (through its weight fake-quant).
    pub(super) fn output_channels(&self, w: &str, compute: &Compute) -> Option<i64> {
        let dims = self.constant_shape_through(w, DEPTH, true)?;
        match (compute, &dims[..]) {
            (Compute::Conv2D, [_, _, _, out]) => Some(*out),
            (Compute::Depthwise, [_, _, inner, multiplier]) => Some(inner * multiplier),
            (Compute::MatMul { transpose_b: false }, [_, out]) => Some(*out),
            (Compute::MatMul { transpose_b: true }, [out, _]) => Some(*out),
            _ => None,
        }
    }

    /// The shape of `text` when it is computed from constants by
    /// element-wise ops.
    fn constant_shape(&self, text: &str, depth: usize) -> Option<Vec<i64>> {
        self.constant_shape_through(text, depth, false)
    }

    fn constant_shape_through(&self, text: &str, depth: usize, quant: bool) -> Option<Vec<i64>> {
        let depth = depth.checked_sub(1)?;
        let n = &self.nodes[self.producer(text)?];
        if n.op == "Const" {
            return const_dims(n);
        }
        if quant && SHAPE_OF_FIRST.contains(&n.op.as_str()) {
            return self.constant_shape_through(self.data_inputs_of(n).first()?, depth, quant);
        }
        if !ELEMENTWISE.contains(&n.op.as_str()) {
            return None;
        }
        let mut shape: Vec<i64> = Vec::new();
        for input in self.data_inputs_of(n) {
            shape = broadcast(&shape, &self.constant_shape_through(input, depth, quant)?)?;
        }
        Some(shape)
    }

    fn data_inputs_of<'n>(&self, n: &'n NodeDef) -> Vec<&'n String> {
        n.input.iter().filter(|i| !i.starts_with('^')).collect()
    }
}

/// A `Const`'s dimensions.
fn const_dims(n: &NodeDef) -> Option<Vec<i64>> {
    match n.attr.get("value")?.value.as_ref()? {
        attr_value::Value::Tensor(t) => Some(
            t.tensor_shape
                .as_ref()?
                .dim
                .iter()
                .map(|d| d.size)
                .collect(),
        ),
        _ => None,
    }
}

/// NumPy's broadcast of two shapes.
fn broadcast(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let rank = a.len().max(b.len());
    let at = |s: &[i64], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::broadcast;

    #[test]
    fn shapes_broadcast_as_numpy_does() {
        assert_eq!(broadcast(&[], &[8]), Some(vec![8]));
        assert_eq!(broadcast(&[8], &[1]), Some(vec![8]));
        assert_eq!(broadcast(&[1, 8], &[3, 1]), Some(vec![3, 8]));
        assert_eq!(broadcast(&[8], &[4]), None);
    }
}
