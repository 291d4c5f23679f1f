//! The host convolutions (`conv_wide` for stride 1, `conv_by_rows` else)
//! against a plain seven-loop convolution accumulated in f64.

use super::{finite, vec_of};
use crate::kernels::{WindowOp, WindowSpec, window};
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

/// A convolution with every geometry the model meets: 1 or 2 images, odd
/// sizes, SAME-like and VALID padding, strides 1 and 2, 1×1 to 3×4 windows.
fn spec() -> impl Strategy<Value = WindowSpec> {
    (1..=2usize, 1..=7usize, 1..=7usize, 1..=5usize, 1..=6usize).prop_flat_map(|(n, h, w, c, k)| {
        (
            1..=3usize.min(h),
            1..=4usize.min(w),
            1..=2usize,
            1..=2usize,
            any::<bool>(),
        )
            .prop_map(move |(kh, kw, sh, sw, pad)| {
                let (pt, pl) = if pad {
                    ((kh - 1) / 2, (kw - 1) / 2)
                } else {
                    (0, 0)
                };
                let out = |size: usize, kernel: usize, p: usize, s: usize| {
                    (size + 2 * p - kernel) / s + 1
                };
                WindowSpec {
                    n,
                    hwc: [h, w, c],
                    k,
                    size: [kh, kw],
                    out: [out(h, kh, pt, sh), out(w, kw, pl, sw)],
                    stride: [sh, sw],
                    dilation: [1, 1],
                    pad: [pt, pl],
                }
            })
    })
}

fn naive(s: &WindowSpec, x: &[f32], f: &[f32]) -> Vec<f64> {
    let [h, w, c] = s.hwc;
    let [oh, ow] = s.out;
    let mut out = vec![0.0f64; s.n * oh * ow * s.k];
    for n in 0..s.n {
        for o in 0..oh {
            for j in 0..ow {
                for a in 0..s.size[0] {
                    for b in 0..s.size[1] {
                        let ih = (o * s.stride[0] + a)
                            .checked_sub(s.pad[0])
                            .filter(|&i| i < h);
                        let iw = (j * s.stride[1] + b)
                            .checked_sub(s.pad[1])
                            .filter(|&i| i < w);
                        let (Some(ih), Some(iw)) = (ih, iw) else {
                            continue;
                        };
                        for ci in 0..c {
                            let v = f64::from(x[((n * h + ih) * w + iw) * c + ci]);
                            for k in 0..s.k {
                                let wgt = f[((a * s.size[1] + b) * c + ci) * s.k + k];
                                out[((n * oh + o) * ow + j) * s.k + k] += v * f64::from(wgt);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn host_convolutions_equal_a_plain_one(
        (s, x, f) in spec().prop_flat_map(|s| {
            let [h, w, c] = s.hwc;
            (Just(s), vec_of(s.n * h * w * c, finite()),
             vec_of(s.size[0] * s.size[1] * c * s.k, finite()))
        })
    ) {
        // NaN first: the kernel must write every output.
        let mut got = vec![f32::NAN; s.n * s.out[0] * s.out[1] * s.k];
        window(WindowOp::Conv, &s, &x, &f, &mut got).expect("consistent lengths");
        // Twice, so that scratch left by the first call is not read.
        window(WindowOp::Conv, &s, &x, &f, &mut got).expect("consistent lengths");
        let taps = (s.size[0] * s.size[1] * s.hwc[2]) as f64;
        // |x|, |f| < 4: each product is below 16, so a sum of `taps` of them
        // in f32 errs by less than taps² · 16 · ε.
        let bound = taps * taps * 16.0 * f64::from(f32::EPSILON) + 1e-6;
        for (i, (&g, &want)) in got.iter().zip(&naive(&s, &x, &f)).enumerate() {
            prop_assert!((f64::from(g) - want).abs() <= bound,
                "output {} of {:?}: {} vs {}", i, s, g, want);
        }
    }
}
