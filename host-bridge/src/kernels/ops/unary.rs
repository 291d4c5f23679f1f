//! Element-wise ops of one operand: `Relu`, `Relu6`, `Sigmoid`, `Tanh`,
//! `Sqrt`, `Rsqrt`, `Exp`; each may reuse
//! its input's buffer.

use super::{Op, elementwise};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// A unary kernel: the TF op and the device op it lowers to.
pub struct Unary {
    op: &'static CStr,
    kind: OpKind,
}

/// `Relu`: `max(x, 0)`.
pub const RELU: Unary = Unary {
    op: c"Relu",
    kind: OpKind::Relu,
};
/// `Sqrt`.
pub const SQRT: Unary = Unary {
    op: c"Sqrt",
    kind: OpKind::Sqrt,
};
/// `Relu6`: `min(max(x, 0), 6)`.
pub const RELU6: Unary = Unary {
    op: c"Relu6",
    kind: OpKind::Relu6,
};
/// `Sigmoid`.
pub const SIGMOID: Unary = Unary {
    op: c"Sigmoid",
    kind: OpKind::Sigmoid,
};
/// `Tanh`.
pub const TANH: Unary = Unary {
    op: c"Tanh",
    kind: OpKind::Tanh,
};
/// `Rsqrt`: `1 / √x`.
pub const RSQRT: Unary = Unary {
    op: c"Rsqrt",
    kind: OpKind::Rsqrt,
};
/// `Exp`: `eˣ`.
pub const EXP: Unary = Unary {
    op: c"Exp",
    kind: OpKind::Exp,
};

impl Op for Unary {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind)
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let Some((x, sx, out)) = elementwise(ctx)? else {
            return Ok(());
        };
        run.launch(self.kind, &[run.desc(&x, sx)?], run.desc(&out, sx)?)
    }
}
