//! Host GEMM through `matrixmultiply`, or the `gemm` crate's f32 kernel
//! (`gemm-f32`) for outputs of at most [`NARROW`] columns (both runtime-detected SIMD, packing in heap
//! buffers). Transposes are expressed as strides: nothing is copied.
//!
//! Why two: on the development machine (AVX-512), `gemm` takes 0.41–0.77×
//! `matrixmultiply`'s time for n ≤ 64 (2304×144×16: 125 vs 305 µs;
//! 2048×32×64: 81 vs 106 µs) and 1.1–1.3× for n ≥ 128 (512³: 3.2 vs
//! 2.8 ms); `docs/benchmarks.md`.

use super::spec::GemmSpec;
use crate::kernels::error::KernelError;

fn isize_of(x: usize) -> Result<isize, KernelError> {
    isize::try_from(x).map_err(|_| KernelError::Overflow)
}

/// `out = op(a) · op(b)`; lengths already validated, all dims non-zero.
pub(super) fn gemm(
    spec: &GemmSpec,
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    let s = spec.strides();
    let (rsa, csa) = (isize_of(s.row_a)?, isize_of(s.col_a)?);
    let (rsb, csb) = (isize_of(s.row_b)?, isize_of(s.col_b)?);
    let rsc = isize_of(spec.n)?;
    // SAFETY: the caller checked a.len() == m*k, b.len() == k*n and
    // out.len() == m*n, so every index i*rs + j*cs stays inside its slice for
    // i, j below the dims; `out` is a unique borrow, so it aliases neither
    // input. beta = 0 means `out` is written without being read.
    unsafe {
        sgemm(
            [spec.m, spec.k, spec.n],
            (a.as_ptr(), rsa, csa),
            (b.as_ptr(), rsb, csb),
            (out.as_mut_ptr(), rsc),
            false,
        );
    }
    Ok(())
}

/// Outputs up to this many columns go to the `gemm` crate.
pub(crate) const NARROW: usize = 64;

/// `c = a·b`, or `c += a·b` when `accumulate`; `(pointer, row stride,
/// column stride)` per input, `c`'s columns contiguous.
///
/// # Safety
/// Every element `i·rs + j·cs` for `i, j` below the dims is inside its
/// allocation; `c` aliases neither input; dims are non-zero.
unsafe fn sgemm(
    [m, k, n]: [usize; 3],
    (a, rsa, csa): (*const f32, isize, isize),
    (b, rsb, csb): (*const f32, isize, isize),
    (c, rsc): (*mut f32, isize),
    accumulate: bool,
) {
    if n <= NARROW {
        // SAFETY: the caller's contract. `gemm` computes
        // dst = alpha·dst + beta·lhs·rhs, reading dst only if `read_dst`.
        unsafe {
            narrow_gemm(
                [m, n, k],
                (c, 1, rsc),
                accumulate,
                (a, csa, rsa),
                (b, csb, rsb),
            );
        }
    } else {
        // SAFETY: the caller's contract; beta = 0 writes `c` without reading it.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a,
                rsa,
                csa,
                b,
                rsb,
                csb,
                if accumulate { 1.0 } else { 0.0 },
                c,
                rsc,
                1,
            );
        }
    }
}

/// A strided matrix in a slice: its first element and its row stride
/// (columns are contiguous).
#[derive(Clone, Copy)]
pub(crate) struct Strided {
    pub(crate) start: usize,
    pub(crate) row_stride: usize,
}

impl Strided {
    /// Whether `rows × cols` elements stay inside a slice of `len`.
    fn fits(self, rows: usize, cols: usize, len: usize) -> bool {
        match (rows.checked_sub(1), cols.checked_sub(1)) {
            (Some(r), Some(c)) => r
                .checked_mul(self.row_stride)
                .and_then(|v| v.checked_add(self.start))
                .and_then(|v| v.checked_add(c))
                .is_some_and(|last| last < len),
            _ => true,
        }
    }
}

