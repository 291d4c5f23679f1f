//! The TF ops that are one broadcasting catalogue op of two operands
//! ([`Binary`]: `AddV2`, `Mul`, `Pow`, …), each a line of [`KERNELS`].

use super::kernel::{Op, is_empty, param_attr, with_param};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, OpKind};

/// A TF op that lowers to one catalogue [`Binary`] op.
pub struct BinaryKernel {
    op: &'static CStr,
    kind: OpKind,
}

/// The kernel of TF op `tf_op` on catalogue op `name` (checked at compile time).
const fn binary(tf_op: &'static CStr, name: &str) -> BinaryKernel {
    BinaryKernel {
        op: tf_op,
        kind: OpKind::Binary(Binary::named(name)),
    }
}

/// Every TF op of this family: one line per op (`Div` on floats is `RealDiv`).
pub static KERNELS: &[BinaryKernel] = &[
    binary(c"AddV2", "Add"),
    binary(c"Add", "Add"),
    binary(c"Sub", "Sub"),
    binary(c"Mul", "Mul"),
    binary(c"Maximum", "Maximum"),
    binary(c"RealDiv", "Div"),
    binary(c"Div", "Div"),
    binary(c"DivNoNan", "DivNoNan"),
    binary(c"Pow", "Pow"),
    binary(c"ReluGrad", "ReluGrad"),
    binary(c"SquaredDifference", "SquaredDifference"),
    binary(c"Minimum", "Minimum"),
    binary(c"SigmoidGrad", "SigmoidGrad"),
    binary(c"TanhGrad", "TanhGrad"),
    binary(c"RsqrtGrad", "RsqrtGrad"),
    binary(c"EluGrad", "EluGrad"),
    binary(c"SeluGrad", "SeluGrad"),
    binary(c"SoftplusGrad", "SoftplusGrad"),
    binary(c"SoftsignGrad", "SoftsignGrad"),
    binary(c"ReciprocalGrad", "ReciprocalGrad"),
    binary(c"InvGrad", "ReciprocalGrad"),
    binary(c"SqrtGrad", "SqrtGrad"),
    binary(c"MulNoNan", "MulNoNan"),
    binary(c"Xdivy", "Xdivy"),
    binary(c"Xlogy", "Xlogy"),
    binary(c"FloorDiv", "FloorDiv"),
    binary(c"FloorMod", "FloorMod"),
    binary(c"LeakyReluGrad", "LeakyReluGrad"),
];

impl Op for BinaryKernel {
    /// The op's parameter (as for the unary kernels).
    type Attrs = f32;

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind)
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<f32> {
        param_attr(self.kind, ctx)
    }

    fn compute(&self, param: &f32, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sa, sb) = (a.shape()?, b.shape()?);
        // The gradient ops take operands of one shape, as TF's kernels do.
        if self.op.to_bytes().ends_with(b"Grad") && sa != sb {
            return Err(Failure::invalid(format!(
                "gradients {:?} and features {:?} must have the same shape",
                sa.dims(),
                sb.dims()
            )));
        }
        let out_shape = shapes::broadcast(&sa, &sb)?;
        let out = ctx.output(&out_shape, &[0, 1])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let inputs = [run.desc(&a, sa)?, run.desc(&b, sb)?];
        // A half kernel reads its parameter in its own type.
        let kind = with_param(self.kind, super::half::param_as_typed(ctx, *param));
        run.launch(kind, &inputs, run.desc(&out, out_shape)?)
    }
}
