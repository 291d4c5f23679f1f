//! int8 softmax as TFLite's reference kernel computes it
//! (`reference_ops::Softmax` on int8, `PreprocessSoftmaxScaling`): the
//! row's differences from its maximum scaled to Q5.26, gemmlowp's
//! fixed-point `exp` of each, their sum in Q12.19, its reciprocal by
//! Newton–Raphson, and each output `exp · 1/sum` rounded to 1/256, less
//! 128. Every step is integer arithmetic, so the device matches it bit for
//! bit.

use super::saturating_rounding_doubling_high_mul as srdhm;
use super::{QuantError, Requantize, Rounding, rounding_divide_by_pot};

/// Integer bits of the scaled differences (Q5.26).
const DIFF_INTEGER_BITS: u32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
const ACCUMULATION_INTEGER_BITS: u32 = 12;

/// The softmax's parameters: what `PreprocessSoftmaxScaling` makes of
/// `β · scale`, and the block words that carry them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SoftmaxQuant {
    /// `β · scale · 2²⁶` as a multiplier and a left shift (≥ 0).
    pub input: Requantize,
    /// Differences from the row's maximum below this count as `exp = 0`.
    pub diff_min: i32,
    /// Which build of `MultiplyByQuantizedMultiplierGreaterThanOne`.
    pub rounding: Rounding,
}

impl SoftmaxQuant {
    /// TFLite's `PreprocessSoftmaxScaling(β, scale, 5)` and `diff_min =
    /// −CalculateInputRadius(5, left_shift)`, in double. A build of single
    /// rounding caps the real multiplier at `2³⁰ − 1`, the other at
    /// `2³¹ − 1`. `β · scale · 2²⁶ ≤ 1` is refused: TFLite aborts on it.
    pub fn new(beta: f32, scale: f32, rounding: Rounding) -> Result<Self, QuantError> {
        let cap = match rounding {
            Rounding::Single => ((1u64 << 30) - 1) as f64,
            Rounding::Double => ((1u64 << 31) - 1) as f64,
        };
        let real = f64::from(beta) * f64::from(scale) * (1u64 << (31 - DIFF_INTEGER_BITS)) as f64;
        let real = if real < cap { real } else { cap };
        if !real.is_finite() {
            return Err(QuantError::NotFinite);
        }
        if real <= 1.0 {
            return Err(QuantError::Scale { channel: 0 });
        }
        let input = Requantize::from_real(real)?;
        if input.shift < 0 {
            return Err(QuantError::ShiftOutOfRange {
                shift: input.shift as i32,
            });
        }
        // CalculateInputRadius(5, left_shift, 31).
        let max = ((1u64 << DIFF_INTEGER_BITS) - 1) as f64
            * (1u64 << (31 - DIFF_INTEGER_BITS)) as f64
            / (1u64 << input.shift) as f64;
        Ok(Self {
            input,
            diff_min: -(libm::floor(max) as i32),
            rounding,
        })
    }

    /// Softmax of one row of int8 into `out` (scale 1/256, zero point −128).
    pub fn row(&self, x: &[i8], out: &mut [i8]) {
        let Some(&max) = x.iter().max() else {
            return;
        };
        let exp = |v: i8| -> Option<i32> {
            let diff = i32::from(v) - i32::from(max);
            (diff >= self.diff_min).then(|| {
                let scaled = self.input.apply(diff, self.rounding);
                exp_on_negative_values(scaled)
            })
        };
        let mut sum: i32 = 0;
        for &v in x {
            if let Some(e) = exp(v) {
                sum = sum.wrapping_add(rounding_divide_by_pot(e, ACCUMULATION_INTEGER_BITS));
            }
        }
        let (reciprocal, bits_over_unit) = reciprocal(sum);
        for (o, &v) in out.iter_mut().zip(x) {
            *o = match exp(v) {
                Some(e) => {
                    // At most 31: past it the C code's shift is undefined.
                    let exponent = ((bits_over_unit + 31 - 8) as u32).min(31);
                    let unsat = rounding_divide_by_pot(srdhm(reciprocal, e), exponent);
                    (unsat - 128).clamp(-128, 127) as i8
                }
                None => -128,
            };
        }
    }
}

/// gemmlowp's `SaturatingRoundingMultiplyByPOT<E>` for `E > 0`.
const fn saturating_shl(x: i32, exponent: u32) -> i32 {
    let threshold = (1i32 << (31 - exponent)) - 1;
    if x > threshold {
        i32::MAX
    } else if x < -threshold {
        i32::MIN
    } else {
        x << exponent
    }
}

