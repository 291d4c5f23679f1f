//! The softmax cross-entropy losses, lowered to the device's ops:
//!
//! - `SoftmaxCrossEntropyWithLogits`: logits and labels `[batch, classes]`
//!   on the device; `backprop = softmax(logits) − labels`, `loss = −Σ_classes
//!   labels · log_softmax(logits)`.
//! - `SparseSoftmaxCrossEntropyWithLogits`: labels (int32/int64, `[batch]`)
//!   in host memory, turned into `−onehot(labels)` by fills; then
//!   `backprop = softmax(logits) + (−onehot)` and `loss = Σ_classes (−onehot)
//!   · log_softmax(logits)`, i.e. `−log_softmax(logits)[label]`. A label
//!   outside `[0, classes)` is an InvalidArgument, as on TF's CPU.

use super::kernel::{Op, flat, scalar};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_core::accelerator::{Binary, DeviceAddr, OpKind, Shape, TensorDesc};

/// The `SparseSoftmaxCrossEntropyWithLogits` kernel.
pub struct SparseSoftmaxXent;

impl Op for SparseSoftmaxXent {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"SparseSoftmaxCrossEntropyWithLogits"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::LogSoftmax)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[
            OpKind::Softmax,
            OpKind::Binary(Binary::ADD),
            OpKind::Binary(Binary::MUL),
            OpKind::ReduceSum,
        ]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"labels"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let logits = ctx.input(0, false)?;
        let shape = logits.shape()?;
        let (batch, classes) = batch_and_classes(&shape)?;
        let labels = read_host_ints(&ctx.input(1, true)?, "labels")?;
        if labels.len() as u64 != batch {
            return Err(Failure::invalid(format!(
                "logits and labels must have the same first dimension, got logits \
                 shape {:?} and {} labels",
                shape.dims(),
                labels.len()
            )));
        }
        if let Some(bad) = labels.iter().find(|&&l| l < 0 || l as u64 >= classes) {
            return Err(Failure::invalid(format!(
                "Received a label value of {bad} which is outside the valid range of [0, {classes})"
            )));
        }
        let rows = flat(&[batch])?;
        let loss = ctx.output_at(0, &rows, &[])?;
        let backprop = ctx.output_at(1, &shape, &[])?;
        if batch == 0 {
            return Ok(());
        }
        let neg_onehot = ctx.temp(&shape)?;
        let neg_onehot = run.desc(&neg_onehot, shape)?;
        run.fill(neg_onehot, 0)?;
        let one = flat(&[])?;
        for (row, &label) in labels.iter().enumerate() {
            let at = (row as u64 * classes + label as u64) * 4;
            let cell = TensorDesc::new(DeviceAddr(neg_onehot.addr.0 + at), neg_onehot.dtype, one);
            run.fill(cell, (-1.0f32).to_bits())?;
        }
        let x = run.desc(&logits, shape)?;
        let backprop = run.desc(&backprop, shape)?;
        run.launch(OpKind::Softmax, &[x], backprop)?;
        run.launch(
            OpKind::Binary(Binary::ADD),
            &[backprop, neg_onehot],
            backprop,
        )?;
        let log_probs = ctx.temp(&shape)?;
        let log_probs = run.desc(&log_probs, shape)?;
        run.launch(OpKind::LogSoftmax, &[x], log_probs)?;
        run.launch(
            OpKind::Binary(Binary::MUL),
            &[log_probs, neg_onehot],
            log_probs,
        )?;
        run.launch(OpKind::ReduceSum, &[log_probs], run.desc(&loss, rows)?)
    }
}

/// The `SoftmaxCrossEntropyWithLogits` kernel (dense labels).
pub struct SoftmaxXent;

impl Op for SoftmaxXent {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"SoftmaxCrossEntropyWithLogits"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::LogSoftmax)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[
            OpKind::Softmax,
            OpKind::Binary(Binary::SUB),
            OpKind::Binary(Binary::MUL),
            OpKind::ReduceSum,
        ]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (logits, labels) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let shape = logits.shape()?;
        let (batch, _) = batch_and_classes(&shape)?;
        if labels.shape()? != shape {
            return Err(Failure::unimplemented(format!(
                "labels of shape {:?} for logits of shape {:?}: the device needs both \
                 [batch, classes] (broadcast the labels first)",
                labels.shape()?.dims(),
                shape.dims()
            )));
        }
        let rows = flat(&[batch])?;
        let loss = ctx.output_at(0, &rows, &[])?;
        let backprop = ctx.output_at(1, &shape, &[])?;
        if batch == 0 {
            return Ok(());
        }
        let (x, y) = (run.desc(&logits, shape)?, run.desc(&labels, shape)?);
        let backprop = run.desc(&backprop, shape)?;
        run.launch(OpKind::Softmax, &[x], backprop)?;
        run.launch(OpKind::Binary(Binary::SUB), &[backprop, y], backprop)?;
        let log_probs = ctx.temp(&shape)?;
        let log_probs = run.desc(&log_probs, shape)?;
        run.launch(OpKind::LogSoftmax, &[x], log_probs)?;
        run.launch(OpKind::Binary(Binary::MUL), &[log_probs, y], log_probs)?;
        let loss = run.desc(&loss, rows)?;
        run.launch(OpKind::ReduceSum, &[log_probs], loss)?;
        let minus_one = scalar(ctx, run, -1.0)?;
        run.launch(OpKind::Binary(Binary::MUL), &[loss, minus_one.desc], loss)
    }
}

/// `[batch, classes]`, with at least one class when there is a row.
fn batch_and_classes(shape: &Shape) -> KernelResult<(u64, u64)> {
    let &[batch, classes] = shape.dims() else {
        return Err(Failure::invalid(format!(
            "logits must be 2-D, got shape {:?}",
            shape.dims()
        )));
    };
    if batch > 0 && classes == 0 {
        return Err(Failure::invalid(format!(
            "Must have at least one class, but got logits shape {:?}",
            shape.dims()
        )));
    }
    Ok((batch, classes))
}
