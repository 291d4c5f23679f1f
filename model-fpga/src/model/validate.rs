//! Command validation, in the documented order: opcode, features, flags,
//! reserved and unused fields, dimensions, address ranges (with overflow),
//! alignment, then overlap. The first failure is the completion's status.

use core::ops::Range;

use tensorplug_abi::device::{CommandDescriptor, CommandFlags, CompletionStatus, Features, Opcode};

use crate::kernels::records;
use crate::kernels::{BinaryOp, GemmSpec, RowReduce, UnaryOp, WindowOp, WindowSpec};
use tensorplug_core::accelerator::{Activation, DType, OpKind, Shape};

mod index;
mod int8;
mod layout;
mod window;

/// `src0` is broadcast along `m` (binary element-wise 3-D form).
pub const SRC0_BCAST_M: u16 = CommandFlags::SRC0_BCAST_M.0;
/// `src0` is broadcast along `n`.
pub const SRC0_BCAST_N: u16 = CommandFlags::SRC0_BCAST_N.0;
/// `src0` is broadcast along `k`.
pub const SRC0_BCAST_K: u16 = CommandFlags::SRC0_BCAST_K.0;
/// `src1` is broadcast along `m`.
pub const SRC1_BCAST_M: u16 = CommandFlags::SRC1_BCAST_M.0;
/// `src1` is broadcast along `n`.
pub const SRC1_BCAST_N: u16 = CommandFlags::SRC1_BCAST_N.0;
/// `src1` is broadcast along `k`.
pub const SRC1_BCAST_K: u16 = CommandFlags::SRC1_BCAST_K.0;
const BCAST_MASK: u16 = CommandFlags::BCAST_MASK.0;

/// Byte offsets of the descriptor fields, the `detail` of argument errors.
pub(crate) mod field {
    pub(crate) const FLAGS: u32 = 2;
    pub(crate) const SRC0: u32 = 8;
    pub(crate) const SRC1: u32 = 16;
    pub(crate) const SRC2: u32 = 24;
    pub(crate) const DST: u32 = 32;
    pub(crate) const LEN: u32 = 40;
    pub(crate) const M: u32 = 48;
    pub(crate) const N: u32 = 52;
    pub(crate) const K: u32 = 56;
    pub(crate) const IMM: u32 = 60;
}

/// Why a command was refused: its completion status and detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) status: CompletionStatus,
    pub(crate) detail: u32,
}

const fn reject(status: CompletionStatus, detail: u32) -> Rejection {
    Rejection { status, detail }
}
const fn invalid(field: u32) -> Rejection {
    reject(CompletionStatus::INVALID_ARGUMENT, field)
}

/// Extents of a binary op's 3-D form: output `[m][n][k]`, and for each
/// source whether it is broadcast along each axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bcast3 {
    pub(crate) dims: [usize; 3],
    pub(crate) src0: [bool; 3],
    pub(crate) src1: [bool; 3],
}

impl Bcast3 {
    /// Element extents of source `bcast`.
    pub(crate) fn extents(&self, bcast: [bool; 3]) -> [usize; 3] {
        let mut e = self.dims;
        for (d, b) in e.iter_mut().zip(bcast) {
            if b {
                *d = 1;
            }
        }
        e
    }
}

