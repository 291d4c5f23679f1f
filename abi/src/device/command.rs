//! Command descriptors: what the host writes into the command queue.

use super::le::{put, u16_at, u32_at, u64_at};

/// What a command does. Every `u16` is representable; values this ABI
/// version does not define complete with `CompletionStatus::INVALID_OPCODE`.
///
/// Tensors are dense, row-major f32 (4-byte aligned) in device memory.
/// "elements" counts f32 values; copies and fills count bytes.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Opcode(pub u16);

impl Opcode {
    /// Does nothing but complete (and stamp events): fences, clock sync, tests.
    pub const NOP: Opcode = Opcode(0x01);
    /// `len` bytes from host bus address `src0` to device address `dst` (needs `Features::DMA`).
    pub const COPY_H2D: Opcode = Opcode(0x10);
    /// `len` bytes from device address `src0` to host bus address `dst` (needs `Features::DMA`).
    pub const COPY_D2H: Opcode = Opcode(0x11);
    /// `len` bytes from device address `src0` to device address `dst` (`memmove` semantics).
    pub const COPY_D2D: Opcode = Opcode(0x12);
    /// `len` bytes at `dst`: byte `i` becomes byte `i % 4` of `imm` (little-endian).
    pub const FILL: Opcode = Opcode(0x13);
    /// `dst[m×n] = op(src0)[m×k] · op(src1)[k×n]`; `op` transposes per `CommandFlags::TRANSPOSE_A/B`.
    pub const GEMM_F32: Opcode = Opcode(0x20);
    /// `dst[m×n] = max(0, op(src0) · op(src1) + src2[n])` (fused GEMM, bias-add, ReLU).
    pub const GEMM_BIAS_RELU_F32: Opcode = Opcode(0x21);
    /// `dst[m×n] = op(src0) · op(src1) + src2[n]` (fused GEMM and bias-add).
    pub const GEMM_BIAS_F32: Opcode = Opcode(0x22);
    /// `dst[i] = src0[i] + src1[i]` for `len` elements, or the 3-D broadcast
    /// form (see [`CommandFlags::SRC0_BCAST_M`]); likewise `SUB`, `MUL`, `MAX`.
    pub const ADD_F32: Opcode = Opcode(0x30);
    /// `dst[i] = src0[i] - src1[i]` for `len` elements.
    pub const SUB_F32: Opcode = Opcode(0x31);
    /// `dst[i] = src0[i] * src1[i]` for `len` elements.
    pub const MUL_F32: Opcode = Opcode(0x32);
    /// `dst[i] = max(src0[i], src1[i])` for `len` elements; NaN if either is NaN.
    pub const MAX_F32: Opcode = Opcode(0x33);
    /// `dst[i] = max(0, src0[i])` for `len` elements.
    pub const RELU_F32: Opcode = Opcode(0x34);
    /// `dst[r][c] = src0[r][c] + src1[c]` for `m` rows of `n` columns.
    pub const BIAS_ADD_F32: Opcode = Opcode(0x35);
    /// `dst[i] = src0[i] / src1[i]`, in the forms of `ADD_F32` (needs `Features::MATH`).
    pub const DIV_F32: Opcode = Opcode(0x36);
    /// `dst[i] = src1[i] == 0 ? 0 : src0[i] / src1[i]`, in the forms of `ADD_F32` (`MATH`).
    pub const DIV_NO_NAN_F32: Opcode = Opcode(0x37);
    /// `dst[i] = powf(src0[i], src1[i])`, in the forms of `ADD_F32` (`MATH`).
    pub const POW_F32: Opcode = Opcode(0x38);
    /// `dst[i] = src0[i] · (src1[i] > 0 ? 1 : 0)` (ReLU gradient), in the forms of `ADD_F32` (`MATH`).
    pub const RELU_GRAD_F32: Opcode = Opcode(0x39);
    /// `dst[i] = √src0[i]` for `len` elements (`MATH`).
    pub const SQRT_F32: Opcode = Opcode(0x3A);
    /// `dst[i] = 1 / √src0[i]` for `len` elements (`MATH`).
    pub const RSQRT_F32: Opcode = Opcode(0x3B);
    /// `dst[i] = min(max(src0[i], 0), 6)` for `len` elements (`MATH`).
    pub const RELU6_F32: Opcode = Opcode(0x3C);
    /// `dst[i] = 1 / (1 + e^−src0[i])` for `len` elements (`MATH`).
    pub const SIGMOID_F32: Opcode = Opcode(0x3D);
    /// `dst[i] = tanh(src0[i])` for `len` elements (`MATH`).
    pub const TANH_F32: Opcode = Opcode(0x3E);
    /// `dst[i] = e^src0[i]` for `len` elements (ABI 1.2, `TRANSCENDENTAL`).
    pub const EXP_F32: Opcode = Opcode(0x3F);
    /// Softmax over the last axis: `m` rows of `n` columns, `src0` to `dst`.
    pub const SOFTMAX_F32: Opcode = Opcode(0x40);
    /// `dst[r] = Σ_c src0[r][c]` for `m` rows of `n` columns.
    pub const REDUCE_SUM_F32: Opcode = Opcode(0x41);
    /// `log(softmax)` over the last axis: `m` rows of `n` columns (`MATH`).
    pub const LOG_SOFTMAX_F32: Opcode = Opcode(0x42);
    /// ABI 1.5 (`REDUCTIONS`): `dst[r] = max_c src0[r][c]` for `m` rows of
    /// `n` columns; NaN if any element is, of equal elements the later.
    pub const REDUCE_MAX_F32: Opcode = Opcode(0x43);
    /// ABI 1.5 (`REDUCTIONS`): the row minimum, as `REDUCE_MAX_F32`.
    pub const REDUCE_MIN_F32: Opcode = Opcode(0x44);
    /// ABI 1.5 (`REDUCTIONS`): the row product.
    pub const REDUCE_PROD_F32: Opcode = Opcode(0x45);
    /// ABI 1.5 (`REDUCTIONS`): `dst[r]` = the index of row `r`'s largest
    /// element (`m` rows of `n`), as type `imm` (6 i32, 7 i64): the first
    /// of equal ones; NaN never wins; nothing above `f32::MIN` gives 0.
    pub const ARG_MAX_F32: Opcode = Opcode(0x46);
    /// ABI 1.5 (`REDUCTIONS`): the index of the smallest, as `ARG_MAX_F32`.
    pub const ARG_MIN_F32: Opcode = Opcode(0x47);
    /// NHWC convolution: `src0` x, `src1` filter `[kh,kw,c,k]`, `dst`; the
    /// window fields are packed (see [`WindowFields`](super::WindowFields)) (`WINDOW`).
    /// With [`CommandFlags::BIAS`] (and `RELU` or `RELU6`), `src2` bias `[k]`
    /// is added (and the activation applied) to each result.
    pub const CONV2D_F32: Opcode = Opcode(0x50);
    /// Depthwise NHWC convolution, filter `[kh,kw,c,k]`, `c·k` output channels (`WINDOW`).
    pub const DEPTHWISE_CONV2D_F32: Opcode = Opcode(0x51);
    /// Window maximum over NHWC `src0`, starting from `−FLT_MAX`; NaN and
    /// padding never win (`WINDOW`).
    pub const MAX_POOL_F32: Opcode = Opcode(0x52);
    /// Window mean over NHWC `src0`, over the in-bounds taps (`WINDOW`).
    pub const AVG_POOL_F32: Opcode = Opcode(0x53);
    /// The gradient of `CONV2D_F32` by its input: `src0` dy `[n,oh,ow,k]`,
    /// `src1` filter `[kh,kw,c,k]`, `dst` dx `[n,h,w,c]`; the window fields
    /// are the forward convolution's (`WINDOW_GRAD`).
    pub const CONV2D_BACKPROP_INPUT_F32: Opcode = Opcode(0x58);
    /// The gradient of `CONV2D_F32` by its filter: `src0` x `[n,h,w,c]`,
    /// `src1` dy `[n,oh,ow,k]`, `dst` filter gradient `[kh,kw,c,k]` (`WINDOW_GRAD`).
    pub const CONV2D_BACKPROP_FILTER_F32: Opcode = Opcode(0x59);
    /// The gradient of `MAX_POOL_F32`: `src0` x, `src1` dy, `dst` dx; each dy
    /// goes to its window's first in-bounds tap, or a later one strictly
    /// greater than every tap before it (`WINDOW_GRAD`).
    pub const MAX_POOL_GRAD_F32: Opcode = Opcode(0x5A);
    /// The gradient of `AVG_POOL_F32`: `src0` dy, `dst` dx; each dy times
    /// `1 / taps` is added to its window's in-bounds taps (`WINDOW_GRAD`).
    pub const AVG_POOL_GRAD_F32: Opcode = Opcode(0x5B);
    /// ABI 1.3 (`Features::CATALOGUE`): `dst[i] = op(src0[i])` for `len`
    /// elements, where `op` is the catalogue op of code `imm` (an element-wise
    /// op of one operand, `docs/ops.md`) and the element type is `dtype`.
    /// A code the device's `OPS` registers do not list completes `UNSUPPORTED`.
    /// ABI 1.8: an op with a parameter (`LeakyRelu`'s `alpha`) takes it as
    /// f32 bits in `src2` (bits 63..32 zero); `src2` is 0 for the others.
    pub const UNARY: Opcode = Opcode(0x70);
    /// ABI 1.3 (`CATALOGUE`): `dst = src0 ∘ src1`, where `∘` is the catalogue
    /// op of code `imm` (a broadcasting element-wise op of two operands), in
    /// the forms of `ADD_F32` (flat, or the 3-D broadcast form).
    /// ABI 1.8: an op with a parameter takes it in `src2`, as for `UNARY`.
    pub const BINARY: Opcode = Opcode(0x71);
    /// `dst = transpose(src0)` of a `[m, n, k, len]` tensor: output axis `i`
    /// is input axis `imm` bits `2i+1..2i` (`LAYOUT`).
    pub const TRANSPOSE_F32: Opcode = Opcode(0x60);
    /// ABI 1.4 (`Features::INT8`, `dtype` 4): TFLite's int8 `CONV_2D`:
    /// `src0` x, `src1` filter `[kh,kw,c,k]`, `src2` the quantization block
    /// (`docs/device-numerics.md`), `dst`, the window fields.
    pub const CONV2D_I8: Opcode = Opcode(0x80);
    /// ABI 1.4 (`INT8`): int8 `DEPTHWISE_CONV_2D`, filter `[kh,kw,c,k]`.
    pub const DEPTHWISE_CONV2D_I8: Opcode = Opcode(0x81);
    /// ABI 1.4 (`INT8`): int8 `MAX_POOL_2D`: `src0` x, `src2` the block, `dst`.
    pub const MAX_POOL_I8: Opcode = Opcode(0x82);
    /// ABI 1.4 (`INT8`): int8 `AVERAGE_POOL_2D`, as `MAX_POOL_I8`.
    pub const AVG_POOL_I8: Opcode = Opcode(0x83);
    /// ABI 1.4 (`INT8`): int8 `FULLY_CONNECTED`: `src0` A `[m×k]`, `src1` B
    /// `[k×n]` (`[n×k]` with `TRANSPOSE_B`), `src2` the block, `dst` `[m×n]`.
    pub const GEMM_I8: Opcode = Opcode(0x84);
    /// ABI 1.4 (`INT8`): int8 `ADD` of `len` elements: `src0`, `src1`, `src2`
    /// the block, `dst`. ABI 1.9: `n` is 0 (`src1` has `len` elements) or
    /// the element count of `src1`, which then repeats along `src0`'s rows
    /// of `n` (`dst[i] = src0[i] + src1[i % n]`; `n` divides `len`).
    pub const ADD_I8: Opcode = Opcode(0x85);
    /// ABI 1.4 (`INT8`): f32 `src0` → int8 `dst`, `len` elements, `n` scales
    /// in the block `src2` (1, or the last axis' size).
    pub const QUANTIZE_I8: Opcode = Opcode(0x86);
    /// ABI 1.4 (`INT8`): int8 `src0` → f32 `dst`, as `QUANTIZE_I8`.
    pub const DEQUANTIZE_I8: Opcode = Opcode(0x87);
    /// ABI 1.5 (`INDEX`): `dst[o, i, :] = src0[o, src1[i], :]` for `src0`
    /// `[m, n, k]` of `dtype` (f32), `src1` `len` indices of type `imm` (0
    /// or 6 int32, 7 int64, 8-byte aligned), `dst` `[m, len, k]`. An index outside `0..n` completes `INVALID_ARGUMENT`
    /// (detail: `src1`'s offset) and writes nothing.
    pub const GATHER: Opcode = Opcode(0x90);
    /// ABI 1.5 (`INDEX`): `dst[s, :] = Σ src0[i, :]` over the rows with
    /// `src1[i] = s`, in f32 and row order, 0 for a segment without rows:
    /// `src0` `[len, k]`, `src1` `len` ids of type `imm` (as `GATHER`),
    /// `dst` `[n, k]`. A
    /// negative id drops its row; one ≥ `n` completes `INVALID_ARGUMENT`
    /// (detail: `src1`'s offset) and writes nothing.
    pub const SEGMENT_SUM: Opcode = Opcode(0x91);
    /// ABI 1.5 (`TYPES`): `len` elements of type `dtype` at `src0`
    /// converted to type `imm` at `dst`, as TF's `Cast` (`docs/ops.md`):
    /// f32 to and from i32 and i64, f32 to and from bool, i32 to and from
    /// i64. Another pair completes `UNSUPPORTED` (detail: the pair,
    /// `dtype << 8 | imm`).
    pub const CAST: Opcode = Opcode(0x92);
    /// ABI 1.5 (`TYPES`): `dst[i] = src2[i] ≠ 0 ? src0[i] : src1[i]` for
    /// `len` f32 elements (a NaN condition counts as true).
    pub const SELECT: Opcode = Opcode(0x93);
    /// ABI 1.5 (`RANDOM`): `len` f32 at `dst`, uniform in `[0, 1)`, TF's
    /// `StatelessRandomUniformV2` (Philox-4×32-10) bit for bit; `src0` is
    /// the 64-bit key, `src1` and `src2` the counter's low and high words
    /// (values, not addresses).
    pub const RANDOM_UNIFORM_F32: Opcode = Opcode(0x94);
    /// ABI 1.6 (`INT8_ACTIVATIONS`): int8 `SOFTMAX` over rows of `n`: `src0`
    /// `len` int8 values (`len` a multiple of `n`), `src2` the block
    /// (`docs/device-numerics.md`), `dst` int8 of scale 1/256, zero point −128.
    pub const SOFTMAX_I8: Opcode = Opcode(0x95);
    /// ABI 1.6 (`INT8_ACTIVATIONS`): `dst[i] = table[src0[i] as u8]` for
    /// `len` int8 elements, the 256-byte table after the block's header in
    /// `src2` (`docs/device-numerics.md`): TFLite's int8 `LOGISTIC`, `TANH`
    /// and other ops of one int8 input, as the host tabulates them.
    pub const LOOKUP_I8: Opcode = Opcode(0x96);
    /// ABI 1.6 (`INT8_MUL`): int8 `dst[i] = src0[i] · src1[i % n]` requantized,
    /// `len` elements, `n` (1, the last axis' size or `len`) dividing `len`,
    /// `src2` the block (`docs/device-numerics.md`): TFLite's int8 `MUL`.
    pub const MUL_I8: Opcode = Opcode(0x97);
    /// ABI 1.7 (`CONCAT`): `dst[o, :] = src0[o, :] ++ src1[o, :]` for `m`
    /// rows, `src0` `[m, n]` and `src1` `[m, k]` of `dtype` (f32 or int8),
    /// `dst` `[m, n + k]`: a concatenation, exact. TFLite's `CONCATENATION`
    /// and TF's `ConcatV2` of any axis, two inputs at a time.
    pub const CONCAT: Opcode = Opcode(0x98);
    /// ABI 1.10 (`RECORDS`): an op the catalogue declares as a record, by
    /// its code in `imm`'s low half: `src0`, `src1`, `src2` its inputs (0
    /// past its count), `dst` its output, `m`, `n`, `k` its three extents
    /// and `imm`'s high half its attribute bits (`tensorplug_core`'s
    /// `DeviceArgs`), `dtype` its element type. The record documents each
    /// op's meaning (`docs/ops.md`); a code the device's `OPS` registers do
    /// not list completes `UNSUPPORTED`.
    pub const RECORD: Opcode = Opcode(0x99);

