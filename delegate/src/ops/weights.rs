//! The quantization block of an int8 op with weights (`FULLY_CONNECTED`,
//! `CONV_2D`, `DEPTHWISE_CONV_2D`), as TFLite's `Prepare` builds it: per
//! output channel the bias and the multiplier of `input_scale ·
//! weight_scale / output_scale` (in double, `GetQuantizedConvolutionMultipler`
//! or per channel `PopulateConvolutionQuantizationParams`), the fused
//! activation as the clamp.

use crate::graph::TensorView;
use tensorplug_core::accelerator::Activation;
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::quant::{Requantize, Rounding};
use tensorplug_core::reference::int8::activation_range;

/// The block for `channels` output channels whose weights `wt` are
/// quantized per tensor or along `axis`, with zero point 0; `bias` int32
/// of `[channels]` or none.
pub fn weights_block(
    xt: &TensorView,
    wt: &TensorView,
    bias: Option<&TensorView>,
    ot: &TensorView,
    act: Activation,
    (axis, channels): (i32, usize),
    rounding: Rounding,
) -> Result<Vec<i32>, String> {
    // (scale, zero point) of each output channel's weights.
    let weights: Vec<(f32, i32)> = if wt.quant_channels > 1 {
        if wt.quant_axis != axis {
            return Err(format!(
                "weight scales along axis {}, expected {axis}",
                wt.quant_axis
            ));
        }
        let per_channel = wt
            .channels
            .clone()
            .map_err(|why| format!("per-channel weight scales: {why}"))?;
        if per_channel.len() != channels {
            return Err(format!(
                "{} weight scales for {channels} output channels",
                per_channel.len()
            ));
        }
        per_channel
    } else {
        vec![(wt.scale, wt.zero_point); channels]
    };
    if let Some((_, zp)) = weights.iter().find(|(_, zp)| *zp != 0) {
        return Err(format!("weights zero point {zp}, expected 0"));
    }
    let bias: Vec<i32> = match bias {
        None => vec![0; channels],
        Some(b) if b.dims == [channels] && !b.data.is_null() && b.bytes == 4 * channels => {
            // SAFETY: the runtime's constant int32 bias of `channels` elements.
            unsafe { core::slice::from_raw_parts(b.data.cast::<i32>(), channels) }.to_vec()
        }
        Some(b) => return Err(format!("bias {:?}, expected [{channels}] int32", b.dims)),
    };
    let requantize = weights
        .iter()
        .map(|&(w_scale, _)| {
            let real = f64::from(xt.scale) * f64::from(w_scale) / f64::from(ot.scale);
            Requantize::from_real(real).map_err(|e| format!("multiplier {real}: {e:?}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (min, max) = activation_range(act, ot.scale, ot.zero_point);
    let header = QuantHeader {
        zero_points: [xt.zero_point, 0],
        output_zero_point: ot.zero_point,
        min,
        max,
        rounding,
        channels: u32::try_from(channels).map_err(|_| "too many channels")?,
    };
    let mut block = header.words().to_vec();
    block.extend(&bias);
    block.extend(requantize.iter().map(|r| r.multiplier));
    block.extend(requantize.iter().map(|r| i32::from(r.shift)));
    Ok(block)
}
