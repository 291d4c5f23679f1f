//! `Slice(input, begin, size)`, `begin` and `size` in host memory (int32 or
//! int64; a size of −1 runs to the end): block copies on the device.

use super::blocks::Block;
use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `Slice` kernel.
pub struct Slice;

impl Op for Slice {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Slice"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"begin", c"size"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let begin = read_host_ints(&ctx.input(1, true)?, "begin")?;
        let size = read_host_ints(&ctx.input(2, true)?, "size")?;
        let (at, extent) = slice_box(sx.dims(), &begin, &size)?;
        let out_shape = flat(&extent)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let block = Block {
            src_dims: sx.dims(),
            src_at: &at,
            dst_dims: &extent,
            dst_at: &vec![0; extent.len()],
            extent: &extent,
            step: &[],
        };
        block.copy(run, run.desc(&out, out_shape)?, run.desc(&x, sx)?)
    }
}

/// The start and extent of the slice, checked as TF's CPU kernel does.
fn slice_box(dims: &[u64], begin: &[i64], size: &[i64]) -> KernelResult<(Vec<u64>, Vec<u64>)> {
    let rank = dims.len();
    if begin.len() != rank || size.len() != rank {
        return Err(Failure::invalid(format!(
            "Expected begin and size arguments to be 1-D tensors of size {rank}, but got shapes [{}] and [{}] instead.",
            begin.len(),
            size.len()
        )));
    }
    let mut at = Vec::with_capacity(rank);
    let mut extent = Vec::with_capacity(rank);
    for a in 0..rank {
        let dim = dims[a] as i64;
        let b = begin[a];
        let s = if size[a] == -1 { dim - b } else { size[a] };
        if !((0..=dim).contains(&b) && s >= 0 && b + s <= dim) {
            return Err(Failure::invalid(format!(
                "Expected size[{a}] in [0, {}], but got {}",
                dim - b,
                size[a]
            )));
        }
        at.push(b as u64);
        extent.push(s as u64);
    }
    Ok((at, extent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_minus_one_runs_to_the_end_and_bad_boxes_are_named() {
        assert_eq!(
            slice_box(&[4, 5], &[1, 2], &[-1, 2]).unwrap(),
            (vec![1, 2], vec![3, 2])
        );
        let e = slice_box(&[4, 5], &[1, 2], &[4, 1]).unwrap_err();
        assert!(e.cause.contains("size[0] in [0, 3]"), "{}", e.cause);
        assert!(slice_box(&[4], &[5], &[-1]).is_err());
        assert!(slice_box(&[4, 5], &[0], &[1]).is_err());
    }
}
