//! The int8 parameters TFLite's converter derives from a quantization-aware
//! graph, computed from the same float values at run time: activation scale
//! and zero point from a `FakeQuantWithMinMaxVars` range, per-channel
//! weights (with a folded batch norm), and the quantization blocks of the
//! int8 ops (`docs/device-numerics.md`, "int8 from QAT and QDQ graphs").
//!
//! Each formula was checked against the converter's output for tfmot QAT
//! models (`tests/python/int8_qat.py`): scales to the float bit, weights and
//! biases to the integer.

use tensorplug_core::accelerator::Activation;
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::quant::{QuantError, Requantize, Rounding};
use tensorplug_core::reference::int8::{AddQuant, activation_range};

/// Why a parameter cannot be represented: the message names the value.
pub type ParamResult<T> = Result<T, String>;

/// An int8 tensor's quantization: `real = scale · (q − zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    /// The scale (finite, > 0).
    pub scale: f32,
    /// The zero point, in `[−128, 127]`.
    pub zero_point: i32,
}

/// Half away from zero, as TFLite and the converter round.
fn round_away(x: f64) -> f64 {
    x.signum() * (x.abs() + 0.5).floor()
}

/// How a graph states a tensor's int8 range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RangeMode {
    /// `FakeQuantWithMinMaxVars`, 8 bits, not narrow range (QAT graphs).
    FakeQuant,
    /// `QuantizeV2`/`Dequantize` in `SCALED` mode (QDQ graphs): `qint8`
    /// (zero point 0, `[−128, 127]` or narrow `[−127, 127]`) or `quint8`
    /// (`[0, 255]`, an int8 zero point of −128).
    Scaled {
        /// `qint8` rather than `quint8`.
        signed: bool,
        /// `narrow_range`: `qint8`'s lowest value is −127.
        narrow: bool,
        /// `ensure_minimum_range`: the range widened to at least this
        /// fraction of its largest end (at least 1).
        ensure_minimum_range: f32,
    },
}

/// The int8 quantization of the range `[min, max]` a graph states in
/// `mode`.
pub fn activation(min: f32, max: f32, mode: RangeMode) -> ParamResult<Affine> {
    if !(min.is_finite() && max.is_finite()) || min > max {
        return Err(format!(
            "the range [{min}, {max}] cannot be represented (finite, min <= max)"
        ));
    }
    let affine = match mode {
        RangeMode::FakeQuant => fake_quant(min, max),
        RangeMode::Scaled {
            signed,
            narrow,
            ensure_minimum_range,
        } => {
            let (lo, _) = scaled_limits(signed, narrow);
            let factor = scaled_factor(min, max, signed, narrow, ensure_minimum_range);
            Affine {
                scale: scaled_step(factor, signed, narrow),
                zero_point: if signed { 0 } else { i32::from(i8::MIN) - lo },
            }
        }
    };
    if !(affine.scale.is_finite() && affine.scale > 0.0) {
        return Err(format!(
            "the range [{min}, {max}] gives the scale {}, which cannot be represented (it must \
             be a finite number > 0): has the model been trained or calibrated? \
             (TENSORPLUG_GRAPH_INT8=off runs its float simulation instead)",
            affine.scale
        ));
    }
    Ok(affine)
}

/// The converter's nudging of a fake-quant range (in f64, widened to
/// hold 0, the zero point rounded half away and clamped), its scale
/// rounded once to f32.
fn fake_quant(min: f32, max: f32) -> Affine {
    let (rmin, rmax) = (f64::from(min).min(0.0), f64::from(max).max(0.0));
    let scale = (rmax - rmin) / 255.0;
    let from_min = -128.0 - rmin / scale;
    Affine {
        scale: scale as f32,
        zero_point: round_away(from_min.clamp(-128.0, 127.0)) as i32,
    }
}

/// The stored type's `[lowest, highest]` in `SCALED` mode.
fn scaled_limits(signed: bool, narrow: bool) -> (i32, i32) {
    match (signed, narrow) {
        (true, true) => (-127, 127),
        (true, false) => (-128, 127),
        (false, _) => (0, 255),
    }
}

