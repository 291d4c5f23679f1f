//! `ZerosLike(x)` and `OnesLike(x)`: a device fill of the output with one
//! 32-bit pattern (exact), for float32 and int32. The int32 registrations
//! matter: TF's own `DEVICE_DEFAULT` int32 kernels read their input from
//! device memory as host memory, which crashed the process on our device.
//!
//! `Fill` is not here: its `value` is a host-memory input, and an eager
//! `tf.fill` on the device right after a device fault then failed with that
//! fault's error in the value's copy (`tests/tests/tf_variables.rs`), a
//! stale-error path issue 26 is to fix first.

use super::{Op, is_empty};
use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::OpKind;

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
