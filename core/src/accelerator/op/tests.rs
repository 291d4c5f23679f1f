use super::*;
use crate::accelerator::{Binary, DType, DeviceAddr, Unary};

fn t(d: &[u64]) -> TensorDesc {
    TensorDesc::new(DeviceAddr(0), DType::F32, Shape::new(d).unwrap())
}

fn op(kind: OpKind, inputs: &[TensorDesc], out: &[u64]) -> Result<(), ShapeError> {
    OpDesc {
        kind,
        inputs,
        output: t(out),
        op_id: 0,
    }
    .validate()
}

const MM: OpKind = OpKind::MatMul {
    transpose_a: false,
    transpose_b: false,
};

#[test]
fn matmul_shapes_with_and_without_transposes() {
    assert_eq!(op(MM, &[t(&[2, 3]), t(&[3, 5])], &[2, 5]), Ok(()));
    let ta = OpKind::MatMul {
        transpose_a: true,
        transpose_b: false,
    };
    assert_eq!(op(ta, &[t(&[3, 2]), t(&[3, 5])], &[2, 5]), Ok(()));
    let tb = OpKind::MatMul {
        transpose_a: false,
        transpose_b: true,
    };
    assert_eq!(op(tb, &[t(&[2, 3]), t(&[5, 3])], &[2, 5]), Ok(()));
    assert_eq!(
        op(MM, &[t(&[2, 3]), t(&[4, 5])], &[2, 5]),
        Err(ShapeError::Dim {
            operand: 1,
            axis: 0,
            expected: 3,
            got: 4
        })
    );
    assert_eq!(
        op(MM, &[t(&[2, 3]), t(&[3, 5])], &[5, 2]),
        Err(ShapeError::Dim {
            operand: 2,
            axis: 0,
            expected: 2,
            got: 5
        })
    );
    assert_eq!(
        op(MM, &[t(&[2, 3, 1]), t(&[3, 5])], &[2, 5]),
        Err(ShapeError::Rank {
            operand: 0,
            expected: 2,
            got: 3
        })
    );
}

#[test]
fn empty_matmul_is_valid() {
    assert_eq!(op(MM, &[t(&[0, 3]), t(&[3, 5])], &[0, 5]), Ok(()));
    assert_eq!(op(MM, &[t(&[2, 0]), t(&[0, 5])], &[2, 5]), Ok(()));
}

#[test]
fn fused_matmul_checks_bias_length() {
    let f = OpKind::FusedMatMul {
        transpose_a: false,
        transpose_b: false,
        relu: true,
    };
    assert_eq!(op(f, &[t(&[2, 3]), t(&[3, 5]), t(&[5])], &[2, 5]), Ok(()));
    assert_eq!(
        op(f, &[t(&[2, 3]), t(&[3, 5]), t(&[4])], &[2, 5]),
        Err(ShapeError::Dim {
            operand: 2,
            axis: 0,
            expected: 5,
            got: 4
        })
    );
}

#[test]
fn broadcasting_follows_numpy() {
    assert_eq!(
        op(OpKind::Binary(Binary::ADD), &[t(&[4, 3]), t(&[3])], &[4, 3]),
        Ok(())
    );
    assert_eq!(
        op(
            OpKind::Binary(Binary::MUL),
            &[t(&[4, 1]), t(&[1, 3])],
            &[4, 3]
        ),
        Ok(())
    );
    assert_eq!(
        op(OpKind::Binary(Binary::SUB), &[t(&[]), t(&[2, 2])], &[2, 2]),
        Ok(())
    );
    assert!(matches!(
        op(
            OpKind::Binary(Binary::MAXIMUM),
            &[t(&[4, 3]), t(&[2])],
            &[4, 3]
        ),
        Err(ShapeError::Dim { operand: 1, .. })
    ));
}

#[test]
fn reduce_sum_drops_or_keeps_the_last_axis() {
    assert_eq!(op(OpKind::ReduceSum, &[t(&[4, 3])], &[4]), Ok(()));
    assert_eq!(op(OpKind::ReduceSum, &[t(&[4, 3])], &[4, 1]), Ok(()));
    assert!(op(OpKind::ReduceSum, &[t(&[4, 3])], &[3]).is_err());
}

#[test]
fn wrong_input_count_and_overflow_are_reported() {
    assert_eq!(
        op(OpKind::Unary(Unary::RELU), &[t(&[2]), t(&[2])], &[2]),
        Err(ShapeError::InputCount {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        op(
            OpKind::Unary(Unary::RELU),
            &[t(&[u64::MAX, 4])],
            &[u64::MAX, 4]
        ),
        Err(ShapeError::Overflow)
    );
}

#[test]
fn bias_add_needs_a_vector_matching_the_last_axis() {
    assert_eq!(op(OpKind::BiasAdd, &[t(&[2, 3]), t(&[3])], &[2, 3]), Ok(()));
    assert!(op(OpKind::BiasAdd, &[t(&[2, 3]), t(&[2])], &[2, 3]).is_err());
    assert!(op(OpKind::BiasAdd, &[t(&[]), t(&[1])], &[]).is_err());
}

#[test]
fn flops_and_bytes_for_profiling() {
    let inputs = [t(&[2, 3]), t(&[3, 5])];
    let d = OpDesc {
        kind: MM,
        inputs: &inputs,
        output: t(&[2, 5]),
        op_id: 1,
    };
    assert_eq!(d.flops(), 2 * 2 * 5 * 3);
    assert_eq!(d.bytes_accessed(), 4 * (6 + 15 + 10));
}
