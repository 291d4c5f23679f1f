//! Plain reference implementations: obvious loops, f64 accumulation, no
//! blocking. Only tests use them; they panic on inconsistent input.

use super::BinaryOp;

/// `out = relu?(op(a) · op(b) + bias)`, summed in f64 in `k` order.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    m: usize,
    n: usize,
    k: usize,
    transpose_a: bool,
    transpose_b: bool,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    relu: bool,
    out: &mut [f32],
) {
    assert_eq!(a.len(), m * k);
    assert_eq!(b.len(), k * n);
    assert_eq!(out.len(), m * n);
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for p in 0..k {
                let x = if transpose_a {
                    a[p * m + i]
                } else {
                    a[i * k + p]
                };
                let y = if transpose_b {
                    b[j * k + p]
                } else {
                    b[p * n + j]
                };
                acc += f64::from(x) * f64::from(y);
            }
            let mut v = acc as f32;
            if let Some(bias) = bias {
                v += bias[j];
            }
            if relu && v < 0.0 {
                v = 0.0;
            }
            out[i * n + j] = v;
        }
    }
}

/// The error bound the blocked GEMMs must meet against [`gemm`] for element
/// `(i, j)`: `(k + 2)·ε·(Σ_p |a_ip·b_pj| + |bias_j|)`, the classic bound for
/// any summation order of `k` products, plus the bias add and final rounding.
#[allow(clippy::too_many_arguments)]
pub fn gemm_tolerance(
    m: usize,
    n: usize,
    k: usize,
    transpose_a: bool,
    transpose_b: bool,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    i: usize,
    j: usize,
) -> f32 {
    let mut abs = 0.0f64;
    for p in 0..k {
        let x = if transpose_a {
            a[p * m + i]
        } else {
            a[i * k + p]
        };
        let y = if transpose_b {
            b[j * k + p]
        } else {
            b[p * n + j]
        };
        abs += (f64::from(x) * f64::from(y)).abs();
    }
    if let Some(bias) = bias {
        abs += f64::from(bias[j].abs());
    }
    ((k as f64 + 2.0) * f64::from(f32::EPSILON) * abs) as f32
}

/// Broadcasting binary op by explicit multi-index arithmetic; `out` must
/// hold the broadcast shape's elements.
pub fn binary(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
) {
    let rank = a_shape.len().max(b_shape.len());
    let dim = |s: &[usize], axis: usize| {
        let pad = rank - s.len();
        if axis < pad { 1 } else { s[axis - pad] }
    };
    let out_dim = |axis| {
        let (x, y) = (dim(a_shape, axis), dim(b_shape, axis));
        assert!(x == y || x == 1 || y == 1, "shapes do not broadcast");
        if x == 1 { y } else { x }
    };
    let total: usize = (0..rank).map(out_dim).product();
    assert_eq!(out.len(), total);
    for (flat, o) in out.iter_mut().enumerate() {
        let (mut rem, mut ia, mut ib, mut sa, mut sb) = (flat, 0, 0, 1, 1);
        for axis in (0..rank).rev() {
            let idx = rem % out_dim(axis);
            rem /= out_dim(axis);
            if dim(a_shape, axis) != 1 {
                ia += idx * sa;
            }
            if dim(b_shape, axis) != 1 {
                ib += idx * sb;
            }
            sa *= dim(a_shape, axis);
            sb *= dim(b_shape, axis);
        }
        let (x, y) = (a[ia], b[ib]);
        *o = match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Maximum if x.is_nan() || y.is_nan() => f32::NAN,
            BinaryOp::Maximum => x.max(y),
        };
    }
}

/// `max(x, 0)`, NaN stays NaN.
pub fn relu(x: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = if v.is_nan() { v } else { v.max(0.0) };
    }
}

/// `x + bias` along the last axis of length `bias.len()`.
pub fn bias_add(x: &[f32], bias: &[f32], out: &mut [f32]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = x[i] + bias[i % bias.len()];
    }
}

/// Softmax over rows of `row_len`, computed in f64.
pub fn softmax(x: &[f32], row_len: usize, out: &mut [f32]) {
    if row_len == 0 {
        return;
    }
    for (row, out_row) in x.chunks(row_len).zip(out.chunks_mut(row_len)) {
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let total: f64 = row.iter().map(|&v| libm::exp(f64::from(v) - max)).sum();
        for (o, &v) in out_row.iter_mut().zip(row) {
            *o = (libm::exp(f64::from(v) - max) / total) as f32;
        }
    }
}

/// Row sums over rows of `row_len`, computed in f64.
pub fn reduce_sum(x: &[f32], row_len: usize, out: &mut [f32]) {
    for (r, o) in out.iter_mut().enumerate() {
        let row = &x[r * row_len..(r + 1) * row_len];
        *o = row.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
    }
}
