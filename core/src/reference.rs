//! Reference kernels: the obvious implementation of every
//! [`OpKind`], on dense row-major `f32` slices.
//!
//! These are the yardstick of the conformance suite
//! (`tensorplug_core::conformance`, feature `conformance`) and of any
//! device test: plain loops, sums accumulated in `f64` and rounded once, no
//! blocking, no vectorisation.
//! They are slow on purpose and exact to within one `f32` rounding, so a
//! device result is compared against them with the error bounds of
//! [`tolerance`].
//!
//! `no_std`, no allocation, no panics: every function checks its lengths
//! (with overflow-checked products) before it writes anything, and returns
//! an [`Error`] instead.
//!
//! # Semantics
//! The same as [`OpDesc::validate`]'s shape rules and `docs/device-numerics.md`:
//! - **MatMul / FusedMatMul**: `a` is `[m, k]` (`[k, m]` with `transpose_a`),
//!   `b` is `[k, n]` (`[n, k]` with `transpose_b`); `out = relu?(fl(Σ_p
//!   a_ip·b_pj) + bias_j)`: the sum in `f64`, rounded to `f32`, then the bias
//!   added in `f32`, then ReLU (the rounding of TF's `MatMul` → `BiasAdd` →
//!   `Relu`). `k = 0` gives `0 + bias`.
//! - **BiasAdd**: `x + bias` along the last axis.
//! - **Add, Sub, Mul, Maximum**: NumPy broadcasting over up to [`MAX_RANK`]
//!   axes (a size-0 axis broadcasts only with 0 or 1). One IEEE operation per
//!   element. `Maximum` propagates NaN and returns the first operand on ties
//!   (`max(-0.0, 0.0)` is `-0.0`), as `tf.maximum`.
//! - **Relu**: `if x < 0 { 0 } else { x }`: NaN stays NaN, `-0.0` stays `-0.0`.
//! - **Softmax** over the last axis, in `f64`, after subtracting the row
//!   maximum (NaN ignored for the maximum): a row with NaN, `+∞` or only
//!   `−∞` gives NaN.
//! - **ReduceSum** over the last axis, in `f64`; the output drops the axis or
//!   keeps it as 1. Rows of length 0 sum to `0.0`.
//! - **ReduceMax / ReduceMin** (exact): NaN wins, of equal elements the
//!   later one; `∓∞` for an empty row. **ReduceProd** in `f64`, `1.0` for
//!   an empty row.
//! - **Gather, SegmentSum**: [`index`] (int32 or int64 indices, [`int8::run`]).
//! - **Cast**: [`cast::cast`], on bytes. **Select**: `cond ≠ 0 ? a : b`.
//!
//! # Example
//! ```
//! use tensorplug_core::accelerator::{Binary, OpKind, Shape};
//! use tensorplug_core::reference;
//!
//! let s = |d: &[u64]| Shape::new(d).unwrap();
//! // [2, 3] + [3]: the row vector is broadcast over both rows.
//! let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
//! let b = [10.0, 20.0, 30.0];
//! let mut out = [0.0; 6];
//! reference::run(OpKind::Binary(Binary::ADD), &[(&a, s(&[2, 3])), (&b, s(&[3]))], s(&[2, 3]), &mut out).unwrap();
//! assert_eq!(out, [11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
//! ```

use crate::accelerator::{
    Binary, DType, DeviceAddr, MAX_RANK, OpDesc, OpKind, Shape, ShapeError, TensorDesc, Tolerance,
    Unary,
};

pub use crate::accelerator::{ELEMENTWISE_ABS, ELEMENTWISE_REL};

/// The dimensions of a matrix product (see [`OpKind::MatMul`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gemm {
    /// Rows of the result.
    pub m: usize,
    /// Columns of the result.
    pub n: usize,
    /// The contracted dimension.
    pub k: usize,
    /// `a` is stored `[k, m]`.
    pub transpose_a: bool,
    /// `b` is stored `[n, k]`.
    pub transpose_b: bool,
}

impl Gemm {
    /// `a[i, p]` of `op(a)`.
    pub fn a(&self, a: &[f32], i: usize, p: usize) -> f32 {
        if self.transpose_a {
            a[p * self.m + i]
        } else {
            a[i * self.k + p]
        }
    }

