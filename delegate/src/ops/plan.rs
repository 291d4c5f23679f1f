//! What the device runs for a node ([`DeviceOp`]): the decisions' result
//! and the kernel's input, kept apart from both so neither imports the
//! other.

use tensorplug_core::accelerator::{Activation, Binary, DType, MAX_RANK, OpKind, Unary};

/// A node the device runs: one or two device launches.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceOp {
    /// `out[m,n] = x[m,k] · w[n,k]ᵀ (+ bias[n])`, then the activation.
    FullyConnected {
        x: i32,
        w: i32,
        bias: Option<i32>,
        out: i32,
        m: u64,
        k: u64,
        n: u64,
        activation: Activation,
    },
    /// float32 `out = a ∘ b` with broadcasting (`ADD`, `SUB`, `MUL`,
    /// `DIV`), then the activation.
    Binary {
        op: Binary,
        a: i32,
        b: i32,
        out: i32,
        activation: Activation,
    },
    /// A float32 element-wise op of one input (`RELU`, `RELU6`,
    /// `LOGISTIC`, `TANH`).
    Unary { op: Unary, x: i32, out: i32 },
    /// A float32 op of one input whose input and output are one view
    /// `dims` of their tensors (`CUMSUM`: the `Cumsum` record over
    /// `[outer, n, inner]`).
    ViewF32 {
        kind: OpKind,
        x: i32,
        out: i32,
        dims: Vec<u64>,
    },
    /// float32 `CONV_2D` (`FusedConv2D`: bias and activation in the
    /// launch) or `DEPTHWISE_CONV_2D` (`DepthwiseConv2D`, then `BiasAdd`
    /// when it has a bias, and the activation), or `PAD` (a depthwise 1×1
    /// of ones): the weights in the device's layout and the bias are its
    /// own constants, uploaded at init.
    ConvF32 {
        x: i32,
        out: i32,
        kind: OpKind,
        x_dims: [u64; 4],
        filter_dims: [u64; 4],
        out_dims: [u64; 4],
        filter: Vec<u8>,
        bias: Option<Vec<u8>>,
        activation: Activation,
    },
    /// float32 `MAX_POOL_2D`, `AVERAGE_POOL_2D` or `MEAN` of a plane
    /// (`MaxPool`, `AvgPool`), then the activation.
    PoolF32 {
        x: i32,
        out: i32,
        kind: OpKind,
        x_dims: [u64; 4],
        out_dims: [u64; 4],
        activation: Activation,
    },
    /// float32 `SOFTMAX` over rows of `depth` (`Softmax`).
    SoftmaxF32 {
        x: i32,
        out: i32,
        rows: u64,
        depth: u64,
    },
    /// int8 `out[m,n] = x[m,k] · w[n,k]ᵀ` requantized (`MatMulInt8`), with
    /// its quantization block (bias, multipliers, clamp).
    FullyConnectedInt8 {
        x: i32,
        w: i32,
        out: i32,
        m: u64,
        k: u64,
        n: u64,
        block: Vec<i32>,
    },
    /// int8 `CONV_2D` (`Conv2DInt8`) or `DEPTHWISE_CONV_2D`
    /// (`DepthwiseConv2DInt8`): `filter` is the weights in the device's
    /// layout (`[kh, kw, c, oc]`, or `[kh, kw, c, m]`), uploaded at init.
    ConvInt8 {
        x: i32,
        out: i32,
        kind: OpKind,
        x_dims: [u64; 4],
        filter_dims: [u64; 4],
        out_dims: [u64; 4],
        filter: Vec<u8>,
        block: Vec<i32>,
    },
    /// int8 `MAX_POOL_2D` (`MaxPoolInt8`) or `AVERAGE_POOL_2D`
    /// (`AvgPoolInt8`), with its block (the activation's clamp).
    PoolInt8 {
        x: i32,
        out: i32,
        kind: OpKind,
        x_dims: [u64; 4],
        out_dims: [u64; 4],
        block: Vec<i32>,
    },
    /// int8 `out = a + b` of one shape (`AddInt8`), with its block.
    AddInt8 {
        a: i32,
        b: i32,
        out: i32,
        block: Vec<i32>,
    },
    /// `Quantize` (float32 to int8) or `Dequantize` (int8 to float32), with
    /// its block (the zero point and the scale).
    Requantize {
        x: i32,
        out: i32,
        kind: OpKind,
        block: Vec<i32>,
    },
    /// `RESHAPE`: the bytes copied on the device as they are.
    Reshape { x: i32, out: i32, bytes: usize },
    /// float32 `out = x · factor` (`NEG`: −1, exact), `factor` a one-value
    /// constant of the node.
    ScaleF32 { x: i32, out: i32, factor: f32 },
    /// float32 `HARD_SWISH` as TFLite's reference computes it, `x ·
    /// min(6, max(0, x + 3)) / 6`: `Add` of the constant 3, `Relu6`, `Mul`
    /// by `x`, `Div` by the constant 6, through two temporaries.
    HardSwishF32 { x: i32, out: i32 },
    /// float32 `MEAN` over the last axis: the device's `ReduceSum` of `x`
    /// as `[rows, n]` into a temporary, then `Div` by `n`, a constant of
    /// the node (TFLite's kernel divides the sum too).
    MeanLastF32 { x: i32, out: i32, rows: u64, n: u64 },
    /// float32 `TRANSPOSE` by a constant permutation (`Transpose`).
    TransposeF32 {
        x: i32,
        out: i32,
        perm: [u8; MAX_RANK],
    },
    /// float32 `BATCH_MATMUL` of equal batch axes: one `MatMul` per batch
    /// element, on views of `[m, k]` (or `[k, m]`, `adj_x`) and `[k, n]`
    /// (or `[n, k]`, `adj_y`) into `[m, n]`.
    BatchMatMulF32 {
        x: i32,
        y: i32,
        out: i32,
        batch: u64,
        m: u64,
        k: u64,
        n: u64,
        adj_x: bool,
        adj_y: bool,
        /// One `BatchMatMul` record (the device lists it), else one
        /// `MatMul` per batch element.
        record: bool,
    },
    /// `SHAPE`, `STRIDED_SLICE` or `PACK` evaluated at prepare
    /// (`ops::shape`): `out`'s int32 values, and the tensors whose shapes
    /// they came from, with those shapes. No device work; the kernel
    /// writes them only where the partition outputs `out`.
    Folded {
        out: i32,
        value: Vec<i32>,
        shapes: Vec<(i32, Vec<usize>)>,
    },
    /// int8 `MEAN` as one `MatMulInt8` (`ops::mean`).
    MeanInt8(MeanInt8),
    /// int8 `a · b` (`MulInt8`), `b` broadcast along `a`'s leading axes.
    MulInt8 {
        a: i32,
        b: i32,
        out: i32,
        len: u64,
        b_len: u64,
        block: Vec<i32>,
    },
    /// int8 `LOGISTIC` or `TANH` as a table (`LookupInt8`) of `len` values.
    LookupInt8 {
        x: i32,
        out: i32,
        len: u64,
        block: Vec<i32>,
    },
    /// `CONCATENATION` as the device's `Concat` ([`ConcatRows`]).
    Concat(ConcatRows),
    /// int8 `SOFTMAX` over rows of `depth` (`SoftmaxInt8`), with its block.
    SoftmaxInt8 {
        x: i32,
        out: i32,
        rows: u64,
        depth: u64,
        block: Vec<i32>,
    },
}

