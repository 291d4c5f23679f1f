//! int8 `LOGISTIC`, `TANH` and `HARD_SWISH` on the device's `LookupInt8`:
//! each is a function of one int8 input, so 256 entries hold it. TFLite's
//! kernels for `LOGISTIC` and `TANH` on int8 are such a table, made at
//! `prepare` (`PopulateLookupTable`: each input dequantized in float32, the
//! float function, `round(y / output_scale) + output_zero_point`,
//! clamped); the delegate makes the same table the same way, with the same
//! libm functions (`expf`, `tanhf`). `HARD_SWISH`'s reference kernel is
//! 16-bit fixed point; the delegate runs that arithmetic on every input.

use super::checks::{int8_per_tensor, need_typed, one_in_one_out};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{kTfLiteBuiltinHardSwish, kTfLiteBuiltinLogistic};
use tensorplug_core::accelerator::{Capabilities, DType, OpKind};
use tensorplug_core::quant::{Requantize, block};

/// int8 `LOGISTIC`, `TANH` or `HARD_SWISH`, or why it stays on the CPU.
#[allow(non_upper_case_globals)] // TFLite's C names
pub fn lookup_int8(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_in_one_out(node)?;
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    int8_per_tensor(&[&xt, &ot], "table")?;
    if xt.dims != ot.dims || xt.bytes == 0 {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    if !(xt.scale.is_finite() && xt.scale > 0.0 && ot.scale.is_finite() && ot.scale > 0.0) {
        return Err(format!("scales {} and {}", xt.scale, ot.scale));
    }
    let (s_in, zp_in, s_out, zp_out) = (xt.scale, xt.zero_point, ot.scale, ot.zero_point);
    let table = match node.builtin_code {
        kTfLiteBuiltinLogistic => {
            tabulate(s_in, zp_in, s_out, zp_out, |v| 1.0 / (1.0 + (-v).exp()))
        }
        kTfLiteBuiltinHardSwish => hard_swish_table(s_in, zp_in, s_out, zp_out)?,
        _ => tabulate(s_in, zp_in, s_out, zp_out, f32::tanh),
    };
    need_typed(caps, OpKind::LookupInt8, DType::I8)?;
    Ok(DeviceOp::LookupInt8 {
        x,
        out,
        len: xt.bytes as u64,
        block: block::lookup(&table).to_vec(),
    })
}

/// TFLite's `PopulateLookupTable` for int8, entry `b` for the input byte `b`.
fn tabulate(s_in: f32, zp_in: i32, s_out: f32, zp_out: i32, f: fn(f32) -> f32) -> [i8; 256] {
    let inverse_scale = 1.0 / s_out;
    let mut table = [0i8; 256];
    for v in -128i32..=127 {
        let dequantized = s_in * (v - zp_in) as f32;
        // `std::round`: half away from zero, as `f32::round`.
        let rescaled = (f(dequantized) * inverse_scale).round();
        let quantized = (rescaled + zp_out as f32) as i32;
        table[v as u8 as usize] = quantized.clamp(-128, 127) as i8;
    }
    table
}

/// TFLite's reference int8 `HardSwish` (`reference_ops::HardSwish` with
/// `HardSwishPrepare`'s parameters) on every input byte.
fn hard_swish_table(s_in: f32, zp_in: i32, s_out: f32, zp_out: i32) -> Result<[i8; 256], String> {
    let hires_scale = (1.0f32 / 128.0) * s_in;
    let multiplier = |real: f32| -> Result<(i16, i32), String> {
        let q = Requantize::from_real(f64::from(real)).map_err(|e| format!("{real}: {e:?}"))?;
        Ok((downscale(q.multiplier), i32::from(q.shift)))
    };
    let (out_m, out_exp) = multiplier(hires_scale / s_out)?;
    let (relu_m, relu_exp) = multiplier(hires_scale / (3.0f32 / 32768.0))?;
    if !(-15..=0).contains(&out_exp) || !(-15..=15).contains(&relu_exp) {
        return Err(format!(
            "HARD_SWISH exponents {out_exp} and {relu_exp}: outside what the kernel shifts"
        ));
    }
    let mut table = [0i8; 256];
    for v in -128i32..=127 {
        let hires = ((v - zp_in) * 128) as i16;
        let preshift = srdhm16(hires, out_m);
        let mut reluish = hires;
        if relu_exp > 0 {
            reluish = saturating_shl16(reluish, relu_exp - 1);
        }
        reluish = srdhm16(reluish, relu_m);
        if relu_exp > 0 {
            reluish = saturating_shl16(reluish, 1);
        }
        if relu_exp < 0 {
            reluish = rdpot16(reluish, -relu_exp);
        }
        let reluish = ((i32::from(reluish) + (1 << 15)) >> 1) as i16;
        let out = rdpot16(sdhm16(reluish, preshift), -out_exp);
        table[v as u8 as usize] = (i32::from(out) + zp_out).clamp(-128, 127) as i8;
    }
    Ok(table)
}

/// `DownScaleInt32ToInt16Multiplier`.
fn downscale(m: i32) -> i16 {
    if m >= i32::MAX - (1 << 15) {
        i16::MAX
    } else {
        ((m + (1 << 15)) >> 16) as i16
    }
}

/// gemmlowp's 16-bit `SaturatingRoundingDoublingHighMul`.
fn srdhm16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    let ab = i32::from(a) * i32::from(b);
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// TFLite's `SaturatingDoublingHighMul` (no rounding nudge).
fn sdhm16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    ((i32::from(a) * i32::from(b)) / (1 << 15)) as i16
}

/// TFLite's `SaturatingLeftShift` on 16 bits.
fn saturating_shl16(v: i16, amount: i32) -> i16 {
    (i64::from(v) << amount).clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

/// gemmlowp's `RoundingDivideByPOT` on 16 bits (`exponent` ≤ 15).
fn rdpot16(x: i16, exponent: i32) -> i16 {
    let mask = ((1i32 << exponent) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i16::from(x < 0);
    (x >> exponent) + i16::from(remainder > threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logistic_table_is_monotone_and_centred_at_a_half() {
        let f: fn(f32) -> f32 = |v| 1.0 / (1.0 + (-v).exp());
        let t = tabulate(0.1, 0, 1.0 / 256.0, -128, f);
        assert_eq!(t[0], 0, "logistic(0) = 1/2 is 128/256, less 128");
        assert_eq!(t[127], 127, "logistic(12.7) saturates");
        assert_eq!(t[128], -128, "logistic(-12.8) rounds to 0");
        let ordered: Vec<i8> = (-128i32..=127).map(|v| t[v as u8 as usize]).collect();
        assert!(ordered.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn the_hard_swish_table_is_zero_below_minus_three_and_x_above_three() {
        // Input and output at 0.05 per quantum, zero point 0.
        let t = hard_swish_table(0.05, 0, 0.05, 0).unwrap();
        let at = |v: i8| t[v as u8 as usize];
        assert_eq!(at(0), 0);
        assert_eq!(at(-100), 0, "hard_swish(-5) = 0");
        assert_eq!(at(100), 100, "hard_swish(5) = 5");
        // hard_swish(1.5) = 1.5 · 4.5 / 6 = 1.125: 22.5 quanta, one rounding off at most.
        assert!((22..=23).contains(&at(30)), "{}", at(30));
    }
}
