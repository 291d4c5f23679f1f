//! Decoding `TRANSPOSE_F32` (`docs/device-abi.md`): dims `m`, `n`, `k`,
//! `len`, the permutation in `imm` (2 bits per output axis, bits above 7 zero).

use super::{Ctx, Rejection, Work, field, in_place_or_disjoint, invalid};

impl Ctx<'_> {
    pub(super) fn transpose(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let last = u32::try_from(c.len).map_err(|_| invalid(field::LEN))?;
        self.dims(&[
            (c.m, field::M),
            (c.n, field::N),
            (c.k, field::K),
            (last, field::LEN),
        ])?;
        let perm: [usize; 4] = core::array::from_fn(|i| (c.imm >> (2 * i) & 3) as usize);
        let mut seen = [false; 4];
        for &p in &perm {
            if seen[p] {
                return Err(invalid(field::IMM));
            }
            seen[p] = true;
        }
        if c.imm >> 8 != 0 {
            return Err(invalid(field::IMM));
        }
        let dims = [c.m, c.n, c.k, last].map(|d| d as usize);
        let len = [c.m, c.n, c.k, last]
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)))
            .ok_or(invalid(field::LEN))?;
        let x = self.f32_range(field::SRC0, len)?;
        let out = self.f32_range(field::DST, len)?;
        self.aligned(&[field::SRC0, field::DST])?;
        in_place_or_disjoint(&x, &out, false)?;
        Ok(Work::Transpose { dims, perm, x, out })
    }
}
