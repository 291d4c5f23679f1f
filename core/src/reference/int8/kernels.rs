//! The int8 kernels, on one layer's slices (see `int8.rs`).

use super::super::error::{Error, check_len};
use crate::accelerator::{Activation, Window};
use crate::quant::{Requantize, Rounding};

/// The quantization of one int8 layer: zero points, one requantization
/// (a Q31 multiplier and a shift, as [`Requantize`]) per output channel or
/// one for all, and the output clamp.
#[derive(Clone, Copy, Debug)]
pub struct Int8Layer<'a> {
    /// The input's zero point (`input = scale · (q − zero_point)`).
    pub input_zero_point: i32,
    /// The output's zero point.
    pub output_zero_point: i32,
    /// The Q31 multipliers of `input_scale · weight_scale[c] /
    /// output_scale`, per output channel or one for all.
    pub multipliers: &'a [i32],
    /// Their shifts, as many, each in `[−31, 30]` ([`Requantize::new`]).
    pub shifts: &'a [i32],
    /// Which of TFLite's builds to match ([`Rounding`]).
    pub rounding: Rounding,
    /// The clamp after requantization ([`activation_range`]).
    pub min: i32,
    /// Its upper end.
    pub max: i32,
}

impl Int8Layer<'_> {
    /// Output channel `c`'s accumulator `acc` as an int8 output.
    fn output(&self, c: usize, acc: i32) -> i8 {
        let i = if self.multipliers.len() == 1 { 0 } else { c };
        let r = Requantize {
            multiplier: self.multipliers[i],
            shift: self.shifts[i] as i8,
        };
        let v = r
            .apply(acc, self.rounding)
            .wrapping_add(self.output_zero_point);
        v.clamp(self.min, self.max) as i8
    }

    /// Checks one requantization per channel of `channels` (or one for
    /// all), each representable.
    fn check(&self, channels: usize) -> Result<(), Error> {
        if self.multipliers.len() != 1 {
            check_len(2, channels, self.multipliers.len())?;
        }
        check_len(2, self.multipliers.len(), self.shifts.len())?;
        for (&m, &s) in self.multipliers.iter().zip(self.shifts) {
            Requantize::new(m, s).map_err(Error::Quant)?;
        }
        Ok(())
    }
}

/// Where a filter keeps its output channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Outermost, TFLite's: a convolution filter `[oc, kh, kw, c]` (OHWI),
    /// a fully-connected one `[oc, depth]`.
    Ohwi,
    /// Innermost, TF's: `[kh, kw, c, oc]` (HWIO), `[depth, oc]`.
    Hwio,
}

/// The int8 output range of a fused activation, as TFLite's
/// `CalculateActivationRangeQuantized`: the quantized 0 (and 6) rounded
/// half away from zero in f32, clipped to `[−128, 127]`.
pub fn activation_range(activation: Activation, scale: f32, zero_point: i32) -> (i32, i32) {
    let quantize = |f: f32| zero_point.saturating_add(libm::roundf(f / scale) as i32);
    let (lo, hi) = (i32::from(i8::MIN), i32::from(i8::MAX));
    match activation {
        Activation::None => (lo, hi),
        Activation::Relu => (lo.max(quantize(0.0)), hi),
        Activation::Relu6 => (lo.max(quantize(0.0)), hi.min(quantize(6.0))),
    }
}

/// TFLite's int8 `FULLY_CONNECTED` (per-channel or per-tensor weights, zero
/// weight zero point): `out[b][c] = clamp(requantize_c(Σ_d (x[b][d] −
/// input_zp) · w[c][d] + bias[c]) + output_zp)`. `input` is `[batches][depth]`,
/// `filter` `[channels][depth]` ([`Layout::Ohwi`]) or `[depth][channels]`,
/// `bias` `[channels]`, `out` `[batches][channels]`.
pub fn fully_connected(
    layer: &Int8Layer<'_>,
    input: &[i8],
    (filter, layout): (&[i8], Layout),
    channels: usize,
    bias: Option<&[i32]>,
    out: &mut [i8],
) -> Result<(), Error> {
    if let Some(bias) = bias {
        check_len(2, channels, bias.len())?;
    }
    if channels == 0 || !filter.len().is_multiple_of(channels) {
        return Err(Error::Length {
            operand: 1,
            expected: channels,
            got: filter.len(),
        });
    }
    let depth = filter.len() / channels;
    let batches = input.len().checked_div(depth).unwrap_or(0);
    check_len(0, batches * depth, input.len())?;
    check_len(3, batches * channels, out.len())?;
    layer.check(channels)?;
    let weight = |c: usize, d: usize| match layout {
        Layout::Ohwi => filter[c * depth + d],
        Layout::Hwio => filter[d * channels + c],
    };
    for (b, row) in out.chunks_exact_mut(channels).enumerate() {
        let x = &input[b * depth..][..depth];
        for (c, o) in row.iter_mut().enumerate() {
            let mut acc = bias.map_or(0, |bias| bias[c]);
            for (d, &xv) in x.iter().enumerate() {
                let w = i32::from(weight(c, d));
                acc = acc.wrapping_add((i32::from(xv) - layer.input_zero_point) * w);
            }
            *o = layer.output(c, acc);
        }
    }
    Ok(())
}

