//! `MatMul`: `transpose_a`, `transpose_b`; rank-2 f32.

use super::kernel::{Op, is_empty};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `MatMul` kernel.
pub struct MatMul;

/// `MatMul`'s (and `_FusedMatMul`'s) transposes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transposes {
    /// `transpose_a`.
    pub a: bool,
    /// `transpose_b`.
    pub b: bool,
}

impl Transposes {
    /// Reads `transpose_a` and `transpose_b`.
    pub fn read(ctx: &Construction) -> KernelResult<Self> {
        Ok(Self {
            a: ctx.bool_attr(c"transpose_a")?,
            b: ctx.bool_attr(c"transpose_b")?,
        })
    }
}

impl Op for MatMul {
    type Attrs = Transposes;

    fn op(&self) -> &'static CStr {
        c"MatMul"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        })
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Transposes> {
        Transposes::read(ctx)
    }

    fn compute(&self, t: &Transposes, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sa, sb) = (a.shape()?, b.shape()?);
        let out_shape = shapes::matmul(&sa, &sb, t.a, t.b)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let kind = OpKind::MatMul {
            transpose_a: t.a,
            transpose_b: t.b,
        };
        let inputs = [run.desc(&a, sa)?, run.desc(&b, sb)?];
        run.launch(kind, &inputs, run.desc(&out, out_shape)?)
    }
}