    /// Wraps a raw value (any value is representable).
    pub const fn from_raw(raw: u16) -> Self {
        Self(raw)
    }

    /// `Some(self)` if this ABI version defines the opcode.
    pub const fn known(self) -> Option<Self> {
        match self.name() {
            Some(_) => Some(self),
            None => None,
        }
    }

    /// The constant's name, e.g. `"GEMM_F32"`; `None` if unknown.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::NOP => "NOP",
            Self::COPY_H2D => "COPY_H2D",
            Self::COPY_D2H => "COPY_D2H",
            Self::COPY_D2D => "COPY_D2D",
            Self::FILL => "FILL",
            Self::GEMM_F32 => "GEMM_F32",
            Self::GEMM_BIAS_RELU_F32 => "GEMM_BIAS_RELU_F32",
            Self::GEMM_BIAS_F32 => "GEMM_BIAS_F32",
            Self::ADD_F32 => "ADD_F32",
            Self::SUB_F32 => "SUB_F32",
            Self::MUL_F32 => "MUL_F32",
            Self::MAX_F32 => "MAX_F32",
            Self::RELU_F32 => "RELU_F32",
            Self::BIAS_ADD_F32 => "BIAS_ADD_F32",
            Self::SOFTMAX_F32 => "SOFTMAX_F32",
            Self::REDUCE_SUM_F32 => "REDUCE_SUM_F32",
            Self::DIV_F32 => "DIV_F32",
            Self::DIV_NO_NAN_F32 => "DIV_NO_NAN_F32",
            Self::POW_F32 => "POW_F32",
            Self::RELU_GRAD_F32 => "RELU_GRAD_F32",
            Self::SQRT_F32 => "SQRT_F32",
            Self::RSQRT_F32 => "RSQRT_F32",
            Self::LOG_SOFTMAX_F32 => "LOG_SOFTMAX_F32",
            Self::RELU6_F32 => "RELU6_F32",
            Self::SIGMOID_F32 => "SIGMOID_F32",
            Self::TANH_F32 => "TANH_F32",
            Self::EXP_F32 => "EXP_F32",
            Self::CONV2D_F32 => "CONV2D_F32",
            Self::DEPTHWISE_CONV2D_F32 => "DEPTHWISE_CONV2D_F32",
            Self::MAX_POOL_F32 => "MAX_POOL_F32",
            Self::AVG_POOL_F32 => "AVG_POOL_F32",
            Self::CONV2D_BACKPROP_INPUT_F32 => "CONV2D_BACKPROP_INPUT_F32",
            Self::CONV2D_BACKPROP_FILTER_F32 => "CONV2D_BACKPROP_FILTER_F32",
            Self::MAX_POOL_GRAD_F32 => "MAX_POOL_GRAD_F32",
            Self::AVG_POOL_GRAD_F32 => "AVG_POOL_GRAD_F32",
            Self::TRANSPOSE_F32 => "TRANSPOSE_F32",
            Self::UNARY => "UNARY",
            Self::BINARY => "BINARY",
            Self::CONV2D_I8 => "CONV2D_I8",
            Self::DEPTHWISE_CONV2D_I8 => "DEPTHWISE_CONV2D_I8",
            Self::MAX_POOL_I8 => "MAX_POOL_I8",
            Self::AVG_POOL_I8 => "AVG_POOL_I8",
            Self::GEMM_I8 => "GEMM_I8",
            Self::ADD_I8 => "ADD_I8",
            Self::QUANTIZE_I8 => "QUANTIZE_I8",
            Self::DEQUANTIZE_I8 => "DEQUANTIZE_I8",
            Self::REDUCE_MAX_F32 => "REDUCE_MAX_F32",
            Self::REDUCE_MIN_F32 => "REDUCE_MIN_F32",
            Self::REDUCE_PROD_F32 => "REDUCE_PROD_F32",
            Self::ARG_MAX_F32 => "ARG_MAX_F32",
            Self::ARG_MIN_F32 => "ARG_MIN_F32",
            Self::GATHER => "GATHER",
            Self::SEGMENT_SUM => "SEGMENT_SUM",
            Self::CAST => "CAST",
            Self::SELECT => "SELECT",
            Self::RANDOM_UNIFORM_F32 => "RANDOM_UNIFORM_F32",
            Self::SOFTMAX_I8 => "SOFTMAX_I8",
            Self::LOOKUP_I8 => "LOOKUP_I8",
            Self::MUL_I8 => "MUL_I8",
            Self::CONCAT => "CONCAT",
            Self::RECORD => "RECORD",
            _ => return None,
        })
    }

    /// True for the three copies, whose events use the copy event kinds.
    pub const fn is_copy(self) -> bool {
        matches!(self, Self::COPY_H2D | Self::COPY_D2H | Self::COPY_D2D)
    }
}

