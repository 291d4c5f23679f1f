//! Ops over the last axis: softmax, log-softmax and the reductions. A tensor `[.., c]` is
//! viewed as rows of `c` contiguous elements.

use super::error::{KernelError, Operand, expect_len, expect_whole_rows, mul};
use super::exp::exp;

/// Partial sums kept by [`sum`]: wide enough for the compiler to vectorize.
const LANES: usize = 8;

/// Sum of `x` in a fixed order: `LANES` interleaved partial sums (element `i`
/// goes to lane `i % LANES`), combined pairwise, then the tail in order.
#[inline(always)]
pub(crate) fn sum(x: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (l, &v) in lanes.iter_mut().zip(chunk) {
            *l += v;
        }
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            lanes[i] += lanes[i + width];
        }
    }
    tail.iter().fold(lanes[0], |acc, &v| acc + v)
}

/// Softmax over rows of `row_len`: `out = exp(x - max(row)) / Σ exp(x - max(row))`.
/// Subtracting the row maximum keeps `exp` from overflowing.
pub fn softmax_last_axis(x: &[f32], row_len: usize, out: &mut [f32]) -> Result<(), KernelError> {
    expect_whole_rows(Operand::Input, x.len(), row_len)?;
    expect_len(Operand::Output, x.len(), out.len())?;
    out.copy_from_slice(x);
    softmax_rows(out, row_len);
    Ok(())
}

/// [`softmax_last_axis`] in place.
pub fn softmax_last_axis_in_place(x: &mut [f32], row_len: usize) -> Result<(), KernelError> {
    expect_whole_rows(Operand::Input, x.len(), row_len)?;
    softmax_rows(x, row_len);
    Ok(())
}

/// Log-softmax over rows of `row_len`: `out = x − max(row) − ln Σ exp(x − max(row))`.
pub fn log_softmax_last_axis(
    x: &[f32],
    row_len: usize,
    out: &mut [f32],
) -> Result<(), KernelError> {
    expect_whole_rows(Operand::Input, x.len(), row_len)?;
    expect_len(Operand::Output, x.len(), out.len())?;
    out.copy_from_slice(x);
    log_softmax_rows(out, row_len);
    Ok(())
}

/// [`log_softmax_last_axis`] in place.
pub fn log_softmax_last_axis_in_place(x: &mut [f32], row_len: usize) -> Result<(), KernelError> {
    expect_whole_rows(Operand::Input, x.len(), row_len)?;
    log_softmax_rows(x, row_len);
    Ok(())
}

fn log_softmax_rows(x: &mut [f32], row_len: usize) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { log_softmax_rows_avx2(x, row_len) };
    }
    log_softmax_body(x, row_len);
}

fn softmax_rows(x: &mut [f32], row_len: usize) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { softmax_rows_avx2(x, row_len) };
    }
    softmax_body(x, row_len);
}

// The bodies compiled with AVX2 as well: the same operations in the same
// order (Rust never fuses a multiply and an add), so the same bits, twice
// as wide.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
fn softmax_rows_avx2(x: &mut [f32], row_len: usize) {
    softmax_body(x, row_len);
}
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
fn log_softmax_rows_avx2(x: &mut [f32], row_len: usize) {
    log_softmax_body(x, row_len);
}

#[inline(always)]
fn log_softmax_body(x: &mut [f32], row_len: usize) {
    if row_len == 0 {
        return;
    }
    for row in x.chunks_exact_mut(row_len) {
        let max = row_max(row);
        let mut lanes = [0.0f32; LANES];
        for (i, &v) in row.iter().enumerate() {
            lanes[i % LANES] += exp(v - max);
        }
        let log_total = libm::logf(sum(&lanes));
        for v in row.iter_mut() {
            *v = *v - max - log_total;
        }
    }
}

#[inline(always)]
fn softmax_body(x: &mut [f32], row_len: usize) {
    if row_len == 0 {
        return;
    }
    for row in x.chunks_exact_mut(row_len) {
        let max = row_max(row);
        for v in row.iter_mut() {
            *v = exp(*v - max);
        }
        let total = sum(row);
        for v in row.iter_mut() {
            *v /= total;
        }
    }
}

/// The row's largest element, NaN ignored (a NaN element still turns its
/// row to NaN through `exp`). Kept in `LANES` partial maxima so it
/// vectorizes; the order cannot change the result, up to the sign of a
/// zero maximum, which `x − max` does not see.
#[inline(always)]
fn row_max(row: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (l, &v) in lanes.iter_mut().zip(chunk) {
            *l = l.max(v);
        }
    }
    let max = lanes.into_iter().fold(f32::NEG_INFINITY, f32::max);
    tail.iter().copied().fold(max, f32::max)
}

/// `out[r] = Σ x[r, ..]` over rows of `row_len`; `out` has one element per
/// row (`x.len() == out.len() * row_len`). With `row_len == 0` every row sums
/// to 0, whatever `out.len()` is.
pub fn reduce_sum_last_axis(x: &[f32], row_len: usize, out: &mut [f32]) -> Result<(), KernelError> {
    expect_len(Operand::Input, mul(out.len(), row_len)?, x.len())?;
    if row_len == 0 {
        out.fill(0.0);
        return Ok(());
    }
    for (o, row) in out.iter_mut().zip(x.chunks_exact(row_len)) {
        *o = sum(row);
    }
    Ok(())
}

/// The reductions of `REDUCTIONS` (ABI 1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RowReduce {
    /// The largest element; NaN if any is; of equal elements the later.
    Max,
    /// The smallest element, likewise.
    Min,
    /// The product, in `f32` from left to right.
    Prod,
}

/// Each row of `row_len` reduced by `op` into `out` (an empty row gives
/// `−∞`, `+∞` or `1`).
pub fn reduce_last_axis(
    op: RowReduce,
    x: &[f32],
    row_len: usize,
    out: &mut [f32],
) -> Result<(), KernelError> {
    expect_len(Operand::Input, mul(out.len(), row_len)?, x.len())?;
    let start = match op {
        RowReduce::Max => f32::NEG_INFINITY,
        RowReduce::Min => f32::INFINITY,
        RowReduce::Prod => 1.0,
    };
    if row_len == 0 {
        out.fill(start);
        return Ok(());
    }
    for (o, row) in out.iter_mut().zip(x.chunks_exact(row_len)) {
        *o = match op {
            RowReduce::Max => row.iter().fold(
                start,
                |acc, &v| if acc.is_nan() || v < acc { acc } else { v },
            ),
            RowReduce::Min => row.iter().fold(
                start,
                |acc, &v| if acc.is_nan() || v > acc { acc } else { v },
            ),
            RowReduce::Prod => row.iter().product(),
        };
    }
    Ok(())
}
