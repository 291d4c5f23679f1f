use super::{finite, vec_of};
use crate::kernels::{
    KernelError, Operand, reduce_sum_last_axis, reference, softmax_last_axis,
    softmax_last_axis_in_place,
};
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

const EPS: f32 = f32::EPSILON;

fn rows() -> impl Strategy<Value = (usize, Vec<f32>)> {
    (0usize..6, 0usize..70, -100.0f32..100.0).prop_flat_map(|(n_rows, row_len, shift)| {
        let values = vec_of(
            n_rows * row_len,
            finite().prop_map(move |v| v * 4.0 + shift),
        );
        (Just(row_len), values)
    })
}

proptest! {
    /// Tolerance per element: relative `(c + 4 + |x - max|)·ε` (the row sum,
    /// `exp`, the division, and the rounding of `x - max` magnified by `exp`).
    #[test]
    fn softmax_matches_reference((row_len, x) in rows()) {
        let mut want = vec![0.0; x.len()];
        reference::softmax(&x, row_len, &mut want);
        let mut got = vec![f32::NAN; x.len()];
        softmax_last_axis(&x, row_len, &mut got).unwrap();
        for (r, row) in x.chunks(row_len.max(1)).enumerate() {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for (j, &v) in row.iter().enumerate() {
                let i = r * row_len + j;
                let tol = (row_len as f32 + 4.0 + (v - max).abs()) * EPS * want[i] + f32::MIN_POSITIVE;
                prop_assert!((got[i] - want[i]).abs() <= tol, "element {i}: got {}, want {}", got[i], want[i]);
            }
        }
        let mut in_place = x.clone();
        softmax_last_axis_in_place(&mut in_place, row_len).unwrap();
        prop_assert_eq!(in_place, got);
    }

    /// Tolerance per row: `(c + 1)·ε·Σ|x|`, the bound for any summation order.
    #[test]
    fn reduce_sum_matches_reference((row_len, x) in rows()) {
        // With no columns any row count is consistent; use 3.
        let n_rows = x.len().checked_div(row_len).unwrap_or(3);
        let mut want = vec![0.0; n_rows];
        reference::reduce_sum(&x, row_len, &mut want);
        let mut got = vec![f32::NAN; n_rows];
        reduce_sum_last_axis(&x, row_len, &mut got).unwrap();
        for r in 0..n_rows {
            let abs: f32 = x[r * row_len..(r + 1) * row_len].iter().map(|v| v.abs()).sum();
            let tol = (row_len as f32 + 1.0) * EPS * abs + f32::MIN_POSITIVE;
            prop_assert!((got[r] - want[r]).abs() <= tol, "row {r}: got {}, want {}", got[r], want[r]);
        }
    }
}

#[test]
fn softmax_is_stable_for_huge_logits() {
    let mut out = [0.0; 3];
    softmax_last_axis(&[1e30, 1e30, -1e30], 3, &mut out).unwrap();
    assert_eq!(out, [0.5, 0.5, 0.0]);
}

#[test]
fn softmax_of_a_nan_row_is_nan() {
    let mut out = [0.0; 2];
    softmax_last_axis(&[f32::NAN, 1.0], 2, &mut out).unwrap();
    assert!(out.iter().all(|v| v.is_nan()));
}

#[test]
fn empty_last_axis() {
    softmax_last_axis(&[], 0, &mut []).unwrap();
    let mut sums = [f32::NAN; 4];
    reduce_sum_last_axis(&[], 0, &mut sums).unwrap();
    assert_eq!(sums, [0.0; 4]);
}

#[test]
fn row_kernels_refuse_inconsistent_lengths() {
    let mut out = [7.0; 4];
    let err = softmax_last_axis(&[0.0; 5], 2, &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Input,
            expected: 4,
            got: 5
        }
    );
    let err = softmax_last_axis(&[0.0; 4], 2, &mut out[..3]).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Output,
            expected: 4,
            got: 3
        }
    );
    let err = reduce_sum_last_axis(&[0.0; 5], 2, &mut out[..2]).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Input,
            expected: 4,
            got: 5
        }
    );
    assert!(softmax_last_axis(&[1.0], 0, &mut out[..1]).is_err());
    assert_eq!(out, [7.0; 4], "output touched on error");
}
