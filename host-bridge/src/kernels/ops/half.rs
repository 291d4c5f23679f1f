//! bfloat16 and float16 kernels over the float32 ones: registered for the
//! half types too, they cast each half input to float32 on the device, run
//! the float32 kernel, and round each output once to the half type, as
//! TF's CPU kernels compute these types. Registering them lets TF's placer
//! put unscoped half ops on our device and leave the ones a user pinned to
//! the CPU there (`docs/graph-optimizer.md`, "Half precision"). The same
//! casts run int8 `BatchMatMulV3` on the float32 `BatchMatMulV2`
//! (`batch_matmul.rs`).

use super::super::failure::KernelResult;
use super::super::launch::Launcher;
use super::super::tf::Context;
use super::cast::device_type;
use super::kernel::is_empty;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, OpKind};

/// The TF ops whose float32 kernels are also registered for bfloat16 and
/// float16: the graph pass's list (`graph/half.rs`), which lowers them in
/// graphs so that the later passes see float32. The fused forms are the
/// pass's own half-precision fusions, for when it leaves them to a kernel.
pub const OPS: &[&str] = &[
    "Conv2D",
    "_FusedConv2D",
    "_FusedMatMul",
    "DepthwiseConv2dNative",
    "Conv2DBackpropInput",
    "Conv2DBackpropFilter",
    "MatMul",
    "BatchMatMulV2",
    "BiasAdd",
    "BiasAddGrad",
    "Relu",
    "Relu6",
    "ReluGrad",
    "Sigmoid",
    "Tanh",
    "Softmax",
    "MaxPool",
    "AvgPool",
    "MaxPoolGrad",
    "AvgPoolGrad",
    "AddV2",
    "Sub",
    "Mul",
    "RealDiv",
    "Maximum",
    "Minimum",
    "Neg",
    "Square",
    "Sum",
    "Mean",
    "LeakyRelu",
    "LeakyReluGrad",
];

/// An element-wise op's parameter as a kernel of `ctx`'s type reads it:
/// TF's half kernels cast `alpha` to the half type first
/// (`static_cast<T>(alpha)`), so a widened call rounds it the same way.
/// Then the float32 product of two half values is exact and the result
/// rounds once, as TF's does.
pub fn param_as_typed(ctx: &Context, p: f32) -> f32 {
    match ctx.half().dtype.and_then(device_type) {
        Some(to) => tensorplug_core::reference::cast::through_half(to, p),
        None => p,
    }
}

/// The half types, as the registrations name them.
pub const TYPES: [TF_DataType; 2] = [TF_DataType::TF_BFLOAT16, TF_DataType::TF_HALF];

fn is_half(t: TF_DataType) -> bool {
    TYPES.contains(&t)
}

/// The op whose int8 operands are widened too.
const INT8_OP: &str = "BatchMatMulV3";

/// Whether an input of this type is widened for `op`.
fn widened(op_is_int8: bool, t: TF_DataType) -> bool {
    is_half(t) || (op_is_int8 && t == TF_DataType::TF_INT8)
}

/// Whether a kernel of `op` whose inputs are `ctx`'s is widened: one of
/// [`OPS`] on a half type, or int8 [`INT8_OP`]. A kernel's types are fixed,
/// so its first call decides for all.
pub fn widens(op: &str, ctx: &Context) -> bool {
    let int8 = op == INT8_OP;
    if !int8 && !OPS.contains(&op) {
        return false;
    }
    (0..ctx.num_inputs()).any(|i| ctx.input(i, true).is_ok_and(|x| widened(int8, x.dtype())))
}

/// Before a compute call of a kernel that [`widens`]: each half (or int8)
/// input is cast to a float32 temporary that the kernel reads instead, and
/// the kernel's outputs become float32 temporaries too
/// ([`narrow_outputs`]).
pub fn widen_inputs(ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
    for index in 0..ctx.num_inputs() {
        let x = ctx.input(index, true)?;
        // Any half or int8 input: only the kernels `widens` picked come here.
        if !widened(true, x.dtype()) {
            continue;
        }
        let from = device_type(x.dtype()).unwrap_or(DType::BF16);
        let shape = x.shape()?;
        let wide = ctx.temp(&shape)?;
        if !is_empty(&shape) {
            let to = OpKind::Cast {
                from,
                to: DType::F32,
            };
            run.launch(
                to,
                &[run.typed_desc(&x, shape, from)?],
                run.desc(&wide, shape)?,
            )?;
        }
        let mut half = ctx.half();
        half.dtype = Some(x.dtype());
        half.inputs.push((index, wide));
    }
    Ok(())
}

/// After the compute call: each float32 output rounded into the half one.
/// The temporaries stay with `ctx` until the call ends, after the launches
/// that read them are enqueued.
pub fn narrow_outputs(ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
    let half = ctx.half();
    for (out, wide, shape) in &half.outputs {
        let Some(to) = device_type(out.dtype()) else {
            return Err(super::super::failure::Failure::unimplemented(format!(
                "an output of {:?} (the device casts float32 to int32, int64, bool, bfloat16 \
                 and float16)",
                out.dtype()
            )));
        };
        if !is_empty(shape) {
            let cast = OpKind::Cast {
                from: DType::F32,
                to,
            };
            run.launch(
                cast,
                &[run.desc(wide, *shape)?],
                run.typed_desc(out, *shape, to)?,
            )?;
        }
    }
    Ok(())
}
