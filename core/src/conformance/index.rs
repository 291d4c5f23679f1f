//! The cases of the ops whose operands differ in type besides the int8
//! ones: `Gather`, `SegmentSum` (f32 data, int32 or int64 indices), `Cast`
//! and `ArgMax`/`ArgMin`, run
//! through the typed path of [`super::int8`]: bit for bit against the
//! reference, and an index out of range refused.

use std::vec;
use std::vec::Vec;

use super::case::{OpCase, Values};
use super::support::values;
use crate::accelerator::{DType, OpKind};

/// A case with `indices` of the kind's index type.
fn case(kind: OpKind, data: &[u64], indices: Vec<i64>, out: &[u64], seed: u32) -> OpCase {
    let n = data.iter().product::<u64>() as usize;
    let count = vec![indices.len() as u64];
    let indices = match kind {
        OpKind::Gather(DType::I64) | OpKind::SegmentSum(DType::I64) => Values::I64(indices),
        _ => Values::I32(indices.iter().map(|&i| i as i32).collect()),
    };
    OpCase {
        kind,
        inputs: vec![
            (data.to_vec(), Values::F32(values(n, seed))),
            (count, indices),
        ],
        out: out.to_vec(),
    }
}

/// Every case of `kind`, the first small; the index ops' with int32 and
/// int64 indices.
pub(crate) fn cases(kind: OpKind) -> Vec<OpCase> {
    match kind {
        OpKind::Gather(_) => [DType::I32, DType::I64]
            .into_iter()
            .flat_map(|t| {
                let kind = OpKind::Gather(t);
                vec![
                    case(kind, &[1, 5, 3], vec![4, 0, 2, 2], &[1, 4, 3], 700),
                    // An embedding lookup: 64 ids into 50 rows of 16.
                    case(
                        kind,
                        &[1, 50, 16],
                        (0..64).map(|i| i * 37 % 50).collect(),
                        &[1, 64, 16],
                        701,
                    ),
                    // Outer axes, single elements, and no indices.
                    case(kind, &[3, 4, 1], vec![3, 1, 3], &[3, 3, 1], 702),
                    case(kind, &[2, 3, 4], vec![], &[2, 0, 4], 703),
                ]
            })
            .collect(),
        OpKind::SegmentSum(_) => [DType::I32, DType::I64]
            .into_iter()
            .flat_map(|t| {
                let kind = OpKind::SegmentSum(t);
                vec![
                    case(kind, &[5, 3], vec![1, 0, 1, -1, 3], &[4, 3], 710),
                    // An embedding gradient: 64 rows into 50 segments, repeats
                    // summed in order.
                    case(
                        kind,
                        &[64, 16],
                        (0..64).map(|i| i * 7 % 50).collect(),
                        &[50, 16],
                        711,
                    ),
                    case(kind, &[0, 4], vec![], &[3, 4], 712),
                ]
            })
            .collect(),
        OpKind::Cast { .. } => cast_cases(),
        OpKind::Concat(_) => concat_cases(),
        OpKind::ArgMax(_) | OpKind::ArgMin(_) => arg_cases(kind),
        _ => Vec::new(),
    }
}

