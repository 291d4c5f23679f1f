//! Rectangular block copies between dense row-major tensors on the device:
//! one device-to-device copy per contiguous run, all of a call's as one
//! enqueue (`Slice`, `ConcatV2`, and
//! `StridedSlice` with a step per source axis).
//! Exact for every value, signed zeros and NaN included.

use crate::kernels::commands::Commands;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use tensorplug_core::accelerator::{DeviceAddr, Shape, TensorDesc};

/// The most copies one kernel call may take.
pub(super) const MAX_RUNS: u64 = 65_536;

/// A box of `extent` at `src_at` in `src`, copied to `dst_at` in `dst`;
/// source index `i` of an axis is `src_at + i · step` (`step` empty: all 1).
#[derive(Clone, Copy, Debug)]
pub(super) struct Block<'a> {
    pub(super) src_dims: &'a [u64],
    pub(super) src_at: &'a [u64],
    pub(super) dst_dims: &'a [u64],
    pub(super) dst_at: &'a [u64],
    pub(super) extent: &'a [u64],
    pub(super) step: &'a [i64],
}

impl Block<'_> {
    /// Elements per contiguous run and `(src, dst)` element offsets of each
    /// run: the inner axes the box spans whole (unit step) in both tensors,
    /// and the unit-step axis before them, are one run.
    pub(super) fn runs(&self) -> KernelResult<(u64, Vec<(u64, u64)>)> {
        let rank = self.extent.len();
        if self.extent.contains(&0) {
            return Ok((0, Vec::new()));
        }
        let step = |a: usize| self.step.get(a).copied().unwrap_or(1);
        // The source offset of index `i` on axis `a` (a negative step walks
        // down from `src_at`, which the caller keeps inside the tensor).
        let src_index = |a: usize, i: u64| (self.src_at[a] as i64 + i as i64 * step(a)) as u64;
        let whole = |a: usize| {
            step(a) == 1 && self.extent[a] == self.src_dims[a] && self.extent[a] == self.dst_dims[a]
        };
        // The outermost axis of the run.
        let first = match (0..rank).rev().find(|&a| !whole(a)) {
            Some(a) if step(a) != 1 => a + 1,
            Some(a) => a,
            None => 0,
        };
        let run: u64 = self.extent[first..].iter().product();
        let count: u64 = self.extent[..first].iter().product();
        if count > MAX_RUNS {
            return Err(Failure::unimplemented(format!(
                "the copy takes {count} device copies of {run} elements, more than {MAX_RUNS}"
            )));
        }
        let strides = |dims: &[u64]| -> Vec<u64> {
            (0..rank).map(|a| dims[a + 1..].iter().product()).collect()
        };
        let (src_stride, dst_stride) = (strides(self.src_dims), strides(self.dst_dims));
        let base =
            |at: &[u64], stride: &[u64]| -> u64 { (first..rank).map(|a| at[a] * stride[a]).sum() };
        let (src0, dst0) = (
            base(self.src_at, &src_stride),
            base(self.dst_at, &dst_stride),
        );
        let mut index = vec![0u64; first];
        let mut offsets = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let src: u64 = (0..first)
                .map(|a| src_index(a, index[a]) * src_stride[a])
                .sum();
            let dst: u64 = (0..first)
                .map(|a| (self.dst_at[a] + index[a]) * dst_stride[a])
                .sum();
            offsets.push((src0 + src, dst0 + dst));
            for a in (0..first).rev() {
                index[a] += 1;
                if index[a] < self.extent[a] {
                    break;
                }
                index[a] = 0;
            }
        }
        Ok((run, offsets))
    }

    /// Enqueues the copies of this block from `src` into `dst` (4-byte
    /// elements).
    pub(super) fn copy(
        &self,
        run: &mut Launcher<'_>,
        dst: TensorDesc,
        src: TensorDesc,
    ) -> KernelResult<()> {
        self.copies(run, |s, d| (at(dst, d), at(src, s)))
    }

    /// The copies of [`Block::copy`] the other way round: `from` (of the
    /// block's destination layout) into the box of `into` (of its source
    /// layout), as a slice's gradient needs.
    pub(super) fn copy_back(
        &self,
        run: &mut Launcher<'_>,
        into: TensorDesc,
        from: TensorDesc,
    ) -> KernelResult<()> {
        self.copies(run, |s, d| (at(into, s), at(from, d)))
    }

    /// One copy per run: `ends(src offset, dst offset)` gives its
    /// destination and source, each the start of a run (its shape set here).
    fn copies(
        &self,
        run: &mut Launcher<'_>,
        ends: impl Fn(u64, u64) -> (TensorDesc, TensorDesc),
    ) -> KernelResult<()> {
        let (len, offsets) = self.runs()?;
        let run_shape = Shape::new(&[len]).ok_or_else(|| Failure::invalid("bad rank"))?;
        let mut copies = Commands::default();
        for (s, d) in offsets {
            let (to, from) = ends(s, d);
            copies.copy(
                TensorDesc {
                    shape: run_shape,
                    ..to
                },
                TensorDesc {
                    shape: run_shape,
                    ..from
                },
            );
        }
        run.enqueue_all(copies)
    }
}

