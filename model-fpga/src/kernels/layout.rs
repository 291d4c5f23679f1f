//! `TRANSPOSE_F32`: a permutation of four axes (the driver coalesces
//! higher ranks into four). Exact: values are moved, never computed.

use super::error::{KernelError, Operand, expect_len, mul};

/// `out` = `x` of `dims` with output axis `i` being input axis `perm[i]`.
pub fn transpose4(
    dims: [usize; 4],
    perm: [usize; 4],
    x: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    let len = dims.iter().try_fold(1usize, |acc, &d| mul(acc, d))?;
    expect_len(Operand::Input, len, x.len())?;
    expect_len(Operand::Output, len, out.len())?;
    let mut in_stride = [0usize; 4];
    let mut stride = 1;
    for a in (0..4).rev() {
        in_stride[a] = stride;
        stride *= dims[a];
    }
    // Output dims and the input stride each output axis walks.
    let o = perm.map(|p| dims[p]);
    let s = perm.map(|p| in_stride[p]);
    let mut next = out.iter_mut();
    for i in 0..o[0] {
        for j in 0..o[1] {
            for k in 0..o[2] {
                let base = i * s[0] + j * s[1] + k * s[2];
                for l in 0..o[3] {
                    if let Some(slot) = next.next() {
                        *slot = x[base + l * s[3]];
                    }
                }
            }
        }
    }
    Ok(())
}
