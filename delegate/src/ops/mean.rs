//! int8 `MEAN` as TFLite's reference kernel computes it when its
//! quantization differs from the input's (`QuantizedMeanOrSum`, the path
//! of the converter's `GlobalAveragePooling2D`, with or without
//! `keepdims`: the same arithmetic, measured): the int32 sum of `x − zp_in` over the `n`
//! reduced values, requantized by `s_in / s_out` with `1/n` folded into
//! the multiplier (`(m << log2 n) / n`, shift less `log2 n`), plus
//! `zp_out`, clamped. Measured bit for bit on TF 2.15 and 2.21, whose
//! reference kernel rounds twice here.
//!
//! The device runs it as one `MatMulInt8`: a block-diagonal matrix of int8
//! ones (zero point 0) times `x` viewed as `[outer·reduced, inner]` sums
//! the raw values, and the block's per-channel bias `−zp_in · n` makes them
//! `Σ (x − zp_in)`, which the block's requantization then scales.

use super::checks::{int8_per_tensor, need_typed, params};
use super::plan::{DeviceOp, MeanInt8};
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLiteReducerParams, TfLiteType};
use tensorplug_core::accelerator::{DType, OpKind};
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::quant::{Requantize, Rounding};

/// How TFLite's reference `MEAN` requantizes: twice, on TF 2.15.1 and
/// 2.21.0 (measured; ai-edge-litert by the delegate's test).
const MEAN_ROUNDING: Rounding = Rounding::Double;

/// Past this many values `−zp_in · n` and the sum leave int32's range.
const MAX_REDUCED: usize = 1 << 20;

/// The ones matrix is `outer × outer·reduced` bytes: kept small.
const MAX_ONES: usize = 1 << 20;

/// The op the device runs.
pub const KIND: OpKind = OpKind::MatMulInt8 { transpose_b: false };

