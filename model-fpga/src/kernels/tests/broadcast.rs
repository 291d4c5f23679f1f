use super::{any_value, assert_exact, vec_of};
use crate::kernels::{BinaryOp, ErrorKind, KernelError, Operand, binary, reference};
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

const OPS: [BinaryOp; BinaryOp::ALL.len()] = BinaryOp::ALL;

/// An output shape, and two operand shapes that broadcast to it: each is a
/// suffix of the output with some axes replaced by 1.
fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (
        proptest::collection::vec(0usize..=4, 0..=6),
        any::<[bool; 6]>(),
        any::<[bool; 6]>(),
        0usize..=6,
        0usize..=6,
    )
        .prop_map(|(out, ones_a, ones_b, drop_a, drop_b)| {
            let operand = |ones: [bool; 6], drop: usize| -> Vec<usize> {
                let rank = out.len() - drop.min(out.len());
                out[out.len() - rank..]
                    .iter()
                    .zip(ones)
                    .map(|(&d, one)| if one { 1 } else { d })
                    .collect()
            };
            (operand(ones_a, drop_a), operand(ones_b, drop_b))
        })
}

fn elements(shape: &[usize]) -> usize {
    shape.iter().product()
}

proptest! {
    #[test]
    fn binary_matches_reference_exactly_transcendentals_within_ulps(
        (a_shape, b_shape, a, b) in shapes().prop_flat_map(|(sa, sb)| {
            let (la, lb) = (elements(&sa), elements(&sb));
            (Just(sa), Just(sb), vec_of(la, any_value()), vec_of(lb, any_value()))
        }),
        op in proptest::sample::select(OPS.to_vec()),
        swap in any::<bool>(),
    ) {
        let (a_shape, b_shape, a, b) =
            if swap { (b_shape, a_shape, b, a) } else { (a_shape, b_shape, a, b) };
        let rank = a_shape.len().max(b_shape.len());
        let dim = |s: &[usize], axis: usize| {
            let pad = rank - s.len();
            if axis < pad { 1 } else { s[axis - pad] }
        };
        let out_len: usize = (0..rank)
            .map(|i| dim(&a_shape, i).max(dim(&b_shape, i)) * usize::from(dim(&a_shape, i) != 0 && dim(&b_shape, i) != 0))
            .product();
        let mut want = vec![0.0; out_len];
        reference::binary(op, &a, &a_shape, &b, &b_shape, &mut want);
        let mut got = vec![f32::NAN; out_len];
        binary(op, &a, &a_shape, &b, &b_shape, &mut got).unwrap();
        if matches!(op, BinaryOp::Pow | BinaryOp::Xlogy | BinaryOp::SoftplusGrad) {
            // `powf`, `logf` and `expf` are within a few ulp of the f64
            // reference, not always equal.
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                let close = (f64::from(g) - f64::from(w)).abs() <= f64::from(w.abs()) * 4.0 * f64::from(f32::EPSILON);
                assert!(g == w || (g.is_nan() && w.is_nan()) || close, "element {i}: got {g}, want {w}");
            }
        } else {
            assert_exact(&got, &want);
        }
    }
}

#[test]
fn common_broadcasts() {
    // [2,3] + [3]: a row vector added to each row.
    let mut out = [0.0; 6];
    binary(
        BinaryOp::Add,
        &[1., 2., 3., 4., 5., 6.],
        &[2, 3],
        &[10., 20., 30.],
        &[3],
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [11., 22., 33., 14., 25., 36.]);
    // [2,1] - [1,3]: outer difference.
    binary(
        BinaryOp::Sub,
        &[1., 2.],
        &[2, 1],
        &[1., 2., 3.],
        &[1, 3],
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [0., -1., -2., 1., 0., -1.]);
    // Scalar (rank 0) times a vector.
    let mut out3 = [0.0; 3];
    binary(BinaryOp::Mul, &[2.], &[], &[1., -2., 3.], &[3], &mut out3).unwrap();
    assert_eq!(out3, [2., -4., 6.]);
}

#[test]
fn maximum_propagates_nan_and_keeps_first_zero() {
    let mut out = [0.0; 3];
    binary(
        BinaryOp::Maximum,
        &[f32::NAN, 1.0, -0.0],
        &[3],
        &[1.0, f32::NAN, 0.0],
        &[3],
        &mut out,
    )
    .unwrap();
    assert!(out[0].is_nan() && out[1].is_nan());
    assert!(
        out[2] == 0.0 && out[2].is_sign_negative(),
        "tf.maximum(-0., 0.) is -0."
    );
}

#[test]
fn empty_broadcasts() {
    // [0] with [1] broadcasts to [0]; [2,0] with [2,1] to [2,0].
    binary(BinaryOp::Add, &[], &[0], &[1.0], &[1], &mut []).unwrap();
    binary(BinaryOp::Add, &[], &[2, 0], &[1.0, 2.0], &[2, 1], &mut []).unwrap();
}

#[test]
fn incompatible_shapes_are_refused_before_writing() {
    let mut out = [7.0; 6];
    let err = binary(BinaryOp::Add, &[0.0; 6], &[2, 3], &[0.0; 2], &[2], &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Broadcast {
            axis: 1,
            lhs: 3,
            rhs: 2
        }
    );
    assert_eq!(err.kind(), ErrorKind::Shape);
    let err = binary(BinaryOp::Add, &[0.0; 3], &[3], &[0.0; 3], &[3], &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Output,
            expected: 3,
            got: 6
        }
    );
    let err = binary(
        BinaryOp::Add,
        &[0.0; 2],
        &[3],
        &[0.0; 3],
        &[3],
        &mut out[..3],
    )
    .unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Lhs,
            expected: 3,
            got: 2
        }
    );
    let err = binary(BinaryOp::Add, &[0.0], &[1; 7], &[0.0], &[1], &mut out[..1]).unwrap_err();
    assert_eq!(
        err,
        KernelError::Rank {
            operand: Operand::Lhs,
            got: 7
        }
    );
    assert!(out.iter().all(|&v| v == 7.0), "output touched on error");
}