    /// `b[p, j]` of `op(b)`.
    pub fn b(&self, b: &[f32], p: usize, j: usize) -> f32 {
        if self.transpose_b {
            b[j * self.k + p]
        } else {
            b[p * self.n + j]
        }
    }

    /// Checks `a`, `b`, `bias` and `out` (operands 0, 1, 2, then 3, or 2
    /// without a bias) against the dims.
    fn check(&self, a: &[f32], b: &[f32], bias: Option<&[f32]>, out: &[f32]) -> Result<(), Error> {
        let mk = self.m.checked_mul(self.k).ok_or(Error::Overflow)?;
        let kn = self.k.checked_mul(self.n).ok_or(Error::Overflow)?;
        let mn = self.m.checked_mul(self.n).ok_or(Error::Overflow)?;
        check_len(0, mk, a.len())?;
        check_len(1, kn, b.len())?;
        match bias {
            Some(bias) => {
                check_len(2, self.n, bias.len())?;
                check_len(3, mn, out.len())
            }
            None => check_len(2, mn, out.len()),
        }
    }
}

/// `out = relu?(op(a) · op(b) + bias)`: each dot product summed in `f64` in
/// `k` order and rounded once, then the bias added in `f32`, then ReLU.
pub fn matmul(
    g: &Gemm,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    relu: bool,
    out: &mut [f32],
) -> Result<(), Error> {
    g.check(a, b, bias, out)?;
    for i in 0..g.m {
        for j in 0..g.n {
            let mut acc = 0.0f64;
            for p in 0..g.k {
                acc += f64::from(g.a(a, i, p)) * f64::from(g.b(b, p, j));
            }
            let mut v = acc as f32;
            if let Some(bias) = bias {
                v += bias[j];
            }
            out[i * g.n + j] = if relu { Unary::RELU.apply(v) } else { v };
        }
    }
    Ok(())
}

/// `x + bias` along the last axis, whose length is `bias.len()`.
pub fn bias_add(x: &[f32], bias: &[f32], out: &mut [f32]) -> Result<(), Error> {
    check_rows(0, x.len(), bias.len())?;
    check_len(2, x.len(), out.len())?;
    for (i, (o, &v)) in out.iter_mut().zip(x).enumerate() {
        *o = v + bias[i % bias.len()];
    }
    Ok(())
}

/// `out = a ∘ b` with NumPy broadcasting, by explicit multi-index
/// arithmetic. `out` holds the broadcast shape's elements.
pub fn binary(
    op: Binary,
    a: &[f32],
    a_shape: &Shape,
    b: &[f32],
    b_shape: &Shape,
    out: &mut [f32],
) -> Result<(), Error> {
    let rank = a_shape.dims().len().max(b_shape.dims().len());
    let (ad, bd) = (padded(a_shape, rank)?, padded(b_shape, rank)?);
    let mut od = [1usize; MAX_RANK];
    for axis in 0..rank {
        od[axis] = match (ad[axis], bd[axis]) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (x, y) => {
                return Err(Error::Shape(ShapeError::Dim {
                    operand: 1,
                    axis: (axis + b_shape.dims().len() - rank) as u8,
                    expected: x as u64,
                    got: y as u64,
                }));
            }
        };
    }
    check_len(0, count(&ad[..rank])?, a.len())?;
    check_len(1, count(&bd[..rank])?, b.len())?;
    check_len(2, count(&od[..rank])?, out.len())?;
    for (flat, o) in out.iter_mut().enumerate() {
        let (mut rem, mut ia, mut ib, mut sa, mut sb) = (flat, 0, 0, 1, 1);
        for axis in (0..rank).rev() {
            let idx = rem % od[axis];
            rem /= od[axis];
            if ad[axis] != 1 {
                ia += idx * sa;
            }
            if bd[axis] != 1 {
                ib += idx * sb;
            }
            sa *= ad[axis];
            sb *= bd[axis];
        }
        *o = op.apply(a[ia], b[ib]);
    }
    Ok(())
}

/// `out[i] = op(x[i])`.
pub fn unary(op: Unary, x: &[f32], out: &mut [f32]) -> Result<(), Error> {
    check_len(1, x.len(), out.len())?;
    for (o, &v) in out.iter_mut().zip(x) {
        *o = op.apply(v);
    }
    Ok(())
}