/// int8 `MEAN` over constant axes that are one run of adjacent axes, or
/// why it stays on the CPU.
pub fn mean_int8(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &tensorplug_core::accelerator::Capabilities,
) -> Result<DeviceOp, String> {
    let (&[x, axes], &[out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    // SAFETY: a reduction's builtin data is the runtime's TfLiteReducerParams.
    let keep_dims = unsafe { params::<TfLiteReducerParams>(node, "reducer") }?.keep_dims;
    let (xt, at, ot) = (tensor(x)?, tensor(axes)?, tensor(out)?);
    int8_per_tensor(&[&xt, &ot], "MEAN")?;
    let reduced_axes = axes_of(&at, xt.dims.len())?;
    if (xt.scale, xt.zero_point) == (ot.scale, ot.zero_point) {
        return Err(
            "input and output share their quantization: TFLite then divides in integers, \
             which the device does not compose"
                .into(),
        );
    }
    let (first, last) = match (reduced_axes.first(), reduced_axes.last()) {
        (Some(&f), Some(&l)) if l - f + 1 == reduced_axes.len() => (f, l),
        _ => {
            return Err(format!(
                "axes {reduced_axes:?}: the device reduces one run of adjacent axes"
            ));
        }
    };
    let dims = &xt.dims;
    let outer: usize = dims[..first].iter().product();
    let reduced: usize = dims[first..=last].iter().product();
    let inner: usize = dims[last + 1..].iter().product();
    let want: Vec<usize> = dims
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (first..=last).contains(&i) {
            true if keep_dims => Some(1),
            true => None,
            false => Some(d),
        })
        .collect();
    if ot.dims != want {
        return Err(format!("output {:?} for input {:?}", ot.dims, dims));
    }
    if reduced == 0 || outer * inner == 0 {
        return Err(format!("an empty MEAN ({dims:?})"));
    }
    if reduced > MAX_REDUCED {
        return Err(format!("{reduced} values per mean (at most {MAX_REDUCED})"));
    }
    if outer * outer * reduced > MAX_ONES {
        return Err(format!(
            "{outer} means of {reduced} values: its matrix of ones would be too large"
        ));
    }
    if !(xt.scale.is_finite() && xt.scale > 0.0 && ot.scale.is_finite() && ot.scale > 0.0) {
        return Err(format!("scales {} and {}", xt.scale, ot.scale));
    }
    need_typed(caps, KIND, DType::I8)?;
    let requantize = mean_multiplier(xt.scale, ot.scale, reduced)?;
    let channels = u32::try_from(inner).map_err(|_| "too many channels")?;
    let header = QuantHeader {
        zero_points: [0, 0],
        output_zero_point: ot.zero_point,
        min: -128,
        max: 127,
        rounding: MEAN_ROUNDING,
        channels,
    };
    let mut block = header.words().to_vec();
    block.extend(std::iter::repeat_n(-xt.zero_point * reduced as i32, inner));
    block.extend(std::iter::repeat_n(requantize.multiplier, inner));
    block.extend(std::iter::repeat_n(i32::from(requantize.shift), inner));
    Ok(DeviceOp::MeanInt8(MeanInt8 {
        x,
        out,
        outer: outer as u64,
        reduced: reduced as u64,
        inner: inner as u64,
        block,
    }))
}

/// TFLite's mean multiplier: `QuantizeMultiplier(s_in / s_out)` in
/// double, then `1/n` folded in (`reference_ops::QuantizedMeanOrSum`).
fn mean_multiplier(s_in: f32, s_out: f32, n: usize) -> Result<Requantize, String> {
    let real = f64::from(s_in) / f64::from(s_out);
    let q = Requantize::from_real(real).map_err(|e| format!("multiplier {real}: {e:?}"))?;
    let shift = (n.ilog2() as i32).min(32).min(31 + i32::from(q.shift));
    let multiplier = (i64::from(q.multiplier) << shift) / n as i64;
    Requantize::new(multiplier as i32, i32::from(q.shift) - shift)
        .map_err(|e| format!("the mean's multiplier: {e:?}"))
}

/// The constant axis tensor, each axis once, in `0..rank`, sorted.
pub(super) fn axes_of(at: &TensorView, rank: usize) -> Result<Vec<usize>, String> {
    if !at.constant || at.data.is_null() || at.dtype != TfLiteType::kTfLiteInt32 {
        return Err("the axes are not a constant int32 tensor".into());
    }
    // SAFETY: the runtime's read-only buffer of `bytes` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(at.data, at.bytes) };
    let mut axes = Vec::new();
    for word in bytes.chunks_exact(4) {
        let a = i32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        let a = if a < 0 { a + rank as i32 } else { a };
        match usize::try_from(a) {
            Ok(a) if a < rank => axes.push(a),
            _ => return Err(format!("axis {a} of a rank-{rank} tensor")),
        }
    }
    axes.sort_unstable();
    axes.dedup();
    if axes.is_empty() {
        return Err("no axes".into());
    }
    Ok(axes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Means TF 2.21's reference `MEAN` wrote (a 7×7 `GlobalAveragePooling2D`
    /// of a converter's int8 convnet: scales 0.009112174 → 0.0019096558,
    /// zero points −128 → −128): (raw sum, output).
    const MEASURED: [(i32, i32); 4] = [(-3783, 115), (-4061, 87), (-4063, 87), (-3935, 100)];

    #[test]
    fn the_folded_multiplier_gives_tflite_s_means() {
        let (s_in, s_out, zp_in, zp_out, n) =
            (0.009_112_174f32, 0.001_909_655_8f32, -128, -128, 49);
        let r = mean_multiplier(s_in, s_out, n).unwrap();
        for (sum, want) in MEASURED {
            let acc = sum - zp_in * n as i32;
            let got = (r.apply(acc, MEAN_ROUNDING) + zp_out).clamp(-128, 127);
            assert_eq!(got, want, "sum {sum}");
        }
    }

    #[test]
    fn the_ones_matrix_sums_each_batch_s_own_rows() {
        let m = MeanInt8 {
            x: 0,
            out: 1,
            outer: 2,
            reduced: 3,
            inner: 4,
            block: Vec::new(),
        };
        assert_eq!(m.ones(), [1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1]);
    }
}
