//! The built-in ops declared as records: each op's declaration, attribute
//! block, shape rule, cost and device arguments ([`RECORDS`]), and its
//! reference kernel, conformance cases and tolerance ([`REFERENCES`],
//! apart, so that a device build links none of them), in one place. A new
//! op is an entry of each, here (`docs/ops.md`, "Adding a device op").

use crate::accelerator::op::{Form, OpDecl};
use crate::accelerator::op_id::{ATTR_BYTES, Attrs, OpId};
use crate::accelerator::record::{DeviceArgs, OpRecord, RecordReference};
use crate::accelerator::shape_error::ShapeError;
use crate::accelerator::types::{DType, DTypeSet, Shape};
use crate::accelerator::vendor::{Tolerance, VendorCase};

/// The records, in code order (after the catalogue's own ops).
pub(super) const RECORDS: &[OpDecl] = &[CUMSUM_DECL, BATCH_MATMUL_DECL, LAYER_NORM_DECL, GELU_DECL];

/// Their reference sides, each by its record's code (a catalogue test
/// checks the two lists match).
pub(super) const REFERENCES: &[RecordReference] = &[
    RecordReference {
        code: CUMSUM_DECL.id.code,
        reference: cumsum,
        cases: CUMSUM_CASES,
        tolerance: Tolerance::EXACT,
    },
    RecordReference {
        code: BATCH_MATMUL_DECL.id.code,
        reference: batch_matmul,
        cases: BATCH_MATMUL_CASES,
        // The cases' sums are of a few terms near 1: an f32 sum in any
        // order, fused or not, is this close to the f64 one.
        tolerance: Tolerance {
            abs: 1e-6,
            rel: 1e-6,
        },
    },
    RecordReference {
        code: LAYER_NORM_DECL.id.code,
        reference: layer_norm,
        cases: LAYER_NORM_CASES,
        // The reference's statistics in f64; a device's in f32, in its
        // row-sum order: on the cases' rows of a few O(1) values, this close.
        tolerance: Tolerance {
            abs: 2e-6,
            rel: 2e-6,
        },
    },
    RecordReference {
        code: GELU_DECL.id.code,
        reference: gelu,
        cases: GELU_CASES,
        // A device's `erfc` in f32 (the model's: libm's `erfcf`, within a
        // few ulp), then two products.
        tolerance: Tolerance {
            abs: 1e-7,
            rel: 4e-6,
        },
    },
];

const fn declare(name: &'static str, code: u16, inputs: u8, record: &'static OpRecord) -> OpDecl {
    OpDecl {
        name,
        id: OpId::builtin(code),
        inputs,
        dtypes: DTypeSet::EMPTY.with(DType::F32),
        form: Form::Record(record),
    }
}

/// The first `N` bytes of `a` as flags (each 0 or 1); the rest must be 0.
fn flag_bytes<const N: usize>(a: &Attrs) -> Result<[bool; N], ShapeError> {
    let (flags, rest) = a.0.split_at(N);
    if flags.iter().any(|&b| b > 1) || rest.iter().any(|&b| b != 0) {
        return Err(ShapeError::Attrs);
    }
    Ok(core::array::from_fn(|i| flags[i] == 1))
}

const fn flags<const N: usize>(on: [bool; N]) -> Attrs {
    let mut a = [0u8; ATTR_BYTES];
    let mut i = 0;
    while i < N {
        a[i] = on[i] as u8;
        i += 1;
    }
    Attrs(a)
}

/// The dims of a rank-3 operand.
fn rank3(operand: u8, s: &Shape) -> Result<[u64; 3], ShapeError> {
    s.dims().try_into().map_err(|_| ShapeError::Rank {
        operand,
        expected: 3,
        got: s.dims().len() as u8,
    })
}

/// `Cumsum` (TF's `Cumsum` over one axis): input `x [outer, n, inner]`,
/// output of its shape, `out[o, j, i]` the f32 sum, in order, of `x[o, ·,
/// i]` up to `j` (from the end when reversed; before `j`, without it, when
/// exclusive; 0 for none). Attributes: byte 0 `exclusive`, byte 1
/// `reverse` (0 or 1). Device arguments: `[outer, n, inner]`, bits
/// `exclusive | reverse << 1`. Exact.
const CUMSUM_DECL: OpDecl = declare("Cumsum", 94, 1, &CUMSUM);

