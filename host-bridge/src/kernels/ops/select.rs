//! `Select` and `SelectV2` on float32: the bool condition cast to an f32
//! mask, operands of another shape broadcast to the output's (`x · 1`,
//! exact), then one device `Select`.

use super::kernel::{Op, flat, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes::{self, show};
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, DType, OpKind, Shape, TensorDesc};

/// `Select` (v1: one shape, or a condition of the first axis) or
/// `SelectV2` (NumPy broadcasting of all three).
pub struct Select {
    op: &'static CStr,
    broadcast: bool,
}

/// The kernels.
pub static KERNELS: [Select; 2] = [
    Select {
        op: c"Select",
        broadcast: false,
    },
    Select {
        op: c"SelectV2",
        broadcast: true,
    },
];

const FROM_BOOL: OpKind = OpKind::Cast {
    from: DType::Bool,
    to: DType::F32,
};
const MUL: OpKind = OpKind::Binary(Binary::MUL);

impl Op for Select {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Select)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[FROM_BOOL, MUL]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let cond = ctx.input(0, true)?;
        let (t, e) = (ctx.input(1, false)?, ctx.input(2, false)?);
        let (sc, st, se) = (cond.shape()?, t.shape()?, e.shape()?);
        let (out_shape, cond_view) = if self.broadcast {
            let te = shapes::broadcast(&st, &se)?;
            (shapes::broadcast(&sc, &te)?, sc)
        } else {
            (st, v1_condition(&sc, &st, &se)?)
        };
        let out = ctx.output(&out_shape, &[1, 2])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let mut held = Vec::new();
        let mask = ctx.temp(&sc)?;
        let mask_desc = run.desc(&mask, cond_view)?;
        run.launch(
            FROM_BOOL,
            &[run.typed_desc(&cond, sc, DType::Bool)?],
            run.desc(&mask, sc)?,
        )?;
        held.push(mask);
        let mut ones = None;
        let mut spread = |x: TensorDesc, run: &mut Launcher<'_>| -> KernelResult<TensorDesc> {
            if x.shape == out_shape {
                return Ok(x);
            }
            let ones = match ones {
                Some(d) => d,
                None => {
                    let t = ctx.temp(&out_shape)?;
                    let d = run.desc(&t, out_shape)?;
                    run.fill(d, 1.0f32.to_bits())?;
                    held.push(t);
                    *ones.insert(d)
                }
            };
            let t = ctx.temp(&out_shape)?;
            let d = run.desc(&t, out_shape)?;
            run.launch(MUL, &[x, ones], d)?;
            held.push(t);
            Ok(d)
        };
        let mask = spread(mask_desc, run)?;
        let t = spread(run.desc(&t, st)?, run)?;
        let e = spread(run.desc(&e, se)?, run)?;
        run.launch(OpKind::Select, &[mask, t, e], run.desc(&out, out_shape)?)
    }
}

/// `Select`'s rule: `t` and `e` of one shape; the condition of that shape,
/// a scalar, or a vector over the first axis (viewed as `[n, 1, …]`).
fn v1_condition(c: &Shape, t: &Shape, e: &Shape) -> KernelResult<Shape> {
    if t != e {
        return Err(Failure::invalid(format!(
            "'then' and 'else' must have the same size.  but received: {} vs. {}",
            show(t),
            show(e)
        )));
    }
    match c.dims() {
        d if d == t.dims() || d.is_empty() => Ok(*c),
        &[n] if t.dims().first() == Some(&n) => {
            let mut dims = vec![1u64; t.dims().len()];
            dims[0] = n;
            flat(&dims)
        }
        _ => Err(Failure::invalid(format!(
            "'cond' must be a scalar, a vector of the first axis of 'then', or of its shape: {} vs. {}",
            show(c),
            show(t)
        ))),
    }
}
