use super::{any_value, assert_exact, vec_of};
use crate::kernels::{
    ErrorKind, KernelError, Operand, bias_add, bias_add_in_place, fill, reference, relu,
    relu_in_place,
};
use proptest::prelude::*;
use std::vec;

proptest! {
    #[test]
    fn relu_matches_reference_exactly(x in proptest::collection::vec(any_value(), 0..200)) {
        let mut want = vec![0.0; x.len()];
        reference::relu(&x, &mut want);
        let mut got = vec![f32::NAN; x.len()];
        relu(&x, &mut got).unwrap();
        assert_exact(&got, &want);
        let mut in_place = x.clone();
        relu_in_place(&mut in_place);
        assert_exact(&in_place, &want);
    }

    #[test]
    fn bias_add_matches_reference_exactly(
        (x, bias) in (0usize..6, 1usize..20).prop_flat_map(|(rows, c)| {
            (vec_of(rows * c, any_value()), vec_of(c, any_value()))
        })
    ) {
        let mut want = vec![0.0; x.len()];
        reference::bias_add(&x, &bias, &mut want);
        let mut got = vec![f32::NAN; x.len()];
        bias_add(&x, &bias, &mut got).unwrap();
        assert_exact(&got, &want);
        let mut in_place = x.clone();
        bias_add_in_place(&mut in_place, &bias).unwrap();
        assert_exact(&in_place, &want);
    }
}

#[test]
fn relu_keeps_negative_zero_like_tf() {
    let mut out = [1.0];
    relu(&[-0.0], &mut out).unwrap();
    assert!(out[0] == 0.0 && out[0].is_sign_negative());
}

#[test]
fn bias_add_refuses_partial_rows_and_wrong_output() {
    let mut out = [7.0; 5];
    let err = bias_add(&[0.0; 5], &[1.0, 2.0], &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Input,
            expected: 4,
            got: 5
        }
    );
    let err = bias_add(&[0.0; 4], &[1.0, 2.0], &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Output,
            expected: 4,
            got: 5
        }
    );
    assert_eq!(err.kind(), ErrorKind::Length);
    // No channels: only an empty input is whole rows.
    assert!(bias_add(&[1.0], &[], &mut out[..1]).is_err());
    bias_add(&[], &[], &mut []).unwrap();
    assert!(out.iter().all(|&v| v == 7.0), "output touched on error");
}

#[test]
fn relu_refuses_wrong_output() {
    let mut out = [7.0; 2];
    let err = relu(&[1.0; 3], &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            operand: Operand::Output,
            expected: 3,
            got: 2
        }
    );
    assert_eq!(out, [7.0; 2]);
}

#[test]
fn fill_sets_every_element() {
    let mut out = [0.0; 5];
    fill(&mut out, -1.5);
    assert_eq!(out, [-1.5; 5]);
    fill(&mut [], 1.0);
}