/// `log(softmax(x))` over rows of `row_len`, in `f64`: `x − max − ln Σ
/// exp(x − max)`.
pub fn log_softmax(x: &[f32], row_len: usize, out: &mut [f32]) -> Result<(), Error> {
    check_rows(0, x.len(), row_len)?;
    check_len(1, x.len(), out.len())?;
    if row_len == 0 {
        return Ok(());
    }
    for (row, out_row) in x.chunks(row_len).zip(out.chunks_mut(row_len)) {
        let max = row_max(row);
        let total: f64 = row.iter().map(|&v| libm::exp(f64::from(v) - max)).sum();
        let log_total = libm::log(total);
        for (o, &v) in out_row.iter_mut().zip(row) {
            *o = (f64::from(v) - max - log_total) as f32;
        }
    }
    Ok(())
}

/// Softmax over rows of `row_len` contiguous elements, in `f64`.
pub fn softmax(x: &[f32], row_len: usize, out: &mut [f32]) -> Result<(), Error> {
    check_rows(0, x.len(), row_len)?;
    check_len(1, x.len(), out.len())?;
    if row_len == 0 {
        return Ok(());
    }
    for (row, out_row) in x.chunks(row_len).zip(out.chunks_mut(row_len)) {
        let max = row_max(row);
        let total: f64 = row.iter().map(|&v| libm::exp(f64::from(v) - max)).sum();
        for (o, &v) in out_row.iter_mut().zip(row) {
            *o = (libm::exp(f64::from(v) - max) / total) as f32;
        }
    }
    Ok(())
}

/// Row sums over rows of `row_len`, in `f64`: `out[r] = Σ_j x[r, j]`. With
/// `row_len = 0` every output is `0.0`, whatever `out.len()`.
pub fn reduce_sum(x: &[f32], row_len: usize, out: &mut [f32]) -> Result<(), Error> {
    if row_len == 0 {
        check_len(0, 0, x.len())?;
        out.fill(0.0);
        return Ok(());
    }
    let want = out.len().checked_mul(row_len).ok_or(Error::Overflow)?;
    check_len(0, want, x.len())?;
    for (o, row) in out.iter_mut().zip(x.chunks(row_len)) {
        *o = row.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
    }
    Ok(())
}

/// The ops whose output is not f32 or int8 (`Cast`, `ArgMax`, `ArgMin`)
/// on little-endian bytes: input `x` of `shape`, output `out`.
pub fn run_bytes(kind: OpKind, x: &[u8], shape: Shape, out: &mut [u8]) -> Result<(), Error> {
    match kind {
        OpKind::Cast { from, to } => cast::cast(from, to, x, out),
        OpKind::ArgMax(t) | OpKind::ArgMin(t) => {
            let min = matches!(kind, OpKind::ArgMin(_));
            arg::arg_reduce(min, x, dim(shape.last())?, t, out)
        }
        _ => Err(Error::Shape(ShapeError::DType { operand: 0 })),
    }
}

/// Rows of `row_len` reduced by `ReduceMax`, `ReduceMin` (NaN wins, the
/// later of equal elements) or `ReduceProd` (in `f64`, rounded once).
fn reduce_rows(kind: OpKind, x: &[f32], row_len: usize, out: &mut [f32]) {
    let rows = x.chunks(row_len.max(1));
    let empty = row_len == 0;
    for (i, o) in out.iter_mut().enumerate() {
        let row = if empty {
            &[][..]
        } else {
            rows.clone().nth(i).unwrap_or(&[])
        };
        *o = match kind {
            OpKind::ReduceProd => row.iter().map(|&v| f64::from(v)).product::<f64>() as f32,
            _ => {
                let max = kind == OpKind::ReduceMax;
                let start = if max {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                };
                row.iter().fold(start, |acc, &v| {
                    let keep = if max { v < acc } else { v > acc };
                    if acc.is_nan() || keep { acc } else { v }
                })
            }
        };
    }
}