/// Bits of [`CommandDescriptor::flags`]. Bits not defined here must be 0
/// (else `CompletionStatus::INVALID_ARGUMENT`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CommandFlags(pub u16);

impl CommandFlags {
    /// Raise `Irq::COMPLETION` when this command's completion is written.
    pub const IRQ: CommandFlags = CommandFlags(1 << 0);
    /// Stamp no profiling events for this command.
    pub const NO_EVENTS: CommandFlags = CommandFlags(1 << 1);
    /// GEMM: `src0` is stored `k×m` and used transposed.
    pub const TRANSPOSE_A: CommandFlags = CommandFlags(1 << 8);
    /// GEMM: `src1` is stored `n×k` and used transposed.
    pub const TRANSPOSE_B: CommandFlags = CommandFlags(1 << 9);
    /// `ADD/SUB/MUL/MAX/DIV/DIV_NO_NAN/POW/RELU_GRAD_F32` and `BINARY` 3-D broadcast form (`m`, `n`, `k` all non-zero,
    /// `len == m·n·k`, `dst` dense `[m][n][k]`): `src0` has extent 1 along
    /// `m` and is repeated. Each source is dense with extents `(m, n, k)`
    /// where its broadcast axes count 1.
    pub const SRC0_BCAST_M: CommandFlags = CommandFlags(1 << 2);
    /// 3-D broadcast form: `src0` has extent 1 along `n`.
    pub const SRC0_BCAST_N: CommandFlags = CommandFlags(1 << 3);
    /// 3-D broadcast form: `src0` has extent 1 along `k`.
    pub const SRC0_BCAST_K: CommandFlags = CommandFlags(1 << 4);
    /// 3-D broadcast form: `src1` has extent 1 along `m`.
    pub const SRC1_BCAST_M: CommandFlags = CommandFlags(1 << 5);
    /// 3-D broadcast form: `src1` has extent 1 along `n`.
    pub const SRC1_BCAST_N: CommandFlags = CommandFlags(1 << 6);
    /// 3-D broadcast form: `src1` has extent 1 along `k`.
    pub const SRC1_BCAST_K: CommandFlags = CommandFlags(1 << 7);
    /// All six broadcast bits.
    pub const BCAST_MASK: CommandFlags = CommandFlags(0x00FC);
    /// `CONV2D_F32` (ABI 1.1): add `src2[oc]` to every output of channel
    /// `oc` (`src2` is then used; without the flag it must be 0).
    pub const BIAS: CommandFlags = CommandFlags(1 << 10);
    /// `CONV2D_F32` with `BIAS`: then `max(0, ·)`.
    pub const RELU: CommandFlags = CommandFlags(1 << 11);
    /// `CONV2D_F32` with `BIAS`: then `min(max(·, 0), 6)` (not with `RELU`).
    pub const RELU6: CommandFlags = CommandFlags(1 << 12);
    /// The epilogue bits of `CONV2D_F32`.
    pub const EPILOGUE_MASK: CommandFlags = CommandFlags(0x1C00);
    /// Every bit this ABI version defines.
    pub const KNOWN: CommandFlags = CommandFlags(0x1FFF);

