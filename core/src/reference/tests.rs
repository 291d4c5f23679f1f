use super::*;
use crate::accelerator::Window;
use crate::accelerator::{Binary, ShapeError, Unary};

fn s(d: &[u64]) -> Shape {
    Shape::new(d).unwrap()
}

const MM: OpKind = OpKind::MatMul {
    transpose_a: false,
    transpose_b: false,
};

/// Runs `kind` into a fresh output of `out` dims.
fn go(kind: OpKind, inputs: &[(&[f32], &[u64])], out: &[u64]) -> Result<std::vec::Vec<f32>, Error> {
    let ins: std::vec::Vec<(&[f32], Shape)> = inputs.iter().map(|(d, sh)| (*d, s(sh))).collect();
    let mut o = std::vec![0.0; s(out).elements().unwrap() as usize];
    run(kind, &ins, s(out), &mut o)?;
    Ok(o)
}

#[test]
fn matmul_by_hand_with_every_transpose() {
    // [[1,2,3],[4,5,6]] · [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let at = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
    let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
    let bt = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0];
    let want = [4.0, 5.0, 10.0, 11.0];
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (a, a_dims): (&[f32], &[u64]) = if ta { (&at, &[3, 2]) } else { (&a, &[2, 3]) };
        let (b, b_dims): (&[f32], &[u64]) = if tb { (&bt, &[2, 3]) } else { (&b, &[3, 2]) };
        let kind = OpKind::MatMul {
            transpose_a: ta,
            transpose_b: tb,
        };
        assert_eq!(
            go(kind, &[(a, a_dims), (b, b_dims)], &[2, 2]),
            Ok(want.to_vec()),
            "{ta} {tb}"
        );
    }
}

#[test]
fn fused_matmul_adds_bias_after_the_sum_then_relu() {
    let a = [1.0, 2.0, 3.0, 4.0]; // [2, 2]
    let b = [1.0, -1.0, 1.0, -1.0]; // [2, 2]: [[1,-1],[1,-1]]
    let bias = [0.5, 1.0];
    // a·b = [[3,-3],[7,-7]]; + bias = [[3.5,-2],[7.5,-6]]
    for (relu, want) in [
        (false, [3.5, -2.0, 7.5, -6.0]),
        (true, [3.5, 0.0, 7.5, 0.0]),
    ] {
        let kind = OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: false,
            relu,
        };
        let got = go(
            kind,
            &[(&a, &[2, 2]), (&b, &[2, 2]), (&bias, &[2])],
            &[2, 2],
        );
        assert_eq!(got, Ok(want.to_vec()));
    }
    // k = 0: zeros, then the bias.
    let kind = OpKind::FusedMatMul {
        transpose_a: false,
        transpose_b: false,
        relu: true,
    };
    let got = go(
        kind,
        &[(&[], &[2, 0]), (&[], &[0, 2]), (&[-1.0, 2.0], &[2])],
        &[2, 2],
    );
    assert_eq!(got, Ok(std::vec![0.0, 2.0, 0.0, 2.0]));
}

#[test]
fn matmul_sums_in_f64() {
    // 1e8 + 1 - 1e8 in f32 order is 0; the f64 sum is exact.
    let a = [1e8, 1.0, -1e8];
    let b = [1.0, 1.0, 1.0];
    assert_eq!(
        go(MM, &[(&a, &[1, 3]), (&b, &[3, 1])], &[1, 1]),
        Ok(std::vec![1.0])
    );
}

#[test]
fn bias_add_along_the_last_axis() {
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let got = go(
        OpKind::BiasAdd,
        &[(&x, &[2, 3]), (&[10.0, 20.0, 30.0], &[3])],
        &[2, 3],
    );
    assert_eq!(got, Ok(std::vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]));
    let mut out = [0.0; 5];
    assert_eq!(
        bias_add(&[1.0; 5], &[1.0, 2.0], &mut out),
        Err(Error::Length {
            operand: 0,
            expected: 4,
            got: 5
        })
    );
}