/// Runs `kind` on `inputs` (data, shape) into `out` of `out_shape`.
///
/// The shapes are checked with [`OpDesc::validate`] (the rules every device
/// applies), then every slice length against its shape.
pub fn run(
    kind: OpKind,
    inputs: &[(&[f32], Shape)],
    out_shape: Shape,
    out: &mut [f32],
) -> Result<(), Error> {
    let (x, shape) = check_op(kind, inputs, out_shape, out.len())?;
    let input = |i: usize| inputs[i].0;
    match kind {
        OpKind::MatMul {
            transpose_a,
            transpose_b,
        } => matmul(
            &gemm_dims(inputs, transpose_a, transpose_b)?,
            x,
            input(1),
            None,
            false,
            out,
        ),
        OpKind::FusedMatMul {
            transpose_a,
            transpose_b,
            relu,
        } => matmul(
            &gemm_dims(inputs, transpose_a, transpose_b)?,
            x,
            input(1),
            Some(input(2)),
            relu,
            out,
        ),
        OpKind::BiasAdd => bias_add(x, input(1), out),
        OpKind::Unary(op) => unary(op, x, out),
        OpKind::Binary(op) => binary(op, x, &shape, input(1), &inputs[1].1, out),
        OpKind::Conv2D(_)
        | OpKind::FusedConv2D(..)
        | OpKind::DepthwiseConv2D(_)
        | OpKind::MaxPool(_)
        | OpKind::AvgPool(_) => window::run(kind, inputs, out_shape, out),
        OpKind::Conv2DBackpropInput(_)
        | OpKind::Conv2DBackpropFilter(_)
        | OpKind::MaxPoolGrad(_)
        | OpKind::AvgPoolGrad(_) => window_grad::run(kind, inputs, out_shape, out),
        OpKind::Transpose(perm) => {
            transpose(x, shape.dims(), &perm, out);
            Ok(())
        }
        OpKind::Softmax => softmax(x, dim(shape.last())?, out),
        OpKind::LogSoftmax => log_softmax(x, dim(shape.last())?, out),
        OpKind::ReduceSum => reduce_sum(x, dim(shape.last())?, out),
        OpKind::ReduceMax | OpKind::ReduceMin | OpKind::ReduceProd => {
            reduce_rows(kind, x, dim(shape.last())?, out);
            Ok(())
        }
        OpKind::RandomUniform { key, counter } => {
            random::uniform(key, counter, out);
            Ok(())
        }
        OpKind::Select => {
            for ((o, &c), (&a, &b)) in out.iter_mut().zip(x).zip(input(1).iter().zip(input(2))) {
                *o = if c != 0.0 { a } else { b };
            }
            Ok(())
        }
        // `check_op` refuses their operands; `int8::run` and `run_bytes` run them.
        OpKind::Gather(_)
        | OpKind::Concat(_)
        | OpKind::SegmentSum(_)
        | OpKind::Cast { .. }
        | OpKind::ArgMax(_)
        | OpKind::ArgMin(_) => Err(Error::Shape(ShapeError::DType { operand: 1 })),
        OpKind::Conv2DInt8(_)
        | OpKind::DepthwiseConv2DInt8(_)
        | OpKind::MatMulInt8 { .. }
        | OpKind::AddInt8
        | OpKind::MaxPoolInt8(_)
        | OpKind::AvgPoolInt8(_)
        | OpKind::Quantize
        | OpKind::Dequantize
        | OpKind::SoftmaxInt8
        | OpKind::LookupInt8
        | OpKind::MulInt8 => Err(Error::Shape(ShapeError::DType { operand: 0 })),
        OpKind::Vendor(op) | OpKind::Record(op) => {
            let reference = op
                .decl
                .reference()
                .ok_or(Error::Shape(ShapeError::Attrs))?
                .reference;
            let mut data: [&[f32]; 3] = [&[]; 3];
            let mut shapes = [Shape::SCALAR; 3];
            for (i, (d, s)) in inputs.iter().enumerate() {
                data[i] = d;
                shapes[i] = *s;
            }
            let n = inputs.len();
            reference(&op.attrs, &data[..n], &shapes[..n], out);
            Ok(())
        }
    }
}

