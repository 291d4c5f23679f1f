//! Host GEMM through `matrixmultiply` (runtime-detected SIMD, packs in heap
//! buffers). Transposes are expressed as strides: nothing is copied.

use super::GemmSpec;
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
        matrixmultiply::sgemm(
            spec.m,
            spec.k,
            spec.n,
            1.0,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            out.as_mut_ptr(),
            rsc,
            1,
        );
    }
    Ok(())
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
    [m, k, n]: [usize; 3],
    (a, a_at): (&[f32], Strided),
    (b, b_at): (&[f32], Strided),
    (out, out_at): (&mut [f32], Strided),
) -> Result<(), KernelError> {
    let fits = a_at.fits(m, k, a.len()) && b_at.fits(k, n, b.len()) && out_at.fits(m, n, out.len());
    if !fits {
        return Err(KernelError::Overflow);
    }
    if m == 0 || k == 0 || n == 0 {
        return Ok(());
    }
    let (rsa, rsb, rsc) = (
        isize_of(a_at.row_stride)?,
        isize_of(b_at.row_stride)?,
        isize_of(out_at.row_stride)?,
    );
    // SAFETY: `fits` checked that every element `start + i·row_stride + j`
    // the product reads or writes is inside its slice; `out` is a unique
    // borrow distinct from `a` and `b`.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr().add(a_at.start),
            rsa,
            1,
            b.as_ptr().add(b_at.start),
            rsb,
            1,
            1.0,
            out.as_mut_ptr().add(out_at.start),
            rsc,
            1,
        );
    }
    Ok(())
}