#[test]
fn binary_ops_broadcast_numpy_style() {
    // [3,1] - [1,4]: out[i][j] = a[i] - b[j]
    let a = [1.0, 2.0, 3.0];
    let b = [10.0, 20.0, 30.0, 40.0];
    let got = go(
        OpKind::Binary(Binary::SUB),
        &[(&a, &[3, 1]), (&b, &[1, 4])],
        &[3, 4],
    )
    .unwrap();
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(got[i * 4 + j], a[i] - b[j]);
        }
    }
    // A scalar times a matrix, either side.
    let m = [1.0, -2.0, 3.0, -4.0];
    let got = go(
        OpKind::Binary(Binary::MUL),
        &[(&[2.0], &[]), (&m, &[2, 2])],
        &[2, 2],
    );
    assert_eq!(got, Ok(std::vec![2.0, -4.0, 6.0, -8.0]));
    let got = go(
        OpKind::Binary(Binary::ADD),
        &[(&m, &[2, 2]), (&[1.0], &[1])],
        &[2, 2],
    );
    assert_eq!(got, Ok(std::vec![2.0, -1.0, 4.0, -3.0]));
    // [2,1,3] + [4,1] -> [2,4,3]
    let a: std::vec::Vec<f32> = (0..6).map(|v| v as f32).collect();
    let b = [100.0, 200.0, 300.0, 400.0];
    let got = go(
        OpKind::Binary(Binary::ADD),
        &[(&a, &[2, 1, 3]), (&b, &[4, 1])],
        &[2, 4, 3],
    )
    .unwrap();
    for i in 0..2 {
        for j in 0..4 {
            for k in 0..3 {
                assert_eq!(got[(i * 4 + j) * 3 + k], a[i * 3 + k] + b[j]);
            }
        }
    }
    // Size 0 broadcasts with 1.
    assert_eq!(
        go(
            OpKind::Binary(Binary::ADD),
            &[(&[], &[0, 3]), (&[1.0], &[1, 1])],
            &[0, 3]
        ),
        Ok(std::vec![])
    );
    // Incompatible shapes are refused, as `OpDesc::validate` does.
    let mut out = [0.0; 6];
    assert!(matches!(
        run(
            OpKind::Binary(Binary::ADD),
            &[(&[0.0; 2], s(&[2])), (&[0.0; 3], s(&[3]))],
            s(&[3]),
            &mut out[..3]
        ),
        Err(Error::Shape(ShapeError::Dim { .. }))
    ));
    assert!(matches!(
        binary(
            Binary::ADD,
            &[0.0; 2],
            &s(&[2]),
            &[0.0; 3],
            &s(&[3]),
            &mut out[..3]
        ),
        Err(Error::Shape(ShapeError::Dim { .. }))
    ));
}

#[test]
fn maximum_propagates_nan_and_keeps_the_first_operand_on_ties() {
    let got = go(
        OpKind::Binary(Binary::MAXIMUM),
        &[
            (&[1.0, f32::NAN, 3.0, -0.0], &[4]),
            (&[2.0, 1.0, f32::NAN, 0.0], &[4]),
        ],
        &[4],
    )
    .unwrap();
    assert_eq!(got[0], 2.0);
    assert!(got[1].is_nan() && got[2].is_nan());
    assert_eq!(got[3].to_bits(), (-0.0f32).to_bits());
}

#[test]
fn relu_keeps_nan_and_negative_zero() {
    let got = go(
        OpKind::Unary(Unary::RELU),
        &[(&[-1.0, 2.0, f32::NAN, -0.0, f32::NEG_INFINITY], &[5])],
        &[5],
    )
    .unwrap();
    assert_eq!(got[..2], [0.0, 2.0]);
    assert!(got[2].is_nan());
    assert_eq!(got[3].to_bits(), (-0.0f32).to_bits());
    assert_eq!(got[4], 0.0);
    // A scalar.
    assert_eq!(
        go(OpKind::Unary(Unary::RELU), &[(&[-3.0], &[])], &[]),
        Ok(std::vec![0.0])
    );
}