/// `QuantizeV2`'s `SCALED` multiplier for `[min, max]` (its f32 steps:
/// the range made to hold 0 and at least `ensure_minimum_range` wide, then
/// the smaller of the factors that map each end onto the type's).
fn scaled_factor(min: f32, max: f32, signed: bool, narrow: bool, ensure: f32) -> f32 {
    let (lo, hi) = scaled_limits(signed, narrow);
    let min_range = min.min(0.0);
    let epsilon = 1f32.max(min.abs().max(max.abs())) * ensure;
    let max_range = max.max(min_range + epsilon).max(0.0);
    let (lo, hi) = (lo as f32, hi as f32);
    let from_min = if lo * min_range > 0.0 {
        lo / min_range
    } else {
        f32::MAX
    };
    let from_max = if hi * max_range > 0.0 {
        hi / max_range
    } else {
        f32::MAX
    };
    from_min.min(from_max)
}

/// `Dequantize`'s `SCALED` step for the range `QuantizeV2` reports with
/// `factor` (its outputs `lowest / factor`, `highest / factor`).
fn scaled_step(factor: f32, signed: bool, narrow: bool) -> f32 {
    let (lo, hi) = scaled_limits(signed, narrow);
    let (lo, hi) = (lo as f32, hi as f32);
    let (min_range, max_range) = (lo / factor, hi / factor);
    if signed {
        (min_range / lo).max(max_range / hi)
    } else {
        max_range / hi
    }
}

/// How a graph states its weights' quantization.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WeightMode {
    /// A narrow-range weight fake-quant's range, or none (the weights'
    /// largest value): TFLite's converter's weights.
    FakeQuant,
    /// `QuantizeV2` to `qint8` in `SCALED` mode per channel (QDQ graphs):
    /// its own steps, its rounding.
    Scaled {
        /// `narrow_range`.
        narrow: bool,
        /// `round_mode = HALF_TO_EVEN` (else half away from zero).
        half_even: bool,
        /// `ensure_minimum_range`.
        ensure_minimum_range: f32,
    },
}

/// Quantizes weights whose output channel is the innermost index modulo
/// `channels` (HWIO, `[k, n]`, and depthwise `[kh, kw, c, m]` with
/// `channels = c·m`), into `out`; returns the per-channel scales.
///
/// - `factor` (empty or `channels` long): a folded batch norm's per-channel
///   multiplier, applied first in f32 (`w · f`, as the converter folds).
/// - `range` (empty, or the fake-quant's `(min, max)` with 1, `channels` or
///   the innermost size entries, broadcast): the scale is
///   `max · |f| / 127`, in f64 and rounded once to f32; empty: the
///   largest `|w · f|` of the channel over 127 (post-training weights).
///   A range must be symmetric (`min = −max`), as TFLite's int8 weights are.
/// - each weight is `w · f / scale` (f32) rounded half away from zero,
///   clamped to `[−127, 127]`.
pub fn weights(
    w: &[f32],
    channels: usize,
    factor: &[f32],
    range: Option<(&[f32], &[f32])>,
    mode: WeightMode,
    out: &mut [i8],
) -> ParamResult<Vec<f32>> {
    if let (WeightMode::Scaled { .. }, Some((min, max))) = (mode, range) {
        if !factor.is_empty() {
            return Err("a batch norm folded into QDQ weights".into());
        }
        return scaled_weights(w, channels, min, max, mode, out);
    }
    if channels == 0 || !w.len().is_multiple_of(channels) || out.len() != w.len() {
        return Err(format!(
            "{} weights do not split into {channels} output channels",
            w.len()
        ));
    }
    if !factor.is_empty() && factor.len() != channels {
        return Err(format!(
            "{} batch-norm factors for {channels} channels",
            factor.len()
        ));
    }
    let f = |c: usize| factor.get(c).copied().unwrap_or(1.0);
    let scaled = |i: usize| w[i] * f(i % channels);
    let mut scales = vec![0f32; channels];
    match range {
        Some((min, max)) => {
            let len = max.len();
            if len == 0 || min.len() != len || !channels.is_multiple_of(len) {
                return Err(format!(
                    "a weight range of {} minima and {len} maxima for {channels} channels",
                    min.len()
                ));
            }
            for (c, scale) in scales.iter_mut().enumerate() {
                let (lo, hi) = (min[c % len], max[c % len]);
                if lo != -hi {
                    return Err(format!(
                        "the weight range [{lo}, {hi}] of channel {c} is not symmetric; int8 \
                         weights have a zero point of 0 (TFLite's spec)"
                    ));
                }
                *scale = (f64::from(hi.abs()) * f64::from(f(c).abs()) / 127.0) as f32;
            }
        }
        None => {
            let mut largest = vec![0f32; channels];
            for i in 0..w.len() {
                let c = i % channels;
                largest[c] = largest[c].max(scaled(i).abs());
            }
            for (scale, m) in scales.iter_mut().zip(largest) {
                *scale = (f64::from(m) / 127.0) as f32;
            }
        }
    }
    check_scales(&scales)?;
    for (i, q) in out.iter_mut().enumerate() {
        let v = f64::from(scaled(i) / scales[i % channels]);
        *q = round_away(v).clamp(-127.0, 127.0) as i8;
    }
    Ok(scales)
}

