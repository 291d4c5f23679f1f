//! `Split`, `SplitV`, `Unpack` and `Pack`: pieces of a tensor along one
//! axis, or tensors stacked along a new one, as block copies on the device
//! (exact). The axis and `SplitV`'s sizes are in host memory.
//!
//! Equal pieces along an inner axis (an LSTM cell's four gates) would take
//! one copy per row of each piece; on a device of `Transpose` they take
//! one transpose through a temporary and one copy per piece instead
//! ([`Stacked`]).

use super::blocks::Block;
use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::commands::Commands;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use std::os::raw::c_int;
use tensorplug_core::accelerator::{DeviceAddr, MAX_RANK, OpKind, Shape, TensorDesc};

/// The device op that regroups equal pieces along an inner axis.
const TRANSPOSE: OpKind = OpKind::Transpose([0; MAX_RANK]);

/// Which of the four ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Split(split_dim, value)`, `num_split` equal pieces.
    Split,
    /// `SplitV(value, size_splits, split_dim)`, one size may be −1.
    SplitV,
    /// `Unpack(value)`, `num` pieces of size 1 along `axis`, the axis dropped.
    Unpack,
    /// `Pack(values…)`, `N` tensors of one shape stacked on a new `axis`.
    Pack,
}

/// One of the four kernels.
pub struct Pieces(pub Kind);

/// The kernels.
pub static KERNELS: [Pieces; 4] = [
    Pieces(Kind::Split),
    Pieces(Kind::SplitV),
    Pieces(Kind::Unpack),
    Pieces(Kind::Pack),
];

/// The attributes read at construction.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// `num_split`, `num` or `N`.
    pieces: usize,
    /// `Unpack`'s and `Pack`'s `axis` (may be negative).
    axis: i64,
}

impl Op for Pieces {
    type Attrs = Counts;

    fn op(&self) -> &'static CStr {
        match self.0 {
            Kind::Split => c"Split",
            Kind::SplitV => c"SplitV",
            Kind::Unpack => c"Unpack",
            Kind::Pack => c"Pack",
        }
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn may_launch(&self) -> &'static [OpKind] {
        &[TRANSPOSE]
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        match self.0 {
            Kind::Split => &[c"split_dim"],
            Kind::SplitV => &[c"size_splits", c"split_dim"],
            Kind::Unpack | Kind::Pack => &[],
        }
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Counts> {
        let (count, axis) = match self.0 {
            Kind::Split | Kind::SplitV => (c"num_split", None),
            Kind::Unpack => (c"num", Some(c"axis")),
            Kind::Pack => (c"N", Some(c"axis")),
        };
        let pieces = ctx.int_attr(count)?;
        Ok(Counts {
            pieces: usize::try_from(pieces)
                .map_err(|_| Failure::invalid(format!("{count:?} = {pieces}")))?,
            axis: match axis {
                Some(name) => i64::from(ctx.int_attr(name)?),
                None => 0,
            },
        })
    }

    fn compute(&self, a: &Counts, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        match self.0 {
            Kind::Pack => pack(a, ctx, run),
            kind => split(kind, a, ctx, run),
        }
    }
}

/// `axis` of a rank-`rank` tensor, negative from the end.
fn resolve(axis: i64, rank: usize) -> KernelResult<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(Failure::invalid(format!(
            "axis {axis} is out of range for a tensor of rank {rank}"
        )))
    }
}

