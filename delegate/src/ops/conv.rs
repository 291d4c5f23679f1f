//! `CONV_2D` and `DEPTHWISE_CONV_2D` in either element type: what they
//! share (their parameters, NHWC shapes, TFLite's padding resolved into
//! the device's window, the weights in the device's layout), then the
//! float32 convolutions and the int8 ones, which add a quantization block.

use super::checks::{int8_activation, need, need_typed, params};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{
    TfLiteConvParams, TfLiteDepthwiseConvParams, TfLiteFusedActivation, TfLitePadding, TfLiteType,
    kTfLiteBuiltinDepthwiseConv2d, kTfLiteOptionalTensor,
};
use tensorplug_core::accelerator::{Activation, Capabilities, DType, OpKind, Unary, Window};
use tensorplug_core::quant::Rounding;

/// How TFLite's reference int8 convolutions requantize: twice (TF 2.21,
/// `docs/device-numerics.md`; the test measures every runtime it runs).
const CONV_ROUNDING: Rounding = Rounding::Double;

/// A convolution node, checked: its tensors, shapes, window and
/// activation.
pub struct Conv {
    pub depthwise: bool,
    pub x: TensorView,
    pub w: TensorView,
    pub bias: Option<TensorView>,
    pub out: TensorView,
    pub activation: TfLiteFusedActivation,
    /// `[n, h, w, c]` and `[n, oh, ow, oc]`.
    pub x_dims: [usize; 4],
    pub out_dims: [usize; 4],
    /// The weights' dims in the device's layout: `[kh, kw, c, oc]`, or
    /// `[kh, kw, c, m]` for a depthwise one.
    pub filter_dims: [usize; 4],
    pub window: Window,
}

