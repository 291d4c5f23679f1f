//! `Fill(dims, value)`, `ZerosLike(x)` and `OnesLike(x)`: a device fill of
//! the output with one 32-bit pattern (exact), for float32 and int32.
//! `Fill`'s `dims` and `value` are in host memory, so the value is known
//! when the fill is enqueued. The int32 registrations matter: TF's own
//! `DEVICE_DEFAULT` int32 `ZerosLike`/`OnesLike` read their input from
//! device memory as host memory, which crashed the process on our device.

use super::sum::read_host_ints;
use super::{Op, flat, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Context, Tensor};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::OpKind;

/// Which of the three.
pub enum Fill {
    /// `Fill(dims, value)`.
    Value,
    /// `ZerosLike(x)`.
    Zeros,
    /// `OnesLike(x)`.
    Ones,
}

/// The kernels.
pub static KERNELS: [Fill; 3] = [Fill::Value, Fill::Zeros, Fill::Ones];

impl Op for Fill {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        match self {
            Self::Value => c"Fill",
            Self::Zeros => c"ZerosLike",
            Self::Ones => c"OnesLike",
        }
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        match self {
            Self::Value => &[c"dims", c"value"],
            _ => &[],
        }
    }

    fn more_types(&self) -> &'static [TF_DataType] {
        &[TF_DataType::TF_INT32]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (shape, pattern) = match self {
            Self::Value => {
                let dims = read_host_ints(&ctx.input(0, true)?, "dims")?;
                let dims = dims
                    .iter()
                    .map(|&d| u64::try_from(d))
                    .collect::<Result<Vec<u64>, _>>()
                    .map_err(|_| Failure::invalid(format!("dims {dims:?} has a negative size")))?;
                (flat(&dims)?, host_scalar(&ctx.input(1, true)?)?)
            }
            Self::Zeros | Self::Ones => {
                let x = ctx.input(0, true)?;
                let one = match x.dtype() {
                    TF_DataType::TF_INT32 => 1u32,
                    _ => 1f32.to_bits(),
                };
                let pattern = if matches!(self, Self::Ones) { one } else { 0 };
                (x.shape()?, pattern)
            }
        };
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        run.fill(run.desc(&out, shape)?, pattern)
    }
}

/// A host float32 or int32 scalar's bits.
fn host_scalar(t: &Tensor) -> KernelResult<u32> {
    let typed = matches!(t.dtype(), TF_DataType::TF_FLOAT | TF_DataType::TF_INT32);
    if !typed || t.byte_size() != 4 || t.data().is_null() {
        return Err(Failure::invalid(format!(
            "value must be a float32 or int32 scalar, got {:?} of {} bytes",
            t.dtype(),
            t.byte_size()
        )));
    }
    // SAFETY: a host tensor of 4 bytes (HostMemory input).
    Ok(unsafe { t.data().cast::<u32>().read_unaligned() })
}