/// An NHWC tensor's dimensions `[n, h, w, c]`.
pub type Nhwc = [usize; 4];

/// A convolution filter's dimensions in its [`Layout`]: `[oc, kh, kw, c]`
/// or `[kh, kw, c, oc]`. A depthwise filter is `[1, kh, kw, oc]` in TFLite
/// and `[kh, kw, c, m]` in TF, the same bytes: give it as the former.
pub type Ohwi = [usize; 4];

/// Output channel `c`, input position `(y, x)` of window `(oy, ox)`'s tap
/// `(fy, fx)`, if it is inside the input.
fn tap(
    window: &Window,
    oy: usize,
    ox: usize,
    fy: usize,
    fx: usize,
    h: usize,
    w: usize,
) -> Option<(usize, usize)> {
    let y = (oy * usize::from(window.stride[0]) + fy * usize::from(window.dilation[0]))
        .checked_sub(usize::from(window.pad[0]))?;
    let x = (ox * usize::from(window.stride[1]) + fx * usize::from(window.dilation[1]))
        .checked_sub(usize::from(window.pad[2]))?;
    (y < h && x < w).then_some((y, x))
}

fn elements(dims: &[usize; 4]) -> usize {
    dims.iter().product()
}

/// Every output `[b][oy][ox][o]` of a convolution: the bias, plus
/// `taps(b, y, x, o, fy, fx)` for each filter tap `(fy, fx)` whose input
/// position `(y, x)` is inside the `hw` input, requantized.
#[allow(clippy::too_many_arguments)]
fn convolve(
    layer: &Int8Layer<'_>,
    [h, w]: [usize; 2],
    [kh, kw]: [usize; 2],
    bias: Option<&[i32]>,
    window: &Window,
    out: &mut [i8],
    [_, oh, ow, oc]: Nhwc,
    taps: impl Fn(usize, usize, usize, usize, usize, usize) -> i32,
) {
    for (i, o) in out.iter_mut().enumerate() {
        let (c, pixel) = (i % oc, i / oc);
        let (ox, oy, b) = (pixel % ow, pixel / ow % oh, pixel / (ow * oh));
        let mut acc = bias.map_or(0, |bias| bias[c]);
        for fy in 0..kh {
            for fx in 0..kw {
                if let Some((y, x)) = tap(window, oy, ox, fy, fx, h, w) {
                    acc = acc.wrapping_add(taps(b, y, x, c, fy, fx));
                }
            }
        }
        *o = layer.output(c, acc);
    }
}

/// The lengths a convolution's operands must have: each its dims' element
/// count, the bias `oc`, the output `oc` channels of the input's batch.
fn check_operands(
    layer: &Int8Layer<'_>,
    (input, input_dims): (&[i8], Nhwc),
    (filter, filter_dims): (&[i8], Ohwi),
    oc: usize,
    bias: Option<&[i32]>,
    (out, out_dims): (&[i8], Nhwc),
) -> Result<(), Error> {
    check_len(0, elements(&input_dims), input.len())?;
    check_len(1, elements(&filter_dims), filter.len())?;
    if let Some(bias) = bias {
        check_len(2, oc, bias.len())?;
    }
    check_len(3, elements(&out_dims), out.len())?;
    check_len(3, oc, out_dims[3])?;
    check_len(3, input_dims[0], out_dims[0])?;
    layer.check(oc)
}