/// Every pair `Cast` converts, over values that reach each edge: NaN, ±∞,
/// out of range, −0, halves, and integers past f32's 2²⁴.
fn cast_cases() -> Vec<OpCase> {
    use crate::accelerator::cast_supported;
    let floats = vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -3e9,
        3e9,
        2.7,
        -2.7,
        -0.0,
        0.5,
        2_147_483_520.0,
        -9.3e18,
        1e-40,
        // Ties and edges of the half types: 1 + 2⁻⁸, 65520, 2⁻²⁵, 3·2⁻²⁶.
        1.003_906_3,
        65520.0,
        2.980_232_2e-8,
        4.470_348_4e-8,
    ];
    let ints = [
        0i64,
        1,
        -1,
        16_777_217,
        -16_777_219,
        2_147_483_647,
        i64::from(i32::MIN),
    ];
    let wide = [(1i64 << 40) + 7, -(1i64 << 35) - 3, i64::MAX, i64::MIN, 123];
    let values = |d: DType| -> Values {
        match d {
            DType::F32 => Values::F32(floats.clone()),
            DType::I32 => Values::I32(ints.iter().map(|&i| i as i32).collect()),
            DType::I64 => Values::I64(ints.iter().chain(&wide).copied().collect()),
            // Zeros, one, the largest, a subnormal, infinity, NaN.
            DType::BF16 => Values::Half(d, vec![0, 0x8000, 0x3f80, 0x7f7f, 0x0001, 0xff80, 0x7fc1]),
            DType::F16 => Values::Half(d, vec![0, 0x8000, 0x3c00, 0x7bff, 0x0001, 0xfc00, 0x7e01]),
            DType::I8 => Values::I8(vec![0, 1, -1, 127, -128, 64]),
            _ => Values::Bool(vec![true, false, false, true]),
        }
    };
    let types = [
        DType::F32,
        DType::I32,
        DType::I64,
        DType::Bool,
        DType::BF16,
        DType::F16,
        DType::I8,
    ];
    let mut cases = Vec::new();
    for from in types {
        for to in types.into_iter().filter(|&to| cast_supported(from, to)) {
            let v = values(from);
            let n = v.bytes().len() / from.size();
            cases.push(OpCase {
                kind: OpKind::Cast { from, to },
                inputs: vec![(vec![n as u64], v)],
                out: vec![n as u64],
            });
        }
    }
    cases
}

/// `ArgMax`, `ArgMin`: random rows into i32 and i64, and rows of ties,
/// NaN, infinities and values at `f32::MIN` and `f32::MAX`.
fn arg_cases(kind: OpKind) -> Vec<OpCase> {
    let nan = f32::NAN;
    let (inf, max, min) = (f32::INFINITY, f32::MAX, f32::MIN);
    let special = vec![
        1.0, nan, 3.0, nan, 1.0, 2.0, 2.0, 2.0, 1.0, -inf, -inf, -inf, nan, nan, nan, min, max,
        inf, max, min, -inf,
    ];
    let mut cases = Vec::new();
    for out in [DType::I32, DType::I64] {
        let kind = match kind {
            OpKind::ArgMax(_) => OpKind::ArgMax(out),
            _ => OpKind::ArgMin(out),
        };
        for (dims, seed) in [(&[4, 9][..], 730), (&[2, 3, 130][..], 731), (&[5][..], 732)] {
            let n = dims.iter().product::<u64>() as usize;
            cases.push(OpCase {
                kind,
                inputs: vec![(dims.to_vec(), Values::F32(values(n, seed)))],
                out: dims[..dims.len() - 1].to_vec(),
            });
        }
        cases.push(OpCase {
            kind,
            inputs: vec![(vec![7, 3], Values::F32(special.clone()))],
            out: vec![7],
        });
    }
    cases
}

/// `Concat` of f32 and of int8 rows: several rows, one row, an empty half.
fn concat_cases() -> Vec<OpCase> {
    let mut cases = Vec::new();
    for (i, (outer, p, q)) in [(2u64, 3u64, 5u64), (1, 4, 1), (3, 0, 2)]
        .into_iter()
        .enumerate()
    {
        let (a, b) = ((outer * p) as usize, (outer * q) as usize);
        let seed = 720 + 2 * i as u32;
        cases.push(OpCase {
            kind: OpKind::Concat(DType::F32),
            inputs: vec![
                (vec![outer, p], Values::F32(values(a, seed))),
                (vec![outer, q], Values::F32(values(b, seed + 1))),
            ],
            out: vec![outer, p + q],
        });
        let bytes = |n: usize, k: usize| (0..n).map(|j| (j * 37 + k * 11) as u8 as i8).collect();
        cases.push(OpCase {
            kind: OpKind::Concat(DType::I8),
            inputs: vec![
                (vec![outer, p], Values::I8(bytes(a, i))),
                (vec![outer, q], Values::I8(bytes(b, i + 5))),
            ],
            out: vec![outer, p + q],
        });
    }
    cases
}