#[test]
fn training_math_by_hand() {
    let a: &[f32] = &[6.0, 1.0, 0.0, -1.0, f32::NAN, f32::INFINITY];
    let b: &[f32] = &[3.0, 0.0, 0.0, -0.0, -1.0, -2.0];
    let div = go(OpKind::Binary(Binary::DIV), &[(a, &[6]), (b, &[6])], &[6]).unwrap();
    assert_eq!(div[..2], [2.0, f32::INFINITY]);
    assert!(div[2].is_nan() && div[4].is_nan());
    assert_eq!((div[3], div[5]), (f32::INFINITY, f32::NEG_INFINITY));
    let no_nan = go(
        OpKind::Binary(Binary::DIV_NO_NAN),
        &[(a, &[6]), (b, &[6])],
        &[6],
    )
    .unwrap();
    assert_eq!(no_nan[..4], [2.0, 0.0, 0.0, 0.0]);
    // The gradient passes where the input was > 0; a masked NaN or ∞ is NaN.
    let grad = go(
        OpKind::Binary(Binary::RELU_GRAD),
        &[(b, &[6]), (a, &[6])],
        &[6],
    )
    .unwrap();
    assert_eq!(grad[..4], [3.0, 0.0, 0.0, -0.0]);
    assert_eq!(grad[5], -2.0);
    let masked = go(
        OpKind::Binary(Binary::RELU_GRAD),
        &[(&[f32::NAN], &[]), (&[-1.0], &[])],
        &[],
    )
    .unwrap();
    assert!(masked[0].is_nan());
    let pow = go(
        OpKind::Binary(Binary::POW),
        &[(&[2.0, -8.0, f32::NAN], &[3]), (&[10.0], &[])],
        &[3],
    );
    assert_eq!(pow.unwrap()[..2], [1024.0, 1073741824.0]);
    let zero = go(
        OpKind::Binary(Binary::POW),
        &[(&[f32::NAN], &[]), (&[0.0], &[])],
        &[],
    )
    .unwrap();
    assert_eq!(zero, [1.0]);
    let roots = go(
        OpKind::Unary(Unary::SQRT),
        &[(&[4.0, -1.0, -0.0], &[3])],
        &[3],
    )
    .unwrap();
    assert!(roots[0] == 2.0 && roots[1].is_nan() && roots[2].to_bits() == (-0.0f32).to_bits());
    let inverse = go(OpKind::Unary(Unary::RSQRT), &[(&[4.0, 0.0], &[2])], &[2]).unwrap();
    assert_eq!(inverse, [0.5, f32::INFINITY]);
}

#[test]
fn log_softmax_is_the_log_of_softmax_without_overflow() {
    let x = [0.0, 0.0, 1000.0, 0.0];
    let got = go(OpKind::LogSoftmax, &[(&x, &[2, 2])], &[2, 2]).unwrap();
    let ln2 = core::f32::consts::LN_2;
    assert_eq!(got[..2], [-ln2, -ln2]);
    assert_eq!(got[2], 0.0);
    assert_eq!(got[3], -1000.0);
}

#[test]
fn softmax_over_the_last_axis() {
    let x = [0.0, 0.0, 1.0, 2.0, 3.0, 1000.0, 1000.0, 1000.0];
    let mut got = [0.0; 8];
    // Rows of 2: [0,0] [1,2] [3,1000] [1000,1000]
    softmax(&x, 2, &mut got).unwrap();
    let e = core::f64::consts::E;
    assert_eq!(got[..2], [0.5, 0.5]);
    assert!((got[2] - (1.0 / (1.0 + e)) as f32).abs() < 1e-7);
    assert!((got[3] - (e / (1.0 + e)) as f32).abs() < 1e-7);
    assert_eq!(got[4], 0.0); // e^-997 underflows
    assert_eq!(got[5], 1.0);
    assert_eq!(got[6..], [0.5, 0.5]); // no overflow: the max is subtracted
    // NaN and +inf poison their row only.
    softmax(
        &[f32::NAN, 1.0, f32::INFINITY, 1.0, 1.0, 1.0],
        2,
        &mut got[..6],
    )
    .unwrap();
    assert!(got[..4].iter().all(|v| v.is_nan()));
    assert_eq!(got[4..6], [0.5, 0.5]);
    assert_eq!(
        softmax(&[1.0; 5], 2, &mut [0.0; 5]),
        Err(Error::Length {
            operand: 0,
            expected: 4,
            got: 5
        })
    );
}

