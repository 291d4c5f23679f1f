//! What the NPU computes. `launch` has validated the op and range-checked
//! its operands. Relu and LeakyRelu may run in place; MatMul's output never overlaps its
//! inputs (`launch` refuses that).

use crate::leaky_relu::{self, LEAKY_RELU};
use core::ops::Range;
use tensorplug_core::accelerator::{OpDesc, OpKind, Unary};

fn load(memory: &[u8], at: usize) -> f32 {
    let mut bytes = [0; 4];
    bytes.copy_from_slice(&memory[at..at + 4]);
    f32::from_le_bytes(bytes)
}

fn store(memory: &mut [u8], at: usize, value: f32) {
    memory[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// Runs `op` on `memory`: `inputs` and `output` are its operands' bytes.
pub fn run(op: &OpDesc<'_>, memory: &mut [u8], inputs: &[Range<usize>], output: Range<usize>) {
    match op.kind {
        OpKind::Unary(Unary::RELU) => {
            for at in (0..output.len()).step_by(4) {
                let x = load(memory, inputs[0].start + at);
                // NaN stays NaN (TF's Relu); `f32::max` would give 0.
                let y = if x.is_nan() { x } else { x.max(0.0) };
                store(memory, output.start + at, y);
            }
        }
        OpKind::MatMul {
            transpose_a,
            transpose_b,
        } => matmul(op, memory, inputs, output, transpose_a, transpose_b),
        OpKind::Vendor(vendor) if vendor.decl.id == LEAKY_RELU.id => {
            let alpha = leaky_relu::alpha(&vendor.attrs);
            for at in (0..output.len()).step_by(4) {
                let x = load(memory, inputs[0].start + at);
                store(memory, output.start + at, leaky_relu::apply(x, alpha));
            }
        }
        // `launch` refuses every other kind first.
        _ => {}
    }
}

/// `out = op(a) · op(b)`, naive i-k-j order, accumulating in `out` in f32.
fn matmul(
    op: &OpDesc<'_>,
    memory: &mut [u8],
    inputs: &[Range<usize>],
    output: Range<usize>,
    transpose_a: bool,
    transpose_b: bool,
) {
    let a_dims = op.inputs[0].shape.dims();
    let (m, k) = if transpose_a {
        (a_dims[1], a_dims[0])
    } else {
        (a_dims[0], a_dims[1])
    };
    let (m, k, n) = (m as usize, k as usize, op.output.shape.dims()[1] as usize);
    // Byte offsets of a[i, p], b[p, j] and out[i, j] (row-major storage).
    let a =
        |i: usize, p: usize| inputs[0].start + 4 * if transpose_a { p * m + i } else { i * k + p };
    let b =
        |p: usize, j: usize| inputs[1].start + 4 * if transpose_b { j * k + p } else { p * n + j };
    let out = |i: usize, j: usize| output.start + 4 * (i * n + j);
    for i in 0..m {
        for j in 0..n {
            store(memory, out(i, j), 0.0);
        }
        for p in 0..k {
            let x = load(memory, a(i, p));
            for j in 0..n {
                let sum = load(memory, out(i, j)) + x * load(memory, b(p, j));
                store(memory, out(i, j), sum);
            }
        }
    }
}
