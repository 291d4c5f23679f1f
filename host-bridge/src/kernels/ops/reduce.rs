//! `Max`, `Min` and `Prod` over any axes (`reduction_indices` in host
//! memory, `keep_dims`): the reduced axes moved last by one device
//! `Transpose` when they are not already, then a device row reduction.

use super::sum::read_host_ints;
use super::{Op, flat};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{MAX_RANK, OpKind};

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
        let len = sx.elements().unwrap_or(0) / rows;
        let out = run.desc(&out, flat(&[rows])?)?;
        // Kept axes first, then the reduced ones, each in order; axes of
        // size 1 may go anywhere.
        let rank = sx.dims().len();
        let order: Vec<usize> = (0..rank)
            .filter(|&a| !reduced[a])
            .chain((0..rank).filter(|&a| reduced[a]))
            .collect();
        let moved = !order.iter().filter(|&&a| sx.dims()[a] > 1).is_sorted();
        let rows_view = flat(&[rows, len])?;
        if len == 0 || !moved {
            return run.launch(self.kind, &[run.desc(&x, rows_view)?], out);
        }
        let mut perm = [0u8; MAX_RANK];
        for (p, &a) in perm.iter_mut().zip(&order) {
            *p = a as u8;
        }
        let dims: Vec<u64> = order.iter().map(|&a| sx.dims()[a]).collect();
        let moved_shape = flat(&dims)?;
        let temp = ctx.temp(&moved_shape)?;
        let temp = run.desc(&temp, moved_shape)?;
        run.launch(OpKind::Transpose(perm), &[run.desc(&x, sx)?], temp)?;
        let rows_desc = tensorplug_core::accelerator::TensorDesc {
            shape: rows_view,
            ..temp
        };
        run.launch(self.kind, &[rows_desc], out)
    }
}
