//! Which nodes the device takes: each node's op, version, element types,
//! fused activation and shapes, checked against what the device declares
//! ([`Capabilities`]). The same function decides at partitioning and
//! rebuilds the plan in the kernel, so the two cannot disagree.

mod attention;
mod checks;
mod concat;
mod conv;
mod float;
mod lookup;
pub(crate) mod mean;
mod mul;
mod pad;
mod plan;
mod pool;
mod shape;
mod softmax;
mod weights;

pub use checks::op_name;
use checks::{all_f32, int8_activation, need, need_typed, one_in_one_out, params, shape};
pub use conv::activation_op;
pub use plan::{ConcatRows, DeviceOp, MeanInt8};

use crate::graph::{Graph, NodeView, TensorView};
use tensorplug_abi::tflite::{
    TfLiteAddParams, TfLiteFullyConnectedParams, TfLiteType, kTfLiteBuiltinAbs, kTfLiteBuiltinAdd,
    kTfLiteBuiltinAveragePool2d, kTfLiteBuiltinBatchMatmul, kTfLiteBuiltinConcatenation,
    kTfLiteBuiltinConv2d, kTfLiteBuiltinCumsum, kTfLiteBuiltinDepthwiseConv2d,
    kTfLiteBuiltinDequantize, kTfLiteBuiltinDiv, kTfLiteBuiltinExp, kTfLiteBuiltinFullyConnected,
    kTfLiteBuiltinGather, kTfLiteBuiltinHardSwish, kTfLiteBuiltinLeakyRelu, kTfLiteBuiltinLog,
    kTfLiteBuiltinLogistic, kTfLiteBuiltinMaxPool2d, kTfLiteBuiltinMaximum, kTfLiteBuiltinMean,
    kTfLiteBuiltinMinimum, kTfLiteBuiltinMul, kTfLiteBuiltinNeg, kTfLiteBuiltinPack,
    kTfLiteBuiltinPad, kTfLiteBuiltinPadv2, kTfLiteBuiltinQuantize, kTfLiteBuiltinReduceProd,
    kTfLiteBuiltinRelu, kTfLiteBuiltinRelu6, kTfLiteBuiltinReshape, kTfLiteBuiltinRsqrt,
    kTfLiteBuiltinShape, kTfLiteBuiltinSoftmax, kTfLiteBuiltinSqrt,
    kTfLiteBuiltinSquaredDifference, kTfLiteBuiltinStridedSlice, kTfLiteBuiltinSub,
    kTfLiteBuiltinTanh, kTfLiteBuiltinTranspose, kTfLiteOptionalTensor,
};
use tensorplug_core::accelerator::{
    Activation, Binary, Capabilities, DType, OpKind, Unary, trails,
};
use tensorplug_core::quant::Rounding;
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::reference::int8::AddQuant;

/// The ops the delegate can hand to a device, as the report names them.
pub const OP_SET: &str = "float32 FULLY_CONNECTED (activation none, RELU or RELU6), CONV_2D and \
                          DEPTHWISE_CONV_2D, MAX_POOL_2D and AVERAGE_POOL_2D, broadcasting ADD, \
                          SUB, MUL and DIV (activation none, RELU or RELU6), SQUARED_DIFFERENCE, \
                          MAXIMUM and MINIMUM, RELU, RELU6, LEAKY_RELU, LOGISTIC, TANH, RSQRT, \
                          SQRT, EXP, LOG, ABS, NEG, HARD_SWISH, SOFTMAX (beta 1), MEAN over \
                          one run of adjacent axes, CUMSUM over a constant axis, TRANSPOSE, \
                          BATCH_MATMUL of equal batch axes; int8 \
                          FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, \
                          AVERAGE_POOL_2D and ADD (one shape, or the smaller the larger's \
                          trailing axes; activation none, RELU or RELU6), \
                          MEAN over adjacent axes, SOFTMAX, LOGISTIC, TANH, HARD_SWISH, MUL (one \
                          shape, or one value or the last axis broadcast), PAD of height and \
                          width; float32 or int8 CONCATENATION (one quantization, activation \
                          none); QUANTIZE (float32 to int8) and DEQUANTIZE (int8 to float32), \
                          per tensor; RESHAPE of float32 or int8 to a shape known at prepare; \
                          SHAPE, and int32 STRIDED_SLICE of one axis, PACK along axis 0, \
                          GATHER, REDUCE_PROD and CONCATENATION of 1-D values, evaluated at \
                          prepare";

