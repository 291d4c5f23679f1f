//! `ConcatV2(values..., axis)`, `axis` in host memory (int32 or int64,
//! negative from the end): on a device of `Concat`, the inputs as rows
//! joined two at a time (one launch per input after the first, instead of
//! one copy per row); else one block copy per input into its place.

use super::blocks::Block;
use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{DType, OpKind, Shape, TensorDesc};

/// The device op the kernel joins rows with, when declared.
const CONCAT: OpKind = OpKind::Concat(DType::F32);

/// The `ConcatV2` kernel.
pub struct ConcatV2;

impl Op for ConcatV2 {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"ConcatV2"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn may_launch(&self) -> &'static [OpKind] {
        &[CONCAT]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"axis"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let n = ctx.num_inputs().saturating_sub(1);
        let axis = read_host_ints(&ctx.input(n, true)?, "axis")?;
        let values = (0..n)
            .map(|i| ctx.input(i, false))
            .collect::<KernelResult<Vec<_>>>()?;
        let shapes = values
            .iter()
            .map(|v| v.shape())
            .collect::<KernelResult<Vec<_>>>()?;
        let (axis, out_dims) = concat_dims(&shapes, &axis)?;
        let out_shape = flat(&out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let out = run.desc(&out, out_shape)?;
        let outer: u64 = out_dims[..axis].iter().product();
        let inner: u64 = out_dims[axis + 1..].iter().product();
        let joined: Vec<usize> = (0..n).filter(|&i| !is_empty(&shapes[i])).collect();
        // One row per copy: the device's joins are fewer launches.
        if outer > 1 && joined.len() > 1 && run.supports(CONCAT) {
            let rows = |i: usize| [outer, shapes[i].dims()[axis] * inner];
            let mut inputs = Vec::with_capacity(joined.len());
            for &i in &joined {
                inputs.push(run.desc(&values[i], flat(&rows(i))?)?);
            }
            return join(ctx, run, &inputs, out);
        }
        let mut dst_at = vec![0u64; out_dims.len()];
        for (value, shape) in values.iter().zip(&shapes) {
            let block = Block {
                src_dims: shape.dims(),
                src_at: &vec![0; out_dims.len()],
                dst_dims: &out_dims,
                dst_at: &dst_at,
                extent: shape.dims(),
                step: &[],
            };
            if !is_empty(shape) {
                block.copy(run, out, run.desc(value, *shape)?)?;
            }
            dst_at[axis] += shape.dims()[axis];
        }
        Ok(())
    }
}

/// `inputs` (`[outer, width]` each) joined left to right into `out`, the
/// joins but the last into temporaries.
fn join(
    ctx: &Context,
    run: &mut Launcher<'_>,
    inputs: &[TensorDesc],
    out: TensorDesc,
) -> KernelResult<()> {
    let outer = inputs[0].shape.dims()[0];
    let mut temps = Vec::new();
    let mut acc = inputs[0];
    for (j, x) in inputs.iter().enumerate().skip(1) {
        let shape = flat(&[outer, acc.shape.last() + x.shape.last()])?;
        let dst = match j + 1 == inputs.len() {
            true => TensorDesc { shape, ..out },
            false => {
                temps.push(ctx.temp(&shape)?);
                run.desc(&temps[temps.len() - 1], shape)?
            }
        };
        run.launch(CONCAT, &[acc, *x], dst)?;
        acc = dst;
    }
    Ok(())
}

/// The concatenation axis (made non-negative) and the output's dims,
/// checked as TF's CPU kernel does.
pub(crate) fn concat_dims(shapes: &[Shape], axis: &[i64]) -> KernelResult<(usize, Vec<u64>)> {
    let Some(first) = shapes.first() else {
        return Err(Failure::invalid("ConcatV2 needs at least one value"));
    };
    let rank = first.dims().len() as i64;
    let &[a] = axis else {
        return Err(Failure::invalid(format!(
            "axis must be a scalar, got {axis:?}"
        )));
    };
    if !(-rank <= a && a < rank) || rank == 0 {
        return Err(Failure::invalid(format!(
            "ConcatOp : Expected concatenating dimensions in the range [{}, {rank}), but got {a}",
            -rank
        )));
    }
    let axis = (if a < 0 { a + rank } else { a }) as usize;
    let mut out = first.dims().to_vec();
    out[axis] = 0;
    for (i, s) in shapes.iter().enumerate() {
        let same = s.dims().len() == out.len()
            && s.dims()
                .iter()
                .zip(first.dims())
                .enumerate()
                .all(|(d, (x, y))| d == axis || x == y);
        if !same {
            return Err(Failure::invalid(format!(
                "ConcatOp : Dimension mismatch: input 0 has shape {} and input {i} has shape {}",
                shapes::show(first),
                shapes::show(s)
            )));
        }
        out[axis] += s.dims()[axis];
    }
    Ok((axis, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(d: &[u64]) -> Shape {
        Shape::new(d).unwrap()
    }

    #[test]
    fn the_axis_sums_and_other_dims_must_agree() {
        let shapes = [s(&[2, 3, 4]), s(&[2, 1, 4])];
        assert_eq!(concat_dims(&shapes, &[1]).unwrap(), (1, vec![2, 4, 4]));
        assert_eq!(concat_dims(&shapes, &[-2]).unwrap(), (1, vec![2, 4, 4]));
        let e = concat_dims(&shapes, &[2]).unwrap_err();
        assert!(e.cause.contains("Dimension mismatch"), "{}", e.cause);
        assert!(concat_dims(&shapes, &[3]).is_err());
        assert!(concat_dims(&[s(&[])], &[0]).is_err());
    }
}
