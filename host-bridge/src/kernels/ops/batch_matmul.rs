//! `BatchMatMul` and `BatchMatMulV2` (`adj_x`, `adj_y`; V2 broadcasts the
//! batch axes): one `BatchMatMul` record when the device has it and only
//! `b`'s batch broadcasts, else one device `MatMul` per batch element, on
//! views of the operands (as TF's CPU kernel, which also loops over the
//! batch), all of them one enqueue.
//! [`Batched`] is shared with `Einsum`. `BatchMatMulV3` of int8 into
//! int32 (`tf.linalg.matmul(…, output_type=tf.int32)`) is the same on
//! float32 copies of its operands (`ops/half.rs` casts around it), exact
//! while a sum of products stays within float32's integers.

use super::blocks::MAX_RUNS;
use super::kernel::TypePair;
use super::kernel::{Op, flat, is_empty};
use super::matmul::Transposes;
use crate::kernels::commands::Commands;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes::show;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, DeviceAddr, OpKind, Shape, TensorDesc, batch_matmul};

/// The catalogue's `BatchMatMul` record (its family; no transposes).
pub(crate) const BATCH_MATMUL: OpKind = batch_matmul(false, false);

/// `BatchMatMul` (equal batch axes) or `BatchMatMulV2` (broadcast).
pub struct BatchMatMul {
    op: &'static CStr,
    broadcast: bool,
}

/// The kernels.
pub static KERNELS: [BatchMatMul; 2] = [
    BatchMatMul {
        op: c"BatchMatMul",
        broadcast: false,
    },
    BatchMatMul {
        op: c"BatchMatMulV2",
        broadcast: true,
    },
];

/// `BatchMatMulV3` with int8 operands and an int32 result.
pub struct Int8BatchMatMul;

/// The most terms of an int8 dot product float32 sums exactly: each
/// product is at most 2¹⁴ in magnitude, and float32 holds every integer
/// up to 2²⁴.
pub const INT8_MAX_K: u64 = 1 << 10;

static INT8_TYPES: [TypePair; 1] = [[(c"Ta", TF_DataType::TF_INT8), (c"Tb", TF_DataType::TF_INT8)]];

impl Op for Int8BatchMatMul {
    type Attrs = Transposes;

    fn op(&self) -> &'static CStr {
        c"BatchMatMulV3"
    }

    fn family(&self) -> Option<OpKind> {
        Some(MATMUL)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[OpKind::Cast {
            from: DType::F32,
            to: DType::I32,
        }]
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        &INT8_TYPES
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Transposes> {
        BatchMatMul::construct(&KERNELS[1], ctx)
    }

    fn compute(&self, t: &Transposes, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        // The operands are float32 copies here (`ops/half.rs`).
        let (sx, sy) = (ctx.input(0, false)?.shape()?, ctx.input(1, false)?.shape()?);
        let plan = Batched::plan(sx.dims(), sy.dims(), *t, true)?;
        if plan.k(0) > INT8_MAX_K {
            return Err(Failure::unimplemented(format!(
                "an int8 matmul over {} terms (the device computes it in float32, exact up to \
                 {INT8_MAX_K} terms)",
                plan.k(0)
            )));
        }
        BatchMatMul::compute(&KERNELS[1], t, ctx, run)
    }
}

pub(super) const MATMUL: OpKind = OpKind::MatMul {
    transpose_a: false,
    transpose_b: false,
};

impl Op for BatchMatMul {
    type Attrs = Transposes;

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(MATMUL)
    }

    fn may_launch(&self) -> &'static [OpKind] {
        &[BATCH_MATMUL]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Transposes> {
        Ok(Transposes {
            a: ctx.bool_attr(c"adj_x")?,
            b: ctx.bool_attr(c"adj_y")?,
        })
    }

    fn compute(&self, t: &Transposes, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (x, y) = (ctx.input(0, false)?, ctx.input(1, false)?);
        let (sx, sy) = (x.shape()?, y.shape()?);
        let plan = Batched::plan(sx.dims(), sy.dims(), *t, self.broadcast)?;
        let out_shape = plan.out_shape()?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let (a, b) = (run.desc(&x, sx)?, run.desc(&y, sy)?);
        plan.launch(run, a, b, run.desc(&out, out_shape)?)
    }
}

/// `out[i] = op(a[i]) · op(b[i])` over broadcast batch axes: the batch
/// dims of each (left-padded with 1 to one rank) and the matrices' dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Batched {
    pub(super) a_batch: Vec<u64>,
    pub(super) b_batch: Vec<u64>,
    pub(super) a: [u64; 2],
    pub(super) b: [u64; 2],
    pub(super) t: Transposes,
}

