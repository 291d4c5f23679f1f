//! `FusedBatchNormV3` for inference (`is_training = false`), channels last:
//! `y = (x − mean) · (rsqrt(variance + ε) · scale) + offset`, in the order
//! of TF's CPU kernel, as five device launches over `[c]` vectors and `x`.
//! Training mode is refused at construction, and the graph pass moves such
//! nodes to the CPU first (`graph/kernel_list.rs`, [`takes_attrs`](crate::graph)).

use super::kernel::{Op, flat, scalar};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, OpKind, Unary};

/// The `FusedBatchNormV3` kernel.
pub struct FusedBatchNorm;

/// `epsilon` (read at construction).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Epsilon(f32);

impl Op for FusedBatchNorm {
    type Attrs = Epsilon;

    fn op(&self) -> &'static CStr {
        c"FusedBatchNormV3"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Unary(Unary::RSQRT))
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[
            OpKind::Binary(Binary::ADD),
            OpKind::Binary(Binary::SUB),
            OpKind::Binary(Binary::MUL),
            OpKind::BiasAdd,
        ]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Epsilon> {
        if ctx.bool_attr(c"is_training")? {
            return Err(Failure::unimplemented(
                "is_training = true: the device runs batch norm for inference only",
            ));
        }
        let format = ctx.string_attr(c"data_format")?;
        if !matches!(format.as_str(), "NHWC" | "NDHWC") {
            return Err(Failure::unimplemented(format!(
                "data_format {format}: the device runs channels last only (NHWC, NDHWC)"
            )));
        }
        Ok(Epsilon(ctx.float_attr(c"epsilon")?))
    }

    fn compute(&self, eps: &Epsilon, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        if !matches!(sx.dims().len(), 4 | 5) {
            return Err(Failure::invalid(format!(
                "input must be 4- or 5-dimensional, got shape {}",
                shapes::show(&sx)
            )));
        }
        let c = sx.dims().last().copied().unwrap_or(0);
        let sc = flat(&[c])?;
        let mut params = Vec::with_capacity(4);
        for (index, name) in [(1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")] {
            let tensor = ctx.input(index, false)?;
            let shape = tensor.shape()?;
            if shape != sc {
                return Err(Failure::invalid(format!(
                    "{name} has shape {}; it must be [{c}], the channels of x",
                    shapes::show(&shape)
                )));
            }
            params.push(tensor);
        }
        let y = ctx.output(&sx, &[0])?;
        let batch_mean = ctx.output_at(1, &sc, &[3])?;
        let batch_var = ctx.output_at(2, &sc, &[4])?;
        let saved_mean = ctx.output_at(3, &sc, &[])?;
        let saved_var = ctx.output_at(4, &sc, &[])?;
        let reserve = ctx.output_at(5, &flat(&[])?, &[])?;
        run.fill(run.desc(&reserve, flat(&[])?)?, 0)?;
        let [scale, offset, mean, var] = [0, 1, 2, 3].map(|i| run.desc(&params[i], sc));
        let (scale, offset, mean, var) = (scale?, offset?, mean?, var?);
        if c == 0 {
            return Ok(());
        }
        if sx.elements() == Some(0) {
            // TF's CPU kernel: an empty batch has NaN statistics.
            for out in [&batch_mean, &batch_var] {
                run.fill(run.desc(out, sc)?, f32::NAN.to_bits())?;
            }
            return Ok(());
        }
        // factor = rsqrt(variance + ε) · scale
        let epsilon = scalar(ctx, run, eps.0)?;
        let factor = ctx.temp(&sc)?;
        let f = run.desc(&factor, sc)?;
        run.launch(OpKind::Binary(Binary::ADD), &[var, epsilon.desc], f)?;
        run.launch(OpKind::Unary(Unary::RSQRT), &[f], f)?;
        run.launch(OpKind::Binary(Binary::MUL), &[f, scale], f)?;
        // y = (x − mean) · factor + offset
        let (xd, yd) = (run.desc(&x, sx)?, run.desc(&y, sx)?);
        run.launch(OpKind::Binary(Binary::SUB), &[xd, mean], yd)?;
        run.launch(OpKind::Binary(Binary::MUL), &[yd, f], yd)?;
        run.launch(OpKind::BiasAdd, &[yd, offset], yd)?;
        // The statistics pass through; the saved ones (TF's CPU kernel
        // leaves them unset) are the same, for a gradient that reads them.
        for (out, from) in [
            (&batch_mean, mean),
            (&batch_var, var),
            (&saved_mean, mean),
            (&saved_var, var),
        ] {
            let dst = run.desc(out, sc)?;
            if dst.addr != from.addr {
                run.copy(dst, from)?;
            }
        }
        drop((factor, epsilon)); // held until here: the launches read them
        Ok(())
    }
}
