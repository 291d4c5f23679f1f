//! The ops with int32 or int64 indices: [`OpKind::Gather`] and
//! [`OpKind::SegmentSum`] (exact: a copy, and `f32` sums in row order).
//!
//! [`OpKind::Gather`]: crate::accelerator::OpKind::Gather
//! [`OpKind::SegmentSum`]: crate::accelerator::OpKind::SegmentSum

use super::{Error, dim};
use crate::accelerator::Shape;

/// Indices of either width.
#[derive(Clone, Copy, Debug)]
pub enum Ids<'a> {
    /// int32 indices.
    I32(&'a [i32]),
    /// int64 indices.
    I64(&'a [i64]),
}

impl Ids<'_> {
    /// How many.
    pub fn len(&self) -> usize {
        match self {
            Self::I32(v) => v.len(),
            Self::I64(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Index `i`.
    pub fn get(&self, i: usize) -> i64 {
        match self {
            Self::I32(v) => i64::from(v[i]),
            Self::I64(v) => v[i],
        }
    }

    fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// `out[o, i, :] = params[o, indices[i], :]` for `params` of `[outer, n,
/// inner]`; an index outside `0..n` is [`Error::Index`] (nothing written).
pub fn gather(
    params: &[f32],
    shape: &Shape,
    indices: Ids<'_>,
    out: &mut [f32],
) -> Result<(), Error> {
    let [_, n, inner] = dims3(shape)?;
    check_indices(indices, n, false)?;
    if inner == 0 || indices.is_empty() {
        return Ok(());
    }
    let block = n * inner;
    let outer_blocks = params.chunks(block.max(1));
    for (o, out_block) in outer_blocks.zip(out.chunks_mut(indices.len() * inner)) {
        for (i, row) in indices.iter().zip(out_block.chunks_mut(inner)) {
            let at = i as usize * inner;
            row.copy_from_slice(&o[at..at + inner]);
        }
    }
    Ok(())
}

/// `out[s, :] = Σ data[i, :]` over the rows with `ids[i] = s`, in `f32`
/// and row order, for `out` of `[segments, inner]`; negative ids drop
/// their row, an id ≥ `segments` is [`Error::Index`] (nothing written).
pub fn segment_sum(
    data: &[f32],
    inner: usize,
    ids: Ids<'_>,
    segments: usize,
    out: &mut [f32],
) -> Result<(), Error> {
    check_indices(ids, segments, true)?;
    out.fill(0.0);
    if inner == 0 {
        return Ok(());
    }
    for (s, row) in ids.iter().zip(data.chunks(inner)) {
        if s >= 0 {
            let at = s as usize * inner;
            for (o, &v) in out[at..at + inner].iter_mut().zip(row) {
                *o += v;
            }
        }
    }
    Ok(())
}

/// The first index outside `0..n` (negative ones allowed if `drop_negative`).
fn check_indices(indices: Ids<'_>, n: usize, drop_negative: bool) -> Result<(), Error> {
    let bad = indices
        .iter()
        .position(|i| (i < 0 && !drop_negative) || (i >= 0 && i as u64 >= n as u64));
    match bad {
        Some(position) => Err(Error::Index {
            position,
            value: indices.get(position),
            bound: n,
        }),
        None => Ok(()),
    }
}

fn dims3(s: &Shape) -> Result<[usize; 3], Error> {
    let d = s.dims();
    if d.len() != 3 {
        return Err(Error::Overflow);
    }
    Ok([dim(d[0])?, dim(d[1])?, dim(d[2])?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_copies_rows_and_refuses_an_index_out_of_range() {
        let params: [f32; 12] = core::array::from_fn(|i| i as f32);
        let shape = Shape::new(&[2, 3, 2]).unwrap();
        let mut out = [0.0; 8];
        gather(&params, &shape, Ids::I32(&[2, 0]), &mut out).unwrap();
        assert_eq!(out, [4.0, 5.0, 0.0, 1.0, 10.0, 11.0, 6.0, 7.0]);
        let mut untouched = [9.0; 8];
        let err = gather(&params, &shape, Ids::I64(&[1, 3]), &mut untouched).unwrap_err();
        assert_eq!(
            err,
            Error::Index {
                position: 1,
                value: 3,
                bound: 3
            }
        );
        assert_eq!(untouched, [9.0; 8]);
        assert!(gather(&params, &shape, Ids::I32(&[-1]), &mut [0.0; 4]).is_err());
    }

    #[test]
    fn segment_sum_adds_in_row_order_and_drops_negative_ids() {
        let data = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut out = [7.0; 6];
        segment_sum(&data, 2, Ids::I32(&[2, -1, 2]), 3, &mut out).unwrap();
        assert_eq!(out, [0.0, 0.0, 0.0, 0.0, 6.0, 8.0]);
        let err = segment_sum(&data, 2, Ids::I64(&[0, 1 << 40, 0]), 3, &mut out).unwrap_err();
        assert!(matches!(err, Error::Index { position: 1, .. }));
        // In f32, row order: (1e8 + 1) + 1 = 1e8, not 1e8 + 2.
        let mut one = [0.0];
        segment_sum(&[1e8, 1.0, 1.0], 1, Ids::I32(&[0, 0, 0]), 1, &mut one).unwrap();
        assert_eq!(one, [1e8]);
    }
}
