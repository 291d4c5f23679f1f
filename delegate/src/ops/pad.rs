//! int8 `PAD` (and `PADV2` with the zero point as its value) of the
//! height and width of an NHWC tensor, as the device's
//! `DepthwiseConv2DInt8`: a 1×1 filter of ones with the padding as the
//! window's, requantized by 1 (`2³⁰ · 2¹`, exact in both roundings). A
//! padded tap reads `x − zp = 0`, so it writes the zero point, which is
//! what TFLite pads an int8 tensor with; the others are copied unchanged.
//! float32 `PAD` (value +0.0) is the f32 `DepthwiseConv2D` of the same
//! window: `x · 1` is `x`, and a padded tap writes +0.0.

use super::checks::{int8_per_tensor, need_typed};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLiteType, kTfLiteBuiltinPadv2};
use tensorplug_core::accelerator::{Activation, Capabilities, DType, OpKind, Window};
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::quant::{Requantize, Rounding};

/// `PAD` or `PADV2` of int8 or float32, or why it stays on the CPU.
pub fn pad(
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
    if xt.dtype == TfLiteType::kTfLiteFloat32 {
        return pad_f32(&xt, &pt, value.map(tensor).transpose()?.as_ref(), &ot, caps);
    }
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
    let ([n, h, w, c], [oh, ow], window) = pad_window(&xt, &pt, &ot)?;
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

/// float32 `PAD`, or `PADV2` of +0.0: the f32 depthwise 1×1 of ones.
fn pad_f32(
    xt: &TensorView,
    pt: &TensorView,
    value: Option<&TensorView>,
    ot: &TensorView,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    if ot.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(format!("float32 input, {:?} output", ot.dtype));
    }
    if let Some(vt) = value {
        if !vt.constant || vt.data.is_null() || vt.bytes != 4 || vt.dtype != ot.dtype {
            return Err("the pad value is not a constant float32 scalar".into());
        }
        // SAFETY: the runtime's read-only 4 bytes.
        let bits = unsafe { core::ptr::read_unaligned(vt.data.cast::<u32>()) };
        if bits != 0 {
            return Err(format!(
                "pad value {} (the device pads +0.0)",
                f32::from_bits(bits)
            ));
        }
    }
    let ([n, h, w, c], [oh, ow], window) = pad_window(xt, pt, ot)?;
    let kind = OpKind::DepthwiseConv2D(window);
    need_typed(caps, kind, DType::F32)?;
    let u = |d: [usize; 4]| d.map(|v| v as u64);
    Ok(DeviceOp::ConvF32 {
        x: xt.index,
        out: ot.index,
        kind,
        x_dims: u([n, h, w, c]),
        filter_dims: u([1, 1, c, 1]),
        out_dims: u([n, oh, ow, c]),
        filter: 1f32.to_le_bytes().repeat(c),
        bias: None,
        activation: Activation::None,
    })
}

/// The NHWC input's dims, the output's height and width, and the 1×1
/// window whose padding is the node's (height and width only).
fn pad_window(
    xt: &TensorView,
    pt: &TensorView,
    ot: &TensorView,
) -> Result<([usize; 4], [usize; 2], Window), String> {
    let p = paddings_of(pt)?;
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
    Ok(([n, h, w, c], [oh, ow], window))
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
