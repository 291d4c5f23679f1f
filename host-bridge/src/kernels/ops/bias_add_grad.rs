//! `BiasAddGrad`: the bias gradient, `out_backprop` summed over every axis
//! but the channel axis (NHWC, or NCHW on rank 2), as [`sum::reduce`] does
//! for `Sum` over leading axes (a ones-vector GEMM on the device).

use super::bias_add::Nchw;
use super::kernel::Op;
use super::sum;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `BiasAddGrad` kernel.
pub struct BiasAddGrad;

impl Op for BiasAddGrad {
    type Attrs = Nchw;

    fn op(&self) -> &'static CStr {
        c"BiasAddGrad"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        })
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Nchw> {
        Nchw::read(ctx)
    }

    fn compute(&self, nchw: &Nchw, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let grad = ctx.input(0, false)?;
        let rank = grad.shape()?.dims().len();
        if rank < 2 {
            return Err(Failure::invalid(format!(
                "out_backprop must be at least 2-D, got rank {rank}"
            )));
        }
        nchw.check_rank(rank)?;
        let axes: Vec<i64> = (0..rank as i64 - 1).collect();
        sum::reduce(ctx, run, &grad, &axes, false).map(drop)
    }
}