/// `QuantizeV2` in `SCALED` mode per channel (`range` broadcast as in
/// [`weights`]): `round(w · factor)` in f32 with the graph's rounding,
/// clamped; the scales are `Dequantize`'s steps.
fn scaled_weights(
    w: &[f32],
    channels: usize,
    min: &[f32],
    max: &[f32],
    mode: WeightMode,
    out: &mut [i8],
) -> ParamResult<Vec<f32>> {
    let WeightMode::Scaled {
        narrow,
        half_even,
        ensure_minimum_range,
    } = mode
    else {
        return Err("not a scaled weight mode".into());
    };
    let len = max.len();
    if len == 0 || min.len() != len || !channels.is_multiple_of(len) {
        return Err(format!(
            "a weight range of {} minima and {len} maxima for {channels} channels",
            min.len()
        ));
    }
    let (lo, hi) = scaled_limits(true, narrow);
    let factors: Vec<f32> = (0..channels)
        .map(|c| {
            scaled_factor(
                min[c % len],
                max[c % len],
                true,
                narrow,
                ensure_minimum_range,
            )
        })
        .collect();
    let scales: Vec<f32> = factors
        .iter()
        .map(|&f| scaled_step(f, true, narrow))
        .collect();
    check_scales(&scales)?;
    for (i, q) in out.iter_mut().enumerate() {
        let v = w[i] * factors[i % channels];
        let r = if half_even {
            v.round_ties_even()
        } else {
            v.round()
        };
        *q = r.clamp(lo as f32, hi as f32) as i8;
    }
    Ok(scales)
}

/// Every weight scale is a finite number > 0.
fn check_scales(scales: &[f32]) -> ParamResult<()> {
    match scales
        .iter()
        .enumerate()
        .find(|(_, s)| !(s.is_finite() && **s > 0.0))
    {
        Some((c, bad)) => Err(format!(
            "the weight scale {bad} of channel {c} cannot be represented (it must be a finite \
             number > 0; is the channel all zeros?)"
        )),
        None => Ok(()),
    }
}

/// The block of `Conv2DInt8`, `DepthwiseConv2DInt8` or `MatMulInt8`: the
/// bias quantized to `input_scale · weight_scale[c]` (f64, half away),
/// the multipliers `input_scale · weight_scale[c] / output_scale`.
pub fn conv_block(
    input: Affine,
    weight_scales: &[f32],
    bias: &[f32],
    output: Affine,
    activation: Activation,
    rounding: Rounding,
) -> ParamResult<Vec<i32>> {
    let channels = weight_scales.len();
    if !bias.is_empty() && bias.len() != channels {
        return Err(format!("{} biases for {channels} channels", bias.len()));
    }
    let (min, max) = activation_range(activation, output.scale, output.zero_point);
    let header = QuantHeader {
        zero_points: [input.zero_point, 0],
        output_zero_point: output.zero_point,
        min,
        max,
        rounding,
        channels: channels as u32,
    };
    let mut words = header.words().to_vec();
    for (c, &ws) in weight_scales.iter().enumerate() {
        let bias_scale = f64::from(input.scale) * f64::from(ws);
        let b = round_away(f64::from(bias.get(c).copied().unwrap_or(0.0)) / bias_scale);
        if !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&b) {
            return Err(format!(
                "the bias of channel {c} quantizes to {b}, outside int32"
            ));
        }
        words.push(b as i32);
    }
    let mut shifts = Vec::with_capacity(channels);
    for &ws in weight_scales {
        let real = f64::from(input.scale) * f64::from(ws) / f64::from(output.scale);
        let r = Requantize::from_real(real).map_err(|e| multiplier_error(real, e))?;
        words.push(r.multiplier);
        shifts.push(i32::from(r.shift));
    }
    words.extend(shifts);
    Ok(words)
}

