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
    if s[3] == 1 {
        // The last axis stays last: rows of `o[3]` contiguous elements.
        let mut rows = out.chunks_exact_mut(o[3].max(1));
        for i in 0..o[0] {
            for j in 0..o[1] {
                for k in 0..o[2] {
                    let base = i * s[0] + j * s[1] + k * s[2];
                    if let Some(row) = rows.next() {
                        row.copy_from_slice(&x[base..base + row.len()]);
                    }
                }
            }
        }
        return Ok(());
    }
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

#[cfg(test)]
mod tests {
    use super::transpose4;

    #[test]
    fn every_permutation_moves_each_element_where_it_belongs() {
        let dims = [2, 3, 4, 5];
        let x: [f32; 120] = core::array::from_fn(|i| i as f32);
        let mut perms = 0;
        for p in 0..256usize {
            let perm = [p & 3, (p >> 2) & 3, (p >> 4) & 3, p >> 6];
            if (0..4).any(|a| !perm.contains(&a)) {
                continue;
            }
            perms += 1;
            let mut out = [0.0f32; 120];
            transpose4(dims, perm, &x, &mut out).unwrap();
            let o = perm.map(|a| dims[a]);
            for (n, &got) in out.iter().enumerate() {
                let idx = [
                    n / (o[1] * o[2] * o[3]),
                    n / (o[2] * o[3]) % o[1],
                    n / o[3] % o[2],
                    n % o[3],
                ];
                let mut at = [0; 4];
                for (axis, &i) in perm.iter().zip(&idx) {
                    at[*axis] = i;
                }
                let want = ((at[0] * 3 + at[1]) * 4 + at[2]) * 5 + at[3];
                assert_eq!(got, want as f32, "perm {perm:?} at {idx:?}");
            }
        }
        assert_eq!(perms, 24);
    }
}
