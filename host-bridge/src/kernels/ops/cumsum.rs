//! `Cumsum(x, axis)`, `axis` a scalar in host memory (int32 or int64,
//! negative from the end): `x` viewed as `[outer, n, inner]` around the
//! axis, then the catalogue's `Cumsum` record with `exclusive` and
//! `reverse` (exact).

use super::kernel::{Op, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{Attrs, OpKind, Shape, named};

/// The `Cumsum` kernel.
pub struct Cumsum;

/// The record's op with `attrs` (its declaration is in `core`'s catalogue).
fn kind(attrs: &Attrs) -> Option<OpKind> {
    named("Cumsum")?.kind(attrs)
}

impl Op for Cumsum {
    /// The record's attribute block: `exclusive`, `reverse`.
    type Attrs = Attrs;

    fn op(&self) -> &'static CStr {
        c"Cumsum"
    }

    fn family(&self) -> Option<OpKind> {
        kind(&Attrs::default())
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"axis"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Attrs> {
        let mut a = Attrs::default();
        a.0[0] = u8::from(ctx.bool_attr(c"exclusive")?);
        a.0[1] = u8::from(ctx.bool_attr(c"reverse")?);
        Ok(a)
    }

    fn compute(&self, attrs: &Attrs, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let axis = ctx.input(1, true)?;
        let sa = axis.shape()?;
        if !sa.dims().is_empty() {
            return Err(Failure::invalid(format!(
                "ScanOp: axis must be a scalar, not {:?}",
                sa.dims()
            )));
        }
        let dims = sx.dims();
        let rank = dims.len() as i64;
        let a = read_host_ints(&axis, "axis")?[0];
        let a = if a < 0 { a + rank } else { a };
        if !(0..rank).contains(&a) {
            return Err(Failure::invalid(format!(
                "ScanOp: Expected scan axis in the range [{}, {rank}), but got {}",
                -rank,
                read_host_ints(&axis, "axis")?[0]
            )));
        }
        let out = ctx.output(&sx, &[])?;
        if is_empty(&sx) {
            return Ok(());
        }
        let a = a as usize;
        let product = |d: &[u64]| d.iter().product::<u64>();
        let view = Shape::new(&[product(&dims[..a]), dims[a], product(&dims[a + 1..])])
            .ok_or_else(|| Failure::invalid("Cumsum: the tensor's size overflows"))?;
        let kind = kind(attrs).ok_or_else(|| Failure::invalid("Cumsum: bad attributes"))?;
        run.launch(kind, &[run.desc(&x, view)?], run.desc(&out, view)?)
    }
}
