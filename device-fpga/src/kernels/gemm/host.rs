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