/// A validated command: byte ranges in device memory, host bus addresses.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Work {
    Nop,
    CopyH2D {
        host: u64,
        dst: Range<usize>,
    },
    CopyD2H {
        src: Range<usize>,
        host: u64,
    },
    CopyD2D {
        src: Range<usize>,
        dst: Range<usize>,
    },
    Fill {
        dst: Range<usize>,
        pattern: [u8; 4],
    },
    Gemm {
        spec: GemmSpec,
        a: Range<usize>,
        b: Range<usize>,
        bias: Option<Range<usize>>,
        out: Range<usize>,
    },
    Binary {
        op: BinaryOp,
        /// Its parameter (`src2`'s low word; 0.0 for an op without one).
        param: f32,
        a: Range<usize>,
        b: Range<usize>,
        out: Range<usize>,
        shape: Option<Bcast3>,
    },
    Unary {
        op: UnaryOp,
        /// Its parameter (`src2`'s low word; 0.0 for an op without one).
        param: f32,
        x: Range<usize>,
        out: Range<usize>,
    },
    Transpose {
        dims: [usize; 4],
        perm: [usize; 4],
        x: Range<usize>,
        out: Range<usize>,
    },
    BiasAdd {
        x: Range<usize>,
        bias: Range<usize>,
        out: Range<usize>,
    },
    Softmax {
        x: Range<usize>,
        out: Range<usize>,
        row: usize,
        /// `LOG_SOFTMAX_F32`.
        log: bool,
    },
    /// `REDUCE_SUM_F32` (`op` `None`) and the `REDUCTIONS` commands.
    Reduce {
        op: Option<RowReduce>,
        x: Range<usize>,
        out: Range<usize>,
        row: usize,
    },
    Window {
        op: WindowOp,
        spec: WindowSpec,
        src0: Range<usize>,
        src1: Option<Range<usize>>,
        dst: Range<usize>,
        /// `CONV2D_F32`'s epilogue: the bias (`src2`) and the activation.
        epilogue: Option<(Range<usize>, Activation)>,
    },
    /// An int8 command (`INT8`), or an index one (`INDEX`): the catalogue
    /// op it runs.
    Typed(TypedWork),
    /// `CAST`: `src` of `from` into `dst` of `to`.
    Cast {
        from: DType,
        to: DType,
        src: Range<usize>,
        dst: Range<usize>,
    },
    /// `ARG_MAX_F32`, `ARG_MIN_F32`.
    Arg {
        min: bool,
        out_type: DType,
        x: Range<usize>,
        out: Range<usize>,
        row: usize,
    },
    /// `RANDOM_UNIFORM_F32`.
    Random {
        key: u64,
        counter: [u64; 2],
        out: Range<usize>,
    },
    /// `SELECT`.
    Select {
        cond: Range<usize>,
        a: Range<usize>,
        b: Range<usize>,
        out: Range<usize>,
    },
    /// `RECORD`: a record's code (of a kernel of this model), its extents
    /// and bits, its inputs (empty past its count) and output.
    Record {
        code: u16,
        args: records::DeviceArgs,
        inputs: [Range<usize>; 3],
        out: Range<usize>,
    },
}

/// An int8 command: the op, up to three inputs (range, dtype, shape) and
/// the output.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TypedWork {
    pub(crate) kind: OpKind,
    pub(crate) inputs: [(Range<usize>, DType, Shape); 3],
    pub(crate) count: usize,
    pub(crate) out: (Range<usize>, DType, Shape),
}

impl Work {
    /// `(host-bus bytes, device-memory bytes, flops)` for the timing model.
    pub(crate) fn cost(&self) -> (u64, u64, u64) {
        let n = |r: &Range<usize>| r.len() as u64;
        match self {
            Work::Nop => (0, 0, 0),
            Work::CopyH2D { dst, .. } => (n(dst), n(dst), 0),
            Work::CopyD2H { src, .. } => (n(src), n(src), 0),
            Work::CopyD2D { src, dst } => (0, n(src) + n(dst), 0),
            Work::Fill { dst, .. } => (0, n(dst), 0),
            Work::Gemm {
                spec,
                a,
                b,
                bias,
                out,
            } => {
                let flops = [spec.m, spec.n, spec.k]
                    .iter()
                    .fold(2u64, |acc, &d| acc.saturating_mul(d as u64));
                (0, n(a) + n(b) + bias.as_ref().map_or(0, n) + n(out), flops)
            }
            Work::Binary { a, b, out, .. } => (0, n(a) + n(b) + n(out), n(out) / 4),
            Work::Unary { x, out, .. } => (0, n(x) + n(out), n(out) / 4),
            Work::Transpose { x, out, .. } => (0, n(x) + n(out), 0),
            Work::BiasAdd { x, bias, out } => (0, n(x) + n(bias) + n(out), n(out) / 4),
            // exp, subtract, sum, divide per element.
            Work::Softmax { x, out, .. } => (0, n(x) + n(out), 4 * n(out) / 4),
            Work::Reduce { x, out, .. } => (0, n(x) + n(out), n(x) / 4),
            Work::Window {
                op,
                spec,
                src0,
                src1,
                dst,
                epilogue,
            } => {
                let bias = epilogue.as_ref().map_or(0, |(b, _)| n(b));
                let bytes = n(src0) + src1.as_ref().map_or(0, n) + bias + n(dst);
                (0, bytes, spec.flops(*op))
            }
            Work::Typed(w) => {
                let bytes = w.inputs[..w.count].iter().map(|(r, ..)| n(r)).sum::<u64>();
                let macs = w
                    .kind
                    .window()
                    .map_or(1, |win| u64::from(win.size[0]) * u64::from(win.size[1]));
                (0, bytes + n(&w.out.0), n(&w.out.0).saturating_mul(2 * macs))
            }
            Work::Cast { src, dst, .. } => (0, n(src) + n(dst), 0),
            Work::Arg { x, out, .. } => (0, n(x) + n(out), n(x) / 4),
            Work::Random { out, .. } => (0, n(out), n(out) * 10),
            Work::Select { a, out, .. } => (0, 3 * n(a) + n(out), 0),
            Work::Record { inputs, out, .. } => {
                let bytes = inputs.iter().map(n).sum::<u64>() + n(out);
                (0, bytes, n(out) / 4)
            }
        }
    }
}

