//! Portable GEMM: cache-blocked, register-tiled, no allocation, no unsafe.
//! Indexing cannot go out of bounds: the caller validated every length.
//!
//! Loop nest (outermost first): `KC`-deep slices of the contraction, `MC`-row
//! blocks of `a` (kept in L2), `NR`-column panels of `b` (kept in L1), `MR`-row
//! tiles. Each `MR × NR` tile is summed in registers over its `KC` slice and
//! then added to `out`, so every output element is a sum of per-slice
//! partial sums, each accumulated in `k` order.

use super::spec::{GemmSpec, Strides};

/// Rows of a register tile.
const MR: usize = 4;
/// Columns of a register tile: 8 fills two SSE/NEON registers per row; the
/// Cortex-M4F's 32 single-precision registers fit a 4 × 4 tile.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const NR: usize = 8;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const NR: usize = 4;
/// Depth of one contraction slice.
const KC: usize = 128;
/// Rows of `a` per block.
const MC: usize = 64;

type Tile = [[f32; NR]; MR];

/// `out = op(a) · op(b)`; lengths already validated, all dims non-zero.
pub(super) fn gemm(spec: &GemmSpec, a: &[f32], b: &[f32], out: &mut [f32]) {
    let s = spec.strides();
    out.fill(0.0);
    for p0 in (0..spec.k).step_by(KC) {
        let kc = KC.min(spec.k - p0);
        for i0 in (0..spec.m).step_by(MC) {
            let mc = MC.min(spec.m - i0);
            for j in (0..spec.n).step_by(NR) {
                let nr = NR.min(spec.n - j);
                for i in (i0..i0 + mc).step_by(MR) {
                    let mr = MR.min(i0 + mc - i);
                    let at = Origin { i, j, p: p0 };
                    let tile = if mr == MR && nr == NR {
                        if s.col_b == 1 {
                            full_tile::<true>(&s, a, b, at, kc)
                        } else {
                            full_tile::<false>(&s, a, b, at, kc)
                        }
                    } else {
                        edge_tile(&s, a, b, at, kc, mr, nr)
                    };
                    add_tile(out, spec.n, at, &tile, mr, nr);
                }
            }
        }
    }
}

/// Top-left corner of a tile: output row `i`, column `j`, contraction `p`.
#[derive(Clone, Copy)]
struct Origin {
    i: usize,
    j: usize,
    p: usize,
}

/// A full `MR × NR` tile over `kc` steps. `B_ROWS_CONTIGUOUS` (no transpose
/// of `b`) lets the compiler load each row of the `b` panel as a vector.
#[inline(always)]
fn full_tile<const B_ROWS_CONTIGUOUS: bool>(
    s: &Strides,
    a: &[f32],
    b: &[f32],
    at: Origin,
    kc: usize,
) -> Tile {
    let mut acc = [[0.0f32; NR]; MR];
    for p in at.p..at.p + kc {
        let b_row: [f32; NR] = if B_ROWS_CONTIGUOUS {
            let start = p * s.row_b + at.j;
            let row = &b[start..start + NR];
            core::array::from_fn(|c| row[c])
        } else {
            core::array::from_fn(|c| b[p * s.row_b + (at.j + c) * s.col_b])
        };
        for (r, acc_row) in acc.iter_mut().enumerate() {
            let a_val = a[(at.i + r) * s.row_a + p * s.col_a];
            for (acc_val, b_val) in acc_row.iter_mut().zip(b_row) {
                *acc_val += a_val * b_val;
            }
        }
    }
    acc
}

/// A partial `mr × nr` tile at the right or bottom edge.
fn edge_tile(
    s: &Strides,
    a: &[f32],
    b: &[f32],
    at: Origin,
    kc: usize,
    mr: usize,
    nr: usize,
) -> Tile {
    let mut acc = [[0.0f32; NR]; MR];
    for p in at.p..at.p + kc {
        for (r, acc_row) in acc.iter_mut().enumerate().take(mr) {
            let a_val = a[(at.i + r) * s.row_a + p * s.col_a];
            for (c, acc_val) in acc_row.iter_mut().enumerate().take(nr) {
                *acc_val += a_val * b[p * s.row_b + (at.j + c) * s.col_b];
            }
        }
    }
    acc
}

fn add_tile(out: &mut [f32], n: usize, at: Origin, tile: &Tile, mr: usize, nr: usize) {
    for (r, tile_row) in tile.iter().enumerate().take(mr) {
        let start = (at.i + r) * n + at.j;
        for (o, t) in out[start..start + nr].iter_mut().zip(tile_row) {
            *o += t;
        }
    }
}
