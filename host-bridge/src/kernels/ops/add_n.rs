//! `AddN`: the sum of `N` tensors of one shape, as device `Add`s in the
//! order of TF's CPU kernel: the first `N mod 8` inputs (8 or 9 for a
//! remainder of 0 or 1) from left to right into the output, then per
//! following group of 8 `out += (x₁ + … + x₈)`, the group summed first.

use super::kernel::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes::show;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, OpKind};

/// The `AddN` kernel.
pub struct AddN;

const ADD: OpKind = OpKind::Binary(Binary::ADD);

impl Op for AddN {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"AddN"
    }

    fn family(&self) -> Option<OpKind> {
        Some(ADD)
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let first = ctx.input(0, false)?;
        let shape = first.shape()?;
        let mut inputs = vec![run.desc(&first, shape)?];
        let mut tensors = vec![first];
        for i in 1..ctx.num_inputs() {
            let x = ctx.input(i, false)?;
            let s = x.shape()?;
            if s != shape {
                return Err(Failure::invalid(format!(
                    "Inputs to operation AddN must have the same size and shape.  Input 0: {} != \
                     input {i}: {}",
                    show(&shape),
                    show(&s)
                )));
            }
            inputs.push(run.desc(&x, s)?);
            tensors.push(x);
        }
        // Only inputs 0 and 1 may be the output: later ones are read after it is written.
        let out = ctx.output(&shape, &[0, 1])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let out = run.desc(&out, shape)?;
        let Some(second) = inputs.get(1) else {
            return run.copy(out, inputs[0]);
        };
        let first_group = match inputs.len() % 8 {
            r @ 2.. => r,
            r => (r + 8).min(inputs.len()),
        };
        run.launch(ADD, &[inputs[0], *second], out)?;
        for x in &inputs[2..first_group] {
            run.launch(ADD, &[out, *x], out)?;
        }
        if first_group == inputs.len() {
            return Ok(());
        }
        let group = ctx.temp(&shape)?;
        let group = run.desc(&group, shape)?;
        for eight in inputs[first_group..].chunks(8) {
            run.launch(ADD, &[eight[0], eight[1]], group)?;
            for x in &eight[2..] {
                run.launch(ADD, &[group, *x], group)?;
            }
            run.launch(ADD, &[out, group], out)?;
        }
        Ok(())
    }
}
