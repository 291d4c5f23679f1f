//! `MAX_POOL_2D` and `AVERAGE_POOL_2D` of float32 (`MaxPool`, `AvgPool`,
//! then the activation) and of int8 (`MaxPoolInt8`, `AvgPoolInt8`, the
//! activation a clamp), over one geometry.

use super::checks::{all_f32, int8_activation, need, need_typed, one_in_one_out, params};
use super::conv::{activation_op, float_activation, u16_of, window};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLitePoolParams, TfLiteType, kTfLiteBuiltinMaxPool2d};
use tensorplug_core::accelerator::{Capabilities, DType, OpKind, Window};
use tensorplug_core::quant::Rounding;
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::reference::int8::activation_range;

/// The NHWC shapes and window of a pool node: `[n, h, w, c]`, `[n, oh,
/// ow, c]`.
pub fn pool_geometry(
    p: &TfLitePoolParams,
    xt: &TensorView,
    ot: &TensorView,
) -> Result<([usize; 4], [usize; 4], Window), String> {
    let (&[n, h, wd, c], &[on, oh, ow, oc]) = (xt.dims.as_slice(), ot.dims.as_slice()) else {
        return Err(format!(
            "input {:?} / output {:?} are not NHWC",
            xt.dims, ot.dims
        ));
    };
    if (on, oc) != (n, c) {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    let size = [
        u16_of(p.filter_height, "filter height")?,
        u16_of(p.filter_width, "filter width")?,
    ];
    let stride = [
        u16_of(p.stride_height, "stride")?,
        u16_of(p.stride_width, "stride")?,
    ];
    let window = window(p.padding, size, stride, [1, 1], [h, wd], [oh, ow])?;
    Ok(([n, h, wd, c], [n, oh, ow, c], window))
}

/// `MAX_POOL_2D` or `AVERAGE_POOL_2D`, or why it stays on the CPU.
/// float32: the average over the taps inside the input, as TFLite's, then
/// the activation. int8: input and output of one scale and zero point
/// (TFLite requires it), the activation a clamp; the device's average
/// counts the taps inside the input, as TFLite's reference kernel does,
/// and rounds half away from zero.
pub fn pool(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_in_one_out(node)?;
    // SAFETY: a pool's builtin data is the runtime's TfLitePoolParams
    // (first fields mirrored).
    let p = unsafe { params::<TfLitePoolParams>(node, "pooling") }?;
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    let max = node.builtin_code == kTfLiteBuiltinMaxPool2d;
    let u4 = |d: [usize; 4]| d.map(|v| v as u64);
    if xt.dtype == TfLiteType::kTfLiteFloat32 {
        let act = float_activation(p.activation)?;
        all_f32(&[&xt, &ot])?;
        let (x_dims, out_dims, window) = pool_geometry(&p, &xt, &ot)?;
        let kind = match max {
            true => OpKind::MaxPool(window),
            false => OpKind::AvgPool(window),
        };
        need(caps, kind)?;
        if let Some(op) = activation_op(act) {
            need(caps, OpKind::Unary(op))?;
        }
        return Ok(DeviceOp::PoolF32 {
            x,
            out,
            kind,
            x_dims: u4(x_dims),
            out_dims: u4(out_dims),
            activation: act,
        });
    }
    let act = int8_activation(p.activation)?;
    if let Some(t) = [&xt, &ot]
        .into_iter()
        .find(|t| t.dtype != TfLiteType::kTfLiteInt8)
    {
        return Err(format!(
            "tensor {} is {:?}: the device's pools are float32 or int8",
            t.index, t.dtype
        ));
    }
    if (xt.scale, xt.zero_point) != (ot.scale, ot.zero_point) {
        return Err(format!(
            "input and output quantization differ ({} {} / {} {})",
            xt.scale, xt.zero_point, ot.scale, ot.zero_point
        ));
    }
    let (x_dims, out_dims, window) = pool_geometry(&p, &xt, &ot)?;
    let kind = match max {
        true => OpKind::MaxPoolInt8(window),
        false => OpKind::AvgPoolInt8(window),
    };
    need_typed(caps, kind, DType::I8)?;
    let (min, max) = activation_range(act, ot.scale, ot.zero_point);
    let header = QuantHeader {
        zero_points: [xt.zero_point, 0],
        output_zero_point: ot.zero_point,
        min,
        max,
        // A pool compares or averages, never requantizes: the field is unread.
        rounding: Rounding::Double,
        channels: 0,
    };
    Ok(DeviceOp::PoolInt8 {
        x,
        out,
        kind,
        x_dims: u4(x_dims),
        out_dims: u4(out_dims),
        block: header.words().to_vec(),
    })
}