impl Batched {
    /// Checks `a` and `b` as TF's `BatchMatMul(V2)` does.
    pub(super) fn plan(a: &[u64], b: &[u64], t: Transposes, broadcast: bool) -> KernelResult<Self> {
        for (i, dims) in [a, b].iter().enumerate() {
            if dims.len() < 2 {
                return Err(Failure::invalid(format!(
                    "In[{i}] ndims must be >= 2: {}",
                    dims.len()
                )));
            }
        }
        let (ra, rb) = (a.len() - 2, b.len() - 2);
        let rank = ra.max(rb);
        let pad = |d: &[u64], r: usize| -> Vec<u64> {
            std::iter::repeat_n(1, rank - r)
                .chain(d[..r].iter().copied())
                .collect()
        };
        let plan = Self {
            a_batch: pad(a, ra),
            b_batch: pad(b, rb),
            a: [a[ra], a[ra + 1]],
            b: [b[rb], b[rb + 1]],
            t,
        };
        let compatible = plan
            .a_batch
            .iter()
            .zip(&plan.b_batch)
            .all(|(&x, &y)| x == y || (broadcast && (x == 1 || y == 1)));
        if !compatible || (!broadcast && ra != rb) {
            return Err(Failure::invalid(format!(
                "In[0] and In[1] must have compatible batch dimensions: {a:?} vs. {b:?}"
            )));
        }
        if plan.k(0) != plan.k(1) {
            return Err(Failure::invalid(format!(
                "Matrix size-incompatible: In[0]: {a:?}, In[1]: {b:?} (adj_x={}, adj_y={})",
                t.a, t.b
            )));
        }
        Ok(plan)
    }

    /// The contracted size as operand `i` sees it.
    fn k(&self, i: usize) -> u64 {
        match i {
            0 => self.a[usize::from(!self.t.a)],
            _ => self.b[usize::from(self.t.b)],
        }
    }

    fn mn(&self) -> (u64, u64) {
        (
            self.a[usize::from(self.t.a)],
            self.b[usize::from(!self.t.b)],
        )
    }

    fn out_batch(&self) -> Vec<u64> {
        self.a_batch
            .iter()
            .zip(&self.b_batch)
            .map(|(&x, &y)| if x == 1 { y } else { x })
            .collect()
    }

    /// `[batch…, m, n]`.
    pub(super) fn out_shape(&self) -> KernelResult<Shape> {
        let (m, n) = self.mn();
        let mut dims = self.out_batch();
        dims.extend([m, n]);
        flat(&dims).map_err(|_| Failure::unimplemented(format!("a result of rank {}", dims.len())))
    }

