//! `Softmax` and `LogSoftmax` over the last axis (rank ≥ 1).

use super::kernel::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// `Softmax` or `LogSoftmax`.
pub struct Softmax {
    op: &'static CStr,
    kind: OpKind,
}

/// `Softmax`.
pub const SOFTMAX: Softmax = Softmax {
    op: c"Softmax",
    kind: OpKind::Softmax,
};
/// `LogSoftmax`.
pub const LOG_SOFTMAX: Softmax = Softmax {
    op: c"LogSoftmax",
    kind: OpKind::LogSoftmax,
};

impl Op for Softmax {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind)
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        if sx.dims().is_empty() {
            return Err(Failure::invalid("logits must have >= 1 dimension, got []"));
        }
        let out = ctx.output(&sx, &[])?;
        if is_empty(&sx) {
            return Ok(());
        }
        run.launch(self.kind, &[run.desc(&x, sx)?], run.desc(&out, sx)?)
    }
}
