//! `Add` on int64, computed on the host: the merge op TF's collectives run
//! on the device when they reduce integers (`MultiWorkerMirroredStrategy`
//! sums each worker's "has data" count in int64 on every step). Only `Add`
//! is registered, not `AddV2` (what `+` writes), so user graphs keep their
//! integer arithmetic on the CPU. The tensors are a few elements: both are
//! read to the host, added with TF's wrapping, and written back.

use super::host_add::add_on_host;
use super::kernel::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{Binary, OpKind};

/// The int64 `Add` kernel.
pub struct IntAdd;

/// Above this many elements the kernel refuses: it is for counters, not data.
const MAX_ELEMENTS: u64 = 1 << 16;

impl Op for IntAdd {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Add"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn only_beside(&self) -> &'static [OpKind] {
        // The collectives merge floats with the device's Add: without it
        // they do not run on the device, and an integer Add alone is of no use.
        const ADD: [OpKind; 1] = [OpKind::Binary(Binary::ADD)];
        &ADD
    }

    fn registers_f32(&self) -> bool {
        false
    }

    fn more_types(&self) -> &'static [TF_DataType] {
        &[TF_DataType::TF_INT64]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (x, y) = (ctx.input(0, true)?, ctx.input(1, true)?);
        let shape = x.shape()?;
        if y.shape()? != shape {
            return Err(Failure::unimplemented(format!(
                "int64 Add of shapes {:?} and {:?} (the device adds integers of one shape)",
                shape.dims(),
                y.shape()?.dims()
            )));
        }
        // In place when TF allows (its collectives require it).
        let out = ctx.output(&shape, &[0, 1])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let n = shape.elements().unwrap_or(u64::MAX);
        if n > MAX_ELEMENTS {
            return Err(Failure::unimplemented(format!(
                "int64 Add of {n} elements (the device adds at most {MAX_ELEMENTS}, on the host)"
            )));
        }
        add_on_host(run, &x, &y, &out)
    }
}
