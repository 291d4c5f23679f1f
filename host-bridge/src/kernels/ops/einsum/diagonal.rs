//! Labels repeated within an operand (`ii->i`, `iij->ij`, the trace `ii`):
//! the operand's diagonal, taken by one device `Gather` of the operand
//! with its repeated axes moved last, at flat indices the kernel writes
//! from the host. That write is synchronous, so the graph pass moves these
//! equations to the CPU (`Equation::lowers`); eager ops, which TF cannot
//! place by an equation, get them here.

use super::transposed::transposed;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::ops::kernel::flat;
use crate::kernels::tf::{Context, Tensor};
use tensorplug_core::accelerator::{DType, MAX_RANK, OpKind, TensorDesc};

/// At most this many diagonal elements are gathered (4 bytes of index each).
const MAX_INDICES: u64 = 1 << 20;

/// An operand's diagonal over its repeated labels.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::kernels::ops) struct Diagonal {
    /// Moves the repeated axes last, grouped by label (`None`: they are).
    pub perm: Option<[u8; MAX_RANK]>,
    /// The operand as `[rows, from]`: its other axes, then the repeated ones.
    pub rows: u64,
    pub from: u64,
    /// The flat offsets of the diagonal's elements within `from`.
    pub indices: Vec<i32>,
    /// The operand's labels and dims after: the others, then each repeated
    /// label once.
    pub labels: Vec<u8>,
    pub dims: Vec<u64>,
}

/// The diagonal of an operand with labels `t` and dims `dims` (`None`: no
/// label repeats). `fail` words a refusal.
pub(super) fn plan(
    t: &[u8],
    dims: &[u64],
    fail: impl Fn(&str) -> Failure,
) -> KernelResult<Option<Diagonal>> {
    let count = |l: u8| t.iter().filter(|&&x| x == l).count();
    let mut repeated: Vec<u8> = Vec::new();
    for &l in t {
        if count(l) > 1 && !repeated.contains(&l) {
            repeated.push(l);
        }
    }
    if repeated.is_empty() {
        return Ok(None);
    }
    let singles: Vec<u8> = t
        .iter()
        .copied()
        .filter(|l| !repeated.contains(l))
        .collect();
    let mut order = singles.clone();
    for &l in &repeated {
        order.extend(std::iter::repeat_n(l, count(l)));
    }
    let dim = |l: u8| dims[t.iter().position(|&x| x == l).unwrap_or(0)];
    let too_big = || fail("a diagonal over 2^20 elements");
    let rows = singles
        .iter()
        .try_fold(1u64, |p, &l| p.checked_mul(dim(l)))
        .ok_or_else(too_big)?;
    // Label k's block is n_k^c_k wide; its diagonal (i, …, i) sits at
    // i · (1 + n_k + … + n_k^(c_k−1)), times the width of the blocks after.
    let (mut indices, mut width) = (vec![0u64], 1u64);
    for &l in repeated.iter().rev() {
        let n = dim(l);
        let block = (0..count(l)).try_fold(1u64, |p, _| p.checked_mul(n));
        let step = (0..count(l))
            .try_fold((0u64, 1u64), |(sum, power), _| {
                Some((sum.checked_add(power)?, power.checked_mul(n)?))
            })
            .map(|(sum, _)| sum);
        let (Some(block), Some(step)) = (block, step) else {
            return Err(too_big());
        };
        if (indices.len() as u64).saturating_mul(n) > MAX_INDICES {
            return Err(too_big());
        }
        let offset = |i: u64| step.checked_mul(i)?.checked_mul(width);
        let mut next = Vec::with_capacity(indices.len() * n as usize);
        for i in 0..n {
            let at = offset(i).ok_or_else(too_big)?;
            next.extend(indices.iter().map(|&j| j + at));
        }
        indices = next;
        width = width.checked_mul(block).ok_or_else(too_big)?;
    }
    // Row-major over the repeated labels in order: the last one varies fastest.
    let from = width;
    if from > i32::MAX as u64 {
        return Err(fail("a diagonal whose operand block exceeds 2^31 elements"));
    }
    let indices = indices.into_iter().map(|i| i as i32).collect();
    let mut labels = singles;
    labels.extend(&repeated);
    let dims = labels.iter().map(|&l| dim(l)).collect();
    Ok(Some(Diagonal {
        perm: occurrence_permutation(t, &order),
        rows,
        from,
        indices,
        labels,
        dims,
    }))
}