const CUMSUM: OpRecord = OpRecord {
    shape: |attrs, inputs| {
        flag_bytes::<2>(attrs)?;
        rank3(0, &inputs[0].shape)?;
        Ok(inputs[0].shape)
    },
    flops: |_, _, out| out.shape.elements().unwrap_or(0),
    attrs: "exclusive, reverse: 0 or 1 (2)",
    args: |attrs, inputs| {
        let [exclusive, reverse] = flag_bytes::<2>(attrs).ok()?;
        let [o, n, i] = rank3(0, &inputs[0].shape).ok()?;
        Some(DeviceArgs {
            dims: [
                o.try_into().ok()?,
                n.try_into().ok()?,
                i.try_into().ok()?,
                0,
            ],
            bits: u16::from(exclusive) | u16::from(reverse) << 1,
        })
    },
};

/// [`CUMSUM`]'s conformance cases: cancellation, −0, ∞, an empty axis.
const CUMSUM_CASES: &[VendorCase] = &[
    VendorCase {
        attrs: flags([false, false]),
        inputs: &[(&[1, 5, 1], &[0.1, 0.2, 0.3, 1e8, -1e8])],
        out: &[1, 5, 1],
    },
    VendorCase {
        attrs: flags([true, false]),
        inputs: &[(
            &[2, 3, 2],
            &[
                1.5, -0.0, 2.0, 1e-8, -3.0, 7.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6,
            ],
        )],
        out: &[2, 3, 2],
    },
    VendorCase {
        attrs: flags([false, true]),
        inputs: &[(
            &[1, 4, 3],
            &[
                0.1, 1.0, -2.0, 0.2, 3e7, 4.0, 0.3, 1.0, -0.0, 0.4, -3e7, 8.0,
            ],
        )],
        out: &[1, 4, 3],
    },
    VendorCase {
        attrs: flags([true, true]),
        inputs: &[(&[3, 2, 1], &[1.0, 2.0, 3.0, 4.0, f32::INFINITY, 5.0])],
        out: &[3, 2, 1],
    },
    VendorCase {
        attrs: flags([false, false]),
        inputs: &[(&[2, 0, 3], &[])],
        out: &[2, 0, 3],
    },
];

/// [`CUMSUM`]'s reference kernel.
fn cumsum(attrs: &Attrs, x: &[&[f32]], shapes: &[Shape], out: &mut [f32]) {
    let Ok([exclusive, reverse]) = flag_bytes::<2>(attrs) else {
        return;
    };
    let Ok([outer, n, inner]) = rank3(0, &shapes[0]) else {
        return;
    };
    let (n, inner) = (n as usize, inner as usize);
    for o in 0..outer as usize {
        for i in 0..inner {
            let mut sum = 0.0f32;
            for s in 0..n {
                let j = if reverse { n - 1 - s } else { s };
                let at = (o * n + j) * inner + i;
                if exclusive {
                    out[at] = sum;
                    sum += x[0][at];
                } else {
                    sum += x[0][at];
                    out[at] = sum;
                }
            }
        }
    }
}

/// `BatchMatMul`: a matrix product per batch. Inputs `a [B…, m, k]`
/// (`[B…, k, m]` with `transpose_a`) and `b [B…, k, n]` (`[B…, n, k]` with
/// `transpose_b`), or `b` of rank 2 or of batch axes of 1, one matrix for
/// every batch; output
/// `[B…, m, n]`, each `op(a)·op(b)` summed in f32. `B…` is one or more
/// leading axes, equal in both. Attributes: byte 0 `transpose_a`, byte 1
/// `transpose_b` (0 or 1). Device arguments: `[batch, m, n, k]` (the
/// batch the product of `B…`), bits `transpose_a | transpose_b << 1 |
/// shared_b << 2`. Attention's batched products as one command (issue 43)
/// where TF's `BatchMatMulV2` launched one `MatMul` per matrix.
const BATCH_MATMUL_DECL: OpDecl = declare("BatchMatMul", 95, 2, &BATCH_MATMUL);

