//! `Sum` and `Mean` over one contiguous block of axes (`keep_dims`), axes
//! in host memory (int32 or int64): a device row sum, or ones-vector MatMuls
//! for leading or middle axes ([`shapes::sum`] plans it); `Mean` then
//! divides by the count in place (`Div` by a scalar, as TF divides).

use super::kernel::{Op, flat};
use crate::kernels::commands::Commands;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes::{self, SumPlan};
use crate::kernels::tf::{Construction, Context, Tensor};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{Binary, DeviceAddr, OpKind, TensorDesc};

/// `Sum` or `Mean`.
pub struct Reduce {
    op: &'static CStr,
    mean: bool,
}

/// `Sum`.
pub const SUM: Reduce = Reduce {
    op: c"Sum",
    mean: false,
};
/// `Mean` (`GlobalAveragePooling2D` is a `Mean` over `[1, 2]`).
pub const MEAN: Reduce = Reduce {
    op: c"Mean",
    mean: true,
};

/// `keep_dims`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeepDims(bool);

impl Op for Reduce {
    type Attrs = KeepDims;

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::ReduceSum)
    }

    /// Sums over leading or middle axes are ones-vector MatMuls.
    fn also_launches(&self) -> &'static [OpKind] {
        if self.mean {
            &[MATMUL, OpKind::Binary(Binary::DIV)]
        } else {
            &[MATMUL]
        }
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
        let Some((out, count)) = reduce(ctx, run, &x, &axes, keep.0)? else {
            return Ok(());
        };
        if self.mean {
            let scalar = flat(&[])?;
            let divisor = ctx.temp(&scalar)?;
            let divisor = run.desc(&divisor, scalar)?;
            run.fill(divisor, (count as f32).to_bits())?;
            run.launch(OpKind::Binary(Binary::DIV), &[out, divisor], out)?;
        }
        Ok(())
    }
}

/// Sums `x` (input 0) over `axes` into output 0: what `Sum`, `Mean` and
/// `BiasAddGrad` launch. Returns the output and the number of elements
/// summed into each, unless the output is empty.
pub(super) fn reduce(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: &Tensor,
    axes: &[i64],
    keep_dims: bool,
) -> KernelResult<Option<(TensorDesc, u64)>> {
    let sx = x.shape()?;
    let (out_shape, plan) = shapes::sum(&sx, axes, keep_dims)?;
    let out = ctx.output(&out_shape, &[])?;
    let (total, outputs) = (
        sx.elements().unwrap_or(0),
        out_shape.elements().unwrap_or(0),
    );
    match plan {
        SumPlan::Nothing => {}
        SumPlan::Zeros => run.fill(run.desc(&out, out_shape)?, 0)?,
        SumPlan::Copy => run.copy(run.desc(&out, out_shape)?, run.desc(x, sx)?)?,
        SumPlan::Trailing { rows, len } => {
            let input = run.desc(x, flat(&[rows, len])?)?;
            run.launch(OpKind::ReduceSum, &[input], run.desc(&out, flat(&[rows])?)?)?;
        }
        SumPlan::Leading { len, cols } => blocks(ctx, run, x, &out, [1, len, cols])?,
        SumPlan::Middle { outer, len, inner } => blocks(ctx, run, x, &out, [outer, len, inner])?,
    }
    if outputs == 0 {
        return Ok(None);
    }
    Ok(Some((run.desc(&out, out_shape)?, total / outputs)))
}

/// `x` as `[outer, len, inner]` summed over `len` into `out` (`[outer,
/// inner]`): one `ones[1, len] · x[b][len, inner]` GEMM per outer index.
fn blocks(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: &Tensor,
    out: &Tensor,
    [outer, len, inner]: [u64; 3],
) -> KernelResult<()> {
    let ones_shape = flat(&[1, len])?;
    let ones = ctx.temp(&ones_shape)?;
    let ones = run.desc(&ones, ones_shape)?;
    run.fill(ones, 1.0f32.to_bits())?;
    let x = run.desc(x, flat(&[outer * len * inner])?)?;
    let out = run.desc(out, flat(&[outer * inner])?)?;
    let mut gemms = Commands::default();
    for b in 0..outer {
        let at = |t: TensorDesc, elements: u64, dims: &[u64]| -> KernelResult<TensorDesc> {
            let addr = DeviceAddr(t.addr.0 + b * elements * 4);
            Ok(TensorDesc::new(addr, t.dtype, flat(dims)?))
        };
        let inputs = [ones, at(x, len * inner, &[len, inner])?];
        gemms.launch(MATMUL, &inputs, at(out, inner, &[1, inner])?)?;
    }
    run.enqueue_all(gemms)
}

const MATMUL: OpKind = OpKind::MatMul {
    transpose_a: false,
    transpose_b: false,
};

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

/// A host-memory shape input (`Fill`'s `dims`, a `shape`): sizes that must
/// not be negative; `name` is for errors.
pub(super) fn sizes(dims: &[i64], name: &str) -> KernelResult<Vec<u64>> {
    dims.iter()
        .map(|&d| u64::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| Failure::invalid(format!("{name} {dims:?} has a negative size")))
}