/// The error bound a device's result for `kind` must meet, per output
/// element, against [`run`]'s result `want`: `|got − want| ≤ tol[i]`
/// (see [`within`]). `tol` has `want`'s length.
///
/// | op | bound |
/// |---|---|
/// | BiasAdd | [`ELEMENTWISE_ABS`] `+` [`ELEMENTWISE_REL`]`·\|want\|` |
/// | [`Unary`], [`Binary`] | the op's [`Elementwise::bound`](crate::accelerator::Elementwise::bound): the above, and for `Pow` `8·ε·\|want\|·(1 + \|b·ln a\|)` if larger |
/// | MatMul, FusedMatMul | `(k + 2)·ε·(Σ_p \|a_ip·b_pj\| + \|bias_j\|)` |
/// | ReduceSum | `(c + 1)·ε·Σ_j \|x_j\|` |
/// | Softmax | `(c + 8 + \|x_j − max\|)·ε·\|want_j\|` |
/// | LogSoftmax | `(c + 8 + \|x_j − max\| + \|want_j\|)·ε` |
/// | Conv2D, DepthwiseConv2D | `(t + 2)·ε·Σ\|x·f\|` over the `t` in-bounds products |
/// | FusedConv2D | as Conv2D, `\|bias\|` added to the sum |
/// | MaxPool / AvgPool | exact / `(t + 2)·ε·Σ\|x\| / t` |
/// | Transpose | exact |
/// | Conv2DBackpropInput, Conv2DBackpropFilter | `(t + 2)·ε·Σ\|terms\|` over the `t` products |
/// | MaxPoolGrad | exact where one gradient arrives, else `(t + 2)·ε·Σ\|dy\|` |
/// | AvgPoolGrad | `(t + 2)·ε·Σ\|dy / taps\|` over the `t` windows that hold the element |
///
/// `ε = f32::EPSILON`, `c` the row length; `f32::MIN_POSITIVE` is added to
/// the last three for results at the underflow edge. These are the bounds
/// of `docs/device-numerics.md` for any summation order, FMA or not; the
/// softmax one allows an `exp` a few ulp off, as TF's is.
pub fn tolerance(
    kind: OpKind,
    inputs: &[(&[f32], Shape)],
    out_shape: Shape,
    want: &[f32],
    tol: &mut [f32],
) -> Result<(), Error> {
    let (x, shape) = check_op(kind, inputs, out_shape, want.len())?;
    check_len(inputs.len() as u8, want.len(), tol.len())?;
    let eps = f64::from(f32::EPSILON);
    let tiny = f64::from(f32::MIN_POSITIVE);
    match kind {
        OpKind::MatMul {
            transpose_a,
            transpose_b,
        }
        | OpKind::FusedMatMul {
            transpose_a,
            transpose_b,
            ..
        } => {
            let g = gemm_dims(inputs, transpose_a, transpose_b)?;
            let bias = inputs.get(2).map(|b| b.0);
            for i in 0..g.m {
                for j in 0..g.n {
                    let mut abs = bias.map_or(0.0, |b| f64::from(b[j].abs()));
                    for p in 0..g.k {
                        abs += (f64::from(g.a(x, i, p)) * f64::from(g.b(inputs[1].0, p, j))).abs();
                    }
                    tol[i * g.n + j] = ((g.k as f64 + 2.0) * eps * abs + tiny) as f32;
                }
            }
        }
        OpKind::ReduceProd => {
            let c = dim(shape.last())?;
            for (t, &w) in tol.iter_mut().zip(want) {
                *t = ((c as f64 + 1.0) * eps * f64::from(w.abs()) + tiny) as f32;
            }
        }
        OpKind::ReduceSum => {
            let c = dim(shape.last())?;
            for (r, t) in tol.iter_mut().enumerate() {
                let row = x.get(r * c..(r + 1) * c).unwrap_or(&[]);
                let abs: f64 = row.iter().map(|&v| f64::from(v).abs()).sum();
                *t = ((c as f64 + 1.0) * eps * abs + tiny) as f32;
            }
        }
        OpKind::Softmax => {
            let c = dim(shape.last())?;
            if c > 0 {
                for (row, (t, w)) in x.chunks(c).zip(tol.chunks_mut(c).zip(want.chunks(c))) {
                    let max = row_max(row);
                    for ((t, &w), &v) in t.iter_mut().zip(w).zip(row) {
                        let spread = (f64::from(v) - max).abs();
                        let rel = (c as f64 + 8.0 + spread) * eps;
                        *t = (rel * f64::from(w.abs()) + tiny) as f32;
                    }
                }
            }
        }
        OpKind::Conv2D(_)
        | OpKind::FusedConv2D(..)
        | OpKind::DepthwiseConv2D(_)
        | OpKind::MaxPool(_)
        | OpKind::AvgPool(_) => {
            window::tolerance(kind, inputs, out_shape, tol)?;
        }
        OpKind::Conv2DBackpropInput(_)
        | OpKind::Conv2DBackpropFilter(_)
        | OpKind::MaxPoolGrad(_)
        | OpKind::AvgPoolGrad(_) => {
            window_grad::tolerance(kind, inputs, out_shape, tol)?;
        }
        OpKind::LogSoftmax => {
            let c = dim(shape.last())?;
            if c > 0 {
                for (row, (t, w)) in x.chunks(c).zip(tol.chunks_mut(c).zip(want.chunks(c))) {
                    let max = row_max(row);
                    for ((t, &w), &v) in t.iter_mut().zip(w).zip(row) {
                        let spread = (f64::from(v) - max).abs();
                        *t = ((c as f64 + 8.0 + spread + f64::from(w.abs())) * eps) as f32;
                    }
                }
            }
        }
        // The int8 and index ops never get here: `check_op` wants f32 operands.
        OpKind::Transpose(_)
        | OpKind::ReduceMax
        | OpKind::ReduceMin
        | OpKind::Gather(_)
        | OpKind::Concat(_)
        | OpKind::SegmentSum(_)
        | OpKind::Cast { .. }
        | OpKind::ArgMax(_)
        | OpKind::ArgMin(_)
        | OpKind::RandomUniform { .. }
        | OpKind::Select
        | OpKind::Conv2DInt8(_)
        | OpKind::DepthwiseConv2DInt8(_)
        | OpKind::MatMulInt8 { .. }
        | OpKind::AddInt8
        | OpKind::MaxPoolInt8(_)
        | OpKind::AvgPoolInt8(_)
        | OpKind::Quantize
        | OpKind::Dequantize
        | OpKind::SoftmaxInt8
        | OpKind::LookupInt8
        | OpKind::MulInt8 => tol.fill(0.0),
        OpKind::Vendor(op) | OpKind::Record(op) => {
            let bound = op
                .decl
                .reference()
                .map_or(Tolerance::EXACT, |r| r.tolerance);
            for (t, &w) in tol.iter_mut().zip(want) {
                *t = bound.abs + bound.rel * w.abs();
            }
        }
        OpKind::BiasAdd => {
            for (t, &w) in tol.iter_mut().zip(want) {
                *t = ELEMENTWISE_ABS + ELEMENTWISE_REL * w.abs();
            }
        }
        OpKind::Unary(op) => {
            let bound = op.rules().bound;
            for ((t, &w), &a) in tol.iter_mut().zip(want).zip(x) {
                *t = bound(a, 0.0, w);
            }
        }
        OpKind::Binary(op) => {
            let bound = op.rules().bound;
            for (i, (t, &w)) in tol.iter_mut().zip(want).enumerate() {
                let a = broadcast_at(inputs, 0, out_shape, i)?;
                let b = broadcast_at(inputs, 1, out_shape, i)?;
                *t = bound(a, b, w);
            }
        }
    }
    Ok(())
}