const BATCH_MATMUL: OpRecord = OpRecord {
    shape: |attrs, inputs| {
        let p = BatchPlan::of(attrs, &inputs[0].shape, &inputs[1].shape)?;
        let a = inputs[0].shape.dims();
        let mut out = [0u64; 8];
        let lead = a.len() - 2;
        out[..lead].copy_from_slice(&a[..lead]);
        out[lead] = p.m;
        out[lead + 1] = p.n;
        Shape::new(&out[..a.len()]).ok_or(ShapeError::Overflow)
    },
    flops: |attrs, inputs, _| {
        BatchPlan::of(attrs, &inputs[0].shape, &inputs[1].shape).map_or(0, |p| {
            2u64.saturating_mul(p.batch)
                .saturating_mul(p.m)
                .saturating_mul(p.n)
                .saturating_mul(p.k)
        })
    },
    attrs: "transpose a, b: 0 or 1 (2)",
    args: |attrs, inputs| {
        let p = BatchPlan::of(attrs, &inputs[0].shape, &inputs[1].shape).ok()?;
        let dim = |d: u64| u32::try_from(d).ok();
        Some(DeviceArgs {
            dims: [dim(p.batch)?, dim(p.m)?, dim(p.n)?, dim(p.k)?],
            bits: u16::from(p.transpose[0])
                | u16::from(p.transpose[1]) << 1
                | u16::from(p.shared_b) << 2,
        })
    },
};

/// One [`BATCH_MATMUL`]'s extents, read from its operands' shapes.
struct BatchPlan {
    batch: u64,
    m: u64,
    n: u64,
    k: u64,
    transpose: [bool; 2],
    shared_b: bool,
}

impl BatchPlan {
    fn of(attrs: &Attrs, a: &Shape, b: &Shape) -> Result<Self, ShapeError> {
        let transpose = flag_bytes::<2>(attrs)?;
        let (a, b) = (a.dims(), b.dims());
        if a.len() < 3 {
            return Err(ShapeError::Rank {
                operand: 0,
                expected: 3,
                got: a.len() as u8,
            });
        }
        let lead = a.len() - 2;
        // One matrix for every batch: rank 2, or `a`'s rank with batch axes of 1.
        let shared_b = b.len() == 2 || (b.len() == a.len() && b[..lead].iter().all(|&d| d == 1));
        if !shared_b && b.len() != a.len() {
            return Err(ShapeError::Rank {
                operand: 1,
                expected: a.len() as u8,
                got: b.len() as u8,
            });
        }
        if let Some(axis) = (0..lead).find(|&i| !shared_b && a[i] != b[i]) {
            return Err(ShapeError::Dim {
                operand: 1,
                axis: axis as u8,
                expected: a[axis],
                got: b[axis],
            });
        }
        // Rows and columns of `op(x)`, and the axis of `x` its columns are.
        let matrix = |d: &[u64], t: bool| {
            let (r, c) = (d[d.len() - 2], d[d.len() - 1]);
            if t { (c, r) } else { (r, c) }
        };
        let (m, k) = matrix(a, transpose[0]);
        let (kb, n) = matrix(b, transpose[1]);
        if k != kb {
            let axis = b.len() - if transpose[1] { 1 } else { 2 };
            return Err(ShapeError::Dim {
                operand: 1,
                axis: axis as u8,
                expected: k,
                got: kb,
            });
        }
        let batch = a[..lead]
            .iter()
            .try_fold(1u64, |p, &d| p.checked_mul(d))
            .ok_or(ShapeError::Overflow)?;
        Ok(Self {
            batch,
            m,
            n,
            k,
            transpose,
            shared_b,
        })
    }
}

