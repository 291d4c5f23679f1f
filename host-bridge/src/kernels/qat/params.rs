//! The int8 parameters TFLite's converter derives from a quantization-aware
//! graph, computed from the same float values at run time: activation scale
//! and zero point from a `FakeQuantWithMinMaxVars` range, per-channel
//! weights (with a folded batch norm), and the quantization blocks of the
//! int8 ops (`docs/device-numerics.md`, "int8 from QAT graphs").
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

/// The int8 quantization of an 8-bit, not narrow-range fake-quant range
/// `[min, max]`: the converter's nudging (in f64, the range widened to
/// hold 0, the zero point rounded half away and clamped), its scale
/// rounded once to f32.
pub fn activation(min: f32, max: f32) -> ParamResult<Affine> {
    if !(min.is_finite() && max.is_finite()) || min > max {
        return Err(format!(
            "the fake-quant range [{min}, {max}] cannot be represented (finite, min <= max)"
        ));
    }
    let (rmin, rmax) = (f64::from(min).min(0.0), f64::from(max).max(0.0));
    let scale = (rmax - rmin) / 255.0;
    let stored = scale as f32;
    if !(stored.is_finite() && stored > 0.0) {
        return Err(format!(
            "the fake-quant range [{min}, {max}] gives the scale {stored}, which cannot be \
             represented (it must be a finite number > 0): has the model been trained or \
             calibrated? (TENSORPLUG_GRAPH_INT8=off runs its float simulation instead)"
        ));
    }
    let from_min = -128.0 - rmin / scale;
    let zero_point = round_away(from_min.clamp(-128.0, 127.0)) as i32;
    Ok(Affine {
        scale: stored,
        zero_point,
    })
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
    out: &mut [i8],
) -> ParamResult<Vec<f32>> {
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
    if let Some((c, bad)) = scales
        .iter()
        .enumerate()
        .find(|(_, s)| !(s.is_finite() && **s > 0.0))
    {
        return Err(format!(
            "the weight scale {bad} of channel {c} cannot be represented (it must be a finite \
             number > 0; is the channel all zeros?)"
        ));
    }
    for (i, q) in out.iter_mut().enumerate() {
        let v = f64::from(scaled(i) / scales[i % channels]);
        *q = round_away(v).clamp(-127.0, 127.0) as i8;
    }
    Ok(scales)
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
    let (zero_points, output_zero_point) = match kind {
        TensorBlock::Quantize => ([0, 0], q.zero_point),
        TensorBlock::Dequantize => ([q.zero_point, 0], 0),
    };
    let header = QuantHeader {
        zero_points,
        output_zero_point,
        min: -128,
        max: 127,
        rounding: Rounding::Double,
        channels: 1,
    };
    let mut words = header.words().to_vec();
    words.push(q.scale.to_bits() as i32);
    words
}

fn multiplier_error(real: f64, e: QuantError) -> String {
    format!("the requantization multiplier {real} cannot be represented: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let a = activation(min, max).unwrap();
            assert_eq!((a.scale, a.zero_point), (scale, zero_point), "{min} {max}");
        }
        // A range on one side of 0 is widened to hold it.
        assert_eq!(activation(0.5, 2.55).unwrap().zero_point, -128);
        assert_eq!(activation(-2.55, -0.5).unwrap().zero_point, 127);
        for (min, max) in [(1.0, -1.0), (f32::NAN, 1.0), (0.0, 0.0)] {
            let e = activation(min, max).unwrap_err();
            assert!(e.contains("cannot be represented"), "{e}");
        }
    }

    #[test]
    fn weights_follow_the_range_the_factor_and_round_half_away() {
        // Two channels; channel 1 has a ties at 0.5 of its scale.
        let w = [0.254, -0.127, 0.127, 0.0635, -0.254, 0.0];
        let mut q = [0i8; 6];
        let scales = weights(&w, 2, &[], Some((&[-0.254], &[0.254])), &mut q).unwrap();
        assert_eq!(scales, [0.002, 0.002]);
        assert_eq!(q, [127, -64, 64, 32, -127, 0]);
        // A folded factor scales both the weights and the range.
        let scales = weights(&w, 2, &[1.0, 0.5], Some((&[-0.254], &[0.254])), &mut q).unwrap();
        assert_eq!(scales, [0.002, 0.001]);
        assert_eq!(q, [127, -64, 64, 32, -127, 0]);
        // Without a range: each channel's largest |w|.
        let scales = weights(&w, 2, &[], None, &mut q).unwrap();
        assert_eq!(
            scales,
            [(0.254f64 / 127.0) as f32, (0.127f64 / 127.0) as f32]
        );
        assert_eq!(q[1], -127);
    }

    #[test]
    fn bad_weights_are_named() {
        let mut q = [0i8; 4];
        let e = weights(&[1.0; 4], 2, &[], Some((&[-1.0], &[2.0])), &mut q).unwrap_err();
        assert!(e.contains("not symmetric"), "{e}");
        let e = weights(&[0.0, 1.0, 0.0, 1.0], 2, &[], None, &mut q).unwrap_err();
        assert!(e.contains("channel 0"), "{e}");
        let e = weights(&[1.0; 4], 3, &[], None, &mut q).unwrap_err();
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
}