impl Conv {
    /// The node's parameters, tensors and geometry; the element types are
    /// the caller's to check.
    pub fn of(
        node: &NodeView,
        tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    ) -> Result<Self, String> {
        let depthwise = node.builtin_code == kTfLiteBuiltinDepthwiseConv2d;
        let ([x, w, rest @ ..], [out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
            return Err("expected 2 or 3 inputs and 1 output".into());
        };
        let bias = match rest {
            [] => None,
            [b] if *b == kTfLiteOptionalTensor => None,
            [b] => Some(tensor(*b)?),
            _ => return Err(format!("{} inputs, expected 2 or 3", node.inputs.len())),
        };
        // SAFETY: a CONV_2D's builtin data is the runtime's TfLiteConvParams
        // (first fields mirrored), a DEPTHWISE_CONV_2D's TfLiteDepthwiseConvParams.
        let (padding, stride, dilation, activation, multiplier) = unsafe {
            if depthwise {
                let p = params::<TfLiteDepthwiseConvParams>(node, "convolution")?;
                let d = [p.dilation_height_factor, p.dilation_width_factor];
                let s = [p.stride_height, p.stride_width];
                (p.padding, s, d, p.activation, p.depth_multiplier)
            } else {
                let p = params::<TfLiteConvParams>(node, "convolution")?;
                let d = [p.dilation_height_factor, p.dilation_width_factor];
                let s = [p.stride_height, p.stride_width];
                (p.padding, s, d, p.activation, 1)
            }
        };
        let (xt, wt, ot) = (tensor(*x)?, tensor(*w)?, tensor(*out)?);
        if !wt.constant || bias.as_ref().is_some_and(|b| !b.constant) || wt.data.is_null() {
            return Err("weights or bias are not constant tensors".into());
        }
        let (&[n, h, wd, c], &[on, oh, ow, oc]) = (xt.dims.as_slice(), ot.dims.as_slice()) else {
            return Err(format!(
                "input {:?} / output {:?} are not NHWC",
                xt.dims, ot.dims
            ));
        };
        let (kh, kw, filter_dims) = if depthwise {
            let &[1, kh, kw, cm] = wt.dims.as_slice() else {
                return Err(format!(
                    "depthwise weights {:?}, expected [1, kh, kw, c·m]",
                    wt.dims
                ));
            };
            let m = usize::try_from(multiplier).map_err(|_| "depth multiplier")?;
            if c == 0 || cm != c * m || oc != cm {
                return Err(format!(
                    "depthwise shapes: input channels {c}, weights {cm}, output {oc}, multiplier {m}"
                ));
            }
            (kh, kw, [kh, kw, c, m])
        } else {
            let &[foc, kh, kw, fc] = wt.dims.as_slice() else {
                return Err(format!("weights {:?}, expected [oc, kh, kw, c]", wt.dims));
            };
            if foc != oc || fc != c {
                return Err(format!(
                    "weights {:?} for input channels {c}, output {oc}",
                    wt.dims
                ));
            }
            (kh, kw, [kh, kw, c, oc])
        };
        if on != n {
            return Err(format!("output batch {on}, input batch {n}"));
        }
        let stride = [u16_of(stride[0], "stride")?, u16_of(stride[1], "stride")?];
        let dilation = [
            u16_of(dilation[0], "dilation")?,
            u16_of(dilation[1], "dilation")?,
        ];
        let size = [
            u16::try_from(kh).map_err(|_| "filter height")?,
            u16::try_from(kw).map_err(|_| "filter width")?,
        ];
        let window = window(padding, size, stride, dilation, [h, wd], [oh, ow])?;
        Ok(Self {
            depthwise,
            x: xt,
            w: wt,
            bias,
            out: ot,
            activation,
            x_dims: [n, h, wd, c],
            out_dims: [n, oh, ow, oc],
            filter_dims,
            window,
        })
    }

    /// The weights in the device's layout, of `elem`-byte elements:
    /// TFLite's OHWI transposed to HWIO; a depthwise one's `[1, kh, kw,
    /// c·m]` is already the device's `[kh, kw, c, m]`.
    pub fn device_filter(&self, elem: usize) -> Result<Vec<u8>, String> {
        // SAFETY: the runtime's constant weights of `bytes` bytes, checked
        // non-null in `of`.
        let raw = unsafe { core::slice::from_raw_parts(self.w.data, self.w.bytes) };
        let [kh, kw, c, oc] = self.filter_dims;
        if raw.len() != kh * kw * c * oc * elem {
            return Err(format!("weights hold {} bytes", raw.len()));
        }
        if self.depthwise {
            return Ok(raw.to_vec());
        }
        let mut hwio = vec![0u8; raw.len()];
        for o in 0..oc {
            for y in 0..kh {
                for x in 0..kw {
                    for i in 0..c {
                        let to = (((y * kw + x) * c + i) * oc + o) * elem;
                        let from = (((o * kh + y) * kw + x) * c + i) * elem;
                        hwio[to..to + elem].copy_from_slice(&raw[from..from + elem]);
                    }
                }
            }
        }
        Ok(hwio)
    }

    fn u64s(d: [usize; 4]) -> [u64; 4] {
        d.map(|v| v as u64)
    }
}

/// float32 `CONV_2D` and `DEPTHWISE_CONV_2D` with a fused activation of
/// none, RELU or RELU6: the device's `FusedConv2D` (bias and activation in
/// one launch), or `DepthwiseConv2D`, `BiasAdd` and the activation.
pub fn conv_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let conv = Conv::of(node, tensor)?;
    for t in [&conv.x, &conv.w, &conv.out].into_iter().chain(&conv.bias) {
        if t.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(format!("tensor {} is {:?}, not float32", t.index, t.dtype));
        }
    }
    let act = float_activation(conv.activation)?;
    let oc = conv.out_dims[3];
    let bias = match &conv.bias {
        // `FusedConv2D` takes a bias: zeros.
        None if !conv.depthwise => Some(vec![0u8; 4 * oc]),
        None => None,
        Some(b) if b.dims == [oc] && !b.data.is_null() && b.bytes == 4 * oc => {
            // SAFETY: the runtime's constant float32 bias of `oc` elements.
            Some(unsafe { core::slice::from_raw_parts(b.data, b.bytes) }.to_vec())
        }
        Some(b) => return Err(format!("bias {:?}, expected [{oc}] float32", b.dims)),
    };
    let kind = if conv.depthwise {
        if bias.is_some() {
            need(caps, OpKind::BiasAdd)?;
        }
        if let Some(op) = activation_op(act) {
            need(caps, OpKind::Unary(op))?;
        }
        OpKind::DepthwiseConv2D(conv.window)
    } else {
        OpKind::FusedConv2D(conv.window, act)
    };
    need(caps, kind)?;
    Ok(DeviceOp::ConvF32 {
        x: conv.x.index,
        out: conv.out.index,
        kind,
        x_dims: Conv::u64s(conv.x_dims),
        filter_dims: Conv::u64s(conv.filter_dims),
        out_dims: Conv::u64s(conv.out_dims),
        filter: conv.device_filter(4)?,
        bias,
        activation: act,
    })
}

