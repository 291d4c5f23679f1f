//! `BroadcastTo`: `x · ones[shape]` on the device's broadcasting `Mul`
//! (exact: `x · 1 = x` for every float, −0 and NaN included). The target
//! `shape` is a host-memory input (int32 or int64).

use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, OpKind};

/// The `BroadcastTo` kernel.
pub struct BroadcastTo;

impl Op for BroadcastTo {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"BroadcastTo"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Binary(Binary::MUL))
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"shape"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let dims = read_host_ints(&ctx.input(1, true)?, "shape")?;
        let dims = super::sum::sizes(&dims, "shape")?;
        let target = flat(&dims)?;
        let incompatible = || {
            Failure::invalid(format!(
                "Unable to broadcast tensor of shape {} to tensor of shape {}",
                shapes::show(&sx),
                shapes::show(&target)
            ))
        };
        if shapes::broadcast(&sx, &target).map_err(|_| incompatible())? != target {
            return Err(incompatible());
        }
        let out = ctx.output(&target, &[])?;
        if is_empty(&target) {
            return Ok(());
        }
        let ones = ctx.temp(&target)?;
        let ones = run.desc(&ones, target)?;
        run.fill(ones, 1.0f32.to_bits())?;
        let inputs = [run.desc(&x, sx)?, ones];
        run.launch(
            OpKind::Binary(Binary::MUL),
            &inputs,
            run.desc(&out, target)?,
        )
    }
}