#[test]
fn reduce_sum_drops_or_keeps_the_last_axis() {
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(
        go(OpKind::ReduceSum, &[(&x, &[2, 3])], &[2]),
        Ok(std::vec![6.0, 15.0])
    );
    assert_eq!(
        go(OpKind::ReduceSum, &[(&x, &[2, 3])], &[2, 1]),
        Ok(std::vec![6.0, 15.0])
    );
    assert_eq!(
        go(OpKind::ReduceSum, &[(&x, &[6])], &[]),
        Ok(std::vec![21.0])
    );
    // Rows of length 0 sum to 0.
    assert_eq!(
        go(OpKind::ReduceSum, &[(&[], &[3, 0])], &[3]),
        Ok(std::vec![0.0; 3])
    );
    // 1e8 + 1 - 1e8, exactly.
    assert_eq!(
        go(OpKind::ReduceSum, &[(&[1e8, 1.0, -1e8], &[3])], &[]),
        Ok(std::vec![1.0])
    );
}

#[test]
fn run_refuses_bad_shapes_and_lengths_without_writing() {
    let mut out = [7.0; 4];
    let a = [1.0; 6];
    // Wrong output shape: validate's error.
    assert_eq!(
        run(
            MM,
            &[(&a, s(&[2, 3])), (&a, s(&[3, 2]))],
            s(&[2, 3]),
            &mut out
        ),
        Err(Error::Shape(ShapeError::Dim {
            operand: 2,
            axis: 1,
            expected: 2,
            got: 3
        }))
    );
    // Wrong input count.
    assert!(matches!(
        run(OpKind::Unary(Unary::RELU), &[], s(&[4]), &mut out),
        Err(Error::Shape(ShapeError::InputCount {
            expected: 1,
            got: 0
        }))
    ));
    // A slice shorter than its shape.
    assert_eq!(
        run(
            OpKind::Unary(Unary::RELU),
            &[(&a[..3], s(&[4]))],
            s(&[4]),
            &mut out
        ),
        Err(Error::Length {
            operand: 0,
            expected: 4,
            got: 3
        })
    );
    assert_eq!(
        run(
            OpKind::Unary(Unary::RELU),
            &[(&a[..4], s(&[4]))],
            s(&[4]),
            &mut out[..3]
        ),
        Err(Error::Length {
            operand: 1,
            expected: 4,
            got: 3
        })
    );
    assert_eq!(out, [7.0; 4]);
}

