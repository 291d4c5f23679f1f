//! f32 `Conv2D` at MobileNet sizes: the model's window kernel against
//! `matrixmultiply::sgemm` on the same problem as an im2col GEMM (the im2col
//! matrix built once, outside the timing), in the same run. Throughput is in
//! flops (2·outputs·taps).
//!
//! Groups `conv_3x3` (x `[1, 48, 48, 16]`, filter `[3, 3, 16, 16]`, SAME)
//! and `conv_1x1` (x `[1, 24, 24, 32]`, filter `[1, 1, 32, 64]`); ids
//! `model` and `matrixmultiply`, and `model_int8`: the same convolution in
//! int8 (`Conv2DInt8`, per-channel requantization) as the model's int8
//! command runs it (`kernels::int8`).
//!
//! Figure file `int8_conv_weight_memory`: the `conv_3x3` filter's bytes in
//! f32 over its bytes in int8 (computed from the two filters, not timed).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use tensorplug_core::accelerator::{OpKind, Shape, Window};
use tensorplug_core::quant::Rounding;
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::reference::{
    self,
    int8::{Data, DataMut},
};
use tensorplug_model_fpga::kernels::{WindowOp, WindowSpec, int8, window};

#[path = "common/figure.rs"]
mod figure;
use figure::write_figure;

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

/// f32 values in [-1, 1) as int8, scale 1/127.
fn int8s(values: &[f32]) -> Vec<i8> {
    values.iter().map(|&v| (v * 127.0).round() as i8).collect()
}

/// A `Conv2DInt8` block for `k` output channels: input zero point −3,
/// output 5, TFLite's convolution rounding (double), per-channel biases and
/// multipliers whose outputs spread over int8 (about 1/1000 of `x · w`).
fn block(k: usize) -> Vec<i32> {
    let header = QuantHeader {
        zero_points: [-3, 0],
        output_zero_point: 5,
        min: -128,
        max: 127,
        rounding: Rounding::Double,
        channels: k as u32,
    };
    let mut words = header.words().to_vec();
    words.extend((0..k).map(|o| o as i32 * 37 - 300));
    words.extend((0..k).map(|o| (1 << 30) + o as i32 * 9_973_333));
    words.extend((0..k).map(|_| -9));
    words
}

fn shape(dims: &[usize]) -> Shape {
    Shape::new(&dims.iter().map(|&d| d as u64).collect::<Vec<_>>()).expect("shape")
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
    // The same problem in int8, through the model's int8 entry point.
    let (x8, filter8, quant) = (int8s(&x), int8s(&filter), block(k));
    let window8 = Window {
        pad: [pad as u16; 4],
        ..Window::new([size as u16; 2])
    };
    let inputs = [
        (Data::I8(&x8), shape(&[1, hwc[0], hwc[1], hwc[2]])),
        (Data::I8(&filter8), shape(&[size, size, hwc[2], k])),
        (Data::I32(&quant), shape(&[quant.len()])),
    ];
    let out_shape = shape(&[1, hwc[0], hwc[1], k]);
    let mut out8 = vec![0i8; outputs * k];
    let kind = OpKind::Conv2DInt8(window8);
    int8(kind, &inputs, out_shape, DataMut::I8(&mut out8)).unwrap();
    let mut want = vec![0i8; out8.len()];
    reference::int8::run(kind, &inputs, out_shape, DataMut::I8(&mut want)).unwrap();
    assert!(out8 == want, "the model's int8 conv is the reference's");
    let clamped = out8.iter().filter(|&&v| v == -128 || v == 127).count();
    assert!(
        out8.iter().any(|&v| v != out8[0]) && clamped < out8.len() / 10,
        "the int8 outputs spread over int8 ({clamped} of {} clamped)",
        out8.len()
    );
    group.bench_function("model_int8", |bench| {
        bench.iter(|| {
            int8(kind, black_box(&inputs), out_shape, DataMut::I8(&mut out8)).unwrap();
        })
    });
    if name == "conv_3x3" {
        write_figure(
            "int8_conv_weight_memory",
            &format!(
                "{name} filter [{size}, {size}, {}, {k}] bytes: f32 / int8 (computed)",
                hwc[2]
            ),
            std::mem::size_of_val(filter.as_slice()) as f64,
            Some(std::mem::size_of_val(filter8.as_slice()) as f64),
            "bytes",
            "f32 filter >= 4x int8 filter",
        );
    }
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