/// Which descriptor fields an opcode uses (the rest must be 0).
#[derive(Clone, Copy)]
struct Uses(u16);
impl Uses {
    const SRC0: u16 = 1;
    const SRC1: u16 = 2;
    const SRC2: u16 = 4;
    const DST: u16 = 8;
    const LEN: u16 = 16;
    const MNK: u16 = 32 | 64 | 128;
    const MN: u16 = 32 | 64;
    const N: u16 = 64;
    const IMM: u16 = 256;
    const fn has(self, bit: u16) -> bool {
        self.0 & bit == bit
    }
}

/// What the opcode needs: feature bit, used fields, extra flags allowed.
fn shape_of(op: Opcode) -> Option<(Features, Uses, u16)> {
    let t = CommandFlags::TRANSPOSE_A.0 | CommandFlags::TRANSPOSE_B.0;
    let binary = Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::LEN | Uses::MNK);
    let unary = Uses(Uses::SRC0 | Uses::DST | Uses::LEN);
    let every_field =
        Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM);
    Some(match op {
        Opcode::NOP => (Features(0), Uses(0), 0),
        Opcode::COPY_H2D | Opcode::COPY_D2H => {
            (Features::DMA, Uses(Uses::SRC0 | Uses::DST | Uses::LEN), 0)
        }
        Opcode::COPY_D2D => (Features(0), Uses(Uses::SRC0 | Uses::DST | Uses::LEN), 0),
        Opcode::FILL => (Features(0), Uses(Uses::DST | Uses::LEN | Uses::IMM), 0),
        Opcode::GEMM_F32 => (
            Features::GEMM,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::MNK),
            t,
        ),
        Opcode::GEMM_BIAS_RELU_F32 | Opcode::GEMM_BIAS_F32 => (
            Features::GEMM,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::MNK),
            t,
        ),
        // `src2` is the op's parameter (ABI 1.8), checked by `param`.
        Opcode::UNARY => (
            Features::CATALOGUE,
            Uses(unary.0 | Uses::IMM | Uses::SRC2),
            0,
        ),
        Opcode::BINARY => (
            Features::CATALOGUE,
            Uses(binary.0 | Uses::IMM | Uses::SRC2),
            BCAST_MASK,
        ),
        Opcode::LOG_SOFTMAX_F32 => (Features::MATH, Uses(Uses::SRC0 | Uses::DST | Uses::MN), 0),
        Opcode::CONV2D_F32 => (
            Features::WINDOW,
            Uses(
                Uses::SRC0
                    | Uses::SRC1
                    | Uses::SRC2
                    | Uses::DST
                    | Uses::LEN
                    | Uses::MNK
                    | Uses::IMM,
            ),
            CommandFlags::EPILOGUE_MASK.0,
        ),
        Opcode::DEPTHWISE_CONV2D_F32 => (
            Features::WINDOW,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM),
            0,
        ),
        Opcode::CONV2D_BACKPROP_INPUT_F32
        | Opcode::CONV2D_BACKPROP_FILTER_F32
        | Opcode::MAX_POOL_GRAD_F32 => (
            Features::WINDOW_GRAD,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM),
            0,
        ),
        Opcode::AVG_POOL_GRAD_F32 => (
            Features::WINDOW_GRAD,
            Uses(Uses::SRC0 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM),
            0,
        ),
        Opcode::TRANSPOSE_F32 => (
            Features::LAYOUT,
            Uses(Uses::SRC0 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM),
            0,
        ),
        Opcode::MAX_POOL_F32 | Opcode::AVG_POOL_F32 => (
            Features::WINDOW,
            Uses(Uses::SRC0 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM),
            0,
        ),
        Opcode::BIAS_ADD_F32 => (
            Features::ELEMENTWISE,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::MN),
            0,
        ),
        Opcode::SOFTMAX_F32 | Opcode::REDUCE_SUM_F32 => (
            Features::ROW_REDUCTIONS,
            Uses(Uses::SRC0 | Uses::DST | Uses::MN),
            0,
        ),
        Opcode::CONV2D_I8 | Opcode::DEPTHWISE_CONV2D_I8 => (Features::INT8, every_field, 0),
        Opcode::MAX_POOL_I8 | Opcode::AVG_POOL_I8 => {
            (Features::INT8, Uses(every_field.0 & !Uses::SRC1), 0)
        }
        Opcode::GEMM_I8 => (
            Features::INT8,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::MNK),
            CommandFlags::TRANSPOSE_B.0,
        ),
        // `n`: `src1`'s broadcast length (ABI 1.9; 0 for `len`).
        Opcode::ADD_I8 => (
            Features::INT8,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::LEN | Uses::N),
            0,
        ),
        Opcode::ARG_MAX_F32 | Opcode::ARG_MIN_F32 => (
            Features::REDUCTIONS,
            Uses(Uses::SRC0 | Uses::DST | Uses::MN | Uses::IMM),
            0,
        ),
        Opcode::REDUCE_MAX_F32 | Opcode::REDUCE_MIN_F32 | Opcode::REDUCE_PROD_F32 => (
            Features::REDUCTIONS,
            Uses(Uses::SRC0 | Uses::DST | Uses::MN),
            0,
        ),
        Opcode::GATHER => (
            Features::INDEX,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::LEN | Uses::MNK | Uses::IMM),
            0,
        ),
        Opcode::SEGMENT_SUM => (
            Features::INDEX,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::LEN | Uses::N | 128 | Uses::IMM),
            0,
        ),
        Opcode::CAST => (
            Features::TYPES,
            Uses(Uses::SRC0 | Uses::DST | Uses::LEN | Uses::IMM),
            0,
        ),
        Opcode::RANDOM_UNIFORM_F32 => (
            Features::RANDOM,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::LEN),
            0,
        ),
        Opcode::SELECT => (
            Features::TYPES,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::LEN),
            0,
        ),
        Opcode::QUANTIZE_I8 | Opcode::DEQUANTIZE_I8 => (
            Features::INT8,
            Uses(Uses::SRC0 | Uses::SRC2 | Uses::DST | Uses::LEN | Uses::N),
            0,
        ),
        Opcode::SOFTMAX_I8 => (
            Features::INT8_ACTIVATIONS,
            Uses(Uses::SRC0 | Uses::SRC2 | Uses::DST | Uses::LEN | Uses::N),
            0,
        ),
        Opcode::LOOKUP_I8 => (
            Features::INT8_ACTIVATIONS,
            Uses(Uses::SRC0 | Uses::SRC2 | Uses::DST | Uses::LEN),
            0,
        ),
        Opcode::MUL_I8 => (
            Features::INT8_MUL,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::SRC2 | Uses::DST | Uses::LEN | Uses::N),
            0,
        ),
        Opcode::CONCAT => (
            Features::CONCAT,
            Uses(Uses::SRC0 | Uses::SRC1 | Uses::DST | Uses::MNK),
            0,
        ),
        Opcode::RECORD => (Features::RECORDS, every_field, 0),
        // The per-op element-wise opcodes of ABI 1.0–1.2.
        op => {
            let e = op.per_op_elementwise()?;
            match UnaryOp::from_code(e.code) {
                Some(_) => (e.feature, unary, 0),
                None => (e.feature, binary, BCAST_MASK),
            }
        }
    })
}