#[test]
fn tolerances_follow_the_documented_bounds() {
    let eps = f32::EPSILON;
    let a = [1.0, -2.0, 3.0]; // [1, 3]
    let b = [4.0, 5.0, 6.0]; // [3, 1]
    let ins = [(&a[..], s(&[1, 3])), (&b[..], s(&[3, 1]))];
    let mut want = [0.0];
    run(MM, &ins, s(&[1, 1]), &mut want).unwrap();
    assert_eq!(want, [12.0]);
    let mut tol = [0.0];
    tolerance(MM, &ins, s(&[1, 1]), &want, &mut tol).unwrap();
    // (k + 2)·ε·Σ|a·b| = 5·ε·32
    let expected = (5.0 * f64::from(eps) * 32.0 + f64::from(f32::MIN_POSITIVE)) as f32;
    assert_eq!(tol, [expected]);

    let ins = [(&a[..], s(&[3]))];
    let mut sum = [0.0];
    run(OpKind::ReduceSum, &ins, Shape::SCALAR, &mut sum).unwrap();
    tolerance(OpKind::ReduceSum, &ins, Shape::SCALAR, &sum, &mut tol).unwrap();
    assert_eq!(
        tol,
        [(4.0 * f64::from(eps) * 6.0 + f64::from(f32::MIN_POSITIVE)) as f32]
    );

    let mut relu_tol = [0.0; 3];
    let mut r = [0.0; 3];
    run(OpKind::Unary(Unary::RELU), &ins, s(&[3]), &mut r).unwrap();
    tolerance(OpKind::Unary(Unary::RELU), &ins, s(&[3]), &r, &mut relu_tol).unwrap();
    assert_eq!(relu_tol[2], ELEMENTWISE_ABS + ELEMENTWISE_REL * 3.0);

    let mut sm = [0.0; 3];
    let mut sm_tol = [0.0; 3];
    run(OpKind::Softmax, &ins, s(&[3]), &mut sm).unwrap();
    tolerance(OpKind::Softmax, &ins, s(&[3]), &sm, &mut sm_tol).unwrap();
    // Element 2 is the max: (3 + 8)·ε relative.
    let rel = (11.0 * f64::from(eps) * f64::from(sm[2]) + f64::from(f32::MIN_POSITIVE)) as f32;
    assert_eq!(sm_tol[2], rel);

    assert!(within(1.0, 1.0, 0.0));
    assert!(within(1.5, 1.0, 0.5) && !within(1.5, 1.0, 0.49));
    assert!(within(f32::NAN, f32::NAN, 0.0) && !within(f32::NAN, 1.0, 1e30));
    assert!(!within(1.0, f32::NAN, 1e30));
    assert!(within(f32::INFINITY, f32::INFINITY, 0.0));
    assert!(!within(f32::MAX, f32::INFINITY, f32::MAX));
    assert!(!within(f32::NEG_INFINITY, f32::INFINITY, f32::MAX));
}

#[test]
fn window_ops_by_hand() {
    // x = 1..9 as [1,3,3,1]; a 2x2 filter of ones sums each 2x2 block.
    let x: std::vec::Vec<f32> = (1..=9).map(|v| v as f32).collect();
    let ones = [1.0f32; 4];
    let conv = OpKind::Conv2D(Window::new([2, 2]));
    let got = go(
        conv,
        &[(&x, &[1, 3, 3, 1]), (&ones, &[2, 2, 1, 1])],
        &[1, 2, 2, 1],
    );
    assert_eq!(got.unwrap(), [12.0, 16.0, 24.0, 28.0]);
    // Depthwise with multiplier 2: channel 0 times 1 and times -1.
    let dw = OpKind::DepthwiseConv2D(Window::new([1, 1]));
    let got = go(
        dw,
        &[(&[3.0, 4.0], &[1, 1, 2, 1]), (&[1.0, -1.0], &[1, 1, 1, 2])],
        &[1, 1, 2, 2],
    );
    assert_eq!(got.unwrap(), [3.0, -3.0, 4.0, -4.0]);
    // SAME 3x3 average: the corner counts only its 4 in-bounds taps.
    let mut same = Window::new([3, 3]);
    same.pad = [1, 1, 1, 1];
    let avg = go(OpKind::AvgPool(same), &[(&x, &[1, 3, 3, 1])], &[1, 3, 3, 1]).unwrap();
    assert_eq!(avg[0], (1.0 + 2.0 + 4.0 + 5.0) / 4.0);
    assert_eq!(avg[4], 5.0);
    let max = go(OpKind::MaxPool(same), &[(&x, &[1, 3, 3, 1])], &[1, 3, 3, 1]).unwrap();
    assert_eq!(max[..3], [5.0, 6.0, 6.0]);
    // A strided, dilated window with padding skips the padded taps.
    let mut w = Window::new([2, 2]);
    (w.stride, w.dilation, w.pad) = ([2, 2], [2, 2], [1, 0, 1, 0]);
    let got = go(
        OpKind::Conv2D(w),
        &[(&x, &[1, 3, 3, 1]), (&ones, &[2, 2, 1, 1])],
        &[1, 1, 1, 1],
    );
    assert_eq!(got.unwrap(), [5.0]);
    // Relu6 clamps, NaN stays NaN.
    let r6 = go(
        OpKind::Unary(Unary::RELU6),
        &[(&[-1.0, 3.0, 9.0, f32::NAN], &[4])],
        &[4],
    )
    .unwrap();
    assert!(r6[..3] == [0.0, 3.0, 6.0] && r6[3].is_nan());
}