/// Where each piece starts and how long it is along the split axis.
pub(crate) fn piece_sizes(
    kind: Kind,
    dim: u64,
    pieces: usize,
    sizes: &[i64],
) -> KernelResult<Vec<u64>> {
    match kind {
        Kind::Split => {
            if pieces == 0 || !dim.is_multiple_of(pieces as u64) {
                return Err(Failure::invalid(format!(
                    "Number of ways to split should evenly divide the split dimension, but got \
                     split_dim of size {dim} and num_split {pieces}"
                )));
            }
            Ok(vec![dim / pieces as u64; pieces])
        }
        Kind::Unpack => {
            if dim != pieces as u64 {
                return Err(Failure::invalid(format!(
                    "Input shape axis has size {dim}, but num is {pieces}"
                )));
            }
            Ok(vec![1; pieces])
        }
        _ => {
            if sizes.len() != pieces {
                return Err(Failure::invalid(format!(
                    "size_splits has {} entries, num_split is {pieces}",
                    sizes.len()
                )));
            }
            if pieces == 1 && sizes[0] != dim as i64 {
                return Err(Failure::invalid(format!(
                    "If there is only one output, it must have the same size as the input. \
                     Input size: {dim} output size: {}",
                    sizes[0]
                )));
            }
            let unknown = sizes.iter().filter(|&&s| s == -1).count();
            let known: i64 = sizes.iter().filter(|&&s| s != -1).sum();
            if unknown > 1 || sizes.iter().any(|&s| s < -1) {
                return Err(Failure::invalid(format!(
                    "size_splits {sizes:?}: at most one -1, the others >= 0"
                )));
            }
            let rest = dim as i64 - known;
            if rest < 0 || (unknown == 0 && rest != 0) {
                return Err(Failure::invalid(format!(
                    "Determined shape must either match input shape along split_dim exactly if \
                     fully specified, or be less than the size of the input along split_dim if \
                     not fully specified. Got: {known} of {dim}"
                )));
            }
            Ok(sizes
                .iter()
                .map(|&s| if s == -1 { rest as u64 } else { s as u64 })
                .collect())
        }
    }
}

fn split(kind: Kind, a: &Counts, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
    let (value_at, axis_at) = match kind {
        Kind::Split => (1, Some(0)),
        Kind::SplitV => (0, Some(2)),
        _ => (0, None),
    };
    let x = ctx.input(value_at, false)?;
    let sx = x.shape()?;
    let dims = sx.dims().to_vec();
    let axis = match axis_at {
        Some(i) => match read_host_ints(&ctx.input(i, true)?, "split_dim")?[..] {
            [v] => v,
            ref other => {
                return Err(Failure::invalid(format!(
                    "split_dim must be a scalar, got {other:?}"
                )));
            }
        },
        None => a.axis,
    };
    let axis = resolve(axis, dims.len())?;
    let sizes = match kind {
        Kind::SplitV => read_host_ints(&ctx.input(1, true)?, "size_splits")?,
        _ => Vec::new(),
    };
    let lengths = piece_sizes(kind, dims[axis], a.pieces, &sizes)?;
    let out_dims = |len: u64| -> Vec<u64> {
        let mut extent = dims.clone();
        extent[axis] = len;
        if kind == Kind::Unpack {
            extent.remove(axis);
        }
        extent
    };
    if let Some(stacked) = Stacked::of(&dims, axis, &lengths, run) {
        let outs = (0..lengths.len())
            .map(|k| ctx.output_at(k as c_int, &flat(&out_dims(lengths[k]))?, &[]))
            .collect::<KernelResult<Vec<_>>>()?;
        let temp = ctx.temp(&stacked.grouped()?)?;
        let mut commands = Commands::default();
        commands.launch(
            stacked.transpose(),
            &[run.desc(&x, stacked.interleaved()?)?],
            run.desc(&temp, stacked.grouped()?)?,
        )?;
        let grouped = run.desc(&temp, stacked.grouped()?)?;
        for (k, out) in outs.iter().enumerate() {
            commands.copy(run.desc(out, stacked.piece()?)?, stacked.at(grouped, k)?);
        }
        return run.enqueue_all(commands);
    }
    let src = (!is_empty(&sx)).then(|| run.desc(&x, sx)).transpose()?;
    let mut start = 0u64;
    for (k, &len) in lengths.iter().enumerate() {
        let mut extent = dims.clone();
        extent[axis] = len;
        let out = ctx.output_at(k as c_int, &flat(&out_dims(len))?, &[])?;
        let piece = flat(&extent)?;
        if let Some(src) = src
            && !is_empty(&piece)
        {
            let mut src_at = vec![0u64; dims.len()];
            src_at[axis] = start;
            let block = Block {
                src_dims: &dims,
                src_at: &src_at,
                dst_dims: &extent,
                dst_at: &vec![0; dims.len()],
                extent: &extent,
                step: &[],
            };
            block.copy(run, run.desc(&out, piece)?, src)?;
        }
        start += len;
    }
    Ok(())
}

