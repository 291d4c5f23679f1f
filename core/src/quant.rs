//! int8 requantization, bit for bit as TFLite's reference kernels do it.
//!
//! A real multiplier `M` (`input_scale · weight_scale / output_scale`) is
//! held as [`Requantize`]: a Q31 `multiplier` and a power-of-two `shift`,
//! `M ≈ multiplier · 2^(shift − 31)` (`tflite::QuantizeMultiplier`). An
//! int32 accumulator is scaled by it (`tflite::MultiplyByQuantizedMultiplier`)
//! in one of TFLite's two builds ([`Rounding`]): **double rounding**
//! (gemmlowp's `SaturatingRoundingDoublingHighMul`, then
//! `RoundingDivideByPOT`), TFLite's default build, or **single rounding**
//! (`TFLITE_SINGLE_ROUNDING`'s formula: one rounding 64-bit shift). They
//! differ on some ties. TF 2.21's interpreter uses both: measured, its
//! convolutions round twice and its per-channel `FULLY_CONNECTED` once.
//! `docs/device-numerics.md`, "int8 requantization". Golden vectors:
//! `core/tests/requantize_golden.rs`.

use core::fmt;

pub mod block;
pub mod softmax;

/// A real multiplier as the device applies it: `multiplier · 2^(shift − 31)`,
/// `multiplier` 0 or in `[2³⁰, 2³¹)`, `shift` in `[−31, 30]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Requantize {
    /// The Q31 significand.
    pub multiplier: i32,
    /// The power of two: a left shift before the multiply when positive,
    /// a rounding right shift after it when negative.
    pub shift: i8,
}

/// Which of TFLite's two builds of `MultiplyByQuantizedMultiplier` to match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Rounding {
    /// gemmlowp's `SaturatingRoundingDoublingHighMul`, then
    /// `RoundingDivideByPOT`: TFLite's default build (tflite-micro's, and
    /// TF 2.21's `CONV_2D` and `DEPTHWISE_CONV_2D`).
    #[default]
    Double = 0,
    /// `TFLITE_SINGLE_ROUNDING`'s formula: `(x · multiplier + 2^(30 −
    /// shift)) >> (31 − shift)` in 64 bits. TF 2.21's (and LiteRT 2.3's)
    /// per-channel `FULLY_CONNECTED` computes the same.
    Single = 1,
}

/// Why a multiplier cannot be represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QuantError {
    /// The real multiplier is NaN or infinite.
    NotFinite,
    /// The real multiplier, or the Q31 one, is negative.
    Negative,
    /// The shift is outside `[−31, 30]` (a real multiplier of 2³⁰ or more).
    ShiftOutOfRange {
        /// The shift asked for.
        shift: i32,
    },
    /// A zero point outside int8's `[−128, 127]`.
    ZeroPoint {
        /// The zero point given.
        value: i32,
    },
    /// An output clamp outside int8's range, or with `min > max`.
    Clamp {
        /// Its lower end.
        min: i32,
        /// Its upper end.
        max: i32,
    },
    /// A rounding word other than 0 (double) or 1 (single).
    Rounding {
        /// The word given.
        value: i32,
    },
    /// A quantization block of the wrong length ([`block`]).
    BlockLength {
        /// Words the op needs.
        expected: u32,
        /// Words given.
        got: u32,
    },
    /// A block whose per-channel count is not the op's.
    Channels {
        /// The op's count.
        expected: u32,
        /// The block's.
        got: u32,
    },
    /// A scale that is zero, negative or not finite.
    Scale {
        /// Its channel.
        channel: u32,
    },
    /// A reserved word that is not 0 (or a negative channel count).
    Reserved,
}