/// TFLite's int8 `CONV_2D` (`reference_integer_ops::ConvPerChannel`):
/// per-channel weights (zero point 0) in `layout`, padding reads the input's
/// zero point (it adds nothing), the bias and requantization per output
/// channel. `window` gives the filter size, strides, dilations and the
/// top/left padding (`pad[0]`, `pad[2]`).
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    layer: &Int8Layer<'_>,
    input: &[i8],
    input_dims: Nhwc,
    (filter, filter_dims, layout): (&[i8], Ohwi, Layout),
    bias: Option<&[i32]>,
    window: &Window,
    out: &mut [i8],
    out_dims: Nhwc,
) -> Result<(), Error> {
    let [_, h, w, c] = input_dims;
    let [oc, kh, kw, fc] = match (layout, filter_dims) {
        (Layout::Ohwi, dims) => dims,
        (Layout::Hwio, [kh, kw, fc, oc]) => [oc, kh, kw, fc],
    };
    check_operands(
        layer,
        (input, input_dims),
        (filter, filter_dims),
        oc,
        bias,
        (out, out_dims),
    )?;
    check_len(1, c, fc)?;
    let taps = |b: usize, y: usize, x: usize, o: usize, fy: usize, fx: usize| {
        let xs = &input[((b * h + y) * w + x) * c..][..c];
        let weight = |i: usize| match layout {
            Layout::Ohwi => filter[((o * kh + fy) * kw + fx) * c + i],
            Layout::Hwio => filter[((fy * kw + fx) * c + i) * oc + o],
        };
        xs.iter().enumerate().fold(0i32, |acc, (i, &xv)| {
            acc.wrapping_add((i32::from(xv) - layer.input_zero_point) * i32::from(weight(i)))
        })
    };
    convolve(layer, [h, w], [kh, kw], bias, window, out, out_dims, taps);
    Ok(())
}

/// TFLite's int8 `DEPTHWISE_CONV_2D` (`DepthwiseConvPerChannel`): output
/// channel `ic · multiplier + m` is input channel `ic` convolved with filter
/// column `ic · multiplier + m` of the `[1, kh, kw, out_channels]` filter.
#[allow(clippy::too_many_arguments)]
pub fn depthwise_conv2d(
    layer: &Int8Layer<'_>,
    input: &[i8],
    input_dims: Nhwc,
    filter: &[i8],
    filter_dims: Ohwi,
    bias: Option<&[i32]>,
    window: &Window,
    out: &mut [i8],
    out_dims: Nhwc,
) -> Result<(), Error> {
    let [_, h, w, c] = input_dims;
    let [_, kh, kw, oc] = filter_dims;
    check_operands(
        layer,
        (input, input_dims),
        (filter, filter_dims),
        oc,
        bias,
        (out, out_dims),
    )?;
    if c == 0 || oc % c != 0 {
        return Err(Error::Length {
            operand: 1,
            expected: c,
            got: oc,
        });
    }
    let multiplier = oc / c;
    let taps = |b: usize, y: usize, x: usize, o: usize, fy: usize, fx: usize| {
        let xv = i32::from(input[((b * h + y) * w + x) * c + o / multiplier]);
        let wv = i32::from(filter[(fy * kw + fx) * oc + o]);
        (xv - layer.input_zero_point) * wv
    };
    convolve(layer, [h, w], [kh, kw], bias, window, out, out_dims, taps);
    Ok(())
}

/// Which pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The largest in-bounds tap (`reference_integer_ops::MaxPool`).
    Max,
    /// The mean of the in-bounds taps, rounded half away from zero
    /// (`reference_integer_ops::AveragePool`).
    Average,
}