/// The `Transpose` permutation from `from` to `to`, which hold the same
/// labels as often, repeated ones too (`None`: none needed).
fn occurrence_permutation(from: &[u8], to: &[u8]) -> Option<[u8; MAX_RANK]> {
    let mut used = [false; MAX_RANK];
    let mut perm = [0u8; MAX_RANK];
    for (i, l) in to.iter().enumerate() {
        let at = (0..from.len()).find(|&j| !used[j] && from[j] == *l)?;
        used[at] = true;
        perm[i] = at as u8;
    }
    (perm[..to.len()]
        .iter()
        .enumerate()
        .any(|(i, &p)| usize::from(p) != i))
    .then_some(perm)
}

/// `x`'s diagonal `d` into a temp (the temps held by the caller).
pub(super) fn take(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: TensorDesc,
    d: &Diagonal,
    held: &mut Vec<Tensor>,
) -> KernelResult<TensorDesc> {
    let shape = flat(&d.dims)?;
    let tensor = ctx.temp(&shape)?;
    let out = run.desc(&tensor, shape)?;
    held.push(tensor);
    let count = d.indices.len() as u64;
    if d.rows == 0 || count == 0 {
        return Ok(out);
    }
    if !run.supports(OpKind::Gather(DType::I32)) {
        return Err(Failure::unimplemented(
            "a repeated Einsum label needs a device that gathers",
        ));
    }
    let x = match &d.perm {
        Some(perm) => {
            let (desc, tensor) = transposed(ctx, run, x, perm)?;
            held.push(tensor);
            desc
        }
        None => x,
    };
    // The indices: an f32 temp of as many 4-byte elements, seen as int32.
    let index_tensor = ctx.temp(&flat(&[count])?)?;
    let index = run.typed_desc(&index_tensor, flat(&[count])?, DType::I32)?;
    held.push(index_tensor);
    let bytes: Vec<u8> = d.indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    run.write(index, &bytes)?;
    let params = TensorDesc::new(x.addr, x.dtype, flat(&[d.rows, d.from, 1])?);
    let gathered = TensorDesc::new(out.addr, out.dtype, flat(&[d.rows, count, 1])?);
    run.launch(OpKind::Gather(DType::I32), &[params, index], gathered)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagonal(t: &str, dims: &[u64]) -> Diagonal {
        plan(t.as_bytes(), dims, |why| Failure::invalid(why))
            .unwrap()
            .expect("a repeated label")
    }

    #[test]
    fn the_diagonal_of_a_square_and_of_three_axes() {
        let d = diagonal("ii", &[3, 3]);
        assert_eq!((d.rows, d.from, d.indices), (1, 9, vec![0, 4, 8]));
        assert_eq!((d.labels, d.dims, d.perm), (b"i".to_vec(), vec![3], None));
        let d = diagonal("iii", &[2, 2, 2]);
        assert_eq!(d.indices, [0, 7]);
    }

    #[test]
    fn repeated_axes_move_last_and_each_label_is_kept_once() {
        // "iji": i, i moved after j; rows are j; block i·i.
        let d = diagonal("iji", &[2, 5, 2]);
        assert_eq!(d.perm.unwrap()[..3], [1, 0, 2]);
        assert_eq!((d.rows, d.from, d.indices), (5, 4, vec![0, 3]));
        assert_eq!(d.labels, b"ji");
        // Two repeated labels, i (2) then k (3): row-major, k fastest.
        let d = diagonal("iikk", &[2, 2, 3, 3]);
        assert_eq!(d.from, 36);
        assert_eq!(d.indices, [0, 4, 8, 27, 31, 35]);
        assert_eq!((d.labels, d.dims), (b"ik".to_vec(), vec![2, 3]));
        assert!(
            plan(b"ij", &[2, 3], |why| Failure::invalid(why))
                .unwrap()
                .is_none()
        );
    }
}