impl fmt::Display for QuantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFinite => f.write_str("the requantization multiplier is not finite"),
            Self::Negative => f.write_str("the requantization multiplier is negative"),
            Self::ShiftOutOfRange { shift } => write!(
                f,
                "the requantization shift {shift} is outside [-31, 30] (a multiplier of 2^30 or more)"
            ),
            Self::ZeroPoint { value } => {
                write!(f, "the zero point {value} is outside int8's [-128, 127]")
            }
            Self::Clamp { min, max } => write!(
                f,
                "the output clamp [{min}, {max}] is not a range within [-128, 127]"
            ),
            Self::Rounding { value } => write!(
                f,
                "the rounding word {value} is neither 0 (double) nor 1 (single)"
            ),
            Self::BlockLength { expected, got } => write!(
                f,
                "the quantization block holds {got} words, the op needs {expected}"
            ),
            Self::Channels { expected, got } => write!(
                f,
                "the quantization block is for {got} channels, the op has {expected}"
            ),
            Self::Scale { channel } => {
                write!(
                    f,
                    "the scale of channel {channel} is not a finite number > 0"
                )
            }
            Self::Reserved => f.write_str("a reserved word of the quantization block is not 0"),
        }
    }
}

impl core::error::Error for QuantError {}

impl Requantize {
    /// Checks a Q31 multiplier and shift as a device receives them.
    pub const fn new(multiplier: i32, shift: i32) -> Result<Self, QuantError> {
        if multiplier < 0 {
            return Err(QuantError::Negative);
        }
        if shift < -31 || shift > 30 {
            return Err(QuantError::ShiftOutOfRange { shift });
        }
        Ok(Self {
            multiplier,
            shift: shift as i8,
        })
    }

    /// `tflite::QuantizeMultiplier`: the significand of `real` rounded half
    /// away from zero to 31 bits; a multiplier below 2⁻³² flushes to 0.
    pub fn from_real(real: f64) -> Result<Self, QuantError> {
        if !real.is_finite() {
            return Err(QuantError::NotFinite);
        }
        if real < 0.0 {
            return Err(QuantError::Negative);
        }
        if real == 0.0 {
            return Ok(Self::default());
        }
        let (q, mut shift) = libm::frexp(real);
        let mut q_fixed = libm::round(q * (1u64 << 31) as f64) as i64;
        if q_fixed == 1 << 31 {
            q_fixed /= 2;
            shift += 1;
        }
        if shift < -31 {
            return Ok(Self::default());
        }
        Self::new(q_fixed as i32, shift)
    }

    /// `tflite::MultiplyByQuantizedMultiplier` in the build `rounding`.
    #[inline]
    pub const fn apply(self, x: i32, rounding: Rounding) -> i32 {
        match rounding {
            Rounding::Double => self.apply_double(x),
            Rounding::Single => self.apply_single(x),
        }
    }

    /// Double rounding: `x` shifted left by a positive shift (wrapping on
    /// overflow, as the C code does in practice), the rounding doubling high
    /// multiply, then the rounding right shift by a negative one.
    #[inline]
    pub const fn apply_double(self, x: i32) -> i32 {
        let (left, right) = if self.shift > 0 {
            (self.shift as u32, 0)
        } else {
            (0, self.shift.unsigned_abs() as u32)
        };
        let high = saturating_rounding_doubling_high_mul(x.wrapping_shl(left), self.multiplier);
        rounding_divide_by_pot(high, right)
    }

    /// Single rounding: `(x · multiplier + 2^(30 − shift)) >> (31 − shift)`
    /// in 64 bits (an arithmetic shift: ties round up), truncated to 32 bits
    /// as the C code's cast does.
    #[inline]
    pub const fn apply_single(self, x: i32) -> i32 {
        let total = (31 - self.shift as i32) as u32;
        let round = 1i64 << (total - 1);
        ((x as i64 * self.multiplier as i64 + round) >> total) as i32
    }
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul`: `round(a · b / 2³¹)`,
/// a positive tie rounded up and a negative one toward zero, and
/// `i32::MIN · i32::MIN` saturated to `i32::MAX`.
#[inline]
pub const fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let ab = a as i64 * b as i64;
    let nudge = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // `/` truncates toward zero, as C's does.
    ((ab + nudge) / (1 << 31)) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent` rounded to nearest,
/// ties away from zero; `exponent` at most 31.
#[inline]
pub const fn rounding_divide_by_pot(x: i32, exponent: u32) -> i32 {
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + if x < 0 { 1 } else { 0 };
    (x >> exponent) + if remainder > threshold { 1 } else { 0 }
}
