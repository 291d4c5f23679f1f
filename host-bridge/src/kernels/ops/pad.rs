//! `Pad` (constant 0), `paddings` in host memory (int32 or int64): a fill of
//! the output with zeros, then the input as a block copy into it (one
//! device-to-device copy per contiguous run: `[n, h]` runs of `w·c` for an
//! NHWC spatial pad). Exact, signed zeros and NaN included.

use super::blocks::Block;
use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `Pad` kernel.
pub struct Pad;

impl Op for Pad {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Pad"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"paddings"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let pads = read_host_ints(&ctx.input(1, true)?, "paddings")?;
        let (before, out_dims) = padded(sx.dims(), &pads)?;
        let out_shape = flat(&out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let out = run.desc(&out, out_shape)?;
        run.fill(out, 0)?;
        if is_empty(&sx) {
            return Ok(());
        }
        // The input is a block of the output, at the padding before it.
        let block = Block {
            src_dims: sx.dims(),
            src_at: &vec![0; before.len()],
            dst_dims: &out_dims,
            dst_at: &before,
            extent: sx.dims(),
            step: &[],
        };
        block.copy(run, out, run.desc(&x, sx)?)
    }
}

/// The padding before each axis and the output dims.
fn padded(dims: &[u64], pads: &[i64]) -> KernelResult<(Vec<u64>, Vec<u64>)> {
    let rank = dims.len();
    if pads.len() != 2 * rank || pads.iter().any(|&p| p < 0) {
        return Err(Failure::invalid(format!(
            "paddings must be [{rank}, 2] and non-negative, got {pads:?}"
        )));
    }
    let before: Vec<u64> = (0..rank).map(|a| pads[2 * a] as u64).collect();
    let out = (0..rank)
        .map(|a| dims[a] + before[a] + pads[2 * a + 1] as u64)
        .collect();
    Ok((before, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_nhwc_spatial_pad_copies_one_run_per_row() {
        // [1, 2, 2, 3] padded by one row/column before and after: rows of 2·3
        // land at output row 1 and 2, column 1, of a [1, 4, 4, 3] output.
        let (before, out) = padded(&[1, 2, 2, 3], &[0, 0, 1, 1, 1, 1, 0, 0]).unwrap();
        assert_eq!(out, [1, 4, 4, 3]);
        let block = Block {
            src_dims: &[1, 2, 2, 3],
            src_at: &[0; 4],
            dst_dims: &out,
            dst_at: &before,
            extent: &[1, 2, 2, 3],
            step: &[],
        };
        assert_eq!(block.runs().unwrap(), (6, vec![(0, 12 + 3), (6, 24 + 3)]));
    }

    #[test]
    fn padding_only_the_first_axis_is_one_run() {
        let (before, out) = padded(&[2, 3], &[1, 2, 0, 0]).unwrap();
        assert_eq!(out, [5, 3]);
        let block = Block {
            src_dims: &[2, 3],
            src_at: &[0, 0],
            dst_dims: &out,
            dst_at: &before,
            extent: &[2, 3],
            step: &[],
        };
        assert_eq!(block.runs().unwrap(), (6, vec![(0, 3)]));
        assert!(padded(&[2, 3], &[1, 2]).is_err());
        assert!(padded(&[2], &[-1, 0]).is_err());
    }
}
