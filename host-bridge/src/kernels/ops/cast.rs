//! `Cast` between float32 and int32, int64, bool, bfloat16 or float16, from
//! int8 to float32, and between int32 and int64: one device `Cast` (TF's
//! CPU conversions bit for bit; to the half types rounding to nearest even).

use super::kernel::{Op, TypePair, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::Context;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, OpKind};

/// The `Cast` kernel.
pub struct Cast;

const fn pair(src: TF_DataType, dst: TF_DataType) -> TypePair {
    [(c"SrcT", src), (c"DstT", dst)]
}

/// The (`SrcT`, `DstT`) pairs the device converts.
static PAIRS: [TypePair; 13] = {
    use TF_DataType as T;
    [
        pair(T::TF_FLOAT, T::TF_INT32),
        pair(T::TF_FLOAT, T::TF_INT64),
        pair(T::TF_FLOAT, T::TF_BOOL),
        pair(T::TF_INT32, T::TF_FLOAT),
        pair(T::TF_INT64, T::TF_FLOAT),
        pair(T::TF_BOOL, T::TF_FLOAT),
        pair(T::TF_INT32, T::TF_INT64),
        pair(T::TF_INT64, T::TF_INT32),
        pair(T::TF_FLOAT, T::TF_BFLOAT16),
        pair(T::TF_BFLOAT16, T::TF_FLOAT),
        pair(T::TF_FLOAT, T::TF_HALF),
        pair(T::TF_HALF, T::TF_FLOAT),
        pair(T::TF_INT8, T::TF_FLOAT),
    ]
};

/// The device element type of a TF type the device casts.
pub fn device_type(t: TF_DataType) -> Option<DType> {
    match t {
        TF_DataType::TF_FLOAT => Some(DType::F32),
        TF_DataType::TF_INT32 => Some(DType::I32),
        TF_DataType::TF_INT64 => Some(DType::I64),
        TF_DataType::TF_BOOL => Some(DType::Bool),
        TF_DataType::TF_BFLOAT16 => Some(DType::BF16),
        TF_DataType::TF_HALF => Some(DType::F16),
        TF_DataType::TF_INT8 => Some(DType::I8),
        _ => None,
    }
}

impl Op for Cast {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"Cast"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Cast {
            from: DType::F32,
            to: DType::I32,
        })
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        &PAIRS
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, true)?;
        let shape = x.shape()?;
        let out = ctx.output(&shape, &[])?;
        let types = (device_type(x.dtype()), device_type(out.dtype()));
        let (Some(from), Some(to)) = types else {
            return Err(Failure::unimplemented(format!(
                "Cast from {:?} to {:?}",
                x.dtype(),
                out.dtype()
            )));
        };
        if is_empty(&shape) {
            return Ok(());
        }
        let input = run.typed_desc(&x, shape, from)?;
        run.launch(
            OpKind::Cast { from, to },
            &[input],
            run.typed_desc(&out, shape, to)?,
        )
    }
}