/// int8 CONV_2D / DEPTHWISE_CONV_2D: NHWC int8 input and output,
/// constant int8 weights (per-channel or per-tensor, zero point 0),
/// optional constant int32 bias; the geometry as [`Conv`] checks it.
pub fn conv_int8(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let conv = Conv::of(node, tensor)?;
    let (xt, wt, ot) = (&conv.x, &conv.w, &conv.out);
    if xt.dtype == TfLiteType::kTfLiteFloat32 {
        return conv_f32(node, tensor, caps);
    }
    if xt.dtype != TfLiteType::kTfLiteInt8 {
        return Err(format!(
            "tensor {} is {:?}: the device's convolutions are int8 or float32",
            xt.index, xt.dtype
        ));
    }
    for (t, want) in [(wt, TfLiteType::kTfLiteInt8), (ot, TfLiteType::kTfLiteInt8)]
        .into_iter()
        .chain(conv.bias.as_ref().map(|b| (b, TfLiteType::kTfLiteInt32)))
    {
        if t.dtype != want {
            return Err(format!(
                "tensor {} is {:?}, expected {want:?}",
                t.index, t.dtype
            ));
        }
    }
    let act = int8_activation(conv.activation)?;
    // The output channel's axis: 0 of [oc, kh, kw, c], 3 of [1, kh, kw, c·m].
    let axis = if conv.depthwise { 3 } else { 0 };
    let along = (axis, conv.out_dims[3]);
    let block =
        super::weights::weights_block(xt, wt, conv.bias.as_ref(), ot, act, along, CONV_ROUNDING)?;
    let kind = if conv.depthwise {
        OpKind::DepthwiseConv2DInt8(conv.window)
    } else {
        OpKind::Conv2DInt8(conv.window)
    };
    need_typed(caps, kind, DType::I8)?;
    let u4 = |d: [usize; 4]| d.map(|v| v as u64);
    Ok(DeviceOp::ConvInt8 {
        x: xt.index,
        out: ot.index,
        kind,
        x_dims: u4(conv.x_dims),
        filter_dims: u4(conv.filter_dims),
        out_dims: u4(conv.out_dims),
        filter: conv.device_filter(1)?,
        block,
    })
}

/// A float32 op's fused activation: none, RELU or RELU6.
pub fn float_activation(act: TfLiteFusedActivation) -> Result<Activation, String> {
    match act {
        TfLiteFusedActivation::kTfLiteActNone => Ok(Activation::None),
        TfLiteFusedActivation::kTfLiteActRelu => Ok(Activation::Relu),
        TfLiteFusedActivation::kTfLiteActRelu6 => Ok(Activation::Relu6),
        other => Err(format!("fused activation {other:?} (none, RELU or RELU6)")),
    }
}

/// The device's element-wise op of an activation (none for `None`).
pub fn activation_op(act: Activation) -> Option<Unary> {
    match act {
        Activation::None => None,
        Activation::Relu => Some(Unary::RELU),
        Activation::Relu6 => Some(Unary::RELU6),
    }
}

/// A positive TFLite parameter as the device's `u16`.
pub fn u16_of(v: i32, what: &str) -> Result<u16, String> {
    u16::try_from(v)
        .ok()
        .filter(|&v| v >= 1)
        .ok_or(format!("{what} {v}"))
}

/// The device's window for TFLite's `padding` (SAME pads as TFLite does:
/// the odd row or column after), checked to give the output's `[oh, ow]`
/// from the input's `[h, w]`.
pub fn window(
    padding: TfLitePadding,
    size: [u16; 2],
    stride: [u16; 2],
    dilation: [u16; 2],
    input: [usize; 2],
    output: [usize; 2],
) -> Result<Window, String> {
    let mut pad = [0u16; 4];
    match padding {
        TfLitePadding::kTfLitePaddingValid => {}
        TfLitePadding::kTfLitePaddingSame => {
            for axis in 0..2 {
                let span = usize::from(dilation[axis]) * (usize::from(size[axis]) - 1) + 1;
                let need = (output[axis].max(1) - 1) * usize::from(stride[axis]) + span;
                let total =
                    u16::try_from(need.saturating_sub(input[axis])).map_err(|_| "padding")?;
                pad[2 * axis] = total / 2;
                pad[2 * axis + 1] = total - total / 2;
            }
        }
        other => return Err(format!("padding {other:?}")),
    }
    let window = Window {
        size,
        stride,
        dilation,
        pad,
    };
    let hw = window
        .output_hw(input[0] as u64, input[1] as u64)
        .map_err(|e| format!("window {window:?}: {e:?}"))?;
    if hw != [output[0] as u64, output[1] as u64] {
        return Err(format!(
            "the window gives {hw:?}, the output is {}×{}",
            output[0], output[1]
        ));
    }
    Ok(window)
}
