//! Lowering of a NumPy broadcast (rank ≤ 6) to the device's 3-D broadcast
//! form: drop size-1 output axes, coalesce adjacent axes with the same
//! broadcast pattern, keep the inner three as one command and loop over the
//! outer ones (one command each, at address offsets).

use heapless::Vec;
use tensorplug_core::accelerator::MAX_RANK;

/// One coalesced output axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Axis {
    /// Output extent.
    pub extent: u64,
    /// Source 0 has extent 1 along this axis.
    pub bcast0: bool,
    /// Source 1 has extent 1 along this axis.
    pub bcast1: bool,
}

/// The coalesced axes of `out = a ∘ b`, outermost first; empty when no
/// source broadcasts (the flat form applies).
pub(crate) fn plan(a: &[u64], b: &[u64], out: &[u64]) -> Vec<Axis, MAX_RANK> {
    let mut axes: Vec<Axis, MAX_RANK> = Vec::new();
    let rank = out.len();
    for (i, &extent) in out.iter().enumerate() {
        if extent == 1 {
            continue;
        }
        let from_end = rank - i;
        let axis = Axis {
            extent,
            bcast0: dim_from_end(a, from_end) == 1,
            bcast1: dim_from_end(b, from_end) == 1,
        };
        match axes.last_mut() {
            Some(last) if (last.bcast0, last.bcast1) == (axis.bcast0, axis.bcast1) => {
                last.extent = last.extent.saturating_mul(extent);
            }
            // Cannot overflow: at most one axis per output axis (≤ MAX_RANK).
            _ => {
                let _ = axes.push(axis);
            }
        }
    }
    if axes.iter().all(|a| !a.bcast0 && !a.bcast1) {
        axes.clear();
    }
    axes
}

fn dim_from_end(shape: &[u64], from_end: usize) -> u64 {
    shape.len().checked_sub(from_end).map_or(1, |i| shape[i])
}

/// One command of a lowered broadcast: the inner 3-D form at element
/// offsets into each operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// `[m, n, k]` with the broadcast flags of the inner axes.
    pub inner: [Axis; 3],
    /// Element offset into source 0, source 1 and the output.
    pub offsets: [u64; 3],
}

/// The commands of a plan: the inner three axes (padded with size-1 axes)
/// once per index of the outer ones. `visit` is called in output order.
pub(crate) fn for_each_piece<E>(
    axes: &[Axis],
    mut visit: impl FnMut(Piece) -> Result<(), E>,
) -> Result<(), E> {
    let one = Axis {
        extent: 1,
        bcast0: false,
        bcast1: false,
    };
    let split = axes.len().saturating_sub(3);
    let (outer, inner_axes) = axes.split_at(split);
    let mut inner = [one; 3];
    inner[3 - inner_axes.len()..].copy_from_slice(inner_axes);

    // Element strides of each operand over the outer axes.
    let mut strides = [[0u64; 3]; MAX_RANK];
    let mut size = [1u64; 3];
    for axis in inner.iter().rev() {
        grow(&mut size, axis);
    }
    for (j, axis) in outer.iter().enumerate().rev() {
        strides[j] = [
            if axis.bcast0 { 0 } else { size[0] },
            if axis.bcast1 { 0 } else { size[1] },
            size[2],
        ];
        grow(&mut size, axis);
    }

    let mut index = [0u64; MAX_RANK];
    loop {
        let mut offsets = [0u64; 3];
        for (j, &i) in index[..outer.len()].iter().enumerate() {
            for (o, s) in offsets.iter_mut().zip(strides[j]) {
                *o = o.saturating_add(i.saturating_mul(s));
            }
        }
        visit(Piece { inner, offsets })?;
        // Odometer over the outer axes, innermost fastest.
        let mut j = outer.len();
        loop {
            if j == 0 {
                return Ok(());
            }
            j -= 1;
            index[j] += 1;
            if index[j] < outer[j].extent {
                break;
            }
            index[j] = 0;
        }
    }
}

/// Multiplies each operand's running size by its extent along `axis`.
fn grow(size: &mut [u64; 3], axis: &Axis) {
    let e = axis.extent;
    size[0] = size[0].saturating_mul(if axis.bcast0 { 1 } else { e });
    size[1] = size[1].saturating_mul(if axis.bcast1 { 1 } else { e });
    size[2] = size[2].saturating_mul(e);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec as StdVec;

    fn ax(extent: u64, bcast0: bool, bcast1: bool) -> Axis {
        Axis {
            extent,
            bcast0,
            bcast1,
        }
    }

    #[test]
    fn equal_shapes_and_size_one_axes_use_the_flat_form() {
        assert!(plan(&[2, 3], &[2, 3], &[2, 3]).is_empty());
        assert!(plan(&[2, 3], &[1, 2, 3], &[1, 2, 3]).is_empty());
        assert!(plan(&[1], &[1], &[1]).is_empty());
    }

    #[test]
    fn adjacent_axes_with_the_same_pattern_coalesce() {
        // [4,5,6] + [6]: the two outer axes broadcast b, the last does not.
        assert_eq!(
            plan(&[4, 5, 6], &[6], &[4, 5, 6]).as_slice(),
            [ax(20, false, true), ax(6, false, false)]
        );
        // [3,1] * [1,4] -> [3,4]
        assert_eq!(
            plan(&[3, 1], &[1, 4], &[3, 4]).as_slice(),
            [ax(3, false, true), ax(4, true, false)]
        );
    }

    #[test]
    fn more_than_three_axes_loop_over_the_outer_ones() {
        // Alternating patterns: [2,1,2,1,2] op [1,3,1,3,1] -> 5 axes.
        let axes = plan(&[2, 1, 2, 1, 2], &[1, 3, 1, 3, 1], &[2, 3, 2, 3, 2]);
        assert_eq!(axes.len(), 5);
        let mut pieces = StdVec::new();
        for_each_piece::<()>(&axes, |p| {
            pieces.push(p);
            Ok(())
        })
        .unwrap();
        assert_eq!(pieces.len(), 2 * 3);
        assert_eq!(pieces[0].inner, [axes[2], axes[3], axes[4]]);
        // Output offset steps by the inner size 2*3*2 = 12; source 0 has
        // inner size 2*1*2 = 4 and is broadcast along axis 1 (extent 3).
        let out: StdVec<u64> = pieces.iter().map(|p| p.offsets[2]).collect();
        assert_eq!(out, [0, 12, 24, 36, 48, 60]);
        let a: StdVec<u64> = pieces.iter().map(|p| p.offsets[0]).collect();
        assert_eq!(a, [0, 0, 0, 4, 4, 4]);
        let b: StdVec<u64> = pieces.iter().map(|p| p.offsets[1]).collect();
        assert_eq!(b, [0, 3, 6, 0, 3, 6]);
    }

    #[test]
    fn short_plans_are_padded_in_front() {
        let axes = [ax(7, true, false)];
        let mut pieces = StdVec::new();
        for_each_piece::<()>(&axes, |p| {
            pieces.push(p);
            Ok(())
        })
        .unwrap();
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].inner[2], axes[0]);
        assert_eq!(pieces[0].inner[0].extent, 1);
        assert_eq!(pieces[0].offsets, [0, 0, 0]);
    }
}
