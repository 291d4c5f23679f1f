//! The float32 ops besides the convolutions (`super::conv`), the pools
//! (`super::pool`) and `FULLY_CONNECTED`: element-wise activations,
//! broadcasting binary ops, `SOFTMAX`, and `MEAN` over height and width
//! (an average pool of the whole plane). Each is the device's f32 op of
//! the same meaning, compared with TFLite's kernels within `docs/ops.md`'s
//! tolerances.

use super::checks::{all_f32, need, one_f32_in_one_out, one_in_one_out, params, same_shape, shape};
use super::conv::{activation_op, float_activation, u16_of, window};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{
    TfLiteCumsumParams, TfLiteLeakyReluParams, TfLiteMulParams, TfLitePadding, TfLiteSoftmaxParams,
};
use tensorplug_core::accelerator::{
    Activation, Attrs, Binary, Capabilities, OpKind, Unary, broadcast_shapes, named,
};

/// An element-wise op of one float32 input (`RELU`, `RELU6`, `LOGISTIC`,
/// `TANH`).
pub fn unary_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
    op: Unary,
) -> Result<DeviceOp, String> {
    let (x, out) = one_f32_in_one_out(node, tensor)?;
    need(caps, OpKind::Unary(op))?;
    Ok(DeviceOp::Unary { op, x, out })
}

/// The device's `LeakyRelu` (found in the catalogue at compile time).
const LEAKY_RELU: Unary = Unary::named("LeakyRelu");

/// float32 `LEAKY_RELU`: the device's `LeakyRelu` with the node's `alpha`.
pub fn leaky_relu_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    // SAFETY: LEAKY_RELU's builtin data is the runtime's TfLiteLeakyReluParams.
    let alpha = unsafe { params::<TfLiteLeakyReluParams>(node, "LEAKY_RELU") }?.alpha;
    unary_f32(node, tensor, caps, LEAKY_RELU.with_param(alpha))
}

/// float32 `CUMSUM` over a constant axis: the device's `Cumsum` record
/// (its attribute block: `exclusive`, `reverse`) over the input viewed as
/// `[outer, n, inner]` around the axis.
pub fn cumsum_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (&[x, axis], &[out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    // SAFETY: CUMSUM's builtin data is the runtime's TfLiteCumsumParams.
    let p = unsafe { params::<TfLiteCumsumParams>(node, "CUMSUM") }?;
    let (xt, at, ot) = (tensor(x)?, tensor(axis)?, tensor(out)?);
    all_f32(&[&xt, &ot])?;
    same_shape(&xt, &ot)?;
    let &[a] = super::mean::axes_of(&at, xt.dims.len())?.as_slice() else {
        return Err("more than one axis".into());
    };
    let dims: Vec<u64> = xt.dims.iter().map(|&d| d as u64).collect();
    let product = |d: &[u64]| d.iter().product::<u64>();
    let view = vec![product(&dims[..a]), dims[a], product(&dims[a + 1..])];
    let mut attrs = Attrs::default();
    attrs.0[..2].copy_from_slice(&[u8::from(p.exclusive), u8::from(p.reverse)]);
    let kind = named("Cumsum")
        .and_then(|d| d.kind(&attrs))
        .ok_or("the catalogue has no Cumsum")?;
    need(caps, kind)?;
    Ok(DeviceOp::ViewF32 {
        kind,
        x,
        out,
        dims: view,
    })
}

/// A broadcasting float32 `ADD`, `SUB`, `MUL` or `DIV` with a fused
/// activation of none, RELU or RELU6.
pub fn binary_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
    op: Binary,
) -> Result<DeviceOp, String> {
    // SAFETY: the builtin data of ADD, SUB, MUL and DIV is the runtime's
    // TfLiteAddParams, TfLiteSubParams, TfLiteMulParams or TfLiteDivParams,
    // each of which starts with the fused activation, as TfLiteMulParams.
    let activation = unsafe { params::<TfLiteMulParams>(node, "arithmetic") }?.activation;
    binary_with(node, tensor, caps, op, float_activation(activation)?)
}

