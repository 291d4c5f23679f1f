//! Lowering of an [`OpDesc`] (already validated) to command descriptors.

use tensorplug_abi::device::{CommandDescriptor, CommandFlags, Opcode};
use tensorplug_core::accelerator::{DType, OpDesc, OpKind, Shape};

use super::broadcast::{self, Piece};
use super::error::Error;
use super::fields::{F32, dim};

const SRC0_BCAST_M: CommandFlags = CommandFlags::SRC0_BCAST_M;
const SRC0_BCAST_N: CommandFlags = CommandFlags::SRC0_BCAST_N;
const SRC0_BCAST_K: CommandFlags = CommandFlags::SRC0_BCAST_K;
const SRC1_BCAST_M: CommandFlags = CommandFlags::SRC1_BCAST_M;
const SRC1_BCAST_N: CommandFlags = CommandFlags::SRC1_BCAST_N;
const SRC1_BCAST_K: CommandFlags = CommandFlags::SRC1_BCAST_K;

/// What the device's ABI lets the lowering use.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Abi {
    /// `Features::CATALOGUE`: element-wise ops go as `UNARY`/`BINARY` with
    /// their catalogue code.
    pub catalogue: bool,
    /// ABI ≥ 1.9: `ADD_I8` broadcasts `src1` (`n`).
    pub add_i8_broadcast: bool,
    /// `Features::RECORDS` (ABI 1.10): an op declared as a record goes as
    /// `RECORD` with its code and its record's device arguments.
    pub records: bool,
}