/// [`BATCH_MATMUL`]'s conformance cases: each transpose, a shared `b`, a
/// rank-4 batch, cancellation.
const BATCH_MATMUL_CASES: &[VendorCase] = &[
    VendorCase {
        attrs: flags([false, false]),
        inputs: &[
            (
                &[2, 2, 3],
                &[
                    1.0, 2.0, 3.0, -1.0, 0.5, 0.25, 0.1, 0.2, 0.3, 1e3, -1e3, 2.0,
                ],
            ),
            (
                &[2, 3, 2],
                &[
                    1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -0.5, 2.0, 0.75, 1.0, 0.5, -2.0,
                ],
            ),
        ],
        out: &[2, 2, 2],
    },
    VendorCase {
        attrs: flags([true, false]),
        inputs: &[
            (&[1, 3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            (
                &[1, 3, 4],
                &[
                    0.5, -1.0, 2.0, 0.0, 1.5, 0.25, -0.5, 1.0, -2.0, 3.0, 0.125, -1.0,
                ],
            ),
        ],
        out: &[1, 2, 4],
    },
    VendorCase {
        attrs: flags([false, true]),
        inputs: &[
            (
                &[2, 1, 2, 3],
                &[
                    1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -1.0, -2.0, -3.0, 0.5, 0.5, 0.5,
                ],
            ),
            (
                &[2, 1, 2, 3],
                &[1.0, 0.0, -1.0, 0.5, 0.5, 0.5, 2.0, 2.0, 2.0, -1.0, 1.0, 0.0],
            ),
        ],
        out: &[2, 1, 2, 2],
    },
    VendorCase {
        attrs: flags([true, true]),
        inputs: &[
            (&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.25, 8.0]),
            (&[2, 2], &[0.5, -1.0, 2.0, 1.0]),
        ],
        out: &[2, 2, 2],
    },
    VendorCase {
        attrs: flags([false, false]),
        inputs: &[
            (&[3, 1, 2], &[1.0, 2.0, -3.0, 0.5, 1e-3, 1e3]),
            (&[2, 3], &[1.0, 2.0, 3.0, -0.5, 0.25, 4.0]),
        ],
        out: &[3, 1, 3],
    },
];

/// [`BATCH_MATMUL`]'s reference kernel: each sum in f64, rounded once.
fn batch_matmul(attrs: &Attrs, x: &[&[f32]], shapes: &[Shape], out: &mut [f32]) {
    let Ok(p) = BatchPlan::of(attrs, &shapes[0], &shapes[1]) else {
        return;
    };
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let [ta, tb] = p.transpose;
    for g in 0..p.batch as usize {
        let a = &x[0][g * m * k..];
        let b = if p.shared_b { x[1] } else { &x[1][g * k * n..] };
        for i in 0..m {
            for j in 0..n {
                let sum: f64 = (0..k)
                    .map(|q| {
                        let av = if ta { a[q * m + i] } else { a[i * k + q] };
                        let bv = if tb { b[j * k + q] } else { b[q * n + j] };
                        f64::from(av) * f64::from(bv)
                    })
                    .sum();
                out[(g * m + i) * n + j] = sum as f32;
            }
        }
    }
}

/// `LayerNorm`: each row of `x` (its last axis, `n` long) normalized, as
/// Keras' `LayerNormalization` computes it in f32, one command for the
/// eleven it lowers to (issue 43, fusion inside programs). Inputs `x [...,
/// n]`, `gamma` and `beta` of `n` elements each (`[n]` or `[1, …, n]`);
/// output of `x`'s shape. Per row: `mean = Σx / n` (the device's row sum),
/// `var = Σ(x − mean)² / n`, `r = 1 / √(ε + var)`, `m = γ·r`, `a = (−mean)·m`,
/// `b = x·m`, then `β + (a + b)` (form 0: TF's arithmetic optimizer turns
/// the two additions into `AddN(a, b)`, then adds `β`) or `b + (a + β)`
/// (form 1: as Keras writes them). Attributes: bytes 0..4 `ε` (f32,
/// little-endian), byte 4 the form (0 or 1). Device arguments: `[rows, n,
/// ε's bits, 0]` (the third is not an extent), bits the form. A device
/// computes each step in f32 with its own kernels' arithmetic, so the
/// command equals the ops it replaces bit for bit.
const LAYER_NORM_DECL: OpDecl = declare("LayerNorm", 96, 3, &LAYER_NORM);

/// [`LAYER_NORM`]'s attributes: `ε` and the form.
pub const fn layer_norm_attrs(epsilon: f32, form: u8) -> Attrs {
    let mut a = [0u8; ATTR_BYTES];
    let e = epsilon.to_bits().to_le_bytes();
    a[0] = e[0];
    a[1] = e[1];
    a[2] = e[2];
    a[3] = e[3];
    a[4] = form;
    Attrs(a)
}

/// `ε` and the form of a [`LAYER_NORM`] attribute block.
fn layer_norm_attrs_of(a: &Attrs) -> Result<(f32, u8), ShapeError> {
    let form = a.0[4];
    if form > 1 || a.0[5..].iter().any(|&b| b != 0) {
        return Err(ShapeError::Attrs);
    }
    let e = f32::from_le_bytes([a.0[0], a.0[1], a.0[2], a.0[3]]);
    Ok((e, form))
}

/// A [`LAYER_NORM`]'s rows and row length, from `x` and the two `n`-element
/// parameters.
fn layer_norm_rows(inputs: &[Shape]) -> Result<(u64, u64), ShapeError> {
    let x = inputs[0].dims();
    let Some(&n) = x.last() else {
        return Err(ShapeError::Rank {
            operand: 0,
            expected: 1,
            got: 0,
        });
    };
    for (operand, p) in [(1u8, &inputs[1]), (2, &inputs[2])] {
        let d = p.dims();
        let last = d.last().copied().unwrap_or(1);
        if last != n || p.elements() != Some(n) {
            return Err(ShapeError::Dim {
                operand,
                axis: d.len().saturating_sub(1) as u8,
                expected: n,
                got: last,
            });
        }
    }
    let all = inputs[0].elements().ok_or(ShapeError::Overflow)?;
    Ok((all.checked_div(n).unwrap_or(0), n))
}

const LAYER_NORM: OpRecord = OpRecord {
    shape: |attrs, inputs| {
        layer_norm_attrs_of(attrs)?;
        let shapes = [inputs[0].shape, inputs[1].shape, inputs[2].shape];
        layer_norm_rows(&shapes)?;
        Ok(inputs[0].shape)
    },
    flops: |_, _, out| out.shape.elements().unwrap_or(0).saturating_mul(9),
    attrs: "epsilon: f32 (4), form: 0 or 1 (1)",
    args: |attrs, inputs| {
        let (epsilon, form) = layer_norm_attrs_of(attrs).ok()?;
        let shapes = [inputs[0].shape, inputs[1].shape, inputs[2].shape];
        let (rows, n) = layer_norm_rows(&shapes).ok()?;
        Some(DeviceArgs {
            dims: [
                rows.try_into().ok()?,
                n.try_into().ok()?,
                epsilon.to_bits(),
                0,
            ],
            bits: u16::from(form),
        })
    },
};

/// [`LAYER_NORM`]'s conformance cases: both forms, a rank-3 `x` with
/// `[1, 1, n]` parameters, a constant row (variance 0), a large mean.
const LAYER_NORM_CASES: &[VendorCase] = &[
    VendorCase {
        attrs: layer_norm_attrs(1e-6, 0),
        inputs: &[
            (&[2, 4], &[1.0, -2.0, 0.5, 3.0, 0.25, 0.125, -0.75, 1.5]),
            (&[4], &[1.0, 0.5, -2.0, 1.25]),
            (&[4], &[0.0, 0.1, -0.2, 3.0]),
        ],
        out: &[2, 4],
    },
    VendorCase {
        attrs: layer_norm_attrs(1e-3, 1),
        inputs: &[
            (
                &[1, 2, 5],
                &[0.3, -1.1, 2.2, 0.7, -0.4, 1.0, 1.0, 1.0, 1.0, 1.0],
            ),
            (&[1, 1, 5], &[1.0, 1.0, 1.0, 1.0, 1.0]),
            (&[1, 1, 5], &[0.5, -0.5, 0.25, 0.0, 2.0]),
        ],
        out: &[1, 2, 5],
    },
    VendorCase {
        attrs: layer_norm_attrs(1e-5, 0),
        inputs: &[
            (&[1, 3], &[100.5, 101.5, 99.0]),
            (&[3], &[0.5, 2.0, 1.0]),
            (&[3], &[1.0, 0.0, -1.0]),
        ],
        out: &[1, 3],
    },
];

/// [`LAYER_NORM`]'s reference kernel: each row's statistics and each
/// element in f64, rounded once.
fn layer_norm(attrs: &Attrs, x: &[&[f32]], shapes: &[Shape], out: &mut [f32]) {
    let (Ok((epsilon, _)), Ok((rows, n))) = (layer_norm_attrs_of(attrs), layer_norm_rows(shapes))
    else {
        return;
    };
    let n = n as usize;
    for i in 0..rows as usize {
        let row = &x[0][i * n..(i + 1) * n];
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean) * (f64::from(v) - mean))
            .sum::<f64>()
            / n as f64;
        let r = 1.0 / libm::sqrt(f64::from(epsilon) + var);
        for j in 0..n {
            let v = (f64::from(row[j]) - mean) * r * f64::from(x[1][j]) + f64::from(x[2][j]);
            out[i * n + j] = v as f32;
        }
    }
}

