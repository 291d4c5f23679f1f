//! f32 `Conv2D` at MobileNet sizes: the model's window kernel against
//! `matrixmultiply::sgemm` on the same problem as an im2col GEMM (the im2col
//! matrix built once, outside the timing), in the same run. Throughput is in
//! flops (2·outputs·taps).
//!
//! Groups `conv_3x3` (x `[1, 48, 48, 16]`, filter `[3, 3, 16, 16]`, SAME)
//! and `conv_1x1` (x `[1, 24, 24, 32]`, filter `[1, 1, 32, 64]`); ids
//! `model` and `matrixmultiply`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tensorplug_model_fpga::kernels::{WindowOp, WindowSpec, window};

/// Deterministic values in [-1, 1).
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// `[oh·ow, kh·kw·c]`: row `(i, j)` holds the window of output `(i, j)`.
fn im2col(spec: &WindowSpec, x: &[f32]) -> Vec<f32> {
    let [h, w, c] = spec.hwc;
    let [kh, kw] = spec.size;
    let mut cols = vec![0.0f32; spec.out[0] * spec.out[1] * kh * kw * c];
    let mut at = 0;
    for i in 0..spec.out[0] {
        for j in 0..spec.out[1] {
            for a in 0..kh {
                for b in 0..kw {
                    let (ih, iw) = (
                        (i + a).checked_sub(spec.pad[0]),
                        (j + b).checked_sub(spec.pad[1]),
                    );
                    if let (Some(ih), Some(iw)) = (ih.filter(|&v| v < h), iw.filter(|&v| v < w)) {
                        cols[at..at + c].copy_from_slice(&x[(ih * w + iw) * c..][..c]);
                    }
                    at += c;
                }
            }
        }
    }
    cols
}

fn conv(c: &mut Criterion, name: &str, hwc: [usize; 3], size: usize, k: usize) {
    let pad = size / 2;
    let spec = WindowSpec {
        n: 1,
        hwc,
        k,
        size: [size, size],
        out: [hwc[0], hwc[1]],
        stride: [1, 1],
        dilation: [1, 1],
        pad: [pad, pad],
    };
    let taps = size * size * hwc[2];
    let x = values(hwc.iter().product(), 1);
    let filter = values(taps * k, 2);
    let outputs = hwc[0] * hwc[1];
    let mut out = vec![0.0f32; outputs * k];
    let cols = im2col(&spec, &x);
    let mut group = c.benchmark_group(name);
    group
        .throughput(Throughput::Elements(2 * (outputs * k * taps) as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("model", |bench| {
        bench.iter(|| window(WindowOp::Conv, &spec, black_box(&x), &filter, &mut out).unwrap())
    });
    group.bench_function("matrixmultiply", |bench| {
        bench.iter(|| {
            // SAFETY: cols is [outputs, taps], filter [taps, k], out [outputs, k], row-major.
            unsafe {
                matrixmultiply::sgemm(
                    outputs,
                    taps,
                    k,
                    1.0,
                    black_box(cols.as_ptr()),
                    taps as isize,
                    1,
                    filter.as_ptr(),
                    k as isize,
                    1,
                    0.0,
                    out.as_mut_ptr(),
                    k as isize,
                    1,
                )
            }
        })
    });
    group.finish();
}

fn convs(c: &mut Criterion) {
    conv(c, "conv_3x3", [48, 48, 16], 3, 16);
    conv(c, "conv_1x1", [24, 24, 32], 1, 64);
}

criterion_group!(benches, convs);
criterion_main!(benches);
