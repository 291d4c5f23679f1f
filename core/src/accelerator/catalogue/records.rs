//! The built-in ops declared as records: each op's declaration, attribute
//! block, shape rule, cost, reference kernel, conformance cases and device
//! arguments, in one place. A new op is one entry of [`RECORDS`] and its
//! record here (`docs/ops.md`, "Adding a device op").

#![allow(dead_code)] // the helpers of the first records

use crate::accelerator::op::{Form, OpDecl};
use crate::accelerator::op_id::{ATTR_BYTES, Attrs, OpId};
use crate::accelerator::record::OpRecord;
use crate::accelerator::shape_error::ShapeError;
use crate::accelerator::types::{DType, DTypeSet, Shape};

/// The records, in code order (after the catalogue's own ops).
pub(super) const RECORDS: &[OpDecl] = &[];

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

