//! Lists of every value this ABI version defines, for tests and tools.
//! (Kept apart from the types so cbindgen leaves them out of the C header.)

use super::{CompletionStatus, EventKind, Opcode};

impl Opcode {
    /// Every opcode this ABI version defines.
    pub const ALL: [Opcode; 36] = [
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
        Self::CONV2D_F32,
        Self::DEPTHWISE_CONV2D_F32,
        Self::MAX_POOL_F32,
        Self::AVG_POOL_F32,
        Self::CONV2D_BACKPROP_INPUT_F32,
        Self::CONV2D_BACKPROP_FILTER_F32,
        Self::MAX_POOL_GRAD_F32,
        Self::AVG_POOL_GRAD_F32,
        Self::TRANSPOSE_F32,
    ];
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
