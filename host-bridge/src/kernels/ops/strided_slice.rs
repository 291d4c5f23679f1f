//! `StridedSlice(input, begin, end, strides)`, the three index vectors in
//! host memory, with TF's five masks: resolved as TF's CPU kernel resolves
//! them (`strided_slice_op.cc`: sparse spec → dense spec → per-axis
//! canonical begin/end), then one block copy (a run per contiguous piece;
//! a step other than 1, negative included, makes that axis one copy per
//! index). Exact.

use super::blocks::Block;
use super::kernel::{Op, TypePair, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::OpKind;

/// The `StridedSlice` kernel.
pub struct StridedSlice;

/// The five masks (bit `i` for index `i` of `begin`/`end`/`strides`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Masks {
    begin: u32,
    end: u32,
    ellipsis: u32,
    new_axis: u32,
    shrink: u32,
}

impl Op for StridedSlice {
    type Attrs = Masks;

    fn op(&self) -> &'static CStr {
        c"StridedSlice"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"begin", c"end", c"strides"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Masks> {
        let mask = |name| ctx.int_attr(name).map(|v| v as u32);
        Ok(Masks {
            begin: mask(c"begin_mask")?,
            end: mask(c"end_mask")?,
            ellipsis: mask(c"ellipsis_mask")?,
            new_axis: mask(c"new_axis_mask")?,
            shrink: mask(c"shrink_axis_mask")?,
        })
    }

    fn compute(&self, masks: &Masks, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let slice = read_slice(ctx, sx.dims(), *masks)?;
        let out_shape = flat(&slice.out)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let zeros = vec![0; slice.size.len()];
        let block = slice.block(sx.dims(), &zeros);
        block.copy(run, run.desc(&out, out_shape)?, run.desc(&x, sx)?)
    }
}

/// `StridedSlice` on int32 in host memory, as TF's GPU kernel keeps it
/// (shape arithmetic): the same runs, copied on the host. Keras 2's legacy
/// optimizers slice a `Shape` beside an FPGA variable, and TF has no
/// `DEVICE_DEFAULT` kernel for it.
pub struct StridedSliceHost;

impl Op for StridedSliceHost {
    type Attrs = Masks;

    fn op(&self) -> &'static CStr {
        c"StridedSlice"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        &[
            [
                (c"T", TF_DataType::TF_INT32),
                (c"Index", TF_DataType::TF_INT32),
            ],
            [
                (c"T", TF_DataType::TF_INT32),
                (c"Index", TF_DataType::TF_INT64),
            ],
        ]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"input", c"begin", c"end", c"strides", c"output"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Masks> {
        StridedSlice.construct(ctx)
    }

    fn compute(&self, masks: &Masks, ctx: &Context, _: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, true)?;
        let sx = x.shape()?;
        let slice = read_slice(ctx, sx.dims(), *masks)?;
        let out_shape = flat(&slice.out)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let zeros = vec![0; slice.size.len()];
        let (len, runs) = slice.block(sx.dims(), &zeros).runs()?;
        let (src, dst) = (x.data().cast::<i32>(), out.data().cast::<i32>());
        let (src_len, dst_len) = (x.byte_size() / 4, out.byte_size() / 4);
        for (s, d) in runs {
            let (s, d, n) = (s as usize, d as usize, len as usize);
            if s + n > src_len || d + n > dst_len || src.is_null() || dst.is_null() {
                return Err(Failure::invalid("a slice run outside its tensor"));
            }
            // SAFETY: host-memory tensors (HostMemory input and output) of
            // the lengths checked above; distinct buffers.
            unsafe { std::ptr::copy_nonoverlapping(src.add(s), dst.add(d), n) };
        }
        Ok(())
    }
}

/// `StridedSliceGrad(shape, begin, end, strides, dy)`: zeros of `shape`,
/// then `dy` copied into the slice `StridedSlice` would read (block copies
/// the other way round; exact).
pub struct StridedSliceGrad;

impl Op for StridedSliceGrad {
    type Attrs = Masks;

    fn op(&self) -> &'static CStr {
        c"StridedSliceGrad"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"shape", c"begin", c"end", c"strides"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Masks> {
        StridedSlice.construct(ctx)
    }

