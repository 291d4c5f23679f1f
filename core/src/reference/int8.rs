//! int8 reference kernels: TFLite's `reference_integer_ops`, bit for bit
//! (TFLite's quantization spec; `docs/device-numerics.md`, "int8
//! requantization").

use super::{Error, check_len};
use crate::accelerator::Activation;
use crate::quant::{Requantize, Rounding};

/// The quantization of one int8 layer: zero points, one [`Requantize`] per
/// output channel (or one for all), and the output clamp.
#[derive(Clone, Copy, Debug)]
pub struct Int8Layer<'a> {
    /// The input's zero point (`input = scale · (q − zero_point)`).
    pub input_zero_point: i32,
    /// The output's zero point.
    pub output_zero_point: i32,
    /// `input_scale · weight_scale[c] / output_scale` per output channel,
    /// or one value for all of them.
    pub requantize: &'a [Requantize],
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
        let r = self.requantize[if self.requantize.len() == 1 { 0 } else { c }];
        let v = r
            .apply(acc, self.rounding)
            .wrapping_add(self.output_zero_point);
        v.clamp(self.min, self.max) as i8
    }
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
/// `filter` `[channels][depth]`, `bias` `[channels]`, `out` `[batches][channels]`.
pub fn fully_connected(
    layer: &Int8Layer<'_>,
    input: &[i8],
    filter: &[i8],
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
    if layer.requantize.len() != 1 {
        check_len(1, channels, layer.requantize.len())?;
    }
    for (b, row) in out.chunks_exact_mut(channels).enumerate() {
        let x = &input[b * depth..][..depth];
        for (c, o) in row.iter_mut().enumerate() {
            let w = &filter[c * depth..][..depth];
            let mut acc = bias.map_or(0, |bias| bias[c]);
            for (&xv, &wv) in x.iter().zip(w) {
                acc = acc.wrapping_add((i32::from(xv) - layer.input_zero_point) * i32::from(wv));
            }
            *o = layer.output(c, acc);
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
        let half = [Requantize::from_real(0.5).unwrap()];
        let layer = Int8Layer {
            input_zero_point: 1,
            output_zero_point: 3,
            requantize: &half,
            rounding: Rounding::Double,
            min: -128,
            max: 127,
        };
        let (x, w, bias) = ([5i8, -3], [2i8, 4, -1, 1], [10i32, -10]);
        let mut out = [0i8; 2];
        fully_connected(&layer, &x, &w, 2, Some(&bias), &mut out).unwrap();
        // c0: (4·2 + −4·4 + 10)·0.5 + 3 = 4; c1: (−4 − 4 − 10)·0.5 + 3 = −6.
        assert_eq!(out, [4, -6]);
        let mut short = [0i8; 1];
        assert!(fully_connected(&layer, &x, &w, 2, Some(&bias), &mut short).is_err());
        assert!(fully_connected(&layer, &x, &w, 3, None, &mut out).is_err());
        assert!(fully_connected(&layer, &x, &w, 2, Some(&bias[..1]), &mut out).is_err());
    }
}
