//! int8 `PAD` (and `PADV2` with the zero point as its value) of the
//! height and width of an NHWC tensor, as the device's
//! `DepthwiseConv2DInt8`: a 1×1 filter of ones with the padding as the
//! window's, requantized by 1 (`2³⁰ · 2¹`, exact in both roundings). A
//! padded tap reads `x − zp = 0`, so it writes the zero point, which is
//! what TFLite pads an int8 tensor with; the others are copied unchanged.

use super::checks::{int8_per_tensor, need_typed};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLiteType, kTfLiteBuiltinPadv2};
use tensorplug_core::accelerator::{Capabilities, DType, OpKind, Window};
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::quant::{Requantize, Rounding};

/// `PAD` or `PADV2` of int8, or why it stays on the CPU.
pub fn pad_int8(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, paddings, value, out) = match (node.inputs.as_slice(), node.outputs.as_slice()) {
        (&[x, p], &[out]) => (x, p, None, out),
        (&[x, p, v], &[out]) if node.builtin_code == kTfLiteBuiltinPadv2 => (x, p, Some(v), out),
        _ => return Err("expected 2 inputs (3 for PADV2) and 1 output".into()),
    };
    let (xt, pt, ot) = (tensor(x)?, tensor(paddings)?, tensor(out)?);
    int8_per_tensor(&[&xt, &ot], "PAD")?;
    if (xt.scale, xt.zero_point) != (ot.scale, ot.zero_point) {
        return Err("input and output quantization differ".into());
    }
    if let Some(v) = value {
        let vt = tensor(v)?;
        if !vt.constant || vt.data.is_null() || vt.bytes != 1 || vt.dtype != TfLiteType::kTfLiteInt8
        {
            return Err("the pad value is not a constant int8 scalar".into());
        }
        // SAFETY: the runtime's read-only byte.
        let byte = unsafe { *vt.data } as i8;
        if i32::from(byte) != ot.zero_point {
            return Err(format!(
                "pad value {byte}, not the zero point {}",
                ot.zero_point
            ));
        }
    }
    let p = paddings_of(&pt)?;
    let (&[n, h, w, c], &[on, oh, ow, oc]) = (xt.dims.as_slice(), ot.dims.as_slice()) else {
        return Err(format!("input {:?} is not NHWC", xt.dims));
    };
    if p[0] != [0, 0] || p[3] != [0, 0] {
        return Err(format!(
            "paddings {p:?}: the device pads height and width only"
        ));
    }
    let u16_of = |v: i64| u16::try_from(v).map_err(|_| format!("padding {v}"));
    let window = Window {
        pad: [
            u16_of(p[1][0])?,
            u16_of(p[1][1])?,
            u16_of(p[2][0])?,
            u16_of(p[2][1])?,
        ],
        ..Window::new([1, 1])
    };
    let hw = window
        .output_hw(h as u64, w as u64)
        .map_err(|e| format!("window {window:?}: {e:?}"))?;
    if (on, oc) != (n, c) || hw != [oh as u64, ow as u64] {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    let kind = OpKind::DepthwiseConv2DInt8(window);
    need_typed(caps, kind, DType::I8)?;
    let one = Requantize::from_real(1.0).map_err(|e| format!("{e:?}"))?;
    let header = QuantHeader {
        zero_points: [xt.zero_point, 0],
        output_zero_point: ot.zero_point,
        min: -128,
        max: 127,
        rounding: Rounding::Double,
        channels: u32::try_from(c).map_err(|_| "too many channels")?,
    };
    let mut block = header.words().to_vec();
    block.extend(std::iter::repeat_n(0, c));
    block.extend(std::iter::repeat_n(one.multiplier, c));
    block.extend(std::iter::repeat_n(i32::from(one.shift), c));
    let u = |d: [usize; 4]| d.map(|v| v as u64);
    Ok(DeviceOp::ConvInt8 {
        x,
        out,
        kind,
        x_dims: u([n, h, w, c]),
        filter_dims: u([1, 1, c, 1]),
        out_dims: u([n, oh, ow, c]),
        filter: vec![1; c],
        block,
    })
}

/// The constant `[4, 2]` paddings (int32 or int64), as `[before, after]`
/// per axis, each ≥ 0.
fn paddings_of(pt: &TensorView) -> Result<[[i64; 2]; 4], String> {
    let width = match pt.dtype {
        TfLiteType::kTfLiteInt32 => 4,
        TfLiteType::kTfLiteInt64 => 8,
        other => return Err(format!("paddings of {other:?}")),
    };
    if !pt.constant || pt.data.is_null() || pt.dims != [4, 2] || pt.bytes != 8 * width {
        return Err(format!(
            "paddings {:?}: not a constant [4, 2] tensor",
            pt.dims
        ));
    }
    // SAFETY: the runtime's read-only buffer of `bytes` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(pt.data, pt.bytes) };
    let mut p = [[0i64; 2]; 4];
    for (i, chunk) in bytes.chunks_exact(width).enumerate() {
        let mut word = [0u8; 8];
        word[..width].copy_from_slice(chunk);
        let v = match width {
            4 => i64::from(i32::from_le_bytes([word[0], word[1], word[2], word[3]])),
            _ => i64::from_le_bytes(word),
        };
        if v < 0 {
            return Err(format!("negative padding {v}"));
        }
        p[i / 2][i % 2] = v;
    }
    Ok(p)
}
