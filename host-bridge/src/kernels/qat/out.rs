//! A `Qat` op's outputs, computed on the host, and their writing into the
//! call's host-memory outputs.

use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::tf::Context;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::Shape;

/// One output, computed on the host.
pub(super) struct Out {
    pub(super) dtype: TF_DataType,
    pub(super) shape: Shape,
    pub(super) bytes: Vec<u8>,
}

impl Out {
    pub(super) fn new<T: Copy>(dtype: TF_DataType, values: &[T]) -> KernelResult<Self> {
        let shape = Shape::new(&[values.len() as u64]).ok_or_else(|| Failure::invalid("shape"))?;
        Self::shaped(dtype, shape, values)
    }

    pub(super) fn shaped<T: Copy>(
        dtype: TF_DataType,
        shape: Shape,
        values: &[T],
    ) -> KernelResult<Self> {
        let len = std::mem::size_of_val(values);
        // SAFETY: plain numbers (i8, i32, f32) viewed as their bytes.
        let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), len) };
        Ok(Self {
            dtype,
            shape,
            bytes: bytes.to_vec(),
        })
    }
}

/// Writes `outs` into the call's outputs (on the CPU).
pub(super) fn write_outputs(ctx: &Context, outs: &[Out]) -> KernelResult<()> {
    for (index, out) in outs.iter().enumerate() {
        write_output(ctx, index, out)?;
    }
    Ok(())
}

/// Writes `out` into host-memory output `index`.
pub(super) fn write_output(ctx: &Context, index: usize, out: &Out) -> KernelResult<()> {
    let tensor = ctx.output_at(index as i32, &out.shape, &[])?;
    if tensor.byte_size() != out.bytes.len() {
        return Err(Failure::invalid(format!(
            "a {}-byte output for {} bytes",
            tensor.byte_size(),
            out.bytes.len()
        )));
    }
    if !out.bytes.is_empty() {
        // SAFETY: TF allocated this host output of `out.bytes.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                out.bytes.as_ptr(),
                tensor.data().cast::<u8>(),
                out.bytes.len(),
            )
        };
    }
    Ok(())
}