/// Emits the commands of `op` in execution order. `base` is the command
/// every emitted one starts from (tag, stream, `NO_EVENTS`).
pub(crate) fn lower(
    op: &OpDesc<'_>,
    base: CommandDescriptor,
    abi: Abi,
    emit: &mut impl FnMut(&CommandDescriptor) -> Result<(), Error>,
) -> Result<(), Error> {
    let out = op.output;
    let elements = out.shape.elements().ok_or(Error::InvalidArgument)?;
    if elements == 0 {
        return Ok(());
    }
    let input = |i: usize| op.inputs[i];
    let cmd = |opcode: Opcode| CommandDescriptor { opcode, ..base };
    match op.kind {
        OpKind::MatMul {
            transpose_a,
            transpose_b,
        } => gemm(op, base, transpose_a, transpose_b, None, emit),
        OpKind::FusedMatMul {
            transpose_a,
            transpose_b,
            relu,
        } => gemm(op, base, transpose_a, transpose_b, Some(relu), emit),
        OpKind::BiasAdd => {
            let (m, n) = rows(&input(0).shape)?;
            emit(&CommandDescriptor {
                src0: input(0).addr.0,
                src1: input(1).addr.0,
                dst: out.addr.0,
                m,
                n,
                ..cmd(Opcode::BIAS_ADD_F32)
            })
        }
        OpKind::Unary(_) | OpKind::Binary(_) => {
            let code = op.kind.decl().id.code;
            let cmd = match abi.catalogue {
                true => CommandDescriptor {
                    imm: u32::from(code),
                    ..cmd(match op.kind {
                        OpKind::Unary(_) => Opcode::UNARY,
                        _ => Opcode::BINARY,
                    })
                },
                // A device older than ABI 1.3: the op's own opcode.
                false => {
                    let per_op = Opcode::PER_OP_ELEMENTWISE.iter().find(|e| e.code == code);
                    let undeclared = Error::Undeclared { op: op.kind.name() };
                    cmd(per_op.ok_or(undeclared)?.opcode)
                }
            };
            match op.kind {
                // An op's parameter goes in `src2` (ABI 1.8; 0 for the rest).
                OpKind::Unary(u) => emit(&CommandDescriptor {
                    src0: input(0).addr.0,
                    src2: u64::from(u.param().to_bits()),
                    dst: out.addr.0,
                    len: elements,
                    ..cmd
                }),
                OpKind::Binary(b) => {
                    let src2 = u64::from(b.param().to_bits());
                    binary(op, CommandDescriptor { src2, ..cmd }, emit)
                }
                _ => Err(Error::InvalidArgument),
            }
        }
        OpKind::Conv2D(_)
        | OpKind::FusedConv2D(..)
        | OpKind::DepthwiseConv2D(_)
        | OpKind::MaxPool(_)
        | OpKind::AvgPool(_)
        | OpKind::Conv2DBackpropInput(_)
        | OpKind::Conv2DBackpropFilter(_)
        | OpKind::MaxPoolGrad(_)
        | OpKind::AvgPoolGrad(_) => super::lower_window::lower_window(op, base, emit),
        OpKind::Transpose(perm) => emit(&super::transpose::command(op, &perm, base)?),
        // An empty reduced axis (the output is not empty): every sum is 0.
        OpKind::ReduceSum if input(0).shape.last() == 0 => emit(&CommandDescriptor {
            dst: out.addr.0,
            len: elements * F32,
            ..cmd(Opcode::FILL)
        }),
        // Likewise for the other reductions and a segment sum without rows.
        OpKind::ReduceMax | OpKind::ReduceMin | OpKind::ReduceProd | OpKind::SegmentSum(_)
            if input(0).shape.elements() == Some(0) =>
        {
            let value: f32 = match op.kind {
                OpKind::ReduceMax => f32::NEG_INFINITY,
                OpKind::ReduceMin => f32::INFINITY,
                OpKind::ReduceProd => 1.0,
                _ => 0.0,
            };
            emit(&CommandDescriptor {
                dst: out.addr.0,
                len: elements * F32,
                imm: value.to_bits(),
                ..cmd(Opcode::FILL)
            })
        }
        OpKind::Gather(index) => {
            let d = input(0).shape;
            emit(&CommandDescriptor {
                src0: input(0).addr.0,
                src1: input(1).addr.0,
                dst: out.addr.0,
                m: dim(d.dims()[0])?,
                n: dim(d.dims()[1])?,
                k: dim(d.dims()[2])?,
                len: input(1).shape.last(),
                dtype: DType::F32 as u8,
                imm: u32::from(index as u8),
                ..cmd(Opcode::GATHER)
            })
        }
        OpKind::Concat(t) => {
            // Validated: `[m, n]` and `[m, k]`.
            let (a, b) = (input(0).shape, input(1).shape);
            emit(&CommandDescriptor {
                src0: input(0).addr.0,
                src1: input(1).addr.0,
                dst: out.addr.0,
                m: dim(a.dims()[0])?,
                n: dim(a.last())?,
                k: dim(b.last())?,
                dtype: t as u8,
                ..cmd(Opcode::CONCAT)
            })
        }
        OpKind::Cast { from, to } => emit(&CommandDescriptor {
            src0: input(0).addr.0,
            dst: out.addr.0,
            len: elements,
            dtype: from as u8,
            imm: u32::from(to as u8),
            ..cmd(Opcode::CAST)
        }),
        OpKind::ArgMax(t) | OpKind::ArgMin(t) => {
            let (m, n) = rows(&input(0).shape)?;
            emit(&CommandDescriptor {
                src0: input(0).addr.0,
                dst: out.addr.0,
                m,
                n,
                imm: u32::from(t as u8),
                ..cmd(match op.kind {
                    OpKind::ArgMax(_) => Opcode::ARG_MAX_F32,
                    _ => Opcode::ARG_MIN_F32,
                })
            })
        }
        OpKind::RandomUniform { key, counter } => emit(&CommandDescriptor {
            src0: key,
            src1: counter[0],
            src2: counter[1],
            dst: out.addr.0,
            len: elements,
            ..cmd(Opcode::RANDOM_UNIFORM_F32)
        }),
        OpKind::Select => emit(&CommandDescriptor {
            src0: input(1).addr.0,
            src1: input(2).addr.0,
            src2: input(0).addr.0,
            dst: out.addr.0,
            len: elements,
            ..cmd(Opcode::SELECT)
        }),
        OpKind::SegmentSum(index) => emit(&CommandDescriptor {
            src0: input(0).addr.0,
            src1: input(1).addr.0,
            dst: out.addr.0,
            n: dim(out.shape.dims()[0])?,
            k: dim(out.shape.last())?,
            len: input(1).shape.last(),
            dtype: DType::F32 as u8,
            imm: u32::from(index as u8),
            ..cmd(Opcode::SEGMENT_SUM)
        }),
        OpKind::Softmax
        | OpKind::LogSoftmax
        | OpKind::ReduceSum
        | OpKind::ReduceMax
        | OpKind::ReduceMin
        | OpKind::ReduceProd => {
            let (m, n) = rows(&input(0).shape)?;
            let opcode = match op.kind {
                OpKind::Softmax => Opcode::SOFTMAX_F32,
                OpKind::LogSoftmax => Opcode::LOG_SOFTMAX_F32,
                OpKind::ReduceMax => Opcode::REDUCE_MAX_F32,
                OpKind::ReduceMin => Opcode::REDUCE_MIN_F32,
                OpKind::ReduceProd => Opcode::REDUCE_PROD_F32,
                _ => Opcode::REDUCE_SUM_F32,
            };
            emit(&CommandDescriptor {
                src0: input(0).addr.0,
                dst: out.addr.0,
                m,
                n,
                ..cmd(opcode)
            })
        }
        kind if kind.is_int8() => {
            super::lower_window::lower_int8(op, base, abi.add_i8_broadcast, emit)
        }
        OpKind::Record(r) if abi.records => {
            let record = r.decl.record().ok_or(Error::InvalidArgument)?;
            let args = (record.args)(&r.attrs, op.inputs).ok_or(Error::BeyondCommand {
                what: "an extent over 2^32 - 1",
            })?;
            let src = |i: usize| op.inputs.get(i).map_or(0, |t| t.addr.0);
            let [m, n, k, len] = args.dims;
            emit(&CommandDescriptor {
                src0: src(0),
                src1: src(1),
                src2: src(2),
                dst: out.addr.0,
                len: u64::from(len),
                m,
                n,
                k,
                imm: u32::from(r.decl.id.code) | u32::from(args.bits) << 16,
                dtype: out.dtype as u8,
                ..cmd(Opcode::RECORD)
            })
        }
        // A kind added to `core` later: not lowered by this driver.
        _ => Err(Error::Undeclared { op: op.kind.name() }),
    }
}