fn pack(a: &Counts, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
    let n = ctx.num_inputs();
    let values = (0..n)
        .map(|i| ctx.input(i, false))
        .collect::<KernelResult<Vec<_>>>()?;
    let shapes = values
        .iter()
        .map(|v| v.shape())
        .collect::<KernelResult<Vec<Shape>>>()?;
    let first = shapes
        .first()
        .ok_or_else(|| Failure::invalid("Pack of no values"))?;
    if let Some((i, s)) = shapes
        .iter()
        .enumerate()
        .find(|(_, s)| s.dims() != first.dims())
    {
        return Err(Failure::invalid(format!(
            "Shapes of all inputs must match: values[0].shape = {:?} != values[{i}].shape = {:?}",
            first.dims(),
            s.dims()
        )));
    }
    let axis = resolve(a.axis, first.dims().len() + 1)?;
    let mut piece = first.dims().to_vec();
    piece.insert(axis, 1);
    let mut out_dims = piece.clone();
    out_dims[axis] = n as u64;
    let out_shape = flat(&out_dims)?;
    let out = ctx.output(&out_shape, &[])?;
    if is_empty(&out_shape) {
        return Ok(());
    }
    let out = run.desc(&out, out_shape)?;
    let piece_shape = flat(&piece)?;
    if let Some(stacked) = Stacked::of(&out_dims, axis, &vec![1; n], run) {
        let temp = ctx.temp(&stacked.grouped()?)?;
        let grouped = run.desc(&temp, stacked.grouped()?)?;
        let mut commands = Commands::default();
        for (k, value) in values.iter().enumerate() {
            commands.copy(stacked.at(grouped, k)?, run.desc(value, stacked.piece()?)?);
        }
        commands.launch(
            stacked.transpose(),
            &[TensorDesc {
                shape: stacked.grouped()?,
                ..grouped
            }],
            TensorDesc {
                shape: stacked.interleaved()?,
                ..out
            },
        )?;
        return run.enqueue_all(commands);
    }
    for (k, value) in values.iter().enumerate() {
        let mut dst_at = vec![0u64; piece.len()];
        dst_at[axis] = k as u64;
        let block = Block {
            src_dims: &piece,
            src_at: &vec![0; piece.len()],
            dst_dims: &out_dims,
            dst_at: &dst_at,
            extent: &piece,
            step: &[],
        };
        block.copy(run, out, run.desc(value, piece_shape)?)?;
    }
    Ok(())
}

/// Equal pieces along an inner axis, seen as `[outer, pieces, width]`
/// (interleaved: each outer row holds a run of every piece) and as
/// `[pieces, outer, width]` (grouped: each piece contiguous). A
/// `Transpose` of the first two axes turns one into the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stacked {
    outer: u64,
    pieces: u64,
    width: u64,
}

impl Stacked {
    /// The layout of `lengths` along `axis` of `dims`, when they are equal,
    /// more than one, and each piece would take more than one row copy,
    /// on a device of `Transpose`.
    fn of(dims: &[u64], axis: usize, lengths: &[u64], run: &Launcher<'_>) -> Option<Self> {
        let stacked = Self::layout(dims, axis, lengths)?;
        run.supports(TRANSPOSE).then_some(stacked)
    }