// The device's element-wise ops the delegate maps by name (found in the
// catalogue at compile time).
const SQRT: Unary = Unary::named("Sqrt");
const EXP: Unary = Unary::named("Exp");
const LOG: Unary = Unary::named("Log");
const ABS: Unary = Unary::named("Abs");
const MAXIMUM: Binary = Binary::named("Maximum");
const MINIMUM: Binary = Binary::named("Minimum");
const SQUARED_DIFFERENCE: Binary = Binary::named("SquaredDifference");

/// How TFLite's reference `ADD` requantizes: twice, on TF 2.15.1, TF
/// 2.21.0 and ai-edge-litert 2.3.0 (measured bit for bit by the test).
/// `FULLY_CONNECTED`'s rounding differs between runtimes: the option
/// `fc_rounding` (`docs/delegate.md`, "int8").
const ADD_ROUNDING: Rounding = Rounding::Double;

/// What the device does with `node`, or why it stays on the CPU.
#[allow(non_upper_case_globals)] // TFLite's C names
pub fn decide(
    graph: &Graph,
    node: &NodeView,
    caps: &Capabilities,
    fc_rounding: Rounding,
) -> Result<DeviceOp, String> {
    let tensor = |i: i32| graph.tensor(i);
    let producer = |t: i32| graph.producer(t);
    let src = shape::Source {
        tensor: &tensor,
        producer: &producer,
    };
    for &i in node.inputs.iter().chain(&node.outputs) {
        if i != kTfLiteOptionalTensor && tensor(i)?.dynamic {
            return Err(format!(
                "tensor {i} is dynamic: its shape is known only when the op before it runs"
            ));
        }
    }
    let first = match node.inputs.first() {
        Some(&i) if i != kTfLiteOptionalTensor => Some(tensor(i)?.dtype),
        _ => None,
    };
    let int8 = first == Some(TfLiteType::kTfLiteInt8);
    let int32 = first == Some(TfLiteType::kTfLiteInt32);
    match node.builtin_code {
        kTfLiteBuiltinFullyConnected => fully_connected(node, &tensor, caps, fc_rounding),
        kTfLiteBuiltinAdd if int8 => add_int8_node(node, &tensor, caps),
        kTfLiteBuiltinAdd => float::binary_f32(node, &tensor, caps, Binary::ADD),
        kTfLiteBuiltinSub => float::binary_f32(node, &tensor, caps, Binary::SUB),
        kTfLiteBuiltinDiv => float::binary_f32(node, &tensor, caps, Binary::DIV),
        kTfLiteBuiltinMul if int8 => mul::mul_int8(node, &tensor, caps),
        kTfLiteBuiltinMul => float::binary_f32(node, &tensor, caps, Binary::MUL),
        kTfLiteBuiltinConv2d | kTfLiteBuiltinDepthwiseConv2d => {
            conv::conv_int8(node, &tensor, caps)
        }
        kTfLiteBuiltinMaxPool2d | kTfLiteBuiltinAveragePool2d => pool::pool(node, &tensor, caps),
        kTfLiteBuiltinQuantize | kTfLiteBuiltinDequantize => requantize(node, &tensor, caps),
        kTfLiteBuiltinReshape => reshape(node, &src),
        kTfLiteBuiltinShape
        | kTfLiteBuiltinStridedSlice
        | kTfLiteBuiltinPack
        | kTfLiteBuiltinGather
        | kTfLiteBuiltinReduceProd => folded(&src, node),
        kTfLiteBuiltinConcatenation if int32 => folded(&src, node),
        kTfLiteBuiltinMean if int8 => mean::mean_int8(node, &tensor, caps),
        kTfLiteBuiltinMean => float::mean_f32(node, &tensor, caps),
        kTfLiteBuiltinSoftmax if int8 => softmax::softmax_int8(node, &tensor, caps),
        kTfLiteBuiltinSoftmax => float::softmax_f32(node, &tensor, caps),
        kTfLiteBuiltinPad | kTfLiteBuiltinPadv2 => pad::pad(node, &tensor, caps),
        kTfLiteBuiltinConcatenation => concat::concat(node, &tensor, caps),
        kTfLiteBuiltinLogistic | kTfLiteBuiltinTanh | kTfLiteBuiltinHardSwish if int8 => {
            lookup::lookup_int8(node, &tensor, caps)
        }
        kTfLiteBuiltinHardSwish => float::hard_swish_f32(node, &tensor, caps),
        kTfLiteBuiltinLogistic => float::unary_f32(node, &tensor, caps, Unary::SIGMOID),
        kTfLiteBuiltinTanh => float::unary_f32(node, &tensor, caps, Unary::TANH),
        kTfLiteBuiltinRelu => float::unary_f32(node, &tensor, caps, Unary::RELU),
        kTfLiteBuiltinRelu6 => float::unary_f32(node, &tensor, caps, Unary::RELU6),
        kTfLiteBuiltinLeakyRelu => float::leaky_relu_f32(node, &tensor, caps),
        kTfLiteBuiltinCumsum => float::cumsum_f32(node, &tensor, caps),
        kTfLiteBuiltinRsqrt => float::unary_f32(node, &tensor, caps, Unary::RSQRT),
        kTfLiteBuiltinSqrt => float::unary_f32(node, &tensor, caps, SQRT),
        kTfLiteBuiltinExp => float::unary_f32(node, &tensor, caps, EXP),
        kTfLiteBuiltinLog => float::unary_f32(node, &tensor, caps, LOG),
        kTfLiteBuiltinAbs => float::unary_f32(node, &tensor, caps, ABS),
        kTfLiteBuiltinNeg => float::neg_f32(node, &tensor, caps),
        kTfLiteBuiltinSquaredDifference | kTfLiteBuiltinMaximum | kTfLiteBuiltinMinimum => {
            let op = match node.builtin_code {
                kTfLiteBuiltinMaximum => MAXIMUM,
                kTfLiteBuiltinMinimum => MINIMUM,
                _ => SQUARED_DIFFERENCE,
            };
            float::binary_with(node, &tensor, caps, op, Activation::None)
        }
        kTfLiteBuiltinTranspose => attention::transpose_f32(node, &tensor, caps),
        kTfLiteBuiltinBatchMatmul => attention::batch_matmul_f32(node, &tensor, caps),
        code => Err(format!(
            "{} is not in the delegate's op set (the report's `op_set` lists it)",
            op_name(code)
        )),
    }
}