    fn compute(&self, masks: &Masks, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let spec = [0, 1, 2, 3].map(|i| {
            read_host_ints(
                &ctx.input(i, true)?,
                ["shape", "begin", "end", "strides"][i],
            )
        });
        let [shape, begin, end, strides] = spec;
        let dims = super::sum::sizes(&shape?, "shape")?;
        let slice = resolve(&dims, &begin?, &end?, &strides?, *masks)?;
        let dy = ctx.input(4, false)?;
        let sdy = dy.shape()?;
        if sdy.dims() != slice.out.as_slice() {
            return Err(Failure::invalid(format!(
                "shape of dy was {:?} instead of {:?}",
                sdy.dims(),
                slice.out
            )));
        }
        let out_shape = flat(&dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let out = run.desc(&out, out_shape)?;
        run.fill(out, 0)?;
        if is_empty(&sdy) {
            return Ok(());
        }
        let zeros = vec![0; slice.size.len()];
        let from = run.desc(&dy, flat(&slice.size)?)?;
        slice.block(&dims, &zeros).copy_back(run, out, from)
    }
}

/// `begin`, `end` and `strides` (inputs 1–3, host memory) resolved against
/// `dims`.
fn read_slice(ctx: &Context, dims: &[u64], masks: Masks) -> KernelResult<Resolved> {
    let spec =
        [1, 2, 3].map(|i| read_host_ints(&ctx.input(i, true)?, ["begin", "end", "strides"][i - 1]));
    let [begin, end, strides] = spec;
    resolve(dims, &begin?, &end?, &strides?, masks)
}

impl Resolved {
    /// The block copy from a tensor of `dims` into the slice's dense
    /// output (`zeros`: one 0 per axis).
    fn block<'a>(&'a self, dims: &'a [u64], zeros: &'a [u64]) -> Block<'a> {
        Block {
            src_dims: dims,
            src_at: &self.begin,
            dst_dims: &self.size,
            dst_at: zeros,
            extent: &self.size,
            step: &self.step,
        }
    }
}

/// A resolved slice: per input axis its first index, element count and
/// step, and the output dims (new axes added, shrunk axes dropped).
#[derive(Debug, PartialEq)]
struct Resolved {
    begin: Vec<u64>,
    size: Vec<u64>,
    step: Vec<i64>,
    out: Vec<u64>,
}

/// Where an output axis comes from.
#[derive(Clone, Copy)]
enum Gather {
    Axis(usize),
    NewAxis,
    Shrunk,
}

