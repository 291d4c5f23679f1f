//! The index ops' cases (`Gather`, `SegmentSum`: f32 data, int32
//! indices), run through the typed path of [`super::int8`]: bit for bit
//! against the reference, and an index out of range refused.

use std::vec;
use std::vec::Vec;

use super::ops::{OpCase, Values};
use super::support::values;
use crate::accelerator::OpKind;

fn case(kind: OpKind, data: &[u64], indices: Vec<i32>, out: &[u64], seed: u32) -> OpCase {
    let n = data.iter().product::<u64>() as usize;
    OpCase {
        kind,
        inputs: vec![
            (data.to_vec(), Values::F32(values(n, seed))),
            (vec![indices.len() as u64], Values::I32(indices)),
        ],
        out: out.to_vec(),
    }
}

/// Every case of `kind`, the first small.
pub(crate) fn cases(kind: OpKind) -> Vec<OpCase> {
    match kind {
        OpKind::Gather => vec![
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
        ],
        OpKind::SegmentSum => vec![
            case(kind, &[5, 3], vec![1, 0, 1, -1, 3], &[4, 3], 710),
            // An embedding gradient: 64 rows into 50 segments, repeats summed in order.
            case(
                kind,
                &[64, 16],
                (0..64).map(|i| i * 7 % 50).collect(),
                &[50, 16],
                711,
            ),
            case(kind, &[0, 4], vec![], &[3, 4], 712),
        ],
        _ => Vec::new(),
    }
}
