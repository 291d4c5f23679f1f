//! `Bitcast` between float32 and int32 (one size: the shape stays): a
//! device copy of the bytes (TF's CPU kernel shares the buffer instead).

use super::kernel::{Op, TypePair, is_empty};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, OpKind};

/// The `Bitcast` kernel.
pub struct Bitcast;

static PAIRS: [TypePair; 2] = [
    [
        (c"T", TF_DataType::TF_FLOAT),
        (c"type", TF_DataType::TF_INT32),
    ],
    [
        (c"T", TF_DataType::TF_INT32),
        (c"type", TF_DataType::TF_FLOAT),
    ],
];

impl Op for Bitcast {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Bitcast"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        &PAIRS
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, true)?;
        let shape = x.shape()?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let (x, out) = (
            run.typed_desc(&x, shape, DType::I32)?,
            run.typed_desc(&out, shape, DType::I32)?,
        );
        run.copy(out, x)
    }
}