/// Validates `cmd` against a device with `features` and `mem_len` bytes of memory.
pub(crate) fn validate(
    cmd: &CommandDescriptor,
    features: Features,
    mem_len: usize,
) -> Result<Work, Rejection> {
    let Some((needs, uses, extra_flags)) = shape_of(cmd.opcode) else {
        return Err(reject(
            CompletionStatus::INVALID_OPCODE,
            u32::from(cmd.opcode.0),
        ));
    };
    if features.0 & needs.0 != needs.0 {
        return Err(reject(CompletionStatus::UNSUPPORTED, needs.0));
    }
    let base_flags = CommandFlags::IRQ.0 | CommandFlags::NO_EVENTS.0;
    let flat_binary =
        uses.has(Uses::MNK) && extra_flags == BCAST_MASK && cmd.m == 0 && cmd.n == 0 && cmd.k == 0;
    let allowed = if flat_binary {
        base_flags
    } else {
        base_flags | extra_flags
    };
    if cmd.flags.0 & !allowed != 0 {
        return Err(invalid(field::FLAGS));
    }
    check_unused(
        cmd,
        uses,
        needs == Features::INT8
            || needs == Features::INT8_ACTIVATIONS
            || needs == Features::INT8_MUL
            || cmd.opcode == Opcode::CAST,
    )?;
    let ctx = Ctx { cmd, mem_len };
    match cmd.opcode {
        Opcode::NOP => Ok(Work::Nop),
        Opcode::COPY_H2D => {
            let len = ctx.nonzero_len()?;
            Ok(Work::CopyH2D {
                host: cmd.src0,
                dst: ctx.range(field::DST, len)?,
            })
        }
        Opcode::COPY_D2H => {
            let len = ctx.nonzero_len()?;
            Ok(Work::CopyD2H {
                src: ctx.range(field::SRC0, len)?,
                host: cmd.dst,
            })
        }
        Opcode::COPY_D2D => {
            let len = ctx.nonzero_len()?;
            let src = ctx.range(field::SRC0, len)?;
            Ok(Work::CopyD2D {
                src,
                dst: ctx.range(field::DST, len)?,
            })
        }
        Opcode::FILL => {
            let len = ctx.nonzero_len()?;
            Ok(Work::Fill {
                dst: ctx.range(field::DST, len)?,
                pattern: cmd.imm.to_le_bytes(),
            })
        }
        Opcode::GEMM_F32 | Opcode::GEMM_BIAS_RELU_F32 | Opcode::GEMM_BIAS_F32 => ctx.gemm(),
        Opcode::BIAS_ADD_F32
        | Opcode::SOFTMAX_F32
        | Opcode::LOG_SOFTMAX_F32
        | Opcode::REDUCE_SUM_F32
        | Opcode::REDUCE_MAX_F32
        | Opcode::REDUCE_MIN_F32
        | Opcode::REDUCE_PROD_F32 => ctx.rows(),
        Opcode::GATHER | Opcode::SEGMENT_SUM => ctx.index(),
        Opcode::CONCAT => ctx.concat(),
        Opcode::RECORD => ctx.record(),
        Opcode::CAST => ctx.cast(),
        Opcode::RANDOM_UNIFORM_F32 => {
            let len = ctx.nonzero_len()?;
            let out = ctx.f32_range(field::DST, len)?;
            ctx.aligned(&[field::DST])?;
            let c = ctx.cmd;
            Ok(Work::Random {
                key: c.src0,
                counter: [c.src1, c.src2],
                out,
            })
        }
        Opcode::ARG_MAX_F32 | Opcode::ARG_MIN_F32 => {
            let c = ctx.cmd;
            ctx.dims(&[(c.m, field::M), (c.n, field::N)])?;
            let out_type = match u8::try_from(c.imm).ok().and_then(DType::from_code) {
                Some(d @ (DType::I32 | DType::I64)) => d,
                _ => return Err(reject(CompletionStatus::UNSUPPORTED, c.imm)),
            };
            let (m, n) = (u64::from(c.m), u64::from(c.n));
            let x = ctx.f32_range(field::SRC0, m * n)?;
            let out = ctx.range(field::DST, m * out_type.size() as u64)?;
            ctx.aligned(&[field::SRC0, field::DST])?;
            in_place_or_disjoint(&x, &out, false)?;
            let min = c.opcode == Opcode::ARG_MIN_F32;
            Ok(Work::Arg {
                min,
                out_type,
                x,
                out,
                row: c.n as usize,
            })
        }
        Opcode::SELECT => {
            let len = ctx.nonzero_len()?;
            let a = ctx.f32_range(field::SRC0, len)?;
            let b = ctx.f32_range(field::SRC1, len)?;
            let cond = ctx.f32_range(field::SRC2, len)?;
            let out = ctx.f32_range(field::DST, len)?;
            ctx.aligned(&[field::SRC0, field::SRC1, field::SRC2, field::DST])?;
            for src in [&a, &b, &cond] {
                in_place_or_disjoint(src, &out, true)?;
            }
            Ok(Work::Select { cond, a, b, out })
        }
        Opcode::CONV2D_F32
        | Opcode::DEPTHWISE_CONV2D_F32
        | Opcode::MAX_POOL_F32
        | Opcode::AVG_POOL_F32
        | Opcode::CONV2D_BACKPROP_INPUT_F32
        | Opcode::CONV2D_BACKPROP_FILTER_F32
        | Opcode::MAX_POOL_GRAD_F32
        | Opcode::AVG_POOL_GRAD_F32 => ctx.window(),
        Opcode::TRANSPOSE_F32 => ctx.transpose(),
        Opcode::CONV2D_I8
        | Opcode::DEPTHWISE_CONV2D_I8
        | Opcode::MAX_POOL_I8
        | Opcode::AVG_POOL_I8
        | Opcode::GEMM_I8
        | Opcode::ADD_I8
        | Opcode::QUANTIZE_I8
        | Opcode::DEQUANTIZE_I8
        | Opcode::SOFTMAX_I8
        | Opcode::LOOKUP_I8
        | Opcode::MUL_I8 => ctx.int8(),
        // `UNARY`, `BINARY` and the per-op element-wise opcodes.
        op => {
            let (code, unary) = match op.per_op_elementwise() {
                Some(e) => (e.code, UnaryOp::from_code(e.code).is_some()),
                None => (u16::try_from(cmd.imm).unwrap_or(0), op == Opcode::UNARY),
            };
            let work = match unary {
                true => UnaryOp::from_code(code).map(|op| ctx.unary(op)),
                false => BinaryOp::from_code(code).map(|op| ctx.binary(op)),
            };
            work.unwrap_or(Err(reject(CompletionStatus::UNSUPPORTED, cmd.imm)))
        }
    }
}

