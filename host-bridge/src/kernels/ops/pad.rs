//! `Pad` (constant 0), `paddings` in host memory (int32 or int64): a fill of
//! the output with zeros, then one device-to-device copy per contiguous run
//! of the input (`[n, h]` runs of `w·c` for an NHWC spatial pad). Exact,
//! signed zeros and NaN included.

use super::sum::read_host_ints;
use super::{Op, flat, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{DeviceAddr, OpKind, TensorDesc};

/// The most copies one `Pad` may take.
const MAX_RUNS: u64 = 65_536;

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
        let plan = plan(sx.dims(), &pads)?;
        let out_shape = flat(&plan.out)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let out = run.desc(&out, out_shape)?;
        run.fill(out, 0)?;
        if is_empty(&sx) {
            return Ok(());
        }
        let x = run.desc(&x, sx)?;
        let run_shape = flat(&[plan.run])?;
        let at = |t: TensorDesc, element: u64| {
            TensorDesc::new(DeviceAddr(t.addr.0 + element * 4), t.dtype, run_shape)
        };
        for (src, dst) in plan.offsets() {
            run.copy(at(out, dst), at(x, src))?;
        }
        Ok(())
    }
}

/// Where each contiguous run of the input goes in the output.
#[derive(Debug, PartialEq)]
struct Plan {
    out: Vec<u64>,
    /// Elements per run.
    run: u64,
    /// Input dims and padding-before of the axes that index the runs, with
    /// the run's own axis last.
    outer: Vec<(u64, u64)>,
}

fn plan(dims: &[u64], pads: &[i64]) -> KernelResult<Plan> {
    let rank = dims.len();
    if pads.len() != 2 * rank || pads.iter().any(|&p| p < 0) {
        return Err(Failure::invalid(format!(
            "paddings must be [{rank}, 2] and non-negative, got {pads:?}"
        )));
    }
    if rank == 0 {
        return Ok(Plan {
            out: Vec::new(),
            run: 1,
            outer: vec![(1, 0)],
        });
    }
    let pad = |axis: usize| (pads[2 * axis] as u64, pads[2 * axis + 1] as u64);
    let out: Vec<u64> = (0..rank).map(|a| dims[a] + pad(a).0 + pad(a).1).collect();
    // The last padded axis: everything after it is copied whole.
    let last = (0..rank).rev().find(|&a| pad(a) != (0, 0)).unwrap_or(0);
    let run = dims[last..].iter().product::<u64>();
    let inner: u64 = dims[last + 1..].iter().product();
    let outer: Vec<(u64, u64)> = (0..last).map(|a| (dims[a], pad(a).0)).collect();
    let runs: u64 = outer.iter().map(|(d, _)| d).product();
    if runs > MAX_RUNS {
        return Err(Failure::unimplemented(format!(
            "padding a {dims:?} tensor takes {runs} device copies, more than {MAX_RUNS}"
        )));
    }
    let mut outer = outer;
    // The run's axis: its padding-before shifts the run by that many rows.
    outer.push((1, pad(last).0 * inner));
    Ok(Plan { out, run, outer })
}

impl Plan {
    /// `(input element, output element)` of each run, in order.
    fn offsets(&self) -> Vec<(u64, u64)> {
        let rank = self.outer.len();
        // Output strides of the run-indexing axes (elements).
        let mut out_stride = vec![0u64; rank];
        let mut stride = self.out[rank - 1..].iter().product::<u64>();
        for a in (0..rank - 1).rev() {
            out_stride[a] = stride;
            stride *= self.out[a];
        }
        let shift = self.outer[rank - 1].1;
        let mut offsets = Vec::new();
        let mut index = vec![0u64; rank - 1];
        let count: u64 = self.outer[..rank - 1].iter().map(|(d, _)| d).product();
        for i in 0..count {
            let dst: u64 = (0..rank - 1)
                .map(|a| (index[a] + self.outer[a].1) * out_stride[a])
                .sum();
            offsets.push((i * self.run, dst + shift));
            for a in (0..rank - 1).rev() {
                index[a] += 1;
                if index[a] < self.outer[a].0 {
                    break;
                }
                index[a] = 0;
            }
        }
        offsets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_nhwc_spatial_pad_copies_one_run_per_row() {
        // [1, 2, 2, 3] padded by one row/column before and after: rows of 2·3
        // land at output row 1 and 2, column 1, of a [1, 4, 4, 3] output.
        let p = plan(&[1, 2, 2, 3], &[0, 0, 1, 1, 1, 1, 0, 0]).unwrap();
        assert_eq!((p.out.clone(), p.run), (vec![1, 4, 4, 3], 6));
        assert_eq!(p.offsets(), [(0, 12 + 3), (6, 24 + 3)]);
    }

    #[test]
    fn padding_only_the_first_axis_is_one_run() {
        let p = plan(&[2, 3], &[1, 2, 0, 0]).unwrap();
        assert_eq!((p.out.clone(), p.run), (vec![5, 3], 6));
        assert_eq!(p.offsets(), [(0, 3)]);
        assert!(plan(&[2, 3], &[1, 2]).is_err());
        assert!(plan(&[2], &[-1, 0]).is_err());
    }
}
