//! Lists of every value this ABI version defines, for tests and tools.
//! (Kept apart from the types so cbindgen leaves them out of the C header.)

use super::command::Opcode;
use super::completion::CompletionStatus;
use super::event::EventKind;
use super::version::Features;

impl Opcode {
    /// Every opcode this ABI version defines.
    pub const ALL: [Opcode; 61] = [
        Self::NOP,
        Self::COPY_H2D,
        Self::COPY_D2H,
        Self::COPY_D2D,
        Self::FILL,
        Self::GEMM_F32,
        Self::GEMM_BIAS_RELU_F32,
        Self::GEMM_BIAS_F32,
        Self::ADD_F32,
        Self::SUB_F32,
        Self::MUL_F32,
        Self::MAX_F32,
        Self::RELU_F32,
        Self::BIAS_ADD_F32,
        Self::DIV_F32,
        Self::DIV_NO_NAN_F32,
        Self::POW_F32,
        Self::RELU_GRAD_F32,
        Self::SQRT_F32,
        Self::RSQRT_F32,
        Self::RELU6_F32,
        Self::SIGMOID_F32,
        Self::TANH_F32,
        Self::EXP_F32,
        Self::SOFTMAX_F32,
        Self::REDUCE_SUM_F32,
        Self::LOG_SOFTMAX_F32,
        Self::REDUCE_MAX_F32,
        Self::REDUCE_MIN_F32,
        Self::REDUCE_PROD_F32,
        Self::ARG_MAX_F32,
        Self::ARG_MIN_F32,
        Self::CONV2D_F32,
        Self::DEPTHWISE_CONV2D_F32,
        Self::MAX_POOL_F32,
        Self::AVG_POOL_F32,
        Self::CONV2D_BACKPROP_INPUT_F32,
        Self::CONV2D_BACKPROP_FILTER_F32,
        Self::MAX_POOL_GRAD_F32,
        Self::AVG_POOL_GRAD_F32,
        Self::TRANSPOSE_F32,
        Self::UNARY,
        Self::BINARY,
        Self::CONV2D_I8,
        Self::DEPTHWISE_CONV2D_I8,
        Self::MAX_POOL_I8,
        Self::AVG_POOL_I8,
        Self::GEMM_I8,
        Self::ADD_I8,
        Self::QUANTIZE_I8,
        Self::DEQUANTIZE_I8,
        Self::GATHER,
        Self::SEGMENT_SUM,
        Self::CAST,
        Self::SELECT,
        Self::RANDOM_UNIFORM_F32,
        Self::SOFTMAX_I8,
        Self::LOOKUP_I8,
        Self::MUL_I8,
        Self::CONCAT,
        Self::RECORD,
    ];
}

/// An element-wise opcode of ABI 1.0–1.2 and what it is since 1.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerOpElementwise {
    /// The per-op opcode (still defined, and run by 1.3 devices).
    pub opcode: Opcode,
    /// The catalogue code of its op: the opcode is `UNARY`/`BINARY` with `imm = code`.
    pub code: u16,
    /// The feature bit that brings it.
    pub feature: Features,
}

impl Opcode {
    /// The per-op element-wise opcodes of ABI 1.0–1.2. Frozen: an
    /// element-wise op added later exists only as a catalogue code for
    /// `UNARY`/`BINARY`.
    pub const PER_OP_ELEMENTWISE: [PerOpElementwise; 15] = {
        const fn e(opcode: Opcode, code: u16, feature: Features) -> PerOpElementwise {
            PerOpElementwise {
                opcode,
                code,
                feature,
            }
        }
        const ELEMENTWISE: Features = Features::ELEMENTWISE;
        const MATH: Features = Features::MATH;
        [
            e(Opcode::ADD_F32, 4, ELEMENTWISE),
            e(Opcode::SUB_F32, 5, ELEMENTWISE),
            e(Opcode::MUL_F32, 6, ELEMENTWISE),
            e(Opcode::MAX_F32, 7, ELEMENTWISE),
            e(Opcode::RELU_F32, 8, ELEMENTWISE),
            e(Opcode::DIV_F32, 11, MATH),
            e(Opcode::DIV_NO_NAN_F32, 12, MATH),
            e(Opcode::POW_F32, 13, MATH),
            e(Opcode::RELU_GRAD_F32, 14, MATH),
            e(Opcode::SQRT_F32, 15, MATH),
            e(Opcode::RSQRT_F32, 16, MATH),
            e(Opcode::RELU6_F32, 18, MATH),
            e(Opcode::SIGMOID_F32, 19, MATH),
            e(Opcode::TANH_F32, 20, MATH),
            e(Opcode::EXP_F32, 31, Features::TRANSCENDENTAL),
        ]
    };

    /// The entry of a per-op element-wise opcode.
    pub fn per_op_elementwise(self) -> Option<PerOpElementwise> {
        Self::PER_OP_ELEMENTWISE
            .iter()
            .find(|e| e.opcode == self)
            .copied()
    }
}

impl CompletionStatus {
    /// Every status this ABI version defines.
    pub const ALL: [CompletionStatus; 9] = [
        Self::OK,
        Self::INVALID_OPCODE,
        Self::INVALID_ARGUMENT,
        Self::OUT_OF_RANGE,
        Self::MISALIGNED,
        Self::UNSUPPORTED,
        Self::BUS_ERROR,
        Self::ABORTED,
        Self::DEVICE_FAULT,
    ];
}

impl EventKind {
    /// Every kind a device stamps in this ABI version.
    pub const ALL: [EventKind; 8] = [
        Self::OP_BEGIN,
        Self::OP_END,
        Self::COPY_H2D_BEGIN,
        Self::COPY_H2D_END,
        Self::COPY_D2H_BEGIN,
        Self::COPY_D2H_END,
        Self::COPY_D2D_BEGIN,
        Self::COPY_D2D_END,
    ];
}