/// `dtype` must be f32 (0 or its code 1), or int8 (4) for the int8
/// commands (`CAST` checks its own, `typed`); then every unused field, in
/// offset order, must be 0.
fn check_unused(cmd: &CommandDescriptor, uses: Uses, typed: bool) -> Result<(), Rejection> {
    let dtype_ok = match typed {
        true => cmd.dtype == DType::I8 as u8 || cmd.opcode == Opcode::CAST,
        false => cmd.dtype <= 1,
    } || (cmd.opcode == Opcode::CONCAT && cmd.dtype == DType::I8 as u8);
    if !dtype_ok {
        return Err(reject(CompletionStatus::UNSUPPORTED, u32::from(cmd.dtype)));
    }
    let fields = [
        (Uses::SRC0, cmd.src0 != 0, field::SRC0),
        (Uses::SRC1, cmd.src1 != 0, field::SRC1),
        (Uses::SRC2, cmd.src2 != 0, field::SRC2),
        (Uses::DST, cmd.dst != 0, field::DST),
        (Uses::LEN, cmd.len != 0, field::LEN),
        (32, cmd.m != 0, field::M),
        (64, cmd.n != 0, field::N),
        (128, cmd.k != 0, field::K),
        (Uses::IMM, cmd.imm != 0, field::IMM),
    ];
    for (bit, set, offset) in fields {
        if set && !uses.has(bit) {
            return Err(invalid(offset));
        }
    }
    Ok(())
}

