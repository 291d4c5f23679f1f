//! The gradients of the window kernels: `Conv2DBackpropInput(input_sizes,
//! filter, out_backprop)`, `Conv2DBackpropFilter(input, filter_sizes,
//! out_backprop)`, `MaxPoolGrad(orig_input, orig_output, grad)` and
//! `AvgPoolGrad(orig_input_shape, grad)`, and the depthwise ones
//! `DepthwiseConv2dNativeBackpropInput/Filter` (same inputs as Conv2D's). The
//! forward op's geometry comes from the sizes TF passes; the gradient
//! must have the forward output's shape.

use super::kernel::is_empty;
use super::sum::read_host_ints;
use super::window_geometry::{Kind, WindowAttrs, dims, geometry};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::Context;
use tensorplug_core::accelerator::{DeviceAddr, Shape, TensorDesc};

/// One compute call of the gradient `kind`.
pub(super) fn compute(
    kind: Kind,
    a: &WindowAttrs,
    ctx: &Context,
    run: &mut Launcher<'_>,
) -> KernelResult<()> {
    if matches!(
        kind,
        Kind::DepthwiseBackpropInput | Kind::DepthwiseBackpropFilter
    ) {
        return depthwise(kind, a, ctx, run);
    }
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
    same_as_forward(&sdy, &forward)?;
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

/// The depthwise gradients, as the full convolution's over the
/// block-diagonal filter `[kh, kw, c, c·m]` whose column `ci·m + j` of row
/// `ci` is the depthwise filter's `[.., ci, j]` and zero elsewhere: the
/// same sums plus zero terms, at `c` times the work (no device command of
/// its own yet). The full filter is a device temporary: zero-filled, then
/// `kh·kw·c` copies of `m` elements in or out.
fn depthwise(
    kind: Kind,
    a: &WindowAttrs,
    ctx: &Context,
    run: &mut Launcher<'_>,
) -> KernelResult<()> {
    let by_input = kind == Kind::DepthwiseBackpropInput;
    let (x, filter, dy) = if by_input {
        (None, Some(ctx.input(1, false)?), ctx.input(2, false)?)
    } else {
        (Some(ctx.input(0, false)?), None, ctx.input(2, false)?)
    };
    let sx = match &x {
        Some(x) => x.shape()?,
        None => sizes(ctx, 0, "input_sizes")?,
    };
    let sf = match &filter {
        Some(f) => f.shape()?,
        None => sizes(ctx, 1, "filter_sizes")?,
    };
    let &[kh, kw, c, m] = sf.dims() else {
        return Err(Failure::invalid(format!(
            "filter must be 4-dimensional, got shape {}",
            shapes::show(&sf)
        )));
    };
    let full = dims(&[
        kh,
        kw,
        c,
        c.checked_mul(m)
            .ok_or_else(|| Failure::invalid("overflow"))?,
    ])?;
    let full_kind = if by_input {
        Kind::ConvBackpropInput
    } else {
        Kind::ConvBackpropFilter
    };
    let (window, forward) = geometry(full_kind, a, &sx, Some(&full))?;
    let sdy = dy.shape()?;
    same_as_forward(&sdy, &forward)?;
    let out_shape = if by_input { sx } else { sf };
    let out = ctx.output(&out_shape, &[])?;
    if is_empty(&out_shape) {
        return Ok(());
    }
    let diagonal = Diagonal {
        taps: kh * kw,
        c,
        m,
    };
    let full_tensor = ctx.temp(&full)?; // held until the launches are enqueued
    let wide = run.desc(&full_tensor, full)?;
    let dy = run.desc(&dy, sdy)?;
    if let Some(f) = &filter {
        run.fill(wide, 0)?;
        diagonal.copy(run, wide, run.desc(f, sf)?, true)?;
        run.launch(
            full_kind.op(window),
            &[dy, wide],
            run.desc(&out, out_shape)?,
        )
    } else {
        let x = x.as_ref().ok_or_else(|| Failure::invalid("no input"))?;
        run.launch(full_kind.op(window), &[run.desc(x, sx)?, dy], wide)?;
        diagonal.copy(run, run.desc(&out, out_shape)?, wide, false)
    }
}

/// Where a depthwise filter `[taps, c, m]` sits in the full one
/// `[taps, c, c·m]`: row `ci` of each tap at column `ci·m`.
#[derive(Clone, Copy, Debug)]
struct Diagonal {
    taps: u64,
    c: u64,
    m: u64,
}

impl Diagonal {
    /// `(depthwise, full)` element offsets of each run of `m` elements.
    fn runs(self) -> KernelResult<Vec<(u64, u64)>> {
        let count = self.taps * self.c;
        if count > super::blocks::MAX_RUNS {
            return Err(Failure::unimplemented(format!(
                "a depthwise filter of {} taps × {} channels takes {count} device copies, \
                 more than {}",
                self.taps,
                self.c,
                super::blocks::MAX_RUNS
            )));
        }
        let (c, m) = (self.c, self.m);
        Ok((0..count)
            .map(|row| (row * m, (row / c) * c * c * m + (row % c) * (c + 1) * m))
            .collect())
    }

    /// Copies the depthwise filter into the full one (`into_full`) or back.
    fn copy(
        self,
        run: &mut Launcher<'_>,
        dst: TensorDesc,
        src: TensorDesc,
        into_full: bool,
    ) -> KernelResult<()> {
        let shape = dims(&[self.m])?;
        let at = |t: TensorDesc, element: u64| {
            TensorDesc::new(DeviceAddr(t.addr.0 + element * 4), t.dtype, shape)
        };
        for (small, wide) in self.runs()? {
            let (d, s) = if into_full {
                (wide, small)
            } else {
                (small, wide)
            };
            run.copy(at(dst, d), at(src, s))?;
        }
        Ok(())
    }
}

/// The incoming gradient must have the forward op's output shape.
pub(super) fn same_as_forward(sdy: &Shape, forward: &Shape) -> KernelResult<()> {
    if sdy != forward {
        return Err(Failure::invalid(format!(
            "the gradient has shape {}, but the forward op's output has shape {}",
            shapes::show(sdy),
            shapes::show(forward)
        )));
    }
    Ok(())
}

/// A 4-entry shape from host-memory input `index` (TF's `*_sizes`).
fn sizes(ctx: &Context, index: usize, name: &str) -> KernelResult<Shape> {
    sizes_shape(&read_host_ints(&ctx.input(index, true)?, name)?, name)
}

/// TF's `*_sizes` values as a shape: 4 non-negative sizes.
pub(super) fn sizes_shape(values: &[i64], name: &str) -> KernelResult<Shape> {
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

#[cfg(test)]
mod tests {
    use super::Diagonal;

    #[test]
    fn the_depthwise_filter_sits_on_the_full_filters_diagonal() {
        // 2 taps, 3 channels, multiplier 2: the full filter is [2, 3, 6].
        let runs = Diagonal {
            taps: 2,
            c: 3,
            m: 2,
        }
        .runs()
        .unwrap();
        let full: Vec<u64> = runs.iter().map(|&(_, f)| f).collect();
        // Tap 0: rows at 0, 6, 12, columns 0, 2, 4; tap 1 starts at 18.
        assert_eq!(full, [0, 8, 16, 18, 26, 34]);
        let small: Vec<u64> = runs.iter().map(|&(s, _)| s).collect();
        assert_eq!(small, [0, 2, 4, 6, 8, 10]);
        assert!(
            Diagonal {
                taps: 9,
                c: 10_000,
                m: 1
            }
            .runs()
            .is_err()
        );
    }
}
