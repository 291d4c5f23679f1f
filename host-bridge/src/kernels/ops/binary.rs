//! Broadcasting element-wise ops: `AddV2`, `Add`, `Sub`, `Mul`, `Maximum`,
//! `RealDiv`, `Div`, `DivNoNan`, `Pow` and `ReluGrad` (float32: `Div` is `RealDiv`).
//! One kernel, one table entry per TF op.

use super::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
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
/// `RealDiv`.
pub const REAL_DIV: Binary = Binary {
    op: c"RealDiv",
    kind: OpKind::Div,
};
/// `Div` (on floats, `RealDiv`).
pub const DIV: Binary = Binary {
    op: c"Div",
    kind: OpKind::Div,
};
/// `DivNoNan`.
pub const DIV_NO_NAN: Binary = Binary {
    op: c"DivNoNan",
    kind: OpKind::DivNoNan,
};
/// `Pow`.
pub const POW: Binary = Binary {
    op: c"Pow",
    kind: OpKind::Pow,
};
/// `ReluGrad(gradients, features)`.
pub const RELU_GRAD: Binary = Binary {
    op: c"ReluGrad",
    kind: OpKind::ReluGrad,
};

impl Op for Binary {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind)
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sa, sb) = (a.shape()?, b.shape()?);
        if self.kind == OpKind::ReluGrad && sa != sb {
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
        run.launch(self.kind, &inputs, run.desc(&out, out_shape)?)
    }
}
