//! The reference the model's kernels are tested against: `tensorplug_core`'s
//! device-neutral reference kernels (f64 accumulation), in the argument
//! shapes of this crate's kernels. Only tests use them; they panic on
//! inconsistent input.

use super::BinaryOp;
use tensorplug_core::accelerator::{MAX_RANK, Shape, Unary};
use tensorplug_core::reference::{self as core_ref, Gemm};

const CONSISTENT: &str = "the test passes consistent operands";

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
    let g = Gemm {
        m,
        n,
        k,
        transpose_a,
        transpose_b,
    };
    core_ref::matmul(&g, a, b, bias, relu, out).expect(CONSISTENT);
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
    let g = Gemm {
        m,
        n,
        k,
        transpose_a,
        transpose_b,
    };
    let mut abs: f64 = (0..k)
        .map(|p| (f64::from(g.a(a, i, p)) * f64::from(g.b(b, p, j))).abs())
        .sum();
    if let Some(bias) = bias {
        abs += f64::from(bias[j].abs());
    }
    ((k as f64 + 2.0) * f64::from(f32::EPSILON) * abs) as f32
}

/// Broadcasting binary op; `out` must hold the broadcast shape's elements.
pub fn binary(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
) {
    let op = tensorplug_core::accelerator::Binary::from_code(op as u16).expect(CONSISTENT);
    core_ref::binary(op, a, &shape(a_shape), b, &shape(b_shape), out).expect(CONSISTENT);
}

fn shape(dims: &[usize]) -> Shape {
    let mut all = [0u64; MAX_RANK];
    for (slot, &d) in all.iter_mut().zip(dims) {
        *slot = d as u64;
    }
    Shape::new(&all[..dims.len()]).expect(CONSISTENT)
}

/// `max(x, 0)`, NaN stays NaN.
pub fn relu(x: &[f32], out: &mut [f32]) {
    core_ref::unary(Unary::RELU, x, out).expect(CONSISTENT);
}

/// `x + bias` along the last axis of length `bias.len()`.
pub fn bias_add(x: &[f32], bias: &[f32], out: &mut [f32]) {
    core_ref::bias_add(x, bias, out).expect(CONSISTENT);
}

/// Softmax over rows of `row_len`, computed in f64.
pub fn softmax(x: &[f32], row_len: usize, out: &mut [f32]) {
    core_ref::softmax(x, row_len, out).expect(CONSISTENT);
}

/// Row sums over rows of `row_len`, computed in f64.
pub fn reduce_sum(x: &[f32], row_len: usize, out: &mut [f32]) {
    core_ref::reduce_sum(x, row_len, out).expect(CONSISTENT);
}