/// A broadcasting float32 op of two inputs then `act` (`SQUARED_DIFFERENCE`,
/// `MAXIMUM`, `MINIMUM`: none).
pub fn binary_with(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
    op: Binary,
    act: Activation,
) -> Result<DeviceOp, String> {
    let ([a, b], [out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    let (at, bt, ot) = (tensor(*a)?, tensor(*b)?, tensor(*out)?);
    all_f32(&[&at, &bt, &ot])?;
    let result = broadcast_shapes(&shape(&at)?, &shape(&bt)?)
        .map_err(|e| format!("shapes {:?} and {:?}: {e:?}", at.dims, bt.dims))?;
    if result != shape(&ot)? {
        return Err(format!("output {:?} is not the broadcast shape", ot.dims));
    }
    need(caps, OpKind::Binary(op))?;
    if let Some(op) = activation_op(act) {
        need(caps, OpKind::Unary(op))?;
    }
    Ok(DeviceOp::Binary {
        op,
        a: *a,
        b: *b,
        out: *out,
        activation: act,
    })
}

/// float32 `MEAN` over one run of adjacent axes, either `keep_dims`: over
/// the last axes (Keras' `LayerNormalization`) row sums divided by the
/// row's length ([`mean_last_f32`]); otherwise an average pool whose
/// window is the reduced axes, of the input viewed as `[outer, h, w,
/// inner]` (axes 1 and 2 of NHWC, Keras' `GlobalAveragePooling2D`, as
/// they are; one axis as `h` with `w` 1, `GlobalAveragePooling1D`).
pub fn mean_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (&[x, axes], &[out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    let (xt, at, ot) = (tensor(x)?, tensor(axes)?, tensor(out)?);
    all_f32(&[&xt, &ot])?;
    let axes = super::mean::axes_of(&at, xt.dims.len())?;
    let (first, last) = (axes[0], axes[axes.len() - 1]);
    if last - first + 1 != axes.len() {
        return Err(format!(
            "axes {axes:?} of {:?}: float32 MEAN runs over one run of adjacent axes",
            xt.dims
        ));
    }
    let product = |d: &[usize]| d.iter().product::<usize>();
    let (outer, inner) = (product(&xt.dims[..first]), product(&xt.dims[last + 1..]));
    if inner == 1 {
        let reduced = product(&xt.dims[first..=last]);
        return mean_last_f32(x, out, [outer, reduced], &ot, caps);
    }
    let (h, w) = match xt.dims.len() {
        4 if axes == [1, 2] => (xt.dims[1], xt.dims[2]),
        _ => (product(&xt.dims[first..=last]), 1),
    };
    if product(&ot.dims) != outer * inner || h * w == 0 {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    let size = [u16_of(h as i32, "height")?, u16_of(w as i32, "width")?];
    let window = window(
        TfLitePadding::kTfLitePaddingValid,
        size,
        [1, 1],
        [1, 1],
        [h, w],
        [1, 1],
    )?;
    let kind = OpKind::AvgPool(window);
    need(caps, kind)?;
    let u4 = |d: [usize; 4]| d.map(|v| v as u64);
    Ok(DeviceOp::PoolF32 {
        x,
        out,
        kind,
        x_dims: u4([outer, h, w, inner]),
        out_dims: u4([outer, 1, 1, inner]),
        activation: Activation::None,
    })
}

/// float32 `MEAN` over the last axes (Keras' `LayerNormalization`), the
/// input viewed as `[rows, n]`: the device's row sums, divided by `n`.
fn mean_last_f32(
    x: i32,
    out: i32,
    [rows, n]: [usize; 2],
    ot: &TensorView,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    if n == 0 || ot.dims.iter().product::<usize>() != rows {
        return Err(format!("output {:?} for rows of {n}", ot.dims));
    }
    need(caps, OpKind::ReduceSum)?;
    need(caps, OpKind::Binary(Binary::DIV))?;
    Ok(DeviceOp::MeanLastF32 {
        x,
        out,
        rows: rows as u64,
        n: n as u64,
    })
}

/// float32 `HARD_SWISH` (MobileNetV3's activation) from the device's
/// `Add`, `Relu6`, `Mul` and `Div`, in the reference kernel's order.
pub fn hard_swish_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_f32_in_one_out(node, tensor)?;
    for kind in [
        OpKind::Binary(Binary::ADD),
        OpKind::Unary(Unary::RELU6),
        OpKind::Binary(Binary::MUL),
        OpKind::Binary(Binary::DIV),
    ] {
        need(caps, kind)?;
    }
    Ok(DeviceOp::HardSwishF32 { x, out })
}

/// float32 `NEG`: `x · −1`, exact.
pub fn neg_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_f32_in_one_out(node, tensor)?;
    need(caps, OpKind::Binary(Binary::MUL))?;
    Ok(DeviceOp::ScaleF32 {
        x,
        out,
        factor: -1.0,
    })
}

/// float32 `SOFTMAX` over the last axis, β = 1.
pub fn softmax_f32(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (x, out) = one_in_one_out(node)?;
    // SAFETY: a SOFTMAX node's builtin data is the runtime's TfLiteSoftmaxParams.
    let beta = unsafe { params::<TfLiteSoftmaxParams>(node, "Softmax") }?.beta;
    if beta != 1.0 {
        return Err(format!("beta {beta} (the device's softmax has β = 1)"));
    }
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    all_f32(&[&xt, &ot])?;
    if xt.dims != ot.dims || xt.dims.is_empty() {
        return Err(format!("output {:?} for input {:?}", ot.dims, xt.dims));
    }
    let depth = *xt.dims.last().unwrap_or(&1);
    let rows = xt.dims.iter().product::<usize>() / depth.max(1);
    need(caps, OpKind::Softmax)?;
    Ok(DeviceOp::SoftmaxF32 {
        x,
        out,
        rows: rows as u64,
        depth: depth as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_abi::tflite::{
        TfLiteFusedActivation, TfLiteReducerParams, TfLiteType, kTfLiteBuiltinMean,
        kTfLiteBuiltinSoftmax,
    };
    use tensorplug_core::accelerator::OpSet;

    fn f32_view(index: i32, dims: &[usize]) -> TensorView {
        TensorView::for_test(
            index,
            TfLiteType::kTfLiteFloat32,
            dims,
            core::ptr::null_mut(),
        )
    }

    fn node<T>(code: i32, inputs: &[i32], params: &T) -> NodeView {
        NodeView {
            builtin_code: code,
            version: 1,
            inputs: inputs.to_vec(),
            outputs: vec![9],
            builtin_data: (params as *const T).cast(),
        }
    }

    fn all_ops() -> Capabilities {
        Capabilities::f32(OpSet::ALL, false)
    }

    #[test]
    fn a_softmax_of_another_beta_and_a_mean_of_other_axes_stay_on_the_cpu() {
        let rows = |i: i32| Ok(f32_view(i, &[2, 5]));
        let beta = TfLiteSoftmaxParams { beta: 2.0 };
        let e = softmax_f32(&node(kTfLiteBuiltinSoftmax, &[1], &beta), &rows, &all_ops());
        assert!(e.unwrap_err().contains("beta 2"));
        let one = TfLiteSoftmaxParams { beta: 1.0 };
        let ok = softmax_f32(&node(kTfLiteBuiltinSoftmax, &[1], &one), &rows, &all_ops());
        assert!(matches!(
            ok,
            Ok(DeviceOp::SoftmaxF32 {
                rows: 2,
                depth: 5,
                ..
            })
        ));

        // MEAN over axes 0 and 2 of NHWC, not adjacent.
        let e = mean_of(&[0, 2], &[1, 4, 4, 3], &[4, 3]);
        assert!(e.unwrap_err().contains("one run of adjacent axes"));
        // Over axis 1 of [2, 5, 3] (GlobalAveragePooling1D): a pool of 5 × 1.
        assert!(matches!(
            mean_of(&[1], &[2, 5, 3], &[2, 3]),
            Ok(DeviceOp::PoolF32 {
                x_dims: [2, 5, 1, 3],
                out_dims: [2, 1, 1, 3],
                ..
            })
        ));
        // Over the last two axes of [2, 3, 4]: rows of 12.
        assert!(matches!(
            mean_of(&[1, 2], &[2, 3, 4], &[2, 1, 1]),
            Ok(DeviceOp::MeanLastF32 { rows: 2, n: 12, .. })
        ));
        // Over the last axis (LayerNormalization's): row sums, then a division.
        assert!(matches!(
            mean_of(&[3], &[1, 4, 4, 3], &[1, 4, 4]),
            Ok(DeviceOp::MeanLastF32 { rows: 16, n: 3, .. })
        ));
    }

    /// float32 `MEAN` of an `x`-shaped input over the constant `axes`
    /// into an `out`-shaped output.
    fn mean_of(axes: &[i32], x: &[usize], out: &[usize]) -> Result<DeviceOp, String> {
        let mut bytes: Vec<u8> = axes.iter().flat_map(|a| a.to_le_bytes()).collect();
        let data = bytes.as_mut_ptr();
        let tensors = |i: i32| {
            Ok(match i {
                2 => TensorView::for_test(2, TfLiteType::kTfLiteInt32, &[axes.len()], data),
                9 => f32_view(9, out),
                i => f32_view(i, x),
            })
        };
        let keep = TfLiteReducerParams { keep_dims: false };
        mean_f32(
            &node(kTfLiteBuiltinMean, &[1, 2], &keep),
            &tensors,
            &all_ops(),
        )
    }

    #[test]
    fn an_activation_the_device_does_not_fuse_stays_on_the_cpu() {
        let t = |i: i32| Ok(f32_view(i, &[2, 3]));
        let tanh = TfLiteMulParams {
            activation: TfLiteFusedActivation::kTfLiteActTanh,
        };
        let add = node(tensorplug_abi::tflite::kTfLiteBuiltinAdd, &[1, 2], &tanh);
        let e = binary_f32(&add, &t, &all_ops(), Binary::ADD);
        assert!(e.unwrap_err().contains("kTfLiteActTanh"));
        let relu6 = TfLiteMulParams {
            activation: TfLiteFusedActivation::kTfLiteActRelu6,
        };
        let sub = node(tensorplug_abi::tflite::kTfLiteBuiltinSub, &[1, 2], &relu6);
        let ok = binary_f32(&sub, &t, &all_ops(), Binary::SUB);
        assert!(matches!(
            ok,
            Ok(DeviceOp::Binary {
                op: Binary::SUB,
                ..
            })
        ));
        let none = Capabilities::f32(OpSet::of(&[OpKind::Binary(Binary::SUB)]), false);
        let e = binary_f32(&sub, &t, &none, Binary::SUB);
        assert!(e.unwrap_err().contains("Relu6"), "the activation's launch");
    }
}
