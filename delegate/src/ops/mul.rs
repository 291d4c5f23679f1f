//! int8 `MUL` on the device's `MulInt8`: TFLite's reference kernel,
//! `zp_out + MultiplyByQuantizedMultiplier((a − zp_a)·(b − zp_b), M)`,
//! clamped to the fused activation, with `M` from `s_a · s_b / s_out`
//! computed in float32 as its `Prepare` does. The smaller operand may be
//! one value or the larger's last axis (a squeeze-and-excitation block's
//! `[1, 1, 1, C]`), broadcast along the larger's leading axes.

use super::checks::{int8_activation, int8_per_tensor, need_typed, params};
use super::plan::DeviceOp;
use crate::graph::{NodeView, TensorView};
use tensorplug_abi::tflite::TfLiteMulParams;
use tensorplug_core::accelerator::{Capabilities, DType, OpKind};
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::quant::{Requantize, Rounding};
use tensorplug_core::reference::int8::activation_range;

/// How TFLite's reference int8 `MUL` requantizes: twice (measured by the
/// test on every runtime it runs, as `ADD`'s).
const MUL_ROUNDING: Rounding = Rounding::Double;

/// int8 `MUL`, or why it stays on the CPU.
pub fn mul_int8(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let (&[a, b], &[out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    // SAFETY: a MUL's builtin data is the runtime's TfLiteMulParams.
    let p = unsafe { params::<TfLiteMulParams>(node, "MUL") }?;
    let act = int8_activation(p.activation)?;
    let (mut at, mut bt, ot) = (tensor(a)?, tensor(b)?, tensor(out)?);
    int8_per_tensor(&[&at, &bt, &ot], "MUL")?;
    // The product is symmetric: the larger operand first.
    if bt.bytes > at.bytes {
        std::mem::swap(&mut at, &mut bt);
    }
    let (n, m) = (at.bytes, bt.bytes);
    let last = at.dims.last().copied().unwrap_or(1);
    let trailing = bt.dims.iter().rev().skip(1).all(|&d| d == 1);
    let broadcast = m == n || m == 1 || (m == last && trailing && bt.dims.last() == Some(&last));
    if !broadcast || ot.dims != at.dims || n == 0 {
        return Err(format!(
            "shapes {:?} · {:?} → {:?}: the device broadcasts one value or the last axis",
            at.dims, bt.dims, ot.dims
        ));
    }
    if m == n && at.dims != bt.dims {
        return Err(format!("shapes {:?} and {:?} differ", at.dims, bt.dims));
    }
    // As `Prepare`: `input1->params.scale * input2->params.scale /
    // output->params.scale` in float32, then QuantizeMultiplier in double.
    let real = at.scale * bt.scale / ot.scale;
    if !(real.is_finite() && real > 0.0) {
        return Err(format!("multiplier {real}"));
    }
    let r =
        Requantize::from_real(f64::from(real)).map_err(|e| format!("multiplier {real}: {e:?}"))?;
    need_typed(caps, OpKind::MulInt8, DType::I8)?;
    let (min, max) = activation_range(act, ot.scale, ot.zero_point);
    let header = QuantHeader {
        zero_points: [at.zero_point, bt.zero_point],
        output_zero_point: ot.zero_point,
        min,
        max,
        rounding: MUL_ROUNDING,
        channels: 0,
    };
    let mut block = header.words().to_vec();
    block.extend([r.multiplier, i32::from(r.shift)]);
    Ok(DeviceOp::MulInt8 {
        a: at.index,
        b: bt.index,
        out: ot.index,
        len: n as u64,
        b_len: m as u64,
        block,
    })
}