    fn layout(dims: &[u64], axis: usize, lengths: &[u64]) -> Option<Self> {
        let (&first, rest) = lengths.split_first()?;
        let outer: u64 = dims[..axis].iter().product();
        let width = first * dims[axis + 1..].iter().product::<u64>();
        let useful = !rest.is_empty() && rest.iter().all(|&l| l == first);
        (useful && outer > 1 && width > 0).then_some(Self {
            outer,
            pieces: lengths.len() as u64,
            width,
        })
    }

    fn interleaved(&self) -> KernelResult<Shape> {
        flat(&[self.outer, self.pieces, self.width])
    }

    fn grouped(&self) -> KernelResult<Shape> {
        flat(&[self.pieces, self.outer, self.width])
    }

    fn piece(&self) -> KernelResult<Shape> {
        flat(&[self.outer * self.width])
    }

    /// Swaps the first two axes.
    fn transpose(&self) -> OpKind {
        let mut perm = [0u8; MAX_RANK];
        perm[..3].copy_from_slice(&[1, 0, 2]);
        OpKind::Transpose(perm)
    }

    /// Piece `k` of the grouped layout at `grouped`.
    fn at(&self, grouped: TensorDesc, k: usize) -> KernelResult<TensorDesc> {
        let bytes = k as u64 * self.outer * self.width * grouped.dtype.size() as u64;
        Ok(TensorDesc::new(
            DeviceAddr(grouped.addr.0 + bytes),
            grouped.dtype,
            self.piece()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_equal_inner_pieces_are_regrouped() {
        // An LSTM cell's gates: [32, 128] into four [32, 32].
        let gates = Stacked::layout(&[32, 128], 1, &[32; 4]).unwrap();
        assert_eq!((gates.outer, gates.pieces, gates.width), (32, 4, 32));
        // Unstacking [2, 3, 5] along axis 1: three [2, 5].
        let unstack = Stacked::layout(&[2, 3, 5], 1, &[1; 3]).unwrap();
        assert_eq!((unstack.outer, unstack.pieces, unstack.width), (2, 3, 5));
        // Along the first axis each piece is one copy already; unequal
        // pieces, one piece or an empty one stay block copies.
        assert_eq!(Stacked::layout(&[4, 6], 0, &[2, 2]), None);
        assert_eq!(Stacked::layout(&[1, 4, 6], 1, &[2, 2]), None);
        assert_eq!(Stacked::layout(&[3, 6], 1, &[2, 4]), None);
        assert_eq!(Stacked::layout(&[3, 6], 1, &[6]), None);
        assert_eq!(Stacked::layout(&[3, 0], 1, &[0, 0]), None);
    }

    #[test]
    fn pieces_follow_tfs_rules_and_name_bad_sizes() {
        assert_eq!(piece_sizes(Kind::Split, 6, 3, &[]).unwrap(), [2, 2, 2]);
        let e = piece_sizes(Kind::Split, 7, 3, &[]).unwrap_err();
        assert!(e.cause.contains("evenly divide"), "{}", e.cause);
        assert_eq!(
            piece_sizes(Kind::SplitV, 7, 3, &[2, -1, 1]).unwrap(),
            [2, 4, 1]
        );
        assert!(piece_sizes(Kind::SplitV, 7, 3, &[2, -1, -1]).is_err());
        assert!(piece_sizes(Kind::SplitV, 7, 2, &[2, 3]).is_err());
        assert!(piece_sizes(Kind::SplitV, 7, 2, &[8, -1]).is_err());
        // TF's own rule: one piece is the whole axis, -1 not accepted.
        assert!(piece_sizes(Kind::SplitV, 4, 1, &[-1]).is_err());
        assert_eq!(piece_sizes(Kind::SplitV, 4, 1, &[4]).unwrap(), [4]);
        assert_eq!(piece_sizes(Kind::Unpack, 3, 3, &[]).unwrap(), [1, 1, 1]);
        assert!(piece_sizes(Kind::Unpack, 3, 2, &[]).is_err());
        assert_eq!(resolve(-1, 3).unwrap(), 2);
        assert!(resolve(3, 3).is_err());
    }
}
