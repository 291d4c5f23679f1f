//! `Transpose(x, perm)`, `perm` in host memory (int32 or int64): one
//! `TRANSPOSE_F32` after the driver coalesces the axes (exact).

use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{MAX_RANK, OpKind};

/// The `Transpose` kernel.
pub struct Transpose;

impl Op for Transpose {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Transpose"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Transpose([0; MAX_RANK]))
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"perm"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let perm = permutation(
            sx.dims().len(),
            &read_host_ints(&ctx.input(1, true)?, "perm")?,
        )?;
        let out_dims: Vec<u64> = (0..sx.dims().len())
            .map(|i| sx.dims()[usize::from(perm[i])])
            .collect();
        let out_shape = flat(&out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let inputs = [run.desc(&x, sx)?];
        run.launch(OpKind::Transpose(perm), &inputs, run.desc(&out, out_shape)?)
    }
}

/// `perm` checked as TF's CPU kernel does, padded with zeros.
fn permutation(rank: usize, perm: &[i64]) -> KernelResult<[u8; MAX_RANK]> {
    if perm.len() != rank {
        return Err(Failure::invalid(format!(
            "transpose expects a vector of size {rank}. But input(1) is a vector of size {}",
            perm.len()
        )));
    }
    let mut out = [0u8; MAX_RANK];
    let mut seen = [false; MAX_RANK];
    for (i, &p) in perm.iter().enumerate() {
        let Some(a) = usize::try_from(p).ok().filter(|&a| a < rank && !seen[a]) else {
            return Err(Failure::invalid(format!(
                "{p} is out of range [0 .. {rank}) or repeated in perm {perm:?}"
            )));
        };
        seen[a] = true;
        out[i] = a as u8;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perm_must_be_a_permutation_of_the_axes() {
        assert_eq!(permutation(3, &[2, 0, 1]).unwrap()[..3], [2, 0, 1]);
        assert!(permutation(2, &[0, 0]).is_err());
        assert!(permutation(2, &[0, 2]).is_err());
        assert!(permutation(2, &[-1, 0]).is_err());
        assert!(permutation(3, &[0, 1]).is_err());
    }
}