impl DeviceOp {
    /// The tensors the op reads, and the one it writes.
    pub fn io(&self) -> (Vec<i32>, i32) {
        match self {
            Self::FullyConnected {
                x, w, bias, out, ..
            } => ([*x, *w].into_iter().chain(*bias).collect(), *out),
            Self::FullyConnectedInt8 { x, w, out, .. } => (vec![*x, *w], *out),
            Self::Binary { a, b, out, .. }
            | Self::BatchMatMulF32 {
                x: a, y: b, out, ..
            }
            | Self::AddInt8 { a, b, out, .. }
            | Self::MulInt8 { a, b, out, .. } => (vec![*a, *b], *out),
            Self::Unary { x, out, .. }
            | Self::ViewF32 { x, out, .. }
            | Self::ConvF32 { x, out, .. }
            | Self::PoolF32 { x, out, .. }
            | Self::SoftmaxF32 { x, out, .. }
            | Self::ConvInt8 { x, out, .. }
            | Self::PoolInt8 { x, out, .. }
            | Self::Requantize { x, out, .. }
            | Self::Reshape { x, out, .. }
            | Self::MeanInt8(MeanInt8 { x, out, .. })
            | Self::SoftmaxInt8 { x, out, .. }
            | Self::LookupInt8 { x, out, .. }
            | Self::ScaleF32 { x, out, .. }
            | Self::HardSwishF32 { x, out }
            | Self::MeanLastF32 { x, out, .. }
            | Self::TransposeF32 { x, out, .. } => (vec![*x], *out),
            Self::Concat(c) => (c.inputs.clone(), c.out),
            Self::Folded { out, .. } => (Vec::new(), *out),
        }
    }
}

/// The plan of one int8 `MEAN`: `x` viewed as `[outer, reduced, inner]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MeanInt8 {
    pub x: i32,
    pub out: i32,
    pub outer: u64,
    pub reduced: u64,
    pub inner: u64,
    /// The `MatMulInt8` block: bias `−zp_in · n`, TFLite's multiplier.
    pub block: Vec<i32>,
}

impl MeanInt8 {
    /// The block-diagonal matrix of ones: row `o` sums rows `o·reduced ..
    /// (o+1)·reduced` of the input.
    pub fn ones(&self) -> Vec<u8> {
        let (outer, reduced) = (self.outer as usize, self.reduced as usize);
        let mut m = vec![0; outer * outer * reduced];
        for o in 0..outer {
            let row = o * outer * reduced + o * reduced;
            m[row..row + reduced].fill(1);
        }
        m
    }
}

/// The plan of one `CONCATENATION`: input `i` viewed as `[outer,
/// widths[i]]`, the output as `[outer, Σ widths]`; joined left to right,
/// two at a time, through temporaries.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcatRows {
    pub inputs: Vec<i32>,
    pub out: i32,
    pub dtype: DType,
    pub outer: u64,
    pub widths: Vec<u64>,
}

impl ConcatRows {
    /// The bytes of each temporary: the first `i + 2` inputs joined, for
    /// every join but the last.
    pub fn temps(&self) -> Vec<usize> {
        let size = self.dtype.size() as u64;
        let mut width = self.widths.first().copied().unwrap_or(0);
        let joins = self.widths.len().saturating_sub(1);
        let mut temps = Vec::new();
        for &w in self.widths.iter().skip(1).take(joins.saturating_sub(1)) {
            width += w;
            temps.push((self.outer * width * size) as usize);
        }
        temps
    }
}
