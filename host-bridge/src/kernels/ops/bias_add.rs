//! `BiasAdd`: `x + bias` along the channel axis; `data_format` NHWC, or
//! NCHW on rank ≤ 2 (where it is the same).

use super::kernel::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `BiasAdd` kernel.
pub struct BiasAdd;

/// `data_format`, shared with `BiasAddGrad`: whether it is `NCHW`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nchw(bool);

impl Nchw {
    /// Reads `data_format` (`NHWC` or `NCHW`).
    pub fn read(ctx: &Construction) -> KernelResult<Self> {
        match ctx.string_attr(c"data_format")?.as_str() {
            "NHWC" => Ok(Self(false)),
            "NCHW" => Ok(Self(true)),
            other => Err(Failure::unimplemented(format!("data_format {other:?}"))),
        }
    }

    /// NCHW is the same as NHWC only up to rank 2 (channels last).
    pub fn check_rank(self, rank: usize) -> KernelResult<()> {
        if self.0 && rank > 2 {
            return Err(Failure::unimplemented(
                "data_format NCHW on tensors of rank > 2 (channels must be last)",
            ));
        }
        Ok(())
    }
}

impl Op for BiasAdd {
    type Attrs = Nchw;

    fn op(&self) -> &'static CStr {
        c"BiasAdd"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::BiasAdd)
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Nchw> {
        Nchw::read(ctx)
    }

    fn compute(&self, nchw: &Nchw, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (x, bias) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sx, sb) = (x.shape()?, bias.shape()?);
        nchw.check_rank(sx.dims().len())?;
        shapes::bias(&sx, &sb)?;
        let out = ctx.output(&sx, &[0])?;
        if is_empty(&sx) {
            return Ok(());
        }
        let inputs = [run.desc(&x, sx)?, run.desc(&bias, sb)?];
        run.launch(OpKind::BiasAdd, &inputs, run.desc(&out, sx)?)
    }
}