/// `Gelu`: Keras 3's `gelu` (TF's `tf.nn.gelu`, not approximate), one
/// command for the five element-wise ops it lowers to (issue 43): `out =
/// (h · erfc(c · (−x))) · x` element by element, `c` = 1/√2 and `h` = ½ as
/// the graph's constants hold them, each step in f32. Input `x` of any
/// shape; output of its shape. Attributes: bytes 0..4 `c`, 4..8 `h` (f32,
/// little-endian). Device arguments: `[elements, c's bits, h's bits, 0]`
/// (the last two are not extents).
const GELU_DECL: OpDecl = declare("Gelu", 97, 1, &GELU);

/// [`GELU`]'s attributes.
pub const fn gelu_attrs(c: f32, h: f32) -> Attrs {
    let mut a = [0u8; ATTR_BYTES];
    let (c, h) = (c.to_bits().to_le_bytes(), h.to_bits().to_le_bytes());
    let mut i = 0;
    while i < 4 {
        a[i] = c[i];
        a[4 + i] = h[i];
        i += 1;
    }
    Attrs(a)
}

/// `c` and `h` of a [`GELU`] attribute block.
fn gelu_attrs_of(a: &Attrs) -> Result<(f32, f32), ShapeError> {
    if a.0[8..].iter().any(|&b| b != 0) {
        return Err(ShapeError::Attrs);
    }
    let word = |i: usize| f32::from_le_bytes([a.0[i], a.0[i + 1], a.0[i + 2], a.0[i + 3]]);
    Ok((word(0), word(4)))
}