/// `⟨a, b⟩` in f64.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

#[test]
fn conv_gradients_are_the_convolutions_adjoints() {
    // ⟨conv(x, f), dy⟩ = ⟨x, dx(dy, f)⟩ = ⟨f, df(x, dy)⟩ for a strided,
    // dilated, padded window whose last input row no window reads.
    let mut w = Window::new([2, 3]);
    (w.stride, w.dilation, w.pad) = ([2, 1], [1, 2], [1, 0, 2, 1]);
    let (xs, fs, ys) = ([2u64, 6, 5, 3], [2u64, 3, 3, 4], [2u64, 3, 4, 4]);
    let fill = |len: u64, k: f32| -> std::vec::Vec<f32> {
        (0..len).map(|i| ((i as f32 * k) % 7.0) - 3.0).collect()
    };
    let x = fill(180, 1.3);
    let f = fill(72, 2.1);
    let dy = fill(96, 0.7);
    let y = go(OpKind::Conv2D(w), &[(&x, &xs), (&f, &fs)], &ys).unwrap();
    let dx = go(
        OpKind::Conv2DBackpropInput(w),
        &[(&dy, &ys), (&f, &fs)],
        &xs,
    )
    .unwrap();
    let df = go(
        OpKind::Conv2DBackpropFilter(w),
        &[(&x, &xs), (&dy, &ys)],
        &fs,
    )
    .unwrap();
    let forward = dot(&y, &dy);
    assert!((forward - dot(&x, &dx)).abs() < 1e-3 * forward.abs().max(1.0));
    assert!((forward - dot(&f, &df)).abs() < 1e-3 * forward.abs().max(1.0));
    // Row 5 of x (index 5 · 15 = 75 on) is read by no window: its gradient is 0.
    assert!(dx[75..90].iter().all(|&v| v == 0.0));
    // A dy whose size does not match the window is a shape error on operand 0.
    let bad = go(
        OpKind::Conv2DBackpropInput(w),
        &[(&dy[..72], &[2, 3, 3, 4]), (&f, &fs)],
        &xs,
    );
    assert!(
        matches!(bad, Err(Error::Shape(ShapeError::Dim { operand: 0, .. }))),
        "{bad:?}"
    );
}

#[test]
fn max_pool_gradient_goes_to_the_first_largest_tap() {
    // 2x2 windows, stride 1 over [[1, 3, 3], [3, 2, 0]]: ties go to the first tap.
    let x = [1.0, 3.0, 3.0, 3.0, 2.0, 0.0];
    let w = OpKind::MaxPoolGrad(Window::new([2, 2]));
    let got = go(
        w,
        &[(&x, &[1, 2, 3, 1]), (&[10.0, 20.0], &[1, 1, 2, 1])],
        &[1, 2, 3, 1],
    );
    // Window 0 picks x[1] (3 > 1; x[3] = 3 is not greater); window 1 picks x[1] too.
    assert_eq!(got.unwrap(), [0.0, 30.0, 0.0, 0.0, 0.0, 0.0]);
    // A NaN first tap keeps the gradient (TF's CPU kernel); a later NaN never wins.
    let x = [f32::NAN, 5.0, 1.0, f32::NAN];
    let got = go(
        w,
        &[(&x, &[1, 2, 2, 1]), (&[4.0], &[1, 1, 1, 1])],
        &[1, 2, 2, 1],
    );
    assert_eq!(got.unwrap(), [4.0, 0.0, 0.0, 0.0]);
    let x = [1.0, f32::NAN, 5.0, 2.0];
    let got = go(
        w,
        &[(&x, &[1, 2, 2, 1]), (&[4.0], &[1, 1, 1, 1])],
        &[1, 2, 2, 1],
    );
    assert_eq!(got.unwrap(), [0.0, 0.0, 4.0, 0.0]);
}

