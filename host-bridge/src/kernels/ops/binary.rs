//! Broadcasting element-wise ops: `AddV2`, `Add`, `Sub`, `Mul`, `Maximum`.
//! One kernel, one table entry per TF op.

use super::{Op, is_empty};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// A binary kernel: the TF op and the device op it lowers to.
pub struct Binary {
    op: &'static CStr,
    kind: OpKind,
}

/// `AddV2`.
pub const ADD_V2: Binary = Binary {
    op: c"AddV2",
    kind: OpKind::Add,
};
/// `Add`.
pub const ADD: Binary = Binary {
    op: c"Add",
    kind: OpKind::Add,
};
/// `Sub`.
pub const SUB: Binary = Binary {
    op: c"Sub",
    kind: OpKind::Sub,
};
/// `Mul`.
pub const MUL: Binary = Binary {
    op: c"Mul",
    kind: OpKind::Mul,
};
/// `Maximum`.
pub const MAXIMUM: Binary = Binary {
    op: c"Maximum",
    kind: OpKind::Maximum,
};

impl Op for Binary {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> OpKind {
        self.kind
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sa, sb) = (a.shape()?, b.shape()?);
        let out_shape = shapes::broadcast(&sa, &sb)?;
        let out = ctx.output(&out_shape, &[0, 1])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let inputs = [run.desc(&a, sa)?, run.desc(&b, sb)?];
        run.launch(self.kind, &inputs, run.desc(&out, out_shape)?)
    }
}
