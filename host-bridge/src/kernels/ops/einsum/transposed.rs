//! An operand transposed into a temp: a leaf the lowering's steps share.

use crate::kernels::failure::KernelResult;
use crate::kernels::launch::Launcher;
use crate::kernels::ops::kernel::flat;
use crate::kernels::tf::{Context, Tensor};
use tensorplug_core::accelerator::{MAX_RANK, OpKind, TensorDesc};

/// `x` transposed by `perm` into a temp (held by the caller until launched).
pub(super) fn transposed(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: TensorDesc,
    perm: &[u8; MAX_RANK],
) -> KernelResult<(TensorDesc, Tensor)> {
    let rank = x.shape.dims().len();
    let dims: Vec<u64> = (0..rank)
        .map(|i| x.shape.dims()[usize::from(perm[i])])
        .collect();
    let shape = flat(&dims)?;
    let tensor = ctx.temp(&shape)?;
    let desc = run.desc(&tensor, shape)?;
    run.launch(OpKind::Transpose(*perm), &[x], desc)?;
    Ok((desc, tensor))
}
