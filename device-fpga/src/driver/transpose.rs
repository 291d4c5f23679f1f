//! Lowering `Transpose` to `TRANSPOSE_F32`: unit axes dropped, runs of
//! axes that stay adjacent and in order merged, then padded to four.

use tensorplug_abi::device::{CommandDescriptor, Opcode};
use tensorplug_core::accelerator::{MAX_RANK, OpDesc};

use super::error::Error;
use super::fields::dim;

/// The four input dims and the permutation of `dims` transposed by `perm`, or
/// `None` when more than four axes remain after coalescing.
pub(super) fn coalesce(dims: &[u64], perm: &[u8]) -> Option<([u64; 4], [u8; 4])> {
    // Input axes kept (size > 1), renumbered in input order.
    let kept: heapless::Vec<usize, MAX_RANK> = (0..dims.len()).filter(|&a| dims[a] > 1).collect();
    let rank_of = |axis: usize| kept.iter().position(|&k| k == axis);
    let order: heapless::Vec<usize, MAX_RANK> = perm
        .iter()
        .filter_map(|&p| rank_of(usize::from(p)))
        .collect();
    // Groups of output axes whose input axes are consecutive: (first input axis, size).
    let mut groups: heapless::Vec<(usize, u64), MAX_RANK> = heapless::Vec::new();
    let mut previous: Option<usize> = None;
    for &axis in &order {
        let size = dims[kept[axis]];
        match (previous, groups.last_mut()) {
            (Some(p), Some(group)) if axis == p + 1 => group.1 *= size,
            _ => groups.push((axis, size)).ok()?,
        }
        previous = Some(axis);
    }
    if groups.len() > 4 {
        return None;
    }
    // The groups in input order give the input dims; the output order is `groups`.
    let pad = 4 - groups.len();
    let mut in_dims = [1u64; 4];
    let mut perm4 = [0u8, 1, 2, 3];
    let mut input_rank = 0;
    for axis in 0..kept.len() {
        if let Some(out) = groups.iter().position(|&(first, _)| first == axis) {
            in_dims[pad + input_rank] = groups[out].1;
            perm4[pad + out] = (pad + input_rank) as u8;
            input_rank += 1;
        }
    }
    Some((in_dims, perm4))
}

/// The `TRANSPOSE_F32` command of `op` (a `Transpose` of a non-empty input).
pub(super) fn command(
    op: &OpDesc<'_>,
    perm: &[u8; MAX_RANK],
    base: CommandDescriptor,
) -> Result<CommandDescriptor, Error> {
    let x = op.inputs[0].shape;
    let rank = x.dims().len();
    let unsupported = Error::BeyondCommand {
        what: "more than four axes are left after merging the ones that stay adjacent",
    };
    let (d, p) = coalesce(x.dims(), &perm[..rank]).ok_or(unsupported)?;
    Ok(CommandDescriptor {
        opcode: Opcode::TRANSPOSE_F32,
        src0: op.inputs[0].addr.0,
        dst: op.output.addr.0,
        m: dim(d[0])?,
        n: dim(d[1])?,
        k: dim(d[2])?,
        len: u64::from(dim(d[3])?),
        imm: p
            .iter()
            .enumerate()
            .map(|(i, &a)| u32::from(a) << (2 * i))
            .sum(),
        ..base
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_coalesce_into_four() {
        // A 2-D transpose is the last two of four axes.
        assert_eq!(
            coalesce(&[2, 3], &[1, 0]),
            Some(([1, 1, 2, 3], [0, 1, 3, 2]))
        );
        // NHWC -> NCHW with N = 1: [H·W, C] transposed.
        assert_eq!(
            coalesce(&[1, 4, 4, 3], &[0, 3, 1, 2]),
            Some(([1, 1, 16, 3], [0, 1, 3, 2]))
        );
        // Unit axes vanish; the identity is one group.
        assert_eq!(
            coalesce(&[2, 1, 3], &[1, 0, 2]),
            Some(([1, 1, 1, 6], [0, 1, 2, 3]))
        );
        // Rank 6 with every axis moved and none mergeable does not fit.
        assert_eq!(coalesce(&[2, 2, 2, 2, 2, 2], &[5, 4, 3, 2, 1, 0]), None);
        // A reversal of four.
        assert_eq!(
            coalesce(&[2, 3, 4, 5], &[3, 2, 1, 0]),
            Some(([2, 3, 4, 5], [3, 2, 1, 0]))
        );
    }

    #[test]
    fn six_unmergeable_axes_are_beyond_the_command() {
        use tensorplug_core::accelerator::{DType, DeviceAddr, OpKind, Shape, TensorDesc};
        let shape = Shape::new(&[2; 6]).unwrap();
        let perm = [5, 4, 3, 2, 1, 0];
        let op = OpDesc {
            kind: OpKind::Transpose(perm),
            inputs: &[TensorDesc::new(DeviceAddr(0), DType::F32, shape)],
            output: TensorDesc::new(DeviceAddr(4096), DType::F32, shape),
            op_id: 1,
        };
        let error = command(&op, &perm, CommandDescriptor::default()).unwrap_err();
        assert!(matches!(error, Error::BeyondCommand { .. }), "{error:?}");
        let text = std::format!("{error}");
        assert!(text.contains("more than four axes"), "{text}");
    }
}