/// `out[m, n] += a[m, k] · b[k, n]`, each a [`Strided`] matrix in its
/// slice; every index is checked to stay inside its slice first.
pub(crate) fn gemm_accumulate(
    dims: [usize; 3],
    a: (&[f32], Strided),
    b: (&[f32], Strided),
    out: (&mut [f32], Strided),
) -> Result<(), KernelError> {
    gemm_strided(dims, a, b, out, true)
}

/// [`gemm_accumulate`], or `out = a · b` (`out` not read) unless `accumulate`.
/// Rows of `a` may overlap (a row stride below `k`): it is only read.
pub(crate) fn gemm_strided(
    [m, k, n]: [usize; 3],
    (a, a_at): (&[f32], Strided),
    (b, b_at): (&[f32], Strided),
    (out, out_at): (&mut [f32], Strided),
    accumulate: bool,
) -> Result<(), KernelError> {
    let fits = a_at.fits(m, k, a.len()) && b_at.fits(k, n, b.len()) && out_at.fits(m, n, out.len());
    if !fits {
        return Err(KernelError::Overflow);
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        // An empty sum: 0, unless adding to `out`.
        if !accumulate {
            for row in 0..m {
                out[out_at.start + row * out_at.row_stride..][..n].fill(0.0);
            }
        }
        return Ok(());
    }
    let (rsa, rsb, rsc) = (
        isize_of(a_at.row_stride)?,
        isize_of(b_at.row_stride)?,
        isize_of(out_at.row_stride)?,
    );
    // SAFETY: `fits` checked that every element `start + i·row_stride + j`
    // the product reads or writes is inside its slice; `out` is a unique
    // borrow distinct from `a` and `b` (whose rows may overlap: read only).
    // beta = 0 writes `out` without reading it.
    unsafe {
        sgemm(
            [m, k, n],
            (a.as_ptr().add(a_at.start), rsa, 1),
            (b.as_ptr().add(b_at.start), rsb, 1),
            (out.as_mut_ptr().add(out_at.start), rsc),
            accumulate,
        );
    }
    Ok(())
}

/// The `gemm` crate's f32 kernel (`gemm-f32`, without the facade crate that
/// builds the f64 and complex kernels too): `dst = dst + lhs·rhs` (`dst`
/// read only if `read_dst`), each operand `(pointer, column stride, row
/// stride)`, strides non-negative. As the facade's `gemm::gemm` does, a
/// destination whose rows are contiguous is computed as its transpose
/// (`dstᵀ = rhsᵀ·lhsᵀ`), which the microkernel prefers.
///
/// # Safety
/// [`sgemm`]'s contract.
unsafe fn narrow_gemm(
    [m, n, k]: [usize; 3],
    (dst, dst_cs, dst_rs): (*mut f32, isize, isize),
    read_dst: bool,
    (lhs, lhs_cs, lhs_rs): (*const f32, isize, isize),
    (rhs, rhs_cs, rhs_rs): (*const f32, isize, isize),
) {
    debug_assert!(
        [dst_cs, dst_rs, lhs_cs, lhs_rs, rhs_cs, rhs_rs]
            .iter()
            .all(|&s| s >= 0)
    );
    let kernel = gemm_f32::gemm::f32::get_gemm_fn();
    let none = gemm_common::Parallelism::None;
    // SAFETY: the caller's contract; the transposed call reads and writes
    // the same elements.
    unsafe {
        if dst_cs < dst_rs {
            kernel(
                n, m, k, dst, dst_rs, dst_cs, read_dst, rhs, rhs_rs, rhs_cs, lhs, lhs_rs, lhs_cs,
                1.0, 1.0, false, false, false, none,
            );
        } else {
            kernel(
                m, n, k, dst, dst_cs, dst_rs, read_dst, lhs, lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs,
                1.0, 1.0, false, false, false, none,
            );
        }
    }
}