fn fully_connected(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
    fc_rounding: Rounding,
) -> Result<DeviceOp, String> {
    let [x, w, rest @ ..] = node.inputs.as_slice() else {
        return Err(format!("{} inputs, expected 2 or 3", node.inputs.len()));
    };
    let bias = match rest {
        [] => None,
        [b] if *b == kTfLiteOptionalTensor => None,
        [b] => Some(*b),
        _ => return Err(format!("{} inputs, expected 2 or 3", node.inputs.len())),
    };
    let [out] = node.outputs.as_slice() else {
        return Err(format!("{} outputs, expected 1", node.outputs.len()));
    };
    // SAFETY: a FULLY_CONNECTED node's builtin data is the runtime's
    // TfLiteFullyConnectedParams, whose first fields we mirror.
    let params = unsafe { params::<TfLiteFullyConnectedParams>(node, "FullyConnected") }?;
    if params.weights_format != 0 {
        return Err(format!(
            "weights format {} (only the default)",
            params.weights_format
        ));
    }
    let (xt, wt, ot) = (tensor(*x)?, tensor(*w)?, tensor(*out)?);
    let bt = bias.map(tensor).transpose()?;
    if xt.dtype == TfLiteType::kTfLiteInt8 {
        let act = int8_activation(params.activation)?;
        return fully_connected_int8(&xt, &wt, bt.as_ref(), &ot, act, caps, fc_rounding);
    }
    let activation = conv::float_activation(params.activation)?;
    let mut ts = vec![&xt, &wt, &ot];
    if let Some(bt) = &bt {
        ts.push(bt);
    }
    all_f32(&ts)?;
    if !wt.constant || bt.as_ref().is_some_and(|b| !b.constant) {
        return Err("weights or bias are not constant tensors".into());
    }
    let [n, k] = wt.dims[..] else {
        return Err(format!("weights of rank {}, expected 2", wt.dims.len()));
    };
    let elements: usize = xt.dims.iter().product();
    if k == 0 || !elements.is_multiple_of(k) {
        return Err(format!(
            "input {:?} does not flatten to rows of {k}",
            xt.dims
        ));
    }
    let m = elements / k;
    if ot.dims.iter().product::<usize>() != m * n {
        return Err(format!("output {:?} is not {m}×{n}", ot.dims));
    }
    if let Some(bt) = &bt
        && bt.dims != [n]
    {
        return Err(format!("bias {:?}, expected [{n}]", bt.dims));
    }
    // With a bias, `FusedMatMul` applies a ReLU itself; other activations
    // follow as their own launch.
    let relu = activation == Activation::Relu && bias.is_some();
    let kind = match bias {
        Some(_) => OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: true,
            relu,
        },
        None => OpKind::MatMul {
            transpose_a: false,
            transpose_b: true,
        },
    };
    need(caps, kind)?;
    if let Some(op) = activation_op(activation).filter(|_| !relu) {
        need(caps, OpKind::Unary(op))?;
    }
    let u = |v: usize| v as u64;
    Ok(DeviceOp::FullyConnected {
        x: *x,
        w: *w,
        bias,
        out: *out,
        m: u(m),
        k: u(k),
        n: u(n),
        activation,
    })
}

