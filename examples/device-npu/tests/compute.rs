//! What the NPU computes, against hand computations, and the launches it refuses.

mod common;

use common::*;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{Binary, DeviceAddr, ErrorKind, OpKind, Unary};
use tensorplug_device_npu::BASE;

// a = [[1, 2, 3], [4, 5, 6]] (2×3), b = [[1, 0, 2, 0], [0, 1, 0, 1], [1, -1, 0, 2]] (3×4).
const A: [f32; 6] = [1., 2., 3., 4., 5., 6.];
const A_T: [f32; 6] = [1., 4., 2., 5., 3., 6.];
const B: [f32; 12] = [1., 0., 2., 0., 0., 1., 0., 1., 1., -1., 0., 2.];
const B_T: [f32; 12] = [1., 0., 1., 0., 1., -1., 2., 0., 0., 0., 1., 2.];
// a · b, by hand.
const AB: [f32; 8] = [4., -1., 2., 8., 10., -1., 8., 17.];

#[test]
fn matmul_with_every_transpose_combination_matches_the_hand_computation() {
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut dev = npu();
        let (a, a_dims) = if ta {
            (put(&mut dev, &A_T), [3, 2])
        } else {
            (put(&mut dev, &A), [2, 3])
        };
        let (b, b_dims) = if tb {
            (put(&mut dev, &B_T), [4, 3])
        } else {
            (put(&mut dev, &B), [3, 4])
        };
        let out = dev.allocate(32, 4).unwrap();
        let inputs = [t(a, &a_dims), t(b, &b_dims)];
        let fence = dev
            .launch(Q, &op(matmul(ta, tb), &inputs, t(out, &[2, 4]), 1))
            .unwrap();
        dev.wait(fence, T).unwrap();
        assert_eq!(
            get(&mut dev, out, 8),
            AB,
            "transpose_a {ta}, transpose_b {tb}"
        );
    }
}

#[test]
fn matmul_accumulates_in_f32_in_k_order() {
    let mut dev = npu();
    // 1e8 + 1 rounds back to 1e8 in f32, so the sum is 0 (f64 would give 1).
    let a = put(&mut dev, &[1e8, 1., -1e8]);
    let b = put(&mut dev, &[1., 1., 1.]);
    let out = dev.allocate(4, 4).unwrap();
    let inputs = [t(a, &[1, 3]), t(b, &[3, 1])];
    dev.launch(Q, &op(matmul(false, false), &inputs, t(out, &[1, 1]), 1))
        .unwrap();
    assert_eq!(get(&mut dev, out, 1), [0.0]);
}

/// `k = 0`: empty inputs at address 0 (as TF passes them), a zero output.
/// (Found by the op sweep on the NPU: address 0 was refused as unallocated.)
#[test]
fn matmul_of_empty_inputs_at_address_zero_writes_zeros() {
    let mut dev = npu();
    let out = put(&mut dev, &[7.0; 12]);
    let inputs = [t(DeviceAddr(0), &[3, 0]), t(DeviceAddr(0), &[0, 4])];
    let fence = dev
        .launch(Q, &op(matmul(false, false), &inputs, t(out, &[3, 4]), 1))
        .unwrap();
    dev.wait(fence, T).unwrap();
    assert_eq!(get(&mut dev, out, 12), [0.0; 12]);
}

#[test]
fn relu_is_elementwise_keeps_nan_and_runs_in_place() {
    let mut dev = npu();
    let x = put(
        &mut dev,
        &[-1., 0., 2.5, f32::NAN, f32::NEG_INFINITY, f32::INFINITY],
    );
    let inputs = [t(x, &[2, 3])];
    dev.launch(
        Q,
        &op(OpKind::Unary(Unary::RELU), &inputs, t(x, &[2, 3]), 1),
    )
    .unwrap();
    let y = get(&mut dev, x, 6);
    assert_eq!([y[0], y[1], y[2]], [0., 0., 2.5]);
    assert!(y[3].is_nan());
    assert_eq!([y[4], y[5]], [0., f32::INFINITY]);
}

#[test]
fn undeclared_ops_are_unsupported_and_named() {
    let mut dev = npu();
    let x = put(&mut dev, &[1., 2.]);
    let inputs = [t(x, &[2])];
    for kind in [OpKind::Softmax, OpKind::ReduceSum] {
        let error = dev
            .launch(Q, &op(kind, &inputs, t(x, &[2]), 0))
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.to_string().contains(kind.name()), "{error}");
    }
    let both = [t(x, &[2]), t(x, &[2])];
    let error = dev
        .launch(Q, &op(OpKind::Binary(Binary::ADD), &both, t(x, &[2]), 0))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.to_string().contains("Add"), "{error}");
}

#[test]
fn bad_descriptors_and_addresses_are_invalid_arguments_and_write_nothing() {
    let mut dev = npu();
    let x = put(&mut dev, &[-1., -2.]);
    let inputs = [t(x, &[2])];
    let refused = |dev: &mut HostNpu, kind, inputs: &[_], output| {
        let error = dev.launch(Q, &op(kind, inputs, output, 0)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error}");
    };
    // Wrong output shape; wrong input count; an overflowing size.
    refused(&mut dev, OpKind::Unary(Unary::RELU), &inputs, t(x, &[3]));
    refused(&mut dev, OpKind::Unary(Unary::RELU), &[], t(x, &[2]));
    let huge = [t(x, &[u64::MAX / 2, 4])];
    refused(
        &mut dev,
        OpKind::Unary(Unary::RELU),
        &huge,
        t(x, &[u64::MAX / 2, 4]),
    );
    // Input outside any allocation, below BASE, or running past its block.
    let outside = [t(DeviceAddr(BASE + 0x8000), &[2])];
    refused(&mut dev, OpKind::Unary(Unary::RELU), &outside, t(x, &[2]));
    refused(
        &mut dev,
        OpKind::Unary(Unary::RELU),
        &[t(DeviceAddr(16), &[2])],
        t(x, &[2]),
    );
    refused(
        &mut dev,
        OpKind::Unary(Unary::RELU),
        &[t(x, &[3])],
        t(x, &[3]),
    );
    // MatMul writing over its own input.
    let mm = [t(x, &[1, 2]), t(x, &[2, 1])];
    refused(&mut dev, matmul(false, false), &mm, t(x, &[1, 1]));
    // A queue the NPU does not have.
    let error = dev
        .launch(
            NO_SUCH_QUEUE,
            &op(OpKind::Unary(Unary::RELU), &inputs, t(x, &[2]), 0),
        )
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    assert_eq!(get(&mut dev, x, 2), [-1., -2.], "nothing ran");
}