/// gemmlowp's `exp_on_negative_values` of a Q5.26 `a ≤ 0`, in Q0.31.
pub fn exp_on_negative_values(a: i32) -> i32 {
    const FRACTIONAL: u32 = 31 - DIFF_INTEGER_BITS;
    let quarter = 1i32 << (FRACTIONAL - 2);
    let mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter;
    let mut result = exp_between_minus_quarter_and_0(saturating_shl(
        mod_quarter_minus_quarter,
        DIFF_INTEGER_BITS,
    ));
    let remainder = mod_quarter_minus_quarter.wrapping_sub(a);
    // exp(−2^k) in Q0.31, for k = −2 … 4.
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for (exponent, multiplier) in BARREL {
        let bit = 1i32 << (FRACTIONAL as i32 + exponent);
        if remainder & bit != 0 {
            result = srdhm(result, multiplier);
        }
    }
    if a == 0 { i32::MAX } else { result }
}

/// gemmlowp's `exp_on_interval_between_negative_one_quarter_and_0_excl`
/// (Q0.31 in and out): a Taylor expansion around −1/8.
fn exp_between_minus_quarter_and_0(a: i32) -> i32 {
    const EXP_MINUS_EIGHTH: i32 = 1_895_147_668;
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28);
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let x4_over_4 = rounding_divide_by_pot(x4, 2);
    let poly = rounding_divide_by_pot(
        srdhm(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2),
        1,
    );
    EXP_MINUS_EIGHTH.wrapping_add(srdhm(EXP_MINUS_EIGHTH, x.wrapping_add(poly)))
}

/// TFLite's `GetReciprocal(sum, 12)`: `1/sum` as a Q0.31 scale and how
/// many bits `sum` has above 1.0.
fn reciprocal(sum: i32) -> (i32, i32) {
    let headroom_plus_one = (sum as u32).leading_zeros();
    let bits_over_unit = ACCUMULATION_INTEGER_BITS as i32 - headroom_plus_one as i32;
    let shifted = ((sum as u32).wrapping_shl(headroom_plus_one)).wrapping_sub(1 << 31) as i32;
    (one_over_one_plus_x(shifted), bits_over_unit)
}

/// gemmlowp's `one_over_one_plus_x_for_x_in_0_1` (Q0.31 in and out):
/// three Newton–Raphson steps in Q2.29.
fn one_over_one_plus_x(a: i32) -> i32 {
    let sum = i64::from(a) + i64::from(i32::MAX);
    let half_denominator = ((sum + if sum >= 0 { 1 } else { -1 }) / 2) as i32;
    const FORTY_EIGHT_OVER_17: i32 = 1_515_870_810;
    const MINUS_32_OVER_17: i32 = -1_010_580_540;
    const ONE_Q2: i32 = 1 << 29;
    let mut x = FORTY_EIGHT_OVER_17.wrapping_add(srdhm(half_denominator, MINUS_32_OVER_17));
    for _ in 0..3 {
        let one_minus = ONE_Q2.wrapping_sub(srdhm(half_denominator, x));
        x = x.wrapping_add(saturating_shl(srdhm(x, one_minus), 2));
    }
    saturating_shl(x, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_of_zero_is_one_and_of_minus_one_is_near_e_inverse() {
        assert_eq!(exp_on_negative_values(0), i32::MAX);
        let minus_one = -(1 << 26);
        let e = f64::from(exp_on_negative_values(minus_one)) / 2f64.powi(31);
        assert!((e - (-1.0f64).exp()).abs() < 1e-6, "{e}");
    }

    #[test]
    fn a_row_sums_to_about_one_and_keeps_the_order() {
        let q = SoftmaxQuant::new(1.0, 0.05, Rounding::Double).unwrap();
        let x = [-20i8, 0, 10, 40, 40];
        let mut out = [0i8; 5];
        q.row(&x, &mut out);
        let probs: f64 = out.iter().map(|&o| (f64::from(o) + 128.0) / 256.0).sum();
        assert!((probs - 1.0).abs() < 0.02, "{out:?}");
        assert!(out[0] <= out[1] && out[1] <= out[2] && out[2] < out[3]);
        assert_eq!(out[3], out[4]);
    }

    #[test]
    fn a_tiny_scale_is_refused_as_tflite_would_abort() {
        assert!(SoftmaxQuant::new(1.0, 1e-9, Rounding::Double).is_err());
    }
}