fn resolve(
    dims: &[u64],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    m: Masks,
) -> KernelResult<Resolved> {
    let n = begin.len();
    if end.len() != n || strides.len() != n || n > 31 {
        return Err(Failure::invalid(format!(
            "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [{n}], [{}], and [{}] instead.",
            end.len(),
            strides.len()
        )));
    }
    let bit = |mask: u32, i: usize| mask >> i & 1 == 1;
    if m.ellipsis.count_ones() > 1 {
        return Err(Failure::invalid(
            "Multiple ellipses in slice spec not allowed",
        ));
    }
    // The sparse spec, with an implicit ellipsis at its end if it has none.
    let mut ellipsis = m.ellipsis;
    let mut sparse = n;
    let seen = (0..n).find(|&i| bit(m.ellipsis, i));
    let new_after = seen.map_or(0, |e| (e + 1..n).filter(|&i| bit(m.new_axis, i)).count());
    if seen.is_none() {
        ellipsis |= 1 << n;
        sparse += 1;
    }
    // The dense spec: one entry per input axis.
    let rank = dims.len();
    let mut d_begin = vec![0i64; rank];
    let mut d_end = vec![0i64; rank];
    let mut d_stride = vec![1i64; rank];
    let (mut d_begin_mask, mut d_end_mask, mut d_shrink) = (0u64, 0u64, 0u64);
    let mut gather = Vec::new();
    let mut full = 0usize;
    for i in 0..sparse {
        if bit(ellipsis, i) {
            let next = (rank + 1 + new_after).saturating_sub(sparse - i).min(rank);
            while full < next {
                d_begin_mask |= 1 << full;
                d_end_mask |= 1 << full;
                gather.push(Gather::Axis(full));
                full += 1;
            }
        } else if bit(m.new_axis, i) {
            gather.push(Gather::NewAxis);
        } else {
            if full == rank {
                return Err(Failure::invalid(format!(
                    "Index out of range using input dim {full}; input has only {rank} dims"
                )));
            }
            (d_begin[full], d_end[full], d_stride[full]) = (begin[i], end[i], strides[i]);
            d_begin_mask |= u64::from(bit(m.begin, i)) << full;
            d_end_mask |= u64::from(bit(m.end, i)) << full;
            if bit(m.shrink, i) {
                d_shrink |= 1 << full;
                gather.push(Gather::Shrunk);
            } else {
                gather.push(Gather::Axis(full));
            }
            full += 1;
        }
    }
    // Canonical begin and end per axis, then the processing size.
    let mut out = Resolved {
        begin: Vec::with_capacity(rank),
        size: Vec::with_capacity(rank),
        step: Vec::with_capacity(rank),
        out: Vec::new(),
    };
    for a in 0..rank {
        let (dim, stride) = (dims[a] as i64, d_stride[a]);
        if stride == 0 {
            return Err(Failure::invalid(format!("strides[{a}] must be non-zero")));
        }
        let shrink = d_shrink >> a & 1 == 1;
        let masks = [d_begin_mask >> a & 1 == 1, d_end_mask >> a & 1 == 1];
        let valid = if stride > 0 { [0, dim] } else { [-1, dim - 1] };
        let canonical = |x: i64, c: usize| {
            if masks[c] {
                if stride > 0 {
                    valid[c]
                } else {
                    valid[(c + 1) & 1]
                }
            } else {
                let fwd = if x < 0 { dim + x } else { x };
                fwd.clamp(valid[0], valid[1])
            }
        };
        let (b, e) = if shrink {
            if stride <= 0 {
                return Err(Failure::invalid(
                    "only stride 1 allowed on non-range indexing.",
                ));
            }
            let fwd = if d_begin[a] < 0 {
                dim + d_begin[a]
            } else {
                d_begin[a]
            };
            if fwd < 0 || fwd >= dim {
                return Err(Failure::invalid(format!(
                    "slice index {} of dimension {a} out of bounds.",
                    d_begin[a]
                )));
            }
            (fwd, fwd + 1)
        } else {
            (canonical(d_begin[a], 0), canonical(d_end[a], 1))
        };
        let length = e - b;
        let size = if length == 0 || (length < 0) != (stride < 0) {
            0
        } else {
            length / stride + i64::from(length % stride != 0)
        };
        // An empty axis reads nothing: its start need not be a valid index.
        out.begin.push(if size == 0 { 0 } else { b as u64 });
        out.size.push(size as u64);
        out.step.push(stride);
    }
    out.out = gather
        .iter()
        .filter_map(|g| match *g {
            Gather::Axis(a) => Some(out.size[a]),
            Gather::NewAxis => Some(1),
            Gather::Shrunk => None,
        })
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(begin: u32, end: u32, ellipsis: u32, new_axis: u32, shrink: u32) -> Masks {
        Masks {
            begin,
            end,
            ellipsis,
            new_axis,
            shrink,
        }
    }

    #[test]
    fn resolves_as_tf_does() {
        let none = Masks::default();
        // x[1:3, ::2] of [4, 5].
        let r = resolve(&[4, 5], &[1, 0], &[3, 0], &[1, 2], masks(0, 2, 0, 0, 0)).unwrap();
        assert_eq!(
            (r.begin, r.size, r.step, r.out),
            (vec![1, 0], vec![2, 3], vec![1, 2], vec![2, 3])
        );
        // x[::-1] of [4]: from 3 down, four elements.
        let r = resolve(&[4], &[0], &[0], &[-1], masks(1, 1, 0, 0, 0)).unwrap();
        assert_eq!((r.begin, r.size, r.step), (vec![3], vec![4], vec![-1]));
        // x[..., 0] of [2, 3, 4]: the last axis shrunk, the others whole.
        let r = resolve(&[2, 3, 4], &[0, 0], &[0, 1], &[1, 1], masks(0, 0, 1, 0, 2)).unwrap();
        assert_eq!((r.size, r.out), (vec![2, 3, 1], vec![2, 3]));
        // x[:, None] of [3, 2]: a new axis, the rest implied.
        let r = resolve(&[3, 2], &[0, 0], &[0, 0], &[1, 1], masks(1, 1, 0, 2, 0)).unwrap();
        assert_eq!(r.out, vec![3, 1, 2]);
        // Negative begin, clamped end.
        let r = resolve(&[5], &[-2], &[100], &[1], none).unwrap();
        assert_eq!((r.begin, r.size), (vec![3], vec![2]));
        // Errors name the cause.
        assert!(resolve(&[5], &[0], &[1], &[0], none).is_err());
        assert!(resolve(&[5], &[7], &[8], &[1], masks(0, 0, 0, 0, 1)).is_err());
        assert!(resolve(&[5], &[0, 0], &[1, 1], &[1, 1], none).is_err());
    }
}
