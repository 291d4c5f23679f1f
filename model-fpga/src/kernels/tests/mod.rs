//! Kernels against the plain reference, on random shapes and values.

mod broadcast;
mod gemm;
mod int8;
mod rows;
mod unary;
mod window;

use proptest::prelude::*;
use std::vec::Vec;

/// Finite values of moderate size, so sums are well-conditioned enough to
/// make the tolerances meaningful but still include cancellation.
fn finite() -> impl Strategy<Value = f32> {
    -4.0f32..4.0
}

/// Mostly finite values, sometimes NaN, ±∞, ±0: for exact element-wise ops.
fn any_value() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => finite(),
        1 => prop_oneof![
            Just(f32::NAN),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            Just(0.0f32),
            Just(-0.0f32),
        ],
    ]
}

fn vec_of(len: usize, values: impl Strategy<Value = f32>) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(values, len)
}

/// Equal, or both NaN: what "exact" means for element-wise kernels.
fn same(x: f32, y: f32) -> bool {
    x == y || (x.is_nan() && y.is_nan())
}

fn assert_exact(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "element {i}: got {g}, want {w}");
    }
}
