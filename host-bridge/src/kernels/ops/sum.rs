//! `Sum` over a leading or a trailing block of axes (`keep_dims`), axes in
//! host memory (int32 or int64): a device row sum, or a ones-vector MatMul
//! for leading axes ([`shapes::sum`] plans it).

use super::{Op, flat};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes::{self, SumPlan};
use crate::kernels::tf::{Construction, Context, Tensor};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::OpKind;

/// The `Sum` kernel.
pub struct Sum;

/// `keep_dims`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeepDims(bool);

impl Op for Sum {
    type Attrs = KeepDims;

    fn op(&self) -> &'static CStr {
        c"Sum"
    }

    fn family(&self) -> OpKind {
        OpKind::ReduceSum
    }

    /// Sums over leading axes are a ones-vector MatMul.
    fn also_launches(&self) -> &'static [OpKind] {
        &[OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        }]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"reduction_indices"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<KeepDims> {
        Ok(KeepDims(ctx.bool_attr(c"keep_dims")?))
    }

    fn compute(&self, keep: &KeepDims, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let axes = read_host_ints(&ctx.input(1, true)?, "reduction_indices")?;
        reduce(ctx, run, &x, &axes, keep.0)
    }
}

/// Sums `x` (input 0) over `axes` into output 0: what `Sum` and
/// `BiasAddGrad` launch.
pub(super) fn reduce(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: &Tensor,
    axes: &[i64],
    keep_dims: bool,
) -> KernelResult<()> {
    let sx = x.shape()?;
    let (out_shape, plan) = shapes::sum(&sx, axes, keep_dims)?;
    let out = ctx.output(&out_shape, &[])?;
    match plan {
        SumPlan::Nothing => {}
        SumPlan::Zeros => run.fill(run.desc(&out, out_shape)?, 0)?,
        SumPlan::Copy => run.copy(run.desc(&out, out_shape)?, run.desc(x, sx)?)?,
        SumPlan::Trailing { rows, len } => {
            let input = run.desc(x, flat(&[rows, len])?)?;
            run.launch(OpKind::ReduceSum, &[input], run.desc(&out, flat(&[rows])?)?)?;
        }
        SumPlan::Leading { len, cols } => {
            let ones_shape = flat(&[1, len])?;
            let ones = ctx.temp(&ones_shape)?;
            let ones = run.desc(&ones, ones_shape)?;
            run.fill(ones, 1.0f32.to_bits())?;
            let inputs = [ones, run.desc(x, flat(&[len, cols])?)?];
            let kind = OpKind::MatMul {
                transpose_a: false,
                transpose_b: false,
            };
            run.launch(kind, &inputs, run.desc(&out, flat(&[1, cols])?)?)?;
        }
    }
    Ok(())
}

/// A host-memory int32 or int64 input (scalar or vector), e.g. `Sum`'s
/// `reduction_indices` or `BroadcastTo`'s `shape`; `name` is for errors.
pub(super) fn read_host_ints(tensor: &Tensor, name: &str) -> KernelResult<Vec<i64>> {
    let bytes = tensor.byte_size();
    let data = tensor.data().cast::<u8>();
    if bytes > 0 && data.is_null() {
        return Err(Failure::invalid(format!("{name} has no data")));
    }
    let width = match tensor.dtype() {
        TF_DataType::TF_INT32 => 4,
        TF_DataType::TF_INT64 => 8,
        other => {
            return Err(Failure::invalid(format!(
                "{name} must be int32 or int64, not {other:?}"
            )));
        }
    };
    Ok((0..bytes / width)
        .map(|i| {
            // SAFETY: host memory (HostMemory input) of `bytes` bytes; unaligned reads.
            unsafe {
                let at = data.add(i * width);
                if width == 4 {
                    i64::from(at.cast::<i32>().read_unaligned())
                } else {
                    at.cast::<i64>().read_unaligned()
                }
            }
        })
        .collect())
}