/// The block of `AddInt8` (TFLite's `ADD` `Prepare`).
pub fn add_block(
    inputs: [Affine; 2],
    output: Affine,
    activation: Activation,
    rounding: Rounding,
) -> ParamResult<Vec<i32>> {
    let pair = |a: Affine| (a.scale, a.zero_point);
    let q = AddQuant::new(
        [pair(inputs[0]), pair(inputs[1])],
        pair(output),
        activation,
        rounding,
    )
    .map_err(|e| format!("the add's rescaling cannot be represented: {e}"))?;
    let header = QuantHeader {
        zero_points: [q.zero_points[0], q.zero_points[1]],
        output_zero_point: q.zero_points[2],
        min: q.min,
        max: q.max,
        rounding,
        channels: 0,
    };
    let mut words = header.words().to_vec();
    for r in q.requantize {
        words.extend([r.multiplier, i32::from(r.shift)]);
    }
    Ok(words)
}

/// Which per-tensor block [`tensor_block`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorBlock {
    /// `Quantize`'s: the output's zero point and scale.
    Quantize,
    /// `Dequantize`'s: the input's.
    Dequantize,
}

/// The block of `Quantize` or `Dequantize` for one per-tensor quantization.
pub fn tensor_block(kind: TensorBlock, q: Affine) -> Vec<i32> {
    let quantize = kind == TensorBlock::Quantize;
    tensorplug_core::quant::block::per_tensor_scale(quantize, q.scale, q.zero_point).to_vec()
}