/// TFLite's int8 `MAX_POOL_2D` and `AVERAGE_POOL_2D`: input and output share
/// their quantization; the result is clamped to `[min, max]`.
#[allow(clippy::too_many_arguments)]
pub fn pool(
    kind: Pool,
    input: &[i8],
    input_dims: Nhwc,
    window: &Window,
    min: i32,
    max: i32,
    out: &mut [i8],
    out_dims: Nhwc,
) -> Result<(), Error> {
    let [n, h, w, c] = input_dims;
    check_len(0, elements(&input_dims), input.len())?;
    check_len(1, elements(&out_dims), out.len())?;
    check_len(1, c, out_dims[3])?;
    let [_, oh, ow, _] = out_dims;
    let [kh, kw] = window.size.map(usize::from);
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for ch in 0..c {
                    let (mut acc, mut taps) = (0i32, 0i32);
                    let mut largest = i32::from(i8::MIN);
                    for fy in 0..kh {
                        for fx in 0..kw {
                            if let Some((y, x)) = tap(window, oy, ox, fy, fx, h, w) {
                                let v = i32::from(input[((b * h + y) * w + x) * c + ch]);
                                acc += v;
                                taps += 1;
                                largest = largest.max(v);
                            }
                        }
                    }
                    let v = match kind {
                        Pool::Max => largest,
                        // C's division truncates toward zero.
                        Pool::Average if taps == 0 => 0,
                        Pool::Average if acc > 0 => (acc + taps / 2) / taps,
                        Pool::Average => (acc - taps / 2) / taps,
                    };
                    out[((b * oh + oy) * ow + ox) * c + ch] = v.clamp(min, max) as i8;
                }
            }
        }
    }
    Ok(())
}

/// The quantization of TFLite's int8 `ADD`: each input rescaled to
/// `2 · max(scale₁, scale₂)` after a left shift of 20, summed, then
/// rescaled to the output (TFLite's `Prepare`, float and double steps as
/// it computes them).
#[derive(Clone, Copy, Debug)]
pub struct AddQuant {
    /// The zero points of the two inputs and the output.
    pub zero_points: [i32; 3],
    /// The multipliers of the two inputs and the output.
    pub requantize: [Requantize; 3],
    /// Which of TFLite's builds to match.
    pub rounding: Rounding,
    /// The output clamp.
    pub min: i32,
    /// Its upper end.
    pub max: i32,
}

/// `ADD`'s left shift for int8.
const ADD_LEFT_SHIFT: u32 = 20;

impl AddQuant {
    /// From the scales and zero points of the two inputs and the output.
    pub fn new(
        inputs: [(f32, i32); 2],
        output: (f32, i32),
        activation: Activation,
        rounding: Rounding,
    ) -> Result<Self, crate::quant::QuantError> {
        let twice_max = f64::from(2.0 * inputs[0].0.max(inputs[1].0));
        let output_scale = (1u32 << ADD_LEFT_SHIFT) as f32 * output.0;
        let requantize = [
            Requantize::from_real(f64::from(inputs[0].0) / twice_max)?,
            Requantize::from_real(f64::from(inputs[1].0) / twice_max)?,
            Requantize::from_real(twice_max / f64::from(output_scale))?,
        ];
        let (min, max) = activation_range(activation, output.0, output.1);
        Ok(Self {
            zero_points: [inputs[0].1, inputs[1].1, output.1],
            requantize,
            rounding,
            min,
            max,
        })
    }

    /// One output element from one element of each input.
    pub fn add(&self, a: i8, b: i8) -> i8 {
        let scaled = |v: i8, i: usize| {
            let shifted = (i32::from(v) - self.zero_points[i]) << ADD_LEFT_SHIFT;
            self.requantize[i].apply(shifted, self.rounding)
        };
        let sum = scaled(a, 0).wrapping_add(scaled(b, 1));
        let v = self.requantize[2].apply(sum, self.rounding) + self.zero_points[2];
        v.clamp(self.min, self.max) as i8
    }
}

