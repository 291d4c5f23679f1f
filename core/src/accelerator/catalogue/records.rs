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
pub(super) const RECORDS: &[OpDecl] = &[CUMSUM_DECL];

/// Their reference sides, each by its record's code (a catalogue test
/// checks the two lists match).
pub(super) const REFERENCES: &[RecordReference] = &[RecordReference {
    code: CUMSUM_DECL.id.code,
    reference: cumsum,
    cases: CUMSUM_CASES,
    tolerance: Tolerance::EXACT,
}];

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
            dims: [o.try_into().ok()?, n.try_into().ok()?, i.try_into().ok()?],
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