/// Input `operand`'s element that broadcasts to output element `flat`.
fn broadcast_at(
    inputs: &[(&[f32], Shape)],
    operand: usize,
    out_shape: Shape,
    flat: usize,
) -> Result<f32, Error> {
    let (data, shape) = inputs[operand];
    let rank = out_shape.dims().len();
    let (od, sd) = (padded(&out_shape, rank)?, padded(&shape, rank)?);
    let (mut rem, mut index, mut stride) = (flat, 0, 1);
    for axis in (0..rank).rev() {
        let idx = rem % od[axis];
        rem /= od[axis];
        if sd[axis] != 1 {
            index += idx * stride;
        }
        stride *= sd[axis];
    }
    data.get(index).copied().ok_or(Error::Overflow)
}

/// Whether a device result `got` is acceptable for the reference result
/// `want` with bound `tol`: NaN must be NaN, an infinity the same infinity,
/// anything else within `tol` (computed in `f64`, so exactly).
pub fn within(got: f32, want: f32, tol: f32) -> bool {
    if want.is_nan() {
        got.is_nan()
    } else if want.is_infinite() {
        got == want
    } else {
        (f64::from(got) - f64::from(want)).abs() <= f64::from(tol)
    }
}

/// The row maximum, NaN ignored (`−∞` for an all-NaN or empty row).
fn row_max(row: &[f32]) -> f64 {
    row.iter()
        .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)))
}

