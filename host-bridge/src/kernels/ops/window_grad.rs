//! The gradients of the window kernels: `Conv2DBackpropInput(input_sizes,
//! filter, out_backprop)`, `Conv2DBackpropFilter(input, filter_sizes,
//! out_backprop)`, `MaxPoolGrad(orig_input, orig_output, grad)` and
//! `AvgPoolGrad(orig_input_shape, grad)`. The
//! forward op's geometry comes from the sizes TF passes; the gradient
//! must have the forward output's shape.

use super::is_empty;
use super::sum::read_host_ints;
use super::window::{Kind, WindowAttrs, dims, geometry};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::Context;

/// One compute call of the gradient `kind`.
pub(super) fn compute(
    kind: Kind,
    a: &WindowAttrs,
    ctx: &Context,
    run: &mut Launcher<'_>,
) -> KernelResult<()> {
    // The forward input, the filter (convolutions) and the incoming gradient.
    let (x, filter, dy) = match kind {
        Kind::ConvBackpropInput => (None, Some(ctx.input(1, false)?), ctx.input(2, false)?),
        Kind::ConvBackpropFilter => (Some(ctx.input(0, false)?), None, ctx.input(2, false)?),
        Kind::AvgPoolGrad => (None, None, ctx.input(1, false)?),
        _ => (Some(ctx.input(0, false)?), None, ctx.input(2, false)?),
    };
    let sx = match &x {
        Some(x) => x.shape()?,
        None if kind == Kind::AvgPoolGrad => sizes(ctx, 0, "orig_input_shape")?,
        None => sizes(ctx, 0, "input_sizes")?,
    };
    let sf = match (&filter, kind) {
        (Some(f), _) => Some(f.shape()?),
        (None, Kind::ConvBackpropFilter) => Some(sizes(ctx, 1, "filter_sizes")?),
        _ => None,
    };
    let (window, forward) = geometry(kind, a, &sx, sf.as_ref())?;
    let sdy = dy.shape()?;
    if sdy != forward {
        return Err(Failure::invalid(format!(
            "the gradient has shape {}, but the forward op's output has shape {}",
            shapes::show(&sdy),
            shapes::show(&forward)
        )));
    }
    let out_shape = match (kind, sf) {
        (Kind::ConvBackpropFilter, Some(sf)) => sf,
        _ => sx,
    };
    let out = ctx.output(&out_shape, &[])?;
    if is_empty(&out_shape) {
        return Ok(());
    }
    let dy = run.desc(&dy, sdy)?;
    let inputs = match (&x, &filter, sf) {
        (None, Some(f), Some(sf)) => vec![dy, run.desc(f, sf)?],
        (Some(x), _, _) => vec![run.desc(x, sx)?, dy],
        _ => vec![dy],
    };
    run.launch(kind.op(window), &inputs, run.desc(&out, out_shape)?)
}

/// A 4-entry shape from host-memory input `index` (TF's `*_sizes`).
fn sizes(
    ctx: &Context,
    index: usize,
    name: &str,
) -> KernelResult<tensorplug_core::accelerator::Shape> {
    let values = read_host_ints(&ctx.input(index, true)?, name)?;
    let bad = || Failure::invalid(format!("{name} {values:?}: 4 non-negative sizes"));
    if values.len() != 4 {
        return Err(bad());
    }
    let d: Vec<u64> = values
        .iter()
        .map(|&v| u64::try_from(v))
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    dims(&d)
}