const GELU: OpRecord = OpRecord {
    shape: |attrs, inputs| {
        gelu_attrs_of(attrs)?;
        Ok(inputs[0].shape)
    },
    flops: |_, _, out| out.shape.elements().unwrap_or(0).saturating_mul(4),
    attrs: "c, h: f32 (8)",
    args: |attrs, inputs| {
        let (c, h) = gelu_attrs_of(attrs).ok()?;
        let len = inputs[0].shape.elements()?;
        Some(DeviceArgs {
            dims: [len.try_into().ok()?, c.to_bits(), h.to_bits(), 0],
            bits: 0,
        })
    },
};

/// [`GELU`]'s conformance cases: both tails, zero, −0, a rank-3 input.
const GELU_CASES: &[VendorCase] = &[
    VendorCase {
        attrs: gelu_attrs(core::f32::consts::FRAC_1_SQRT_2, 0.5),
        inputs: &[(&[8], &[-6.0, -3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 5.0])],
        out: &[8],
    },
    VendorCase {
        attrs: gelu_attrs(core::f32::consts::FRAC_1_SQRT_2, 0.5),
        inputs: &[(&[1, 2, 3], &[-0.0, 1e-3, -1e-3, 1.5, -1.5, 0.75])],
        out: &[1, 2, 3],
    },
];

/// [`GELU`]'s reference kernel, in f64.
fn gelu(attrs: &Attrs, x: &[&[f32]], _: &[Shape], out: &mut [f32]) {
    let Ok((c, h)) = gelu_attrs_of(attrs) else {
        return;
    };
    for (o, &v) in out.iter_mut().zip(x[0]) {
        let v = f64::from(v);
        *o = (f64::from(h) * libm::erfc(-f64::from(c) * v) * v) as f32;
    }
}