/// Validates the op and every length; returns input 0 and its shape.
fn check_op<'a>(
    kind: OpKind,
    inputs: &[(&'a [f32], Shape)],
    out_shape: Shape,
    out_len: usize,
) -> Result<(&'a [f32], Shape), Error> {
    let want = kind.input_count();
    let desc = |shape| TensorDesc::new(DeviceAddr(0), DType::F32, shape);
    let mut descs = [desc(Shape::SCALAR); 3];
    if inputs.len() != want || want > descs.len() {
        return Err(Error::Shape(ShapeError::InputCount {
            expected: want as u8,
            got: inputs.len().min(255) as u8,
        }));
    }
    for (d, (_, shape)) in descs.iter_mut().zip(inputs) {
        *d = desc(*shape);
    }
    OpDesc {
        kind,
        inputs: &descs[..want],
        output: desc(out_shape),
        op_id: 0,
    }
    .validate()?;
    for (i, (data, shape)) in inputs.iter().enumerate() {
        check_len(i as u8, elements(shape)?, data.len())?;
    }
    check_len(want as u8, elements(&out_shape)?, out_len)?;
    Ok(inputs
        .first()
        .map_or((&[][..], out_shape), |&(d, s)| (d, s)))
}

fn gemm_dims(
    inputs: &[(&[f32], Shape)],
    transpose_a: bool,
    transpose_b: bool,
) -> Result<Gemm, Error> {
    let (a, b) = (inputs[0].1, inputs[1].1);
    let (a0, a1) = (dim(a.dims()[0])?, dim(a.dims()[1])?);
    let (b0, b1) = (dim(b.dims()[0])?, dim(b.dims()[1])?);
    let (m, k) = if transpose_a { (a1, a0) } else { (a0, a1) };
    let n = if transpose_b { b0 } else { b1 };
    Ok(Gemm {
        m,
        n,
        k,
        transpose_a,
        transpose_b,
    })
}

/// `s`'s dims right-aligned in `rank` axes, missing leading axes 1.
fn padded(s: &Shape, rank: usize) -> Result<[usize; MAX_RANK], Error> {
    let mut out = [1usize; MAX_RANK];
    let d = s.dims();
    for (slot, &v) in out[rank - d.len()..rank].iter_mut().zip(d) {
        *slot = dim(v)?;
    }
    Ok(out)
}

fn count(dims: &[usize]) -> Result<usize, Error> {
    dims.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or(Error::Overflow)
}

/// `out` = `x` (of `dims`) with output axis `i` being input axis `perm[i]`;
/// the caller validated the shapes.
fn transpose(x: &[f32], dims: &[u64], perm: &[u8; MAX_RANK], out: &mut [f32]) {
    let rank = dims.len();
    let mut in_stride = [0usize; MAX_RANK];
    let mut stride = 1usize;
    for a in (0..rank).rev() {
        in_stride[a] = stride;
        stride *= dims[a] as usize;
    }
    let out_dims: [usize; MAX_RANK] = core::array::from_fn(|i| {
        if i < rank {
            dims[usize::from(perm[i])] as usize
        } else {
            1
        }
    });
    for (flat, o) in out.iter_mut().enumerate() {
        let (mut rest, mut src) = (flat, 0usize);
        for i in (0..rank).rev() {
            src += rest % out_dims[i] * in_stride[usize::from(perm[i])];
            rest /= out_dims[i];
        }
        *o = x[src];
    }
}

/// `len` must be whole rows of `row_len` (and 0 if `row_len` is).
fn check_rows(operand: u8, len: usize, row_len: usize) -> Result<(), Error> {
    let whole = if row_len == 0 { 0 } else { len - len % row_len };
    check_len(operand, whole, len)
}

mod error;
pub use error::Error;
use error::{check_len, dim, elements};

pub mod arg;
pub mod cast;
pub mod index;
pub mod int8;
pub mod random;
mod window;
mod window_grad;

#[cfg(test)]
mod tests;
