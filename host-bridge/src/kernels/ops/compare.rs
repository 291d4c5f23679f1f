//! The comparisons (`Equal` … `GreaterEqual`) on float32: the device's
//! broadcasting comparison into an f32 mask, then a `Cast` to TF's bool.

use super::kernel::{Op, is_empty};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, DType, OpKind};

/// A comparison: TF's op and the catalogue's mask op.
pub struct Compare {
    op: &'static CStr,
    mask: OpKind,
}

const fn compare(op: &'static CStr, name: &str) -> Compare {
    Compare {
        op,
        mask: OpKind::Binary(Binary::named(name)),
    }
}

/// The kernels.
pub static KERNELS: [Compare; 6] = [
    compare(c"Equal", "Equal"),
    compare(c"NotEqual", "NotEqual"),
    compare(c"Less", "Less"),
    compare(c"LessEqual", "LessEqual"),
    compare(c"Greater", "Greater"),
    compare(c"GreaterEqual", "GreaterEqual"),
];

pub(super) const TO_BOOL: OpKind = OpKind::Cast {
    from: DType::F32,
    to: DType::Bool,
};

/// `IsFinite(x)` on float32: the device's finiteness mask, cast to bool
/// (Keras' `mixed_float16` loss scaling checks its gradients with it).
pub struct IsFinite;

const FINITE: OpKind = OpKind::Unary(tensorplug_core::accelerator::Unary::named("IsFinite"));

impl Op for IsFinite {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"IsFinite"
    }

    fn family(&self) -> Option<OpKind> {
        Some(FINITE)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[TO_BOOL]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let shape = x.shape()?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let mask = ctx.temp(&shape)?;
        let mask = run.desc(&mask, shape)?;
        run.launch(FINITE, &[run.desc(&x, shape)?], mask)?;
        run.launch(TO_BOOL, &[mask], run.typed_desc(&out, shape, DType::Bool)?)
    }
}

/// `incompatible_shape_error` (`Equal`, `NotEqual`; true for the others).
#[derive(Clone, Copy, Debug, Default)]
pub struct Strict(bool);

impl Op for Compare {
    type Attrs = Strict;

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.mask)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[TO_BOOL]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Strict> {
        match self.op.to_bytes() {
            b"Equal" | b"NotEqual" => Ok(Strict(ctx.bool_attr(c"incompatible_shape_error")?)),
            _ => Ok(Strict(true)),
        }
    }

    fn compute(&self, strict: &Strict, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sa, sb) = (a.shape()?, b.shape()?);
        let out_shape = match shapes::broadcast(&sa, &sb) {
            Ok(shape) => shape,
            // TF's answer for shapes that do not broadcast: one bool,
            // whether they differ.
            Err(_) if !strict.0 => {
                let scalar = super::kernel::flat(&[])?;
                let out = ctx.output(&scalar, &[])?;
                let differ = u32::from(self.op.to_bytes() == b"NotEqual");
                return run.fill(run.typed_desc(&out, scalar, DType::Bool)?, differ);
            }
            Err(e) => return Err(e),
        };
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let mask = ctx.temp(&out_shape)?;
        let mask = run.desc(&mask, out_shape)?;
        run.launch(self.mask, &[run.desc(&a, sa)?, run.desc(&b, sb)?], mask)?;
        run.launch(
            TO_BOOL,
            &[mask],
            run.typed_desc(&out, out_shape, DType::Bool)?,
        )
    }
}