/// TFLite's int8 `ADD`: `out[i] = a[i] + b[i % b.len()]`, so `b` is `a`'s
/// shape or its trailing axes, broadcast along `a`'s leading ones (as
/// TFLite's `BroadcastAdd6DSlow` for such shapes: the same per-element
/// arithmetic).
pub fn add(quant: &AddQuant, a: &[i8], b: &[i8], out: &mut [i8]) -> Result<(), Error> {
    if b.is_empty() || !a.len().is_multiple_of(b.len()) {
        check_len(1, a.len(), b.len())?;
    }
    check_len(2, a.len(), out.len())?;
    for (row_a, row_o) in a.chunks(b.len().max(1)).zip(out.chunks_mut(b.len().max(1))) {
        for ((o, &x), &y) in row_o.iter_mut().zip(row_a).zip(b) {
            *o = quant.add(x, y);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_ranges_are_tflites() {
        assert_eq!(activation_range(Activation::None, 0.05, -10), (-128, 127));
        assert_eq!(activation_range(Activation::Relu, 0.05, -10), (-10, 127));
        // 6 / 0.05 = 120: [-10, 110]; a scale too coarse for 6 clips at 127.
        assert_eq!(activation_range(Activation::Relu6, 0.05, -10), (-10, 110));
        assert_eq!(activation_range(Activation::Relu6, 0.02, -128), (-128, 127));
        // A zero point below -128 still clamps at -128.
        assert_eq!(activation_range(Activation::Relu, 0.1, -200), (-128, 127));
    }

    #[test]
    fn a_small_layer_by_hand_and_inconsistent_lengths() {
        // M = 0.5: 2·(x − zp)·w halved, then + 3.
        let half = Requantize::from_real(0.5).unwrap();
        let layer = Int8Layer {
            input_zero_point: 1,
            output_zero_point: 3,
            multipliers: &[half.multiplier],
            shifts: &[i32::from(half.shift)],
            rounding: Rounding::Double,
            min: -128,
            max: 127,
        };
        let (x, w, bias) = ([5i8, -3], [2i8, 4, -1, 1], [10i32, -10]);
        let mut out = [0i8; 2];
        let fc = |w: (&[i8], Layout), channels, bias, out: &mut [i8]| {
            fully_connected(&layer, &x, w, channels, bias, out)
        };
        fc((&w, Layout::Ohwi), 2, Some(&bias), &mut out).unwrap();
        // c0: (4·2 + −4·4 + 10)·0.5 + 3 = 4; c1: (−4 − 4 − 10)·0.5 + 3 = −6.
        assert_eq!(out, [4, -6]);
        // The same filter stored [depth][channels].
        fc((&[2, -1, 4, 1], Layout::Hwio), 2, Some(&bias), &mut out).unwrap();
        assert_eq!(out, [4, -6]);
        let mut short = [0i8; 1];
        assert!(fc((&w, Layout::Ohwi), 2, Some(&bias), &mut short).is_err());
        assert!(fc((&w, Layout::Ohwi), 3, None, &mut out).is_err());
        assert!(fc((&w, Layout::Ohwi), 2, Some(&bias[..1]), &mut out).is_err());
        let bad = Int8Layer {
            shifts: &[31],
            ..layer
        };
        assert!(fully_connected(&bad, &x, (&w, Layout::Ohwi), 2, None, &mut out).is_err());
    }

    #[test]
    fn average_pool_rounds_half_away_from_zero_over_in_bounds_taps() {
        // One 1×3 row pooled 2×1 with SAME padding on the right: windows
        // [-3, -4] and [5] (the padded tap is not counted).
        let window = Window {
            size: [1, 2],
            stride: [1, 2],
            dilation: [1, 1],
            pad: [0, 0, 0, 1],
        };
        let mut out = [0i8; 2];
        pool(
            Pool::Average,
            &[-3, -4, 5],
            [1, 1, 3, 1],
            &window,
            -128,
            127,
            &mut out,
            [1, 1, 2, 1],
        )
        .unwrap();
        assert_eq!(out, [-4, 5]); // -3.5 -> -4
        pool(
            Pool::Max,
            &[-3, -4, 5],
            [1, 1, 3, 1],
            &window,
            -128,
            2,
            &mut out,
            [1, 1, 2, 1],
        )
        .unwrap();
        assert_eq!(out, [-3, 2]); // clamped at 2
        assert!(
            pool(
                Pool::Max,
                &[-3, -4],
                [1, 1, 3, 1],
                &window,
                -128,
                127,
                &mut out,
                [1, 1, 2, 1]
            )
            .is_err()
        );
    }

    #[test]
    fn add_rescales_both_inputs_to_the_output() {
        // Scales 0.5 and 0.25 into 0.5, zero points 1, -2 and 0.
        let q = AddQuant::new(
            [(0.5, 1), (0.25, -2)],
            (0.5, 0),
            Activation::None,
            Rounding::Single,
        )
        .unwrap();
        // (5 - 1)·0.5 + (10 + 2)·0.25 = 2 + 3 = 5 -> 10 at scale 0.5.
        assert_eq!(q.add(5, 10), 10);
        let mut out = [0i8; 1];
        assert!(add(&q, &[1, 2], &[3], &mut out).is_err());
    }
}
