//! `ReverseV2(tensor, axis)`, `axis` in host memory (int32 or int64,
//! negative from the end, each axis at most once): a block copy that walks
//! the reversed axes down (exact).

use super::blocks::Block;
use super::kernel::{Op, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `ReverseV2` kernel.
pub struct ReverseV2;

impl Op for ReverseV2 {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"ReverseV2"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"axis"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let dims = sx.dims().to_vec();
        let reversed = reversed_axes(&read_host_ints(&ctx.input(1, true)?, "axis")?, dims.len())?;
        let out = ctx.output(&sx, &[])?;
        if is_empty(&sx) {
            return Ok(());
        }
        let src_at: Vec<u64> = (0..dims.len())
            .map(|a| if reversed[a] { dims[a] - 1 } else { 0 })
            .collect();
        let step: Vec<i64> = reversed.iter().map(|&r| if r { -1 } else { 1 }).collect();
        let block = Block {
            src_dims: &dims,
            src_at: &src_at,
            dst_dims: &dims,
            dst_at: &vec![0; dims.len()],
            extent: &dims,
            step: &step,
        };
        block.copy(run, run.desc(&out, sx)?, run.desc(&x, sx)?)
    }
}

/// Which axes of a rank-`rank` tensor `axes` reverses, checked as TF does.
fn reversed_axes(axes: &[i64], rank: usize) -> KernelResult<Vec<bool>> {
    let mut reversed = vec![false; rank];
    for &axis in axes {
        let a = if axis < 0 { axis + rank as i64 } else { axis };
        if !(0..rank as i64).contains(&a) {
            return Err(Failure::invalid(format!(
                "'axis'[{axis}] = {axis} is out of valid range [{}, {})",
                -(rank as i64),
                rank
            )));
        }
        if std::mem::replace(&mut reversed[a as usize], true) {
            return Err(Failure::invalid(format!(
                "axis {a} specified more than once."
            )));
        }
    }
    Ok(reversed)
}

#[cfg(test)]
mod tests {
    use super::reversed_axes;

    #[test]
    fn axes_are_checked_as_tf_does() {
        assert_eq!(reversed_axes(&[-1, 0], 3).unwrap(), [true, false, true]);
        assert_eq!(reversed_axes(&[], 2).unwrap(), [false, false]);
        assert!(reversed_axes(&[3], 3).is_err());
        let e = reversed_axes(&[1, -2], 3).unwrap_err();
        assert!(e.cause.contains("more than once"), "{}", e.cause);
    }
}
