//! The TF ops that are one catalogue op of one operand ([`Unary`]:
//! `Relu`, `Exp`, …), each a line of [`KERNELS`]; the output may reuse
//! the input's buffer.

use super::kernel::{Op, elementwise, param_attr, with_param};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{OpKind, Unary};

/// A TF op that lowers to one catalogue [`Unary`] op.
pub struct UnaryKernel {
    op: &'static CStr,
    kind: OpKind,
}

/// The kernel of TF op `tf_op` on catalogue op `name` (checked at compile time).
const fn unary(tf_op: &'static CStr, name: &str) -> UnaryKernel {
    UnaryKernel {
        op: tf_op,
        kind: OpKind::Unary(Unary::named(name)),
    }
}

/// Every TF op of this family: one line per op.
pub static KERNELS: &[UnaryKernel] = &[
    unary(c"Relu", "Relu"),
    unary(c"Sqrt", "Sqrt"),
    unary(c"Rsqrt", "Rsqrt"),
    unary(c"Relu6", "Relu6"),
    unary(c"Sigmoid", "Sigmoid"),
    unary(c"Tanh", "Tanh"),
    unary(c"Exp", "Exp"),
    unary(c"Log", "Log"),
    unary(c"Erf", "Erf"),
    unary(c"Erfc", "Erfc"),
    unary(c"Abs", "Abs"),
    unary(c"Softplus", "Softplus"),
    unary(c"Log1p", "Log1p"),
    unary(c"Reciprocal", "Reciprocal"),
    unary(c"Inv", "Reciprocal"),
    unary(c"Expm1", "Expm1"),
    unary(c"Elu", "Elu"),
    unary(c"Selu", "Selu"),
    unary(c"Sign", "Sign"),
    unary(c"Floor", "Floor"),
    unary(c"Ceil", "Ceil"),
    unary(c"Round", "Round"),
    unary(c"Rint", "Round"),
    unary(c"Softsign", "Softsign"),
    unary(c"LeakyRelu", "LeakyRelu"),
];

impl Op for UnaryKernel {
    /// The op's parameter: the TF attribute its declaration names
    /// (`LeakyRelu`'s `alpha`), 0.0 for an op without one.
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
        let Some((x, sx, out)) = elementwise(ctx)? else {
            return Ok(());
        };
        // A half kernel reads its parameter in its own type.
        let kind = with_param(self.kind, super::half::param_as_typed(ctx, *param));
        run.launch(kind, &[run.desc(&x, sx)?], run.desc(&out, sx)?)
    }
}