/// `[.., n]` flattened to `m` rows of `n` (a scalar is one row of one).
fn rows(shape: &Shape) -> Result<(u32, u32), Error> {
    let n = shape.last();
    let m = shape.elements().ok_or(Error::InvalidArgument)? / n.max(1);
    Ok((dim(m)?, dim(n)?))
}

/// `MatMul`, and `FusedMatMul` with `relu`: `GEMM_BIAS_RELU_F32` for
/// `relu: true`; `GEMM_F32` then an in-place `BIAS_ADD_F32` for `false`.
fn gemm(
    op: &OpDesc<'_>,
    base: CommandDescriptor,
    transpose_a: bool,
    transpose_b: bool,
    fused_relu: Option<bool>,
    emit: &mut impl FnMut(&CommandDescriptor) -> Result<(), Error>,
) -> Result<(), Error> {
    let (a, b, out) = (op.inputs[0], op.inputs[1], op.output);
    let a_dims = a.shape.dims();
    let k = if transpose_a { a_dims[0] } else { a_dims[1] };
    let (m, n) = (dim(out.shape.dims()[0])?, dim(out.shape.dims()[1])?);
    let bias = fused_relu.map(|relu| (op.inputs[2].addr.0, relu));
    let row_op = |opcode, src0, src1| CommandDescriptor {
        opcode,
        src0,
        src1,
        dst: out.addr.0,
        m,
        n,
        ..base
    };
    if k == 0 {
        // Empty inner dimension: the product is all zeros.
        emit(&CommandDescriptor {
            opcode: Opcode::FILL,
            dst: out.addr.0,
            len: u64::from(m) * u64::from(n) * F32,
            ..base
        })?;
        if let Some((bias, relu)) = bias {
            emit(&row_op(Opcode::BIAS_ADD_F32, out.addr.0, bias))?;
            if relu {
                emit(&CommandDescriptor {
                    opcode: Opcode::RELU_F32,
                    src0: out.addr.0,
                    dst: out.addr.0,
                    len: u64::from(m) * u64::from(n),
                    ..base
                })?;
            }
        }
        return Ok(());
    }
    let mut flags = base.flags;
    if transpose_a {
        flags = flags.union(CommandFlags::TRANSPOSE_A);
    }
    if transpose_b {
        flags = flags.union(CommandFlags::TRANSPOSE_B);
    }
    let fused = matches!(bias, Some((_, true)));
    emit(&CommandDescriptor {
        opcode: if fused {
            Opcode::GEMM_BIAS_RELU_F32
        } else {
            Opcode::GEMM_F32
        },
        flags,
        src0: a.addr.0,
        src1: b.addr.0,
        src2: if let (true, Some((bias, _))) = (fused, bias) {
            bias
        } else {
            0
        },
        dst: out.addr.0,
        m,
        n,
        k: dim(k)?,
        ..base
    })?;
    match bias {
        Some((bias, false)) => emit(&row_op(Opcode::BIAS_ADD_F32, out.addr.0, bias)),
        _ => Ok(()),
    }
}

