//! `Max`, `Min` and `Prod` over any axes (`reduction_indices` in host
//! memory, `keep_dims`): the reduced axes moved last by one device
//! `Transpose` when they are not already, then a device row reduction;
//! `ArgMax` and `ArgMin` likewise over one axis.

use super::kernel::{Op, flat};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context, Tensor};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, MAX_RANK, OpKind, TensorDesc};

/// `Max`, `Min` or `Prod`.
pub struct Reduce {
    op: &'static CStr,
    kind: OpKind,
}

/// The kernels.
pub static KERNELS: [Reduce; 3] = [
    Reduce {
        op: c"Max",
        kind: OpKind::ReduceMax,
    },
    Reduce {
        op: c"Min",
        kind: OpKind::ReduceMin,
    },
    Reduce {
        op: c"Prod",
        kind: OpKind::ReduceProd,
    },
];

const TRANSPOSE: OpKind = OpKind::Transpose([0; MAX_RANK]);

impl Op for Reduce {
    type Attrs = bool;

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[TRANSPOSE]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"reduction_indices"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<bool> {
        ctx.bool_attr(c"keep_dims")
    }

    fn compute(&self, keep: &bool, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let axes = read_host_ints(&ctx.input(1, true)?, "reduction_indices")?;
        let reduced = shapes::reduced_axes(&sx, &axes)?;
        let out_dims: Vec<u64> = (0..sx.dims().len())
            .filter(|&a| *keep || !reduced[a])
            .map(|a| if reduced[a] { 1 } else { sx.dims()[a] })
            .collect();
        let out_shape = flat(&out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        let rows = out_shape.elements().unwrap_or(0);
        if rows == 0 {
            return Ok(());
        }
        let out = run.desc(&out, flat(&[rows])?)?;
        // Kept axes first, then the reduced ones, each in order.
        let rank = sx.dims().len();
        let order: Vec<usize> = (0..rank)
            .filter(|&a| !reduced[a])
            .chain((0..rank).filter(|&a| reduced[a]))
            .collect();
        let (rows_desc, _temp) = rows_of(ctx, run, &x, &order, rows)?;
        run.launch(self.kind, &[rows_desc], out)
    }
}

/// `x` as `[rows, len]` with its axes in `order`: a view when that order
/// keeps the axes of size > 1 in place, else a device `Transpose` into a
/// temp (returned, held until launched).
fn rows_of(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: &Tensor,
    order: &[usize],
    rows: u64,
) -> KernelResult<(TensorDesc, Option<Tensor>)> {
    let sx = x.shape()?;
    let len = sx.elements().unwrap_or(0) / rows.max(1);
    let rows_view = flat(&[rows, len])?;
    let moved = !order.iter().filter(|&&a| sx.dims()[a] > 1).is_sorted();
    if len == 0 || !moved {
        return Ok((run.desc(x, rows_view)?, None));
    }
    let mut perm = [0u8; MAX_RANK];
    for (p, &a) in perm.iter_mut().zip(order) {
        *p = a as u8;
    }
    let dims: Vec<u64> = order.iter().map(|&a| sx.dims()[a]).collect();
    let moved_shape = flat(&dims)?;
    let temp = ctx.temp(&moved_shape)?;
    let desc = run.desc(&temp, moved_shape)?;
    run.launch(OpKind::Transpose(perm), &[run.desc(x, sx)?], desc)?;
    Ok((
        TensorDesc {
            shape: rows_view,
            ..desc
        },
        Some(temp),
    ))
}

/// `ArgMax` or `ArgMin` over one axis (`dimension` in host memory), into
/// int32 or int64 (`output_type`): the axis moved last by a device
/// `Transpose` when it is not, then the device's row arg-reduction.
pub struct ArgReduce {
    op: &'static CStr,
    min: bool,
}

/// The kernels.
pub static ARG_KERNELS: [ArgReduce; 2] = [
    ArgReduce {
        op: c"ArgMax",
        min: false,
    },
    ArgReduce {
        op: c"ArgMin",
        min: true,
    },
];

impl Op for ArgReduce {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(match self.min {
            false => OpKind::ArgMax(DType::I64),
            true => OpKind::ArgMin(DType::I64),
        })
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[TRANSPOSE]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"dimension"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let rank = sx.dims().len() as i64;
        let axis = match read_host_ints(&ctx.input(1, true)?, "dimension")?.as_slice() {
            &[a] if (-rank..rank).contains(&a) => a.rem_euclid(rank.max(1)) as usize,
            other => {
                return Err(Failure::invalid(format!(
                    "Expected dimension in the range [{}, {rank}), but got {other:?}",
                    -rank
                )));
            }
        };
        let len = sx.dims()[axis];
        if len == 0 {
            return Err(Failure::invalid(format!(
                "Reduction axis {axis} is empty in shape {:?}",
                sx.dims()
            )));
        }
        let out_dims: Vec<u64> = (0..sx.dims().len())
            .filter(|&a| a != axis)
            .map(|a| sx.dims()[a])
            .collect();
        let out_shape = flat(&out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        let rows = out_shape.elements().unwrap_or(0);
        if rows == 0 {
            return Ok(());
        }
        let out_type = match out.dtype() {
            TF_DataType::TF_INT32 => DType::I32,
            _ => DType::I64,
        };
        let kind = match self.min {
            false => OpKind::ArgMax(out_type),
            true => OpKind::ArgMin(out_type),
        };
        let out = run.typed_desc(&out, flat(&[rows])?, out_type)?;
        let order: Vec<usize> = (0..sx.dims().len())
            .filter(|&a| a != axis)
            .chain([axis])
            .collect();
        let (rows_desc, _temp) = rows_of(ctx, run, &x, &order, rows)?;
        run.launch(kind, &[rows_desc], out)
    }
}