/// `[m, k, n]` of a fully-connected node: the input flattens to rows of
/// the weights' `k`, the output is `m × n`.
fn fc_dims(xt: &TensorView, wt: &TensorView, ot: &TensorView) -> Result<[usize; 3], String> {
    let [n, k] = wt.dims[..] else {
        return Err(format!("weights of rank {}, expected 2", wt.dims.len()));
    };
    let elements: usize = xt.dims.iter().product();
    if k == 0 || !elements.is_multiple_of(k) {
        return Err(format!(
            "input {:?} does not flatten to rows of {k}",
            xt.dims
        ));
    }
    let m = elements / k;
    if ot.dims.iter().product::<usize>() != m * n {
        return Err(format!("output {:?} is not {m}×{n}", ot.dims));
    }
    Ok([m, k, n])
}

/// int8 FULLY_CONNECTED: per-tensor scales (input, weights with zero point
/// 0, output), an optional int32 bias, all constant but the input.
fn fully_connected_int8(
    xt: &TensorView,
    wt: &TensorView,
    bt: Option<&TensorView>,
    ot: &TensorView,
    act: Activation,
    caps: &Capabilities,
    rounding: Rounding,
) -> Result<DeviceOp, String> {
    for (t, want) in [
        (xt, TfLiteType::kTfLiteInt8),
        (wt, TfLiteType::kTfLiteInt8),
        (ot, TfLiteType::kTfLiteInt8),
    ]
    .into_iter()
    .chain(bt.map(|b| (b, TfLiteType::kTfLiteInt32)))
    {
        if t.dtype != want {
            return Err(format!(
                "tensor {} is {:?}, expected {want:?} (int8 FULLY_CONNECTED)",
                t.index, t.dtype
            ));
        }
    }
    if !wt.constant || bt.is_some_and(|b| !b.constant) {
        return Err("weights or bias are not constant tensors".into());
    }
    let [m, k, n] = fc_dims(xt, wt, ot)?;
    let block = weights::weights_block(xt, wt, bt, ot, act, (0, n), rounding)?;
    need_typed(caps, OpKind::MatMulInt8 { transpose_b: true }, DType::I8)?;
    let u = |v: usize| v as u64;
    Ok(DeviceOp::FullyConnectedInt8 {
        x: xt.index,
        w: wt.index,
        out: ot.index,
        m: u(m),
        k: u(k),
        n: u(n),
        block,
    })
}

