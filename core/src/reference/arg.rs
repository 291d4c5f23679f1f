//! [`OpKind::ArgMax`](crate::accelerator::OpKind::ArgMax) and `ArgMin`
//! over the last axis, as TF's CPU kernel: the first of equal elements,
//! NaN never wins, a row with nothing above `f32::MIN` (below `f32::MAX`)
//! gives 0 (exact).

use super::error::{Error, check_len};
use crate::accelerator::DType;

/// The index of each row's largest (`min`: smallest) element of rows of
/// `row_len` f32s (`x`, little-endian bytes), into `out` as little-endian
/// `out_type` (i32 or i64).
pub fn arg_reduce(
    min: bool,
    x: &[u8],
    row_len: usize,
    out_type: DType,
    out: &mut [u8],
) -> Result<(), Error> {
    let size = out_type.size();
    if row_len == 0 || !matches!(out_type, DType::I32 | DType::I64) {
        return Err(Error::Overflow);
    }
    let rows = x.len() / 4 / row_len;
    check_len(0, rows * row_len * 4, x.len())?;
    check_len(1, rows * size, out.len())?;
    for (row, o) in x.chunks_exact(row_len * 4).zip(out.chunks_exact_mut(size)) {
        let mut best = (0usize, if min { f32::MAX } else { f32::MIN });
        let values = row
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        for (i, v) in values.enumerate() {
            if (min && v < best.1) || (!min && v > best.1) {
                best = (i, v);
            }
        }
        o.copy_from_slice(&(best.0 as i64).to_le_bytes()[..size]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_never_wins_and_ties_go_to_the_first() {
        let nan = f32::NAN;
        let x: [f32; 12] = [1.0, nan, 3.0, nan, 1.0, 2.0, 2.0, 2.0, 1.0, nan, nan, nan];
        let x: [u8; 48] = core::array::from_fn(|i| x[i / 4].to_le_bytes()[i % 4]);
        let mut out = [0u8; 16];
        arg_reduce(false, &x, 3, DType::I32, &mut out).unwrap();
        let got: [i32; 4] =
            core::array::from_fn(|i| i32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap()));
        assert_eq!(got, [2, 2, 0, 0]);
        arg_reduce(true, &x, 3, DType::I32, &mut out).unwrap();
        let got: [i32; 4] =
            core::array::from_fn(|i| i32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap()));
        assert_eq!(got, [0, 1, 2, 0]);
        let mut wide = [0u8; 8];
        let two: [u8; 8] =
            core::array::from_fn(|i| [f32::NEG_INFINITY, -1.0][i / 4].to_le_bytes()[i % 4]);
        arg_reduce(false, &two, 2, DType::I64, &mut wide).unwrap();
        assert_eq!(i64::from_le_bytes(wide), 1);
    }
}