/// Element-wise binary op: flat when no operand broadcasts, else the 3-D
/// broadcast form, one command per index of the outer coalesced axes.
fn binary(
    op: &OpDesc<'_>,
    base: CommandDescriptor,
    emit: &mut impl FnMut(&CommandDescriptor) -> Result<(), Error>,
) -> Result<(), Error> {
    let (a, b, out) = (op.inputs[0], op.inputs[1], op.output);
    let axes = broadcast::plan(a.shape.dims(), b.shape.dims(), out.shape.dims());
    if axes.is_empty() {
        return emit(&CommandDescriptor {
            src0: a.addr.0,
            src1: b.addr.0,
            dst: out.addr.0,
            len: out.shape.elements().ok_or(Error::InvalidArgument)?,
            ..base
        });
    }
    broadcast::for_each_piece(&axes, |piece: Piece| {
        let [m, n, k] = piece.inner;
        let mut flags = base.flags;
        for (on, flag) in [
            (m.bcast0, SRC0_BCAST_M),
            (n.bcast0, SRC0_BCAST_N),
            (k.bcast0, SRC0_BCAST_K),
            (m.bcast1, SRC1_BCAST_M),
            (n.bcast1, SRC1_BCAST_N),
            (k.bcast1, SRC1_BCAST_K),
        ] {
            if on {
                flags = flags.union(flag);
            }
        }
        let at = |addr: u64, elements: u64| {
            elements
                .checked_mul(F32)
                .and_then(|bytes| addr.checked_add(bytes))
                .ok_or(Error::InvalidArgument)
        };
        let [off0, off1, off_out] = piece.offsets;
        emit(&CommandDescriptor {
            flags,
            src0: at(a.addr.0, off0)?,
            src1: at(b.addr.0, off1)?,
            dst: at(out.addr.0, off_out)?,
            len: m.extent * n.extent * k.extent,
            m: dim(m.extent)?,
            n: dim(n.extent)?,
            k: dim(k.extent)?,
            ..base
        })
    })
}
