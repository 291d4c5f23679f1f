//! `GatherV2` (embeddings) and `UnsortedSegmentSum` (their gradients) on
//! the device's `Gather` and `SegmentSum`, with int32 or int64 indices in
//! device memory. An index out of range fails the op when the device runs it
//! (`InvalidArgument`, at the next wait); TF's CPU kernels fail it too.

use super::kernel::{Op, TypePair, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes::show;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, OpKind, Shape};

/// The registrations: float32 data, int32 or int64 indices.
const fn pairs(data: &'static CStr) -> [TypePair; 2] {
    [
        [
            (data, TF_DataType::TF_FLOAT),
            (c"Tindices", TF_DataType::TF_INT32),
        ],
        [
            (data, TF_DataType::TF_FLOAT),
            (c"Tindices", TF_DataType::TF_INT64),
        ],
    ]
}
static GATHER_TYPES: [TypePair; 2] = pairs(c"Tparams");
static SEGMENT_TYPES: [TypePair; 2] = pairs(c"T");

/// The device type of an index tensor.
fn index_type(t: &crate::kernels::tf::Tensor) -> DType {
    match t.dtype() {
        TF_DataType::TF_INT64 => DType::I64,
        _ => DType::I32,
    }
}

/// `GatherV2(params, indices, axis)`, `batch_dims` 0: registered for that
/// value only, so TF places other values on the CPU, eager ops too
/// (`kernels/kernel_def.rs`); `construct` still refuses them where TF
/// lacks `TF_RegisterKernelBuilderWithKernelDef`.
pub struct GatherV2;

impl Op for GatherV2 {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"GatherV2"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::Gather(DType::I32))
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        &GATHER_TYPES
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"axis"]
    }

    fn int_constraints(&self) -> &'static [(&'static CStr, i64)] {
        &[(c"batch_dims", 0)]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<()> {
        match ctx.int_attr(c"batch_dims")? {
            0 => Ok(()),
            b => Err(Failure::unimplemented(format!(
                "GatherV2 with batch_dims = {b} (the FPGA gathers with batch_dims = 0)"
            ))),
        }
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (params, indices) = (ctx.input(0, false)?, ctx.input(1, true)?);
        let (sp, si) = (params.shape()?, indices.shape()?);
        let axis = match read_host_ints(&ctx.input(2, true)?, "axis")?.as_slice() {
            &[a] => a,
            other => {
                return Err(Failure::invalid(format!(
                    "axis must be a scalar, not {other:?}"
                )));
            }
        };
        let (out_shape, [outer, n, inner]) = gather_shape(&sp, &si, axis)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let count = si.elements().unwrap_or(0);
        let index = index_type(&indices);
        let inputs = [
            run.desc(&params, flat(&[outer, n, inner])?)?,
            run.typed_desc(&indices, flat(&[count])?, index)?,
        ];
        let out = run.desc(&out, flat(&[outer, count, inner])?)?;
        run.launch(OpKind::Gather(index), &inputs, out)
    }
}

/// The output shape of `GatherV2` and `params` as `[outer, n, inner]`
/// around `axis`.
fn gather_shape(params: &Shape, indices: &Shape, axis: i64) -> KernelResult<(Shape, [u64; 3])> {
    let p = params.dims();
    let rank = p.len() as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&a) {
        return Err(Failure::invalid(format!(
            "Expected axis in the range [{}, {rank}), but got {axis}",
            -rank
        )));
    }
    let a = a as usize;
    let dims: Vec<u64> = p[..a]
        .iter()
        .chain(indices.dims())
        .chain(&p[a + 1..])
        .copied()
        .collect();
    let out = Shape::new(&dims).ok_or_else(|| {
        Failure::unimplemented(format!("a result of rank {} (at most 6)", dims.len()))
    })?;
    let product = |d: &[u64]| d.iter().product::<u64>();
    Ok((out, [product(&p[..a]), p[a], product(&p[a + 1..])]))
}

/// `UnsortedSegmentSum(data, segment_ids, num_segments)`.
pub struct UnsortedSegmentSum;

impl Op for UnsortedSegmentSum {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"UnsortedSegmentSum"
    }

    fn family(&self) -> Option<OpKind> {
        Some(OpKind::SegmentSum(DType::I32))
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        &SEGMENT_TYPES
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"num_segments"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (data, ids) = (ctx.input(0, false)?, ctx.input(1, true)?);
        let (sd, si) = (data.shape()?, ids.shape()?);
        let segments = match read_host_ints(&ctx.input(2, true)?, "num_segments")?.as_slice() {
            &[n] if n >= 0 => n as u64,
            other => {
                return Err(Failure::invalid(format!(
                    "num_segments must be a non-negative scalar, not {other:?}"
                )));
            }
        };
        let prefix = si.dims().len();
        if sd.dims().get(..prefix) != Some(si.dims()) {
            return Err(Failure::invalid(format!(
                "data.shape = {} does not start with segment_ids.shape = {}",
                show(&sd),
                show(&si)
            )));
        }
        let inner_dims = &sd.dims()[prefix..];
        let dims: Vec<u64> = [segments].iter().chain(inner_dims).copied().collect();
        let out_shape = flat(&dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let (rows, inner) = (
            si.elements().unwrap_or(0),
            inner_dims.iter().product::<u64>(),
        );
        let index = index_type(&ids);
        let inputs = [
            run.desc(&data, flat(&[rows, inner])?)?,
            run.typed_desc(&ids, flat(&[rows])?, index)?,
        ];
        let out = run.desc(&out, flat(&[segments, inner])?)?;
        run.launch(OpKind::SegmentSum(index), &inputs, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_views_params_around_the_axis() {
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let (out, v) = gather_shape(&s(&[5, 7, 3]), &s(&[2, 4]), 1).unwrap();
        assert_eq!((out.dims(), v), (&[5, 2, 4, 3][..], [5, 7, 3]));
        let (out, v) = gather_shape(&s(&[50, 16]), &s(&[32, 64]), -2).unwrap();
        assert_eq!((out.dims(), v), (&[32, 64, 16][..], [1, 50, 16]));
        assert!(gather_shape(&s(&[5]), &s(&[2]), 1).is_err());
        assert!(gather_shape(&s(&[2, 2, 2, 2]), &s(&[1, 1, 1, 1]), 0).is_err());
    }
}
