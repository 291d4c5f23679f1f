//! `Neg` and `Square`, lowered to the device's `Mul`: `x · (−1)` (a scalar
//! filled on the device) and `x · x`. Both are exact in IEEE arithmetic,
//! as TF's CPU kernels (`-x` and `x * x`).

use super::kernel::{Op, elementwise, scalar};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, OpKind};

/// `Neg` or `Square`.
pub struct MulBy {
    op: &'static CStr,
    square: bool,
}

/// `Neg`: `x · (−1)`.
pub const NEG: MulBy = MulBy {
    op: c"Neg",
    square: false,
};
/// `Square`: `x · x`.
pub const SQUARE: MulBy = MulBy {
    op: c"Square",
    square: true,
};

impl Op for MulBy {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Binary(Binary::MUL))
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let Some((x, sx, out)) = elementwise(ctx)? else {
            return Ok(());
        };
        let a = run.desc(&x, sx)?;
        let minus = if self.square {
            None
        } else {
            Some(scalar(ctx, run, -1.0)?)
        };
        let b = minus.as_ref().map_or(a, |m| m.desc);
        run.launch(OpKind::Binary(Binary::MUL), &[a, b], run.desc(&out, sx)?)
    }
}