fn multiplier_error(real: f64, e: QuantError) -> String {
    format!("the requantization multiplier {real} cannot be represented: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FQ: WeightMode = WeightMode::FakeQuant;

    // Values of a tfmot QAT convnet and the TFLite model the converter made
    // from it (`tests/python/int8_qat.py`, seed 7).
    #[test]
    fn activation_ranges_give_the_converters_scale_and_zero_point() {
        let cases = [
            (-0.999_924_06, 0.999_942_66, 0.007_842_614, -1),
            (-5.976_036, 5.983_036_5, 0.046_898_324, -1),
            (-5.978_020_7, 5.977_552, 0.046_884_6, 0),
        ];
        for (min, max, scale, zero_point) in cases {
            let a = activation(min, max, RangeMode::FakeQuant).unwrap();
            assert_eq!((a.scale, a.zero_point), (scale, zero_point), "{min} {max}");
        }
        // A range on one side of 0 is widened to hold it.
        assert_eq!(
            activation(0.5, 2.55, RangeMode::FakeQuant)
                .unwrap()
                .zero_point,
            -128
        );
        assert_eq!(
            activation(-2.55, -0.5, RangeMode::FakeQuant)
                .unwrap()
                .zero_point,
            127
        );
        for (min, max) in [(1.0, -1.0), (f32::NAN, 1.0), (0.0, 0.0)] {
            let e = activation(min, max, RangeMode::FakeQuant).unwrap_err();
            assert!(e.contains("cannot be represented"), "{e}");
        }
    }

    #[test]
    fn weights_follow_the_range_the_factor_and_round_half_away() {
        // Two channels; channel 1 has a ties at 0.5 of its scale.
        let w = [0.254, -0.127, 0.127, 0.0635, -0.254, 0.0];
        let mut q = [0i8; 6];
        let scales = weights(&w, 2, &[], Some((&[-0.254], &[0.254])), FQ, &mut q).unwrap();
        assert_eq!(scales, [0.002, 0.002]);
        assert_eq!(q, [127, -64, 64, 32, -127, 0]);
        // A folded factor scales both the weights and the range.
        let scales = weights(&w, 2, &[1.0, 0.5], Some((&[-0.254], &[0.254])), FQ, &mut q).unwrap();
        assert_eq!(scales, [0.002, 0.001]);
        assert_eq!(q, [127, -64, 64, 32, -127, 0]);
        // Without a range: each channel's largest |w|.
        let scales = weights(&w, 2, &[], None, FQ, &mut q).unwrap();
        assert_eq!(
            scales,
            [(0.254f64 / 127.0) as f32, (0.127f64 / 127.0) as f32]
        );
        assert_eq!(q[1], -127);
    }

    #[test]
    fn bad_weights_are_named() {
        let mut q = [0i8; 4];
        let e = weights(&[1.0; 4], 2, &[], Some((&[-1.0], &[2.0])), FQ, &mut q).unwrap_err();
        assert!(e.contains("not symmetric"), "{e}");
        let e = weights(&[0.0, 1.0, 0.0, 1.0], 2, &[], None, FQ, &mut q).unwrap_err();
        assert!(e.contains("channel 0"), "{e}");
        let e = weights(&[1.0; 4], 3, &[], None, FQ, &mut q).unwrap_err();
        assert!(e.contains("3 output channels"), "{e}");
    }

    #[test]
    fn conv_blocks_hold_the_bias_and_multipliers_per_channel() {
        let input = Affine {
            scale: 0.5,
            zero_point: -1,
        };
        let output = Affine {
            scale: 0.25,
            zero_point: 3,
        };
        let words = conv_block(
            input,
            &[0.25, 0.125],
            &[0.375, -1.0],
            output,
            Activation::Relu,
            Rounding::Single,
        )
        .unwrap();
        assert_eq!(&words[..8], &[-1, 0, 3, 3, 127, 1, 2, 0]);
        // 0.375 / 0.125 = 3; −1 / 0.0625 = −16.
        assert_eq!(&words[8..10], &[3, -16]);
        // 0.5 = 2^30 · 2^−31 (shift 0); 0.25: shift −1.
        assert_eq!(&words[10..], &[1 << 30, 1 << 30, 0, -1]);
        let e = conv_block(
            input,
            &[0.25],
            &[1.0, 2.0],
            output,
            Activation::None,
            Rounding::Double,
        )
        .unwrap_err();
        assert!(e.contains("2 biases for 1"), "{e}");
    }

    #[test]
    fn tensor_blocks_carry_the_scale_bits() {
        let q = Affine {
            scale: 0.5,
            zero_point: 7,
        };
        let words = tensor_block(TensorBlock::Quantize, q);
        assert_eq!(
            words,
            [0, 0, 7, -128, 127, 0, 1, 0, 0.5f32.to_bits() as i32]
        );
        let words = tensor_block(TensorBlock::Dequantize, q);
        assert_eq!(&words[..3], &[7, 0, 0]);
    }

    #[test]
    fn scaled_ranges_follow_quantize_v2() {
        let scaled = |signed, narrow| RangeMode::Scaled {
            signed,
            narrow,
            ensure_minimum_range: 0.01,
        };
        // qint8 over [−1, 1]: the max side wins (127), zero point 0.
        let a = activation(-1.0, 1.0, scaled(true, false)).unwrap();
        assert_eq!((a.scale, a.zero_point), (1.0 / 127.0, 0));
        // quint8 over [0, 6]: 255 steps from 0, int8 zero point −128.
        let a = activation(0.0, 6.0, scaled(false, false)).unwrap();
        assert_eq!(a.zero_point, -128);
        assert!((a.scale - 6.0 / 255.0).abs() < 1e-9, "{}", a.scale);
        // An empty range is widened by ensure_minimum_range, not refused.
        let a = activation(0.0, 0.0, scaled(true, true)).unwrap();
        assert!((a.scale - 0.01 / 127.0).abs() < 1e-9, "{}", a.scale);
    }

    #[test]
    fn scaled_weights_round_as_the_graph_says() {
        // A factor of 128 exactly: 0.48828125 · 128 = 62.5, a tie.
        let (min, max) = ([-0.992_187_5f32], [0.992_187_5f32]);
        let mut q = [0i8; 2];
        let mode = |half_even| WeightMode::Scaled {
            narrow: false,
            half_even,
            ensure_minimum_range: 0.01,
        };
        let w = [0.488_281_25, -2.0];
        let scales = weights(&w, 1, &[], Some((&min, &max)), mode(true), &mut q).unwrap();
        assert_eq!(q, [62, -128]);
        assert_eq!(scales, [1.0 / 128.0]);
        weights(&w, 1, &[], Some((&min, &max)), mode(false), &mut q).unwrap();
        assert_eq!(q, [63, -128]);
        let e = weights(&w, 1, &[2.0], Some((&min, &max)), mode(false), &mut q).unwrap_err();
        assert!(e.contains("batch norm"), "{e}");
    }
}