#[test]
fn avg_pool_gradient_is_the_pools_adjoint() {
    // SAME 3x3, stride 2 over 5x4: corner windows count fewer taps.
    let mut w = Window::new([3, 3]);
    (w.stride, w.pad) = ([2, 2], [1, 1, 1, 0]);
    let x: std::vec::Vec<f32> = (0..40).map(|i| (i as f32 * 1.7) % 5.0 - 2.0).collect();
    let dy: std::vec::Vec<f32> = (0..12).map(|i| (i as f32 * 0.9) % 3.0 - 1.0).collect();
    let y = go(OpKind::AvgPool(w), &[(&x, &[1, 5, 4, 2])], &[1, 3, 2, 2]).unwrap();
    let dx = go(
        OpKind::AvgPoolGrad(w),
        &[(&dy, &[1, 3, 2, 2])],
        &[1, 5, 4, 2],
    )
    .unwrap();
    assert!((dot(&y, &dy) - dot(&x, &dx)).abs() < 1e-4);
    // Window [0, 0] holds 2x2 in-bounds taps: x[0, 0] gets dy[0] / 4 only.
    assert_eq!(dx[0], dy[0] / 4.0);
}

#[test]
fn fused_conv2d_is_conv_then_bias_then_activation() {
    use crate::accelerator::Activation;
    let w = Window::new([1, 1]);
    let x = [1.0, -2.0, 3.0];
    let f = [2.0, -1.0];
    let conv = go(
        OpKind::Conv2D(w),
        &[(&x, &[1, 1, 3, 1]), (&f[..1], &[1, 1, 1, 1])],
        &[1, 1, 3, 1],
    );
    assert_eq!(conv.unwrap(), [2.0, -4.0, 6.0]);
    let fused = |act| {
        let ins: [(&[f32], &[u64]); 3] = [
            (&x, &[1, 1, 3, 1]),
            (&f, &[1, 1, 1, 2]),
            (&[1.0, 0.5], &[2]),
        ];
        go(OpKind::FusedConv2D(w, act), &ins, &[1, 1, 3, 2]).unwrap()
    };
    assert_eq!(fused(Activation::None), [3.0, -0.5, -3.0, 2.5, 7.0, -2.5]);
    assert_eq!(fused(Activation::Relu), [3.0, 0.0, 0.0, 2.5, 7.0, 0.0]);
    assert_eq!(fused(Activation::Relu6), [3.0, 0.0, 0.0, 2.5, 6.0, 0.0]);
}

#[test]
fn transpose_moves_axes_exactly() {
    let mut perm = [0u8; crate::accelerator::MAX_RANK];
    perm[..2].copy_from_slice(&[1, 0]);
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let got = go(OpKind::Transpose(perm), &[(&x, &[2, 3])], &[3, 2]);
    assert_eq!(got.unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // NHWC [1, 1, 2, 3] to NCHW [1, 3, 1, 2].
    perm[..4].copy_from_slice(&[0, 3, 1, 2]);
    let got = go(
        OpKind::Transpose(perm),
        &[(&x, &[1, 1, 2, 3])],
        &[1, 3, 1, 2],
    );
    assert_eq!(got.unwrap(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // An axis twice is not a permutation.
    perm[..2].copy_from_slice(&[1, 1]);
    let bad = go(OpKind::Transpose(perm), &[(&x, &[2, 3])], &[3, 3]);
    assert_eq!(bad, Err(Error::Shape(ShapeError::Permutation)));
}