/// int8 `ADD` ([`add_int8`]).
fn add_int8_node(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let ([a, b], [out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    // SAFETY: an ADD node's builtin data is the runtime's TfLiteAddParams.
    let params = unsafe { params::<TfLiteAddParams>(node, "Add") }?;
    let (at, bt, ot) = (tensor(*a)?, tensor(*b)?, tensor(*out)?);
    add_int8(&at, &bt, &ot, int8_activation(params.activation)?, caps)
}

/// QUANTIZE from float32 and DEQUANTIZE to float32, one scale and zero
/// point per tensor: TFLite's reference `AffineQuantize` (`round(x /
/// scale)`, half away from zero, plus the zero point, clamped) and
/// `Dequantize` (`scale · (q − zero point)` in double, rounded once), as
/// the device's `Quantize` and `Dequantize` compute them.
fn requantize(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_in_one_out(node)?;
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    let quantize = node.builtin_code == kTfLiteBuiltinQuantize;
    let (from, to, q) = if quantize {
        (TfLiteType::kTfLiteFloat32, TfLiteType::kTfLiteInt8, &ot)
    } else {
        (TfLiteType::kTfLiteInt8, TfLiteType::kTfLiteFloat32, &xt)
    };
    if (xt.dtype, ot.dtype) != (from, to) {
        return Err(format!(
            "{:?} to {:?}: the device converts float32 to int8 and back",
            xt.dtype, ot.dtype
        ));
    }
    if xt.dims != ot.dims {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    if q.quant_channels != 1 {
        return Err(format!(
            "tensor {} has {} scales: the delegate converts per tensor",
            q.index, q.quant_channels
        ));
    }
    if !(q.scale.is_finite() && q.scale > 0.0) {
        return Err(format!("tensor {} has scale {}", q.index, q.scale));
    }
    shape(&xt)?;
    let kind = if quantize {
        OpKind::Quantize
    } else {
        OpKind::Dequantize
    };
    need_typed(caps, kind, DType::I8)?;
    let block = tensorplug_core::quant::block::per_tensor_scale(quantize, q.scale, q.zero_point);
    Ok(DeviceOp::Requantize {
        x,
        out,
        kind,
        block: block.to_vec(),
    })
}

/// A shape op evaluated at prepare, or why not, saying that is all the
/// delegate does with it (a `GATHER` of embeddings is not taken).
fn folded(src: &shape::Source, node: &NodeView) -> Result<DeviceOp, String> {
    shape::folded(src, node).map_err(|why| {
        format!(
            "{} is taken only as shape arithmetic, int32 values evaluated at prepare, and \
             {why}",
            op_name(node.builtin_code)
        )
    })
}

/// RESHAPE of float32 or int8 to a shape known at prepare (the second
/// input a constant or [`shape::value`] folds, or none): the same bytes,
/// as TFLite copies them.
fn reshape(node: &NodeView, src: &shape::Source) -> Result<DeviceOp, String> {
    let tensor = src.tensor;
    let (&x, &out) = match (node.inputs.as_slice(), node.outputs.as_slice()) {
        ([x] | [x, _], [out]) => (x, out),
        _ => return Err("expected 1 or 2 inputs and 1 output".into()),
    };
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    if let Some(&new_shape) = node.inputs.get(1)
        && new_shape != kTfLiteOptionalTensor
        && !tensor(new_shape)?.constant
    {
        let v = shape::value(src, new_shape)
            .map_err(|why| format!("the new shape is computed at run time ({why})"))?;
        if !shape::resolves_to(&v.data, xt.dims.iter().product(), &ot.dims) {
            return Err(format!(
                "the new shape {:?} folded at prepare does not reshape the input's {:?} to \
                 the output's {:?} (shapes the converter left as placeholders, with no batch \
                 size: convert with one)",
                v.data, xt.dims, ot.dims
            ));
        }
    }
    if !matches!(
        xt.dtype,
        TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteInt8
    ) || xt.dtype != ot.dtype
    {
        return Err(format!(
            "{:?} to {:?}: the delegate reshapes float32 or int8",
            xt.dtype, ot.dtype
        ));
    }
    if xt.bytes != ot.bytes || xt.bytes == 0 {
        return Err(format!("{} bytes to {} bytes", xt.bytes, ot.bytes));
    }
    Ok(DeviceOp::Reshape {
        x,
        out,
        bytes: xt.bytes,
    })
}

/// int8 ADD: per-tensor scales; one shape, or the smaller operand the
/// larger's trailing axes (device ABI 1.9: `ADD_I8` broadcasts its second).
fn add_int8<'t>(
    mut at: &'t TensorView,
    mut bt: &'t TensorView,
    ot: &TensorView,
    act: Activation,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    if let Some(t) = [at, bt, ot]
        .into_iter()
        .find(|t| t.dtype != TfLiteType::kTfLiteInt8)
    {
        return Err(format!(
            "tensor {} is {:?}, expected int8 (int8 ADD)",
            t.index, t.dtype
        ));
    }
    // The sum is symmetric: the larger first, the block after the swap.
    if bt.bytes > at.bytes {
        std::mem::swap(&mut at, &mut bt);
    }
    let dims = |t: &TensorView| t.dims.iter().map(|&d| d as u64).collect::<Vec<u64>>();
    if !trails(&dims(bt), &dims(at)) || at.dims != ot.dims {
        return Err(format!(
            "int8 ADD of shapes {:?} and {:?} (the device broadcasts the smaller along the \
             larger's leading axes only)",
            at.dims, bt.dims
        ));
    }
    if let Some(t) = [at, bt, ot].into_iter().find(|t| t.quant_channels > 1) {
        return Err(format!("tensor {} has per-channel scales", t.index));
    }
    let q = AddQuant::new(
        [(at.scale, at.zero_point), (bt.scale, bt.zero_point)],
        (ot.scale, ot.zero_point),
        act,
        ADD_ROUNDING,
    )
    .map_err(|e| format!("int8 ADD scales: {e:?}"))?;
    let header = QuantHeader {
        zero_points: [q.zero_points[0], q.zero_points[1]],
        output_zero_point: q.zero_points[2],
        min: q.min,
        max: q.max,
        rounding: q.rounding,
        channels: 0,
    };
    let mut block = header.words().to_vec();
    for r in q.requantize {
        block.extend([r.multiplier, i32::from(r.shift)]);
    }
    need_typed(caps, OpKind::AddInt8, DType::I8)?;
    Ok(DeviceOp::AddInt8 {
        a: at.index,
        b: bt.index,
        out: ot.index,
        block,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_core::accelerator::OpSet;

    fn view(index: i32, dtype: TfLiteType, dims: &[usize], channels: usize) -> TensorView {
        TensorView {
            scale: 0.5,
            zero_point: -3,
            quant_channels: channels,
            ..TensorView::for_test(index, dtype, dims, core::ptr::null_mut())
        }
    }

    fn node(code: i32, inputs: &[i32]) -> NodeView {
        NodeView::for_test(code, inputs)
    }

    fn caps() -> Capabilities {
        Capabilities::f32(OpSet::of(&[OpKind::Quantize, OpKind::Dequantize]), false)
            .with_dtype(DType::I8)
    }

    #[test]
    fn quantize_carries_the_output_zero_point_and_scale_and_dequantize_the_input_s() {
        let tensors = |x: TfLiteType, out: TfLiteType| {
            move |i: i32| Ok(view(i, if i == 9 { out } else { x }, &[2, 3], 1))
        };
        let (f32_, i8_) = (TfLiteType::kTfLiteFloat32, TfLiteType::kTfLiteInt8);
        let q = requantize(
            &node(kTfLiteBuiltinQuantize, &[1]),
            &tensors(f32_, i8_),
            &caps(),
        );
        let Ok(DeviceOp::Requantize { kind, block, .. }) = q else {
            panic!("{q:?}");
        };
        assert_eq!(kind, OpKind::Quantize);
        let (header, scales) = tensorplug_core::quant::block::parse_scales(&block, 3).unwrap();
        assert_eq!((header.output_zero_point, header.zero_points[0]), (-3, 0));
        assert_eq!(scales, [0.5f32.to_bits() as i32]);
        let d = requantize(
            &node(kTfLiteBuiltinDequantize, &[1]),
            &tensors(i8_, f32_),
            &caps(),
        );
        let Ok(DeviceOp::Requantize { kind, block, .. }) = d else {
            panic!("{d:?}");
        };
        assert_eq!(kind, OpKind::Dequantize);
        assert_eq!(block[0], -3);
        // int8 to int8 (a requantization) and a device without the op stay on the CPU.
        let e = requantize(
            &node(kTfLiteBuiltinQuantize, &[1]),
            &tensors(i8_, i8_),
            &caps(),
        );
        assert!(e.unwrap_err().contains("float32 to int8 and back"));
        let none = Capabilities::f32(OpSet::EMPTY, false).with_dtype(DType::I8);
        let e = requantize(
            &node(kTfLiteBuiltinQuantize, &[1]),
            &tensors(f32_, i8_),
            &none,
        );
        assert!(e.unwrap_err().contains("does not declare Quantize"));
    }

    #[test]
    fn per_channel_conversions_and_run_time_shapes_stay_on_the_cpu() {
        let per_channel = |i: i32| {
            let dtype = if i == 9 {
                TfLiteType::kTfLiteFloat32
            } else {
                TfLiteType::kTfLiteInt8
            };
            Ok(view(i, dtype, &[2, 3], 3))
        };
        let e = requantize(&node(kTfLiteBuiltinDequantize, &[1]), &per_channel, &caps());
        assert!(e.unwrap_err().contains("3 scales"));
        let f32_view = |i: i32| Ok(view(i, TfLiteType::kTfLiteFloat32, &[6], 0));
        let none = |_: i32| Ok(None);
        let src = |tensor| shape::Source {
            tensor,
            producer: &none,
        };
        let r = reshape(&node(kTfLiteBuiltinReshape, &[1, 2]), &src(&f32_view));
        assert!(r.unwrap_err().contains("computed at run time"));
        let constant_shape = |i: i32| {
            let mut t = view(i, TfLiteType::kTfLiteFloat32, &[6], 0);
            t.constant = i == 2;
            Ok(t)
        };
        let r = reshape(&node(kTfLiteBuiltinReshape, &[1, 2]), &src(&constant_shape));
        assert_eq!(
            r,
            Ok(DeviceOp::Reshape {
                x: 1,
                out: 9,
                bytes: 24
            })
        );
        let ints = |i: i32| Ok(view(i, TfLiteType::kTfLiteInt32, &[6], 0));
        assert!(reshape(&node(kTfLiteBuiltinReshape, &[1]), &src(&ints)).is_err());
    }
}
