//! int8 `SOFTMAX` on the device's `SoftmaxInt8`: TFLite's reference
//! kernel in gemmlowp's fixed point (`core::quant::softmax`), bit for bit.

use super::checks::{int8_per_tensor, need_typed, one_in_one_out, params};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::TfLiteSoftmaxParams;
use tensorplug_core::accelerator::{Capabilities, DType, OpKind};
use tensorplug_core::quant::Rounding;
use tensorplug_core::quant::block;
use tensorplug_core::quant::softmax::SoftmaxQuant;

/// How TFLite's reference int8 `SOFTMAX` scales its input
/// (`MultiplyByQuantizedMultiplierGreaterThanOne`): the double-rounding
/// build, as `MEAN`'s and the convolutions' (measured by the test).
const SOFTMAX_ROUNDING: Rounding = Rounding::Double;

/// int8 `SOFTMAX` of rows of the last axis, or why it stays on the CPU.
pub fn softmax_int8(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_in_one_out(node)?;
    // SAFETY: a softmax's builtin data is the runtime's TfLiteSoftmaxParams.
    let beta = unsafe { params::<TfLiteSoftmaxParams>(node, "softmax") }?.beta;
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    int8_per_tensor(&[&xt, &ot], "SOFTMAX")?;
    if xt.dims != ot.dims || xt.dims.is_empty() {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    if (ot.scale, ot.zero_point) != (1.0 / 256.0, -128) {
        return Err(format!(
            "output scale {} and zero point {}: TFLite's int8 SOFTMAX writes 1/256 and -128",
            ot.scale, ot.zero_point
        ));
    }
    let depth = *xt.dims.last().unwrap_or(&0);
    if depth == 0 || xt.bytes == 0 {
        return Err(format!("an empty SOFTMAX ({:?})", xt.dims));
    }
    let q = SoftmaxQuant::new(beta, xt.scale, SOFTMAX_ROUNDING).map_err(|e| {
        format!(
            "beta {beta} and input scale {}: {e:?} (TFLite's reference kernel refuses it too)",
            xt.scale
        )
    })?;
    need_typed(caps, OpKind::SoftmaxInt8, DType::I8)?;
    Ok(DeviceOp::SoftmaxInt8 {
        x,
        out,
        rows: (xt.bytes / depth) as u64,
        depth: depth as u64,
        block: block::softmax(&q).to_vec(),
    })
}