    /// The raw bits.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// True if every bit of `other` is set in `self`.
    pub const fn contains(self, other: CommandFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` and `other` together.
    pub const fn union(self, other: CommandFlags) -> CommandFlags {
        CommandFlags(self.0 | other.0)
    }

    /// True if a bit outside [`KNOWN`](Self::KNOWN) is set.
    pub const fn has_unknown_bits(self) -> bool {
        self.0 & !Self::KNOWN.0 != 0
    }
}

/// One command-queue entry: 64 bytes, little-endian, 8-byte aligned.
///
/// Which operand fields an opcode uses is listed in `docs/device-abi.md`;
/// unused fields must be 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CommandDescriptor {
    /// What to do.
    pub opcode: Opcode,
    /// [`CommandFlags`].
    pub flags: CommandFlags,
    /// Chosen by the host; echoed in the completion and as the events' `op_id`.
    pub tag: u16,
    /// Host stream number; echoed in the completion and as the events' `queue`.
    pub stream: u8,
    /// ABI 1.3: the element type of the command's tensors, by the op
    /// catalogue's code (`docs/ops.md`: 1 f32, 2 f16, 3 bf16, 4 int8,
    /// 5 uint8, 6 int32, 7 int64, 8 bool); 0 means f32. Before 1.3 this byte was reserved
    /// (0). A type the device does not run completes `UNSUPPORTED`.
    pub dtype: u8,
    /// First source address (copy source, GEMM A, element-wise/row input).
    pub src0: u64,
    /// Second source address (GEMM B, element-wise B, bias of `BIAS_ADD_F32`).
    pub src1: u64,
    /// Third source address (bias of the fused GEMMs).
    pub src2: u64,
    /// Destination address.
    pub dst: u64,
    /// Byte count (copy, fill) or element count (element-wise, ReLU).
    pub len: u64,
    /// GEMM rows of the result; rows for bias-add, softmax, reduce-sum.
    pub m: u32,
    /// GEMM columns of the result; columns (last axis) for row ops.
    pub n: u32,
    /// GEMM inner dimension.
    pub k: u32,
    /// Immediate: the fill pattern.
    pub imm: u32,
}

/// Size of a [`CommandDescriptor`] in bytes.
pub const COMMAND_DESCRIPTOR_SIZE: usize = 64;

impl CommandDescriptor {
    /// A command with every operand 0.
    pub const fn new(opcode: Opcode, tag: u16, stream: u8) -> Self {
        Self {
            opcode,
            flags: CommandFlags(0),
            tag,
            stream,
            dtype: 0,
            src0: 0,
            src1: 0,
            src2: 0,
            dst: 0,
            len: 0,
            m: 0,
            n: 0,
            k: 0,
            imm: 0,
        }
    }

    /// Encodes in the wire/memory format.
    pub const fn to_le_bytes(&self) -> [u8; COMMAND_DESCRIPTOR_SIZE] {
        let mut b = [0u8; COMMAND_DESCRIPTOR_SIZE];
        put(&mut b, 0, &self.opcode.0.to_le_bytes());
        put(&mut b, 2, &self.flags.0.to_le_bytes());
        put(&mut b, 4, &self.tag.to_le_bytes());
        b[6] = self.stream;
        b[7] = self.dtype;
        put(&mut b, 8, &self.src0.to_le_bytes());
        put(&mut b, 16, &self.src1.to_le_bytes());
        put(&mut b, 24, &self.src2.to_le_bytes());
        put(&mut b, 32, &self.dst.to_le_bytes());
        put(&mut b, 40, &self.len.to_le_bytes());
        put(&mut b, 48, &self.m.to_le_bytes());
        put(&mut b, 52, &self.n.to_le_bytes());
        put(&mut b, 56, &self.k.to_le_bytes());
        put(&mut b, 60, &self.imm.to_le_bytes());
        b
    }

    /// Decodes the wire/memory format. Every byte pattern decodes.
    pub const fn from_le_bytes(b: &[u8; COMMAND_DESCRIPTOR_SIZE]) -> Self {
        Self {
            opcode: Opcode(u16_at(b, 0)),
            flags: CommandFlags(u16_at(b, 2)),
            tag: u16_at(b, 4),
            stream: b[6],
            dtype: b[7],
            src0: u64_at(b, 8),
            src1: u64_at(b, 16),
            src2: u64_at(b, 24),
            dst: u64_at(b, 32),
            len: u64_at(b, 40),
            m: u32_at(b, 48),
            n: u32_at(b, 52),
            k: u32_at(b, 56),
            imm: u32_at(b, 60),
        }
    }
}
