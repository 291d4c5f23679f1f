//! The model's kernels of the catalogue's records (the `RECORD` command,
//! ABI 1.10): per record, its code, the f32 elements each operand has for
//! the command's extents and attribute bits, and its computation. A new
//! record is one entry of [`RECORDS`] and its two functions; the `OPS`
//! registers list it from here.

pub use tensorplug_core::accelerator::DeviceArgs;
use tensorplug_core::accelerator::code_of;

/// One record's kernel.
pub struct RecordKernel {
    /// The record's catalogue code (`RECORD`'s `imm` low half).
    pub code: u16,
    /// Its operands' sizes for the command's arguments (`m`, `n`, `k` and
    /// `imm`'s high half); `None` refuses them.
    pub sizes: fn(DeviceArgs) -> Option<Sizes>,
    /// The computation on validated, disjoint operands.
    pub run: fn(DeviceArgs, Inputs<'_>, &mut [f32]),
}

/// A record's f32 elements per input (0 past its count) and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Each input's.
    pub inputs: [u64; 3],
    /// The output's.
    pub output: u64,
}

/// A record's inputs (empty past its count).
pub type Inputs<'a> = [&'a [f32]; 3];

/// The records this model runs.
pub const RECORDS: &[RecordKernel] = &[
    RecordKernel {
        code: code_of("Cumsum"),
        sizes: cumsum_sizes,
        run: cumsum,
    },
    RecordKernel {
        code: code_of("BatchMatMul"),
        sizes: batch_matmul_sizes,
        run: batch_matmul,
    },
    RecordKernel {
        code: code_of("LayerNorm"),
        sizes: layer_norm_sizes,
        run: layer_norm,
    },
    RecordKernel {
        code: code_of("Gelu"),
        sizes: gelu_sizes,
        run: gelu,
    },
];

/// The kernel of record `code`.
pub fn record(code: u16) -> Option<&'static RecordKernel> {
    RECORDS.iter().find(|r| r.code == code)
}

/// `Cumsum`: `[outer, n, inner]`, bits `exclusive | reverse << 1`.
fn cumsum_sizes(a: DeviceArgs) -> Option<Sizes> {
    let [o, n, i, none] = a.dims.map(u64::from);
    // Three u32 extents can overflow a u64: refused, not wrapped.
    let len = o.checked_mul(n)?.checked_mul(i)?;
    (a.bits <= 3 && len > 0 && none == 0).then_some(Sizes {
        inputs: [len, 0, 0],
        output: len,
    })
}

/// Row by row along `n`: each output row is the previous one plus an input
/// row (the current one, or the previous when exclusive), the first is
/// `0 + x` (or 0). The sums happen in the order TF's scan adds them.
fn cumsum(a: DeviceArgs, [x, ..]: Inputs<'_>, out: &mut [f32]) {
    let [outer, n, inner, _] = a.dims;
    let (exclusive, reverse) = (a.bits & 1 != 0, a.bits & 2 != 0);
    let (n, inner) = (n as usize, inner as usize);
    for block in 0..outer as usize {
        let row = |s: usize| {
            let j = if reverse { n - 1 - s } else { s };
            (block * n + j) * inner
        };
        for s in 0..n {
            let (at, prev) = (row(s), s.checked_sub(1).map(row));
            for c in 0..inner {
                let carried = prev.map_or(0.0, |p| out[p + c]);
                out[at + c] = match (exclusive, prev) {
                    (true, None) => 0.0,
                    (true, Some(p)) => carried + x[p + c],
                    (false, _) => carried + x[at + c],
                };
            }
        }
    }
}

/// `BatchMatMul`: `[batch, m, n, k]`, bits `transpose_a | transpose_b << 1
/// | shared_b << 2` (one `b` for every batch).
fn batch_matmul_sizes(a: DeviceArgs) -> Option<Sizes> {
    let [batch, m, n, k] = a.dims.map(u64::from);
    let shared = a.bits & 4 != 0;
    let per_b = k.checked_mul(n)?;
    let sizes = Sizes {
        inputs: [
            batch.checked_mul(m)?.checked_mul(k)?,
            if shared {
                per_b
            } else {
                batch.checked_mul(per_b)?
            },
            0,
        ],
        output: batch.checked_mul(m)?.checked_mul(n)?,
    };
    // Empty products and a zero `k` are the host's (a fill), not a command.
    (a.bits <= 7 && sizes.inputs[0] > 0 && sizes.inputs[1] > 0 && sizes.output > 0).then_some(sizes)
}

