//! `CONCATENATION` of float32 or int8 tensors along any axis, as the
//! device's `Concat`: each input viewed as `[outer, width]` rows (`outer`
//! the product of the axes before the concatenation axis, `width` the
//! rest), joined two at a time. TFLite's int8 kernel copies bytes: it
//! requires every input quantized as the output, and so does this.

use super::checks::{int8_per_tensor, need_typed, params};
use super::plan::{ConcatRows, DeviceOp};
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::{TfLiteConcatenationParams, TfLiteFusedActivation, TfLiteType};
use tensorplug_core::accelerator::{Capabilities, DType, OpKind};

/// `CONCATENATION`, or why it stays on the CPU.
pub fn concat(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let [out] = node.outputs.as_slice() else {
        return Err(format!("{} outputs, expected 1", node.outputs.len()));
    };
    if node.inputs.is_empty() {
        return Err("no inputs".into());
    }
    // SAFETY: a CONCATENATION node's builtin data is the runtime's
    // TfLiteConcatenationParams, which we mirror.
    let p = unsafe { params::<TfLiteConcatenationParams>(node, "Concatenation") }?;
    if p.activation != TfLiteFusedActivation::kTfLiteActNone {
        return Err(format!("fused activation {:?} (only none)", p.activation));
    }
    let ot = tensor(*out)?;
    let ins = node
        .inputs
        .iter()
        .map(|&i| tensor(i))
        .collect::<Result<Vec<_>, _>>()?;
    let dtype = match ot.dtype {
        TfLiteType::kTfLiteFloat32 => DType::F32,
        TfLiteType::kTfLiteInt8 => {
            let all: Vec<&TensorView> = ins.iter().chain([&ot]).collect();
            int8_per_tensor(&all, "Concat")?;
            if let Some(t) = ins
                .iter()
                .find(|t| (t.scale, t.zero_point) != (ot.scale, ot.zero_point))
            {
                return Err(format!(
                    "input {} is quantized unlike the output (TFLite's int8 kernel requires \
                     one quantization)",
                    t.index
                ));
            }
            DType::I8
        }
        other => {
            return Err(format!(
                "{other:?} (the delegate concatenates float32 or int8)"
            ));
        }
    };
    if let Some(t) = ins.iter().find(|t| t.dtype != ot.dtype) {
        return Err(format!(
            "input {} is {:?}, the output {:?}",
            t.index, t.dtype, ot.dtype
        ));
    }
    let rank = ot.dims.len();
    let axis = if p.axis < 0 {
        p.axis + rank as i32
    } else {
        p.axis
    };
    let axis = usize::try_from(axis)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| format!("axis {} of a rank-{rank} output", p.axis))?;
    let mut along = 0;
    for t in &ins {
        let same = t.dims.len() == rank && (0..rank).all(|a| a == axis || t.dims[a] == ot.dims[a]);
        if !same {
            return Err(format!(
                "input {} is {:?}, not the output {:?} but along axis {axis}",
                t.index, t.dims, ot.dims
            ));
        }
        along += t.dims[axis];
    }
    if along != ot.dims[axis] {
        return Err(format!(
            "the inputs add up to {along} along axis {axis}, the output has {}",
            ot.dims[axis]
        ));
    }
    need_typed(caps, OpKind::Concat(dtype), dtype)?;
    let outer: usize = ot.dims[..axis].iter().product();
    let inner: usize = ot.dims[axis + 1..].iter().product();
    Ok(DeviceOp::Concat(ConcatRows {
        inputs: node.inputs.clone(),
        out: *out,
        dtype,
        outer: outer as u64,
        widths: ins.iter().map(|t| (t.dims[axis] * inner) as u64).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_core::accelerator::OpSet;

    fn view(index: i32, dims: &[usize], zero_point: i32) -> TensorView {
        TensorView {
            scale: 0.25,
            zero_point,
            quant_channels: 1,
            ..TensorView::for_test(index, TfLiteType::kTfLiteInt8, dims, core::ptr::null_mut())
        }
    }

    fn decide(axis: i32, dims: &[&[usize]], out: &[usize], zp: &[i32]) -> Result<DeviceOp, String> {
        let params = TfLiteConcatenationParams {
            axis,
            activation: TfLiteFusedActivation::kTfLiteActNone,
        };
        let node = NodeView {
            builtin_code: tensorplug_abi::tflite::kTfLiteBuiltinConcatenation,
            version: 1,
            inputs: (1..=dims.len() as i32).collect(),
            outputs: vec![9],
            builtin_data: (&raw const params).cast(),
        };
        let tensor = |i: i32| match i {
            9 => Ok(view(9, out, 0)),
            i => Ok(view(i, dims[i as usize - 1], zp[i as usize - 1])),
        };
        let caps = Capabilities::f32(OpSet::of(&[OpKind::Concat(DType::F32)]), false)
            .with_dtype(DType::I8);
        concat(&node, &tensor, &caps)
    }

    #[test]
    fn any_axis_becomes_rows_and_three_inputs_take_one_temporary() {
        // Channels of NHWC: 2·8·8 rows of 4 and 6.
        let Ok(DeviceOp::Concat(c)) =
            decide(-1, &[&[2, 8, 8, 4], &[2, 8, 8, 6]], &[2, 8, 8, 10], &[0, 0])
        else {
            panic!("refused");
        };
        assert_eq!(
            (c.outer, c.widths.clone(), c.temps()),
            (128, vec![4, 6], vec![])
        );
        // Three along the width: 16 rows (batch × height) of 8·5 each.
        let Ok(DeviceOp::Concat(c)) = decide(
            2,
            &[&[2, 8, 8, 5], &[2, 8, 8, 5], &[2, 8, 8, 5]],
            &[2, 8, 24, 5],
            &[0, 0, 0],
        ) else {
            panic!("refused");
        };
        assert_eq!((c.outer, c.widths.clone()), (16, vec![40, 40, 40]));
        assert_eq!(c.temps(), vec![16 * 80]);
    }

    #[test]
    fn mismatched_inputs_and_quantizations_stay_on_the_cpu() {
        let requantized = decide(1, &[&[2, 3], &[2, 1]], &[2, 4], &[0, 5]);
        assert!(
            requantized
                .unwrap_err()
                .contains("quantized unlike the output")
        );
        let short = decide(1, &[&[2, 3], &[2, 1]], &[2, 5], &[0, 0]);
        assert!(short.unwrap_err().contains("add up to 4"));
        let other_rows = decide(1, &[&[2, 3], &[3, 1]], &[2, 4], &[0, 0]);
        assert!(other_rows.unwrap_err().contains("not the output"));
        let axis = decide(2, &[&[2, 3], &[2, 1]], &[2, 4], &[0, 0]);
        assert!(axis.unwrap_err().contains("axis 2 of a rank-2 output"));
    }
}
