//! `Relu`: element-wise `max(x, 0)`; may reuse its input's buffer.

use super::{Op, elementwise};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
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

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let Some((x, sx, out)) = elementwise(ctx)? else {
            return Ok(());
        };
        run.launch(OpKind::Relu, &[run.desc(&x, sx)?], run.desc(&out, sx)?)
    }
}
