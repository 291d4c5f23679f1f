//! `Relu`: element-wise `max(x, 0)`; may reuse its input's buffer.

use super::{Op, is_empty};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `Relu` kernel.
pub struct Relu;

impl Op for Relu {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Relu"
    }

    fn family(&self) -> OpKind {
        OpKind::Relu
    }

    fn construct(&self, _: &Construction) -> KernelResult<()> {
        Ok(())
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let out = ctx.output(&sx, &[0])?;
        if is_empty(&sx) {
            return Ok(());
        }
        run.launch(OpKind::Relu, &[run.desc(&x, sx)?], run.desc(&out, sx)?)
    }
}
