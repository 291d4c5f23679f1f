//! `Tile`: the output, viewed as `[m0, d0, m1, d1, ...]`, is `x` viewed as
//! `[1, d0, 1, d1, ...]` broadcast over it: so `x · ones` on the device's
//! broadcasting `Mul` (exact). Axes with multiple 1 and size-1 axes add one
//! view axis, not two; views need rank ≤ 6 (else `UnimplementedError`).
//! `multiples` is a host-memory input (int32 or int64).

use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, MAX_RANK, OpKind};

/// The `Tile` kernel.
pub struct Tile;

impl Op for Tile {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Tile"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Binary(Binary::MUL))
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"multiples"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let multiples = read_host_ints(&ctx.input(1, true)?, "multiples")?;
        let (x_view, out_view, out_dims) = views(sx.dims(), &multiples)?;
        let out_shape = flat(&out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let fits = |dims: &[u64]| {
            flat(dims).map_err(|_| {
                Failure::unimplemented(format!(
                    "multiples {multiples:?} of a {:?} input need a rank-{} view (the device \
                     broadcasts at most rank {MAX_RANK})",
                    sx.dims(),
                    dims.len()
                ))
            })
        };
        let (x_view, out_view) = (fits(&x_view)?, fits(&out_view)?);
        let ones = ctx.temp(&out_shape)?;
        run.fill(run.desc(&ones, out_shape)?, 1.0f32.to_bits())?;
        let inputs = [run.desc(&x, x_view)?, run.desc(&ones, out_view)?];
        run.launch(
            OpKind::Binary(Binary::MUL),
            &inputs,
            run.desc(&out, out_view)?,
        )
    }
}

/// `(x view, output view, output dims)` of `Tile(x[dims], multiples)`.
fn views(dims: &[u64], multiples: &[i64]) -> KernelResult<(Vec<u64>, Vec<u64>, Vec<u64>)> {
    if multiples.len() != dims.len() {
        return Err(Failure::invalid(format!(
            "Expected multiples argument to be a vector of length {} but got length {}",
            dims.len(),
            multiples.len()
        )));
    }
    let (mut x_view, mut out_view, mut out_dims) = (Vec::new(), Vec::new(), Vec::new());
    for (&d, &m) in dims.iter().zip(multiples) {
        let m = u64::try_from(m)
            .map_err(|_| Failure::invalid(format!("Expected multiples[i] >= 0, but got {m}")))?;
        let size = d
            .checked_mul(m)
            .ok_or_else(|| Failure::invalid("tiled size overflows"))?;
        out_dims.push(size);
        if m > 1 && d > 1 {
            x_view.extend([1, d]);
            out_view.extend([m, d]);
        } else {
            x_view.push(if m == 1 { d } else { 1 });
            out_view.push(size);
        }
    }
    Ok((x_view, out_view, out_dims))
}

#[cfg(test)]
mod tests {
    use super::views;

    #[test]
    fn views_interleave_only_the_tiled_axes_of_size_above_one() {
        let (x, out, dims) = views(&[2, 3], &[2, 1]).unwrap();
        assert_eq!((x, out, dims), (vec![1, 2, 3], vec![2, 2, 3], vec![4, 3]));
        let (x, out, dims) = views(&[1, 3], &[5, 2]).unwrap();
        assert_eq!((x, out, dims), (vec![1, 1, 3], vec![5, 2, 3], vec![5, 6]));
        let (x, out, dims) = views(&[], &[]).unwrap();
        assert!(x.is_empty() && out.is_empty() && dims.is_empty());
        assert!(views(&[2], &[1, 1]).is_err());
        assert!(views(&[2], &[-1]).is_err());
    }
}
