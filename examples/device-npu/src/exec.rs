//! What the NPU computes. Operands were validated and range-checked by
//! `launch`; inputs and output may be the same bytes (Relu in place).

use core::ops::Range;
use tensorplug_core::accelerator::{OpDesc, OpKind};

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
        OpKind::Relu => {
            for k in (0..output.len()).step_by(4) {
                let x = load(memory, inputs[0].start + k);
                // NaN stays NaN (TF's Relu); `f32::max` would give 0.
                let y = if x.is_nan() { x } else { x.max(0.0) };
                store(memory, output.start + k, y);
            }
        }
        OpKind::MatMul {
            transpose_a,
            transpose_b,
        } => {
            let [a0, a1] = [op.inputs[0].shape.dims()[0], op.inputs[0].shape.dims()[1]];
            let n = op.output.shape.dims()[1] as usize;
            let (m, k) = if transpose_a { (a1, a0) } else { (a0, a1) };
            let (m, k) = (m as usize, k as usize);
            let a = |i: usize, p: usize| if transpose_a { p * m + i } else { i * k + p };
            let b = |p: usize, j: usize| if transpose_b { j * k + p } else { p * n + j };
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0.0f32;
                    for p in 0..k {
                        let x = load(memory, inputs[0].start + 4 * a(i, p));
                        let y = load(memory, inputs[1].start + 4 * b(p, j));
                        acc += x * y;
                    }
                    store(memory, output.start + 4 * (i * n + j), acc);
                }
            }
        }
        // `launch` refuses every other kind first.
        _ => {}
    }
}
