//! Checks every op's decision makes.

use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLiteFusedActivation, TfLiteType};
use tensorplug_core::accelerator::{Activation, Capabilities, DType, OpKind, Shape};

pub fn one_in_one_out(node: &NodeView) -> Result<(i32, i32), String> {
    match (node.inputs.as_slice(), node.outputs.as_slice()) {
        ([x], [out]) => Ok((*x, *out)),
        _ => Err("expected 1 input and 1 output".into()),
    }
}

/// A float32 element-wise node of one input: its input and output, of one
/// shape.
pub fn one_f32_in_one_out(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
) -> Result<(i32, i32), String> {
    let (x, out) = one_in_one_out(node)?;
    let (xt, ot) = (tensor(x)?, tensor(out)?);
    all_f32(&[&xt, &ot])?;
    same_shape(&xt, &ot)?;
    Ok((x, out))
}

/// The schema name of a node's op (`BUILTIN_<code>` when the table lacks it).
pub fn op_name(code: i32) -> String {
    tensorplug_abi::tflite::builtin_name(code)
        .map_or_else(|| format!("BUILTIN_{code}"), str::to_owned)
}

/// Whether the device declares `kind` on float32.
pub fn need(caps: &Capabilities, kind: OpKind) -> Result<(), String> {
    need_typed(caps, kind, DType::F32)
}

/// Whether the device declares `kind` on `dtype`, or which it lacks.
pub fn need_typed(caps: &Capabilities, kind: OpKind, dtype: DType) -> Result<(), String> {
    if caps.supports(kind, dtype) {
        Ok(())
    } else {
        let name = match dtype {
            DType::F32 => "float32".to_owned(),
            DType::I8 => "int8".to_owned(),
            other => format!("{other:?}"),
        };
        Err(format!("the device does not declare {kind:?} in {name}"))
    }
}

/// An int8 op's fused activation, which the device applies as the output
/// clamp (`activation_range`): none, RELU or RELU6.
pub fn int8_activation(act: TfLiteFusedActivation) -> Result<Activation, String> {
    match act {
        TfLiteFusedActivation::kTfLiteActNone => Ok(Activation::None),
        TfLiteFusedActivation::kTfLiteActRelu => Ok(Activation::Relu),
        TfLiteFusedActivation::kTfLiteActRelu6 => Ok(Activation::Relu6),
        other => Err(format!(
            "fused activation {other:?} (int8: none, RELU or RELU6)"
        )),
    }
}

/// `node`'s builtin parameters, read through the runtime's pointer, or
/// an error naming `op` when it has none.
///
/// # Safety
/// `T` mirrors the first fields of the struct the runtime keeps for this
/// node's op (`abi::tflite`).
pub unsafe fn params<T: Copy>(node: &NodeView, op: &str) -> Result<T, String> {
    if node.builtin_data.is_null() {
        return Err(format!("no {op} parameters"));
    }
    // SAFETY: the caller's contract; the runtime's live builtin data.
    Ok(unsafe { *node.builtin_data.cast::<T>() })
}

/// Each of `tensors` int8 with one scale and zero point, or the first
/// that is not.
pub fn int8_per_tensor(tensors: &[&TensorView], op: &str) -> Result<(), String> {
    for t in tensors {
        if t.dtype != TfLiteType::kTfLiteInt8 {
            return Err(format!(
                "tensor {} is {:?}: the device's {op} is int8",
                t.index, t.dtype
            ));
        }
        if t.quant_channels != 1 {
            return Err(format!("tensor {} is not quantized per tensor", t.index));
        }
    }
    Ok(())
}

/// A tensor's shape as the device takes it (`Err`: a rank above its
/// maximum).
pub fn shape(t: &TensorView) -> Result<Shape, String> {
    let dims: Vec<u64> = t.dims.iter().map(|&d| d as u64).collect();
    Shape::new(&dims).ok_or_else(|| format!("tensor {} of rank {}", t.index, t.dims.len()))
}

/// The shape of an output `out` of its input `x`'s dims (an element-wise
/// op's, a scan's), or why not.
pub fn same_shape(x: &TensorView, out: &TensorView) -> Result<Shape, String> {
    if x.dims != out.dims {
        return Err(format!(
            "output {:?} is not the input's {:?}",
            out.dims, x.dims
        ));
    }
    shape(x)
}

/// Each of `tensors` float32, or the first that is not.
pub fn all_f32(tensors: &[&TensorView]) -> Result<(), String> {
    match tensors
        .iter()
        .find(|t| t.dtype != TfLiteType::kTfLiteFloat32)
    {
        Some(t) => Err(format!("tensor {} is {:?}, not float32", t.index, t.dtype)),
        None => Ok(()),
    }
}
