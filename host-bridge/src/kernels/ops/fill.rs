//! `ZerosLike(x)` and `OnesLike(x)`: a device fill of the output with one
//! 32-bit pattern (exact), for float32 and int32. The int32 registrations
//! matter: TF's own `DEVICE_DEFAULT` int32 kernels read their input from
//! device memory as host memory, which crashed the process on our device.
//!
//! `Fill(dims, value)` on float32: `dims` in host memory, `value` in device
//! memory (a host-memory `value` made an eager `tf.fill` right after a
//! device fault fail with that fault's error in the value's copy, a
//! stale-error path): the output filled with 1.0, then
//! multiplied by `value` in place (exact: `1 · v = v`, NaN and −0 too).

use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{Binary, OpKind};

/// Which of the two.
pub enum Fill {
    /// `ZerosLike(x)`.
    Zeros,
    /// `OnesLike(x)`.
    Ones,
}

/// The kernels.
pub static KERNELS: [Fill; 2] = [Fill::Zeros, Fill::Ones];

impl Op for Fill {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        match self {
            Self::Zeros => c"ZerosLike",
            Self::Ones => c"OnesLike",
        }
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn more_types(&self) -> &'static [TF_DataType] {
        &[TF_DataType::TF_INT32]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, true)?;
        let one = match x.dtype() {
            TF_DataType::TF_INT32 => 1u32,
            _ => 1f32.to_bits(),
        };
        let pattern = if matches!(self, Self::Ones) { one } else { 0 };
        let shape = x.shape()?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        run.fill(run.desc(&out, shape)?, pattern)
    }
}

/// The `Fill` kernel (float32).
pub struct FillValue;

const MUL: OpKind = OpKind::Binary(Binary::MUL);

impl Op for FillValue {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Fill"
    }

    fn family(&self) -> Option<OpKind> {
        Some(MUL)
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"dims"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let dims = read_host_ints(&ctx.input(0, true)?, "dims")?;
        let value = ctx.input(1, false)?;
        if !value.shape()?.dims().is_empty() {
            return Err(Failure::invalid(format!(
                "value must be a scalar, got shape {:?}",
                value.shape()?.dims()
            )));
        }
        let dims = super::sum::sizes(&dims, "dims")?;
        let shape = flat(&dims)?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let out = run.desc(&out, shape)?;
        run.fill(out, 1.0f32.to_bits())?;
        run.launch(MUL, &[out, run.desc(&value, flat(&[])?)?], out)
    }
}