    /// Enqueues the MatMuls into `out` (of [`Self::out_shape`]).
    pub(super) fn launch(
        &self,
        run: &mut Launcher<'_>,
        a: TensorDesc,
        b: TensorDesc,
        out: TensorDesc,
    ) -> KernelResult<()> {
        let (m, n) = self.mn();
        let batch = self.out_batch();
        let count: u64 = batch.iter().product();
        if self.k(0) == 0 {
            return run.fill(out, 0);
        }
        // One batch of `b` for all of `a`, untransposed: one MatMul of the rows.
        if !self.t.a && self.b_batch.iter().all(|&d| d == 1) {
            let rows = count * m;
            let a = view(a, 0, [rows, self.a[1]])?;
            return launch_one(
                run,
                self.t,
                a,
                view(b, 0, self.b)?,
                view(out, 0, [rows, n])?,
            );
        }
        if let Some(kind) = self.record(run) {
            let (a, b) = self.record_operands(a, b, count)?;
            return run.launch(kind, &[a, b], view_as(out, 0, &[count, m, n])?);
        }
        if count > MAX_RUNS {
            return Err(Failure::unimplemented(format!(
                "a batch of {count} matrices (at most {MAX_RUNS}): {}",
                show(&out.shape)
            )));
        }
        let offset = |dims: &[u64], index: &[u64]| {
            dims.iter()
                .zip(index)
                .fold(0, |at, (&d, &i)| at * d + if d == 1 { 0 } else { i })
        };
        let kind = OpKind::MatMul {
            transpose_a: self.t.a,
            transpose_b: self.t.b,
        };
        let mut gemms = Commands::default();
        let mut index = vec![0u64; batch.len()];
        for i in 0..count {
            let (ia, ib) = (offset(&self.a_batch, &index), offset(&self.b_batch, &index));
            let inputs = [
                view(a, ia * self.a[0] * self.a[1], self.a)?,
                view(b, ib * self.b[0] * self.b[1], self.b)?,
            ];
            gemms.launch(kind, &inputs, view(out, i * m * n, [m, n])?)?;
            for axis in (0..batch.len()).rev() {
                index[axis] += 1;
                if index[axis] < batch[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        run.enqueue_all(gemms)
    }
}

impl Batched {
    /// Whether one command computes this product: `a` not broadcast, and
    /// `b` of `a`'s batch or one matrix for all.
    fn is_one_command(&self) -> bool {
        let batch = self.out_batch();
        self.a_batch == batch && (self.b_shared() || self.b_batch == batch)
    }

    fn b_shared(&self) -> bool {
        self.b_batch.iter().all(|&d| d == 1)
    }

    /// The `BatchMatMul` record for this product, if it is one command's
    /// and the device has the record.
    fn record(&self, run: &Launcher<'_>) -> Option<OpKind> {
        let (m, n) = self.mn();
        if !self.is_one_command() || m == 0 || n == 0 {
            return None;
        }
        let kind = record_kind(self.t);
        run.supports(kind).then_some(kind)
    }

    /// `a` as `[count, ·, ·]`, and `b` as `[count, ·, ·]` or, shared, as
    /// its one matrix.
    fn record_operands(
        &self,
        a: TensorDesc,
        b: TensorDesc,
        count: u64,
    ) -> KernelResult<(TensorDesc, TensorDesc)> {
        let a = view_as(a, 0, &[count, self.a[0], self.a[1]])?;
        let b = if self.b_shared() {
            view(b, 0, self.b)?
        } else {
            view_as(b, 0, &[count, self.b[0], self.b[1]])?
        };
        Ok((a, b))
    }

    /// The one command a program runs this product as, and the shapes it
    /// reads `a` and `b` in: a `MatMul` of two matrices, or the
    /// `BatchMatMul` record; `None` for a broadcast `a`.
    pub(super) fn as_one_command(&self) -> Option<(OpKind, Vec<u64>, Vec<u64>)> {
        if !self.is_one_command() {
            return None;
        }
        let kind = if self.a_batch.is_empty() {
            OpKind::MatMul {
                transpose_a: self.t.a,
                transpose_b: self.t.b,
            }
        } else {
            record_kind(self.t)
        };
        let with = |lead: &[u64], m: [u64; 2]| [lead, &m[..]].concat();
        Some((
            kind,
            with(&self.a_batch, self.a),
            with(&self.b_batch, self.b),
        ))
    }
}

/// The catalogue's `BatchMatMul` record with transposes `t`.
pub(crate) fn record_kind(t: Transposes) -> OpKind {
    batch_matmul(t.a, t.b)
}

fn launch_one(
    run: &mut Launcher<'_>,
    t: Transposes,
    a: TensorDesc,
    b: TensorDesc,
    out: TensorDesc,
) -> KernelResult<()> {
    let kind = OpKind::MatMul {
        transpose_a: t.a,
        transpose_b: t.b,
    };
    run.launch(kind, &[a, b], out)
}

/// The matrix `dims` at element `at` of `t`.
fn view(t: TensorDesc, at: u64, dims: [u64; 2]) -> KernelResult<TensorDesc> {
    view_as(t, at, &dims)
}

/// `t`'s elements from `at` seen as `dims`.
fn view_as(t: TensorDesc, at: u64, dims: &[u64]) -> KernelResult<TensorDesc> {
    let bytes = at * t.dtype.size() as u64;
    Ok(TensorDesc::new(
        DeviceAddr(t.addr.0 + bytes),
        t.dtype,
        flat(dims)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Transposes = Transposes { a: false, b: false };

    #[test]
    fn batch_axes_broadcast_in_v2_only() {
        let plan = Batched::plan(&[2, 1, 3, 4], &[5, 4, 6], NONE, true).unwrap();
        assert_eq!(plan.a_batch, [2, 1]);
        assert_eq!(plan.b_batch, [1, 5]);
        assert_eq!(plan.out_shape().unwrap().dims(), [2, 5, 3, 6]);
        assert!(Batched::plan(&[2, 1, 3, 4], &[5, 4, 6], NONE, false).is_err());
        assert!(Batched::plan(&[2, 3, 4], &[3, 4, 6], NONE, true).is_err());
    }

    #[test]
    fn adjoints_pick_the_contracted_axes() {
        let t = Transposes { a: true, b: true };
        let plan = Batched::plan(&[7, 4, 3], &[7, 6, 4], t, true).unwrap();
        assert_eq!(plan.out_shape().unwrap().dims(), [7, 3, 6]);
        let err = Batched::plan(&[7, 4, 3], &[7, 4, 6], t, true).unwrap_err();
        assert!(
            format!("{err:?}").contains("Matrix size-incompatible"),
            "{err:?}"
        );
        assert!(Batched::plan(&[3], &[3, 2], NONE, true).is_err());
    }
}