/// Each batch's product with the model's `GEMM` kernel, so a batch equals
/// the `MatMul`s it replaces bit for bit.
fn batch_matmul(a: DeviceArgs, [x, y, _]: Inputs<'_>, out: &mut [f32]) {
    let [batch, m, n, k] = a.dims.map(|d| d as usize);
    let spec = crate::kernels::GemmSpec {
        transpose_a: a.bits & 1 != 0,
        transpose_b: a.bits & 2 != 0,
        ..crate::kernels::GemmSpec::new(m, n, k)
    };
    let shared = a.bits & 4 != 0;
    for g in 0..batch {
        let b = if shared {
            y
        } else {
            &y[g * k * n..(g + 1) * k * n]
        };
        let result = crate::kernels::gemm(
            &spec,
            &x[g * m * k..(g + 1) * m * k],
            b,
            None,
            &mut out[g * m * n..(g + 1) * m * n],
        );
        // The sizes were checked against these extents.
        debug_assert!(result.is_ok());
    }
}

/// `LayerNorm`: `[rows, n, ε's bits, 0]`, bits the form (0 or 1).
fn layer_norm_sizes(a: DeviceArgs) -> Option<Sizes> {
    let [rows, n, _, none] = a.dims.map(u64::from);
    let len = rows.checked_mul(n)?;
    (a.bits <= 1 && len > 0 && none == 0).then_some(Sizes {
        inputs: [len, n, n],
        output: len,
    })
}

/// Each row with the arithmetic of the commands `LayerNormalization`
/// lowers to (`ReduceSum` and a division for each mean, `SquaredDifference`,
/// `AddV2`, `Rsqrt`, `Mul`, `Neg`, the two additions), so the result equals
/// theirs bit for bit; the output row holds the squared differences first.
fn layer_norm(a: DeviceArgs, [x, gamma, beta]: Inputs<'_>, out: &mut [f32]) {
    let [rows, n, epsilon, _] = a.dims;
    let (n, epsilon) = (n as usize, f32::from_bits(epsilon));
    let count = n as f32;
    for (row, o) in x
        .chunks_exact(n)
        .zip(out.chunks_exact_mut(n))
        .take(rows as usize)
    {
        let mean = super::rows::sum(row) / count;
        for (o, &v) in o.iter_mut().zip(row) {
            *o = (v - mean) * (v - mean);
        }
        let variance = super::rows::sum(o) / count;
        let r = 1.0 / libm::sqrtf(epsilon + variance);
        // `Neg` lowers to a product by −1 (a NaN keeps its sign).
        #[allow(clippy::neg_multiply)]
        let neg = mean * -1.0;
        // One loop per form, with no index, so each vectorizes.
        let terms = o.iter_mut().zip(row).zip(&gamma[..n]).zip(&beta[..n]);
        if a.bits == 0 {
            for (((o, &v), &g), &b) in terms {
                let m = g * r;
                *o = b + (neg * m + v * m);
            }
        } else {
            for (((o, &v), &g), &b) in terms {
                let m = g * r;
                *o = v * m + (neg * m + b);
            }
        }
    }
}

/// `Gelu`: `[elements, c's bits, h's bits, 0]`.
fn gelu_sizes(a: DeviceArgs) -> Option<Sizes> {
    let [len, _, _, none] = a.dims.map(u64::from);
    (a.bits == 0 && len > 0 && none == 0).then_some(Sizes {
        inputs: [len, 0, 0],
        output: len,
    })
}

/// Each element with the arithmetic of the commands `tf.nn.gelu` lowers to
/// (`Neg` as a product by −1, `Mul`, the model's `Erfc`, `Mul`, `Mul`), so
/// the result equals theirs bit for bit.
fn gelu(a: DeviceArgs, [x, ..]: Inputs<'_>, out: &mut [f32]) {
    let [_, c, h, _] = a.dims.map(f32::from_bits);
    for (o, &v) in out.iter_mut().zip(x) {
        #[allow(clippy::neg_multiply)]
        let e = libm::erfcf(c * (v * -1.0));
        *o = (h * e) * v;
    }
}