/// Overlap rule: `dst` may equal `src` exactly when in place is allowed,
/// else the two ranges must be disjoint.
fn in_place_or_disjoint(
    src: &Range<usize>,
    dst: &Range<usize>,
    in_place_ok: bool,
) -> Result<(), Rejection> {
    let disjoint = src.end <= dst.start || dst.end <= src.start;
    if disjoint || (in_place_ok && src == dst) {
        Ok(())
    } else {
        Err(invalid(field::DST))
    }
}

struct Ctx<'a> {
    cmd: &'a CommandDescriptor,
    mem_len: usize,
}

impl Ctx<'_> {
    fn addr(&self, f: u32) -> u64 {
        match f {
            field::SRC0 => self.cmd.src0,
            field::SRC1 => self.cmd.src1,
            field::SRC2 => self.cmd.src2,
            _ => self.cmd.dst,
        }
    }

    fn nonzero_len(&self) -> Result<u64, Rejection> {
        if self.cmd.len == 0 {
            Err(invalid(field::LEN))
        } else {
            Ok(self.cmd.len)
        }
    }

    /// `bytes` bytes at the address in field `f`, inside device memory.
    fn range(&self, f: u32, bytes: u64) -> Result<Range<usize>, Rejection> {
        let oor = reject(CompletionStatus::OUT_OF_RANGE, f);
        let start = self.addr(f);
        let end = start.checked_add(bytes).ok_or(oor)?;
        if end > self.mem_len as u64 {
            return Err(oor);
        }
        // Both fit in `mem_len`, a usize.
        Ok(start as usize..end as usize)
    }

    /// `elements` f32s at the address in field `f`.
    fn f32_range(&self, f: u32, elements: u64) -> Result<Range<usize>, Rejection> {
        let bytes = elements
            .checked_mul(4)
            .ok_or(reject(CompletionStatus::OUT_OF_RANGE, f))?;
        self.range(f, bytes)
    }

    fn aligned(&self, fields: &[u32]) -> Result<(), Rejection> {
        match fields.iter().find(|&&f| !self.addr(f).is_multiple_of(4)) {
            Some(&f) => Err(reject(CompletionStatus::MISALIGNED, f)),
            None => Ok(()),
        }
    }

    fn dims(&self, checks: &[(u32, u32)]) -> Result<(), Rejection> {
        match checks.iter().find(|(v, _)| *v == 0) {
            Some(&(_, f)) => Err(invalid(f)),
            None => Ok(()),
        }
    }

    fn gemm(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        self.dims(&[(c.m, field::M), (c.n, field::N), (c.k, field::K)])?;
        let (m, n, k) = (u64::from(c.m), u64::from(c.n), u64::from(c.k));
        let a = self.f32_range(field::SRC0, m * k)?;
        let b = self.f32_range(field::SRC1, k * n)?;
        let with_bias = c.opcode != Opcode::GEMM_F32;
        let bias = if with_bias {
            Some(self.f32_range(field::SRC2, n)?)
        } else {
            None
        };
        let out = self.f32_range(field::DST, m * n)?;
        let fields: &[u32] = if with_bias {
            &[field::SRC0, field::SRC1, field::SRC2, field::DST]
        } else {
            &[field::SRC0, field::SRC1, field::DST]
        };
        self.aligned(fields)?;
        in_place_or_disjoint(&a, &out, false)?;
        in_place_or_disjoint(&b, &out, false)?;
        if let Some(bias) = &bias {
            in_place_or_disjoint(bias, &out, false)?;
        }
        let spec = GemmSpec {
            m: c.m as usize,
            n: c.n as usize,
            k: c.k as usize,
            transpose_a: c.flags.contains(CommandFlags::TRANSPOSE_A),
            transpose_b: c.flags.contains(CommandFlags::TRANSPOSE_B),
            relu: c.opcode == Opcode::GEMM_BIAS_RELU_F32,
        };
        Ok(Work::Gemm {
            spec,
            a,
            b,
            bias,
            out,
        })
    }

    fn rows(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        self.dims(&[(c.m, field::M), (c.n, field::N)])?;
        let (m, n) = (u64::from(c.m), u64::from(c.n));
        let x = self.f32_range(field::SRC0, m * n)?;
        let row = c.n as usize;
        match c.opcode {
            Opcode::BIAS_ADD_F32 => {
                let bias = self.f32_range(field::SRC1, n)?;
                let out = self.f32_range(field::DST, m * n)?;
                self.aligned(&[field::SRC0, field::SRC1, field::DST])?;
                in_place_or_disjoint(&x, &out, true)?;
                in_place_or_disjoint(&bias, &out, false)?;
                Ok(Work::BiasAdd { x, bias, out })
            }
            Opcode::SOFTMAX_F32 | Opcode::LOG_SOFTMAX_F32 => {
                let out = self.f32_range(field::DST, m * n)?;
                self.aligned(&[field::SRC0, field::DST])?;
                in_place_or_disjoint(&x, &out, true)?;
                let log = c.opcode == Opcode::LOG_SOFTMAX_F32;
                Ok(Work::Softmax { x, out, row, log })
            }
            _ => {
                let out = self.f32_range(field::DST, m)?;
                self.aligned(&[field::SRC0, field::DST])?;
                in_place_or_disjoint(&x, &out, false)?;
                let op = match c.opcode {
                    Opcode::REDUCE_MAX_F32 => Some(RowReduce::Max),
                    Opcode::REDUCE_MIN_F32 => Some(RowReduce::Min),
                    Opcode::REDUCE_PROD_F32 => Some(RowReduce::Prod),
                    _ => None,
                };
                Ok(Work::Reduce { op, x, out, row })
            }
        }
    }

    /// `RECORD`, in the documented order: the record's kernel by `imm`'s
    /// low half (`UNSUPPORTED` for one this model lacks), its sizes for
    /// `m`, `n`, `k` and `imm`'s high half (`INVALID_ARGUMENT` `imm` if
    /// refused), a source past the op's inputs 0, then the operands'
    /// ranges, their alignment and the output's disjointness, each in
    /// field order.
    fn record(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let (code, bits) = (c.imm as u16, (c.imm >> 16) as u16);
        let kernel = records::record(code).ok_or(reject(CompletionStatus::UNSUPPORTED, c.imm))?;
        let len = u32::try_from(c.len).map_err(|_| invalid(field::LEN))?;
        let args = records::DeviceArgs {
            dims: [c.m, c.n, c.k, len],
            bits,
        };
        let sizes = (kernel.sizes)(args).ok_or(invalid(field::IMM))?;
        let sources = [field::SRC0, field::SRC1, field::SRC2];
        let used = |i: usize| sizes.inputs[i] > 0;
        if let Some(i) = (0..3).find(|&i| !used(i) && self.addr(sources[i]) != 0) {
            return Err(invalid(sources[i]));
        }
        let mut inputs = [0..0, 0..0, 0..0];
        for i in (0..3).filter(|&i| used(i)) {
            inputs[i] = self.f32_range(sources[i], sizes.inputs[i])?;
        }
        let out = self.f32_range(field::DST, sizes.output)?;
        for i in (0..3).filter(|&i| used(i)) {
            self.aligned(&[sources[i]])?;
        }
        self.aligned(&[field::DST])?;
        for input in inputs.iter().filter(|r| !r.is_empty()) {
            in_place_or_disjoint(input, &out, false)?;
        }
        Ok(Work::Record {
            code,
            args,
            inputs,
            out,
        })
    }

    fn unary(&self, op: UnaryOp) -> Result<Work, Rejection> {
        let len = self.nonzero_len()?;
        let x = self.f32_range(field::SRC0, len)?;
        let out = self.f32_range(field::DST, len)?;
        self.aligned(&[field::SRC0, field::DST])?;
        in_place_or_disjoint(&x, &out, true)?;
        let param = self.param(op.takes_param())?;
        Ok(Work::Unary { op, param, x, out })
    }

    /// `UNARY`'s and `BINARY`'s `src2` (ABI 1.8): an op's parameter, an
    /// f32 in its low word; 0 for an op without one.
    fn param(&self, takes: bool) -> Result<f32, Rejection> {
        let src2 = self.cmd.src2;
        match u32::try_from(src2) {
            Ok(bits) if takes => Ok(f32::from_bits(bits)),
            _ if src2 == 0 => Ok(0.0),
            _ => Err(invalid(field::SRC2)),
        }
    }

    fn binary(&self, op: BinaryOp) -> Result<Work, Rejection> {
        let c = self.cmd;
        let len = self.nonzero_len()?;
        let shape = if c.m == 0 && c.n == 0 && c.k == 0 {
            None
        } else {
            self.dims(&[(c.m, field::M), (c.n, field::N), (c.k, field::K)])?;
            let total = u64::from(c.m) * u64::from(c.n);
            if total.checked_mul(u64::from(c.k)) != Some(len) {
                return Err(invalid(field::LEN));
            }
            let f = c.flags.0;
            let bit = |b: u16| f & b != 0;
            Some(Bcast3 {
                dims: [c.m as usize, c.n as usize, c.k as usize],
                src0: [bit(SRC0_BCAST_M), bit(SRC0_BCAST_N), bit(SRC0_BCAST_K)],
                src1: [bit(SRC1_BCAST_M), bit(SRC1_BCAST_N), bit(SRC1_BCAST_K)],
            })
        };
        let elems = |bcast: Option<[bool; 3]>| -> u64 {
            match (shape, bcast) {
                (Some(s), Some(b)) => s.extents(b).iter().map(|&d| d as u64).product(),
                _ => len,
            }
        };
        let a = self.f32_range(field::SRC0, elems(shape.map(|s| s.src0)))?;
        let b = self.f32_range(field::SRC1, elems(shape.map(|s| s.src1)))?;
        let out = self.f32_range(field::DST, len)?;
        self.aligned(&[field::SRC0, field::SRC1, field::DST])?;
        in_place_or_disjoint(&a, &out, true)?;
        in_place_or_disjoint(&b, &out, false)?;
        let param = self.param(op.takes_param())?;
        Ok(Work::Binary {
            param,
            op,
            a,
            b,
            out,
            shape,
        })
    }
}