/// The element at `element` of `t` (4-byte elements).
fn at(t: TensorDesc, element: u64) -> TensorDesc {
    TensorDesc::new(DeviceAddr(t.addr.0 + element * 4), t.dtype, t.shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_inner_axes_make_one_run() {
        // A [2, 3] slice at [1, 1] of [4, 5] into [2, 3]: one run per row.
        let b = Block {
            src_dims: &[4, 5],
            src_at: &[1, 1],
            dst_dims: &[2, 3],
            dst_at: &[0, 0],
            extent: &[2, 3],
            step: &[],
        };
        assert_eq!(b.runs().unwrap(), (3, vec![(6, 0), (11, 3)]));
        // Concatenating [2, 2, 3] after [2, 1, 3] along axis 1 of [2, 3, 3]:
        // each batch's two rows (6 elements) in one run.
        let b = Block {
            src_dims: &[2, 2, 3],
            src_at: &[0, 0, 0],
            dst_dims: &[2, 3, 3],
            dst_at: &[0, 1, 0],
            extent: &[2, 2, 3],
            step: &[],
        };
        assert_eq!(b.runs().unwrap(), (6, vec![(0, 3), (6, 12)]));
        // A whole tensor is one run; an empty box none.
        let whole = Block {
            src_dims: &[2, 3],
            src_at: &[0, 0],
            dst_dims: &[2, 3],
            dst_at: &[0, 0],
            extent: &[2, 3],
            step: &[],
        };
        assert_eq!(whole.runs().unwrap(), (6, vec![(0, 0)]));
        let empty = Block {
            extent: &[0, 3],
            ..whole
        };
        assert_eq!(empty.runs().unwrap().1, vec![]);
        // A scalar is one run of one.
        // A step of 2 on the last axis: one element per run; -1 walks back.
        let strided = Block {
            src_dims: &[2, 6],
            src_at: &[0, 1],
            dst_dims: &[2, 3],
            dst_at: &[0, 0],
            extent: &[2, 3],
            step: &[1, 2],
        };
        let offsets = [(1, 0), (3, 1), (5, 2), (7, 3), (9, 4), (11, 5)];
        assert_eq!(strided.runs().unwrap(), (1, offsets.to_vec()));
        let reversed = Block {
            src_dims: &[3, 2],
            src_at: &[2, 0],
            dst_dims: &[3, 2],
            dst_at: &[0, 0],
            extent: &[3, 2],
            step: &[-1, 1],
        };
        assert_eq!(reversed.runs().unwrap(), (2, vec![(4, 0), (2, 2), (0, 4)]));
        let scalar = Block {
            src_dims: &[],
            src_at: &[],
            dst_dims: &[],
            dst_at: &[],
            extent: &[],
            step: &[],
        };
        assert_eq!(scalar.runs().unwrap(), (1, vec![(0, 0)]));
    }
}
