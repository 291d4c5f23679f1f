//! Builtin operator codes (TFLite's schema, `builtin_ops.h`) and the
//! `builtin_op_data.h` structs the delegate reads.

use crate::tf::layout::{c_enum, c_struct};

/// `TfLiteBuiltinOperator` values used by name in tensorplug (the schema's
/// `BuiltinOperator`; codes are never renumbered).
pub const kTfLiteBuiltinAdd: i32 = 0;
pub const kTfLiteBuiltinAveragePool2d: i32 = 1;
pub const kTfLiteBuiltinConcatenation: i32 = 2;
pub const kTfLiteBuiltinConv2d: i32 = 3;
pub const kTfLiteBuiltinDepthwiseConv2d: i32 = 4;
pub const kTfLiteBuiltinDequantize: i32 = 6;
pub const kTfLiteBuiltinFloor: i32 = 8;
pub const kTfLiteBuiltinFullyConnected: i32 = 9;
pub const kTfLiteBuiltinLogistic: i32 = 14;
pub const kTfLiteBuiltinMaxPool2d: i32 = 17;
pub const kTfLiteBuiltinMul: i32 = 18;
pub const kTfLiteBuiltinRelu: i32 = 19;
pub const kTfLiteBuiltinRelu6: i32 = 21;
pub const kTfLiteBuiltinReshape: i32 = 22;
pub const kTfLiteBuiltinSoftmax: i32 = 25;
pub const kTfLiteBuiltinTanh: i32 = 28;
pub const kTfLiteBuiltinPad: i32 = 34;
pub const kTfLiteBuiltinGather: i32 = 36;
pub const kTfLiteBuiltinTranspose: i32 = 39;
pub const kTfLiteBuiltinMean: i32 = 40;
pub const kTfLiteBuiltinSub: i32 = 41;
pub const kTfLiteBuiltinLeakyRelu: i32 = 98;
pub const kTfLiteBuiltinSquaredDifference: i32 = 99;
pub const kTfLiteBuiltinAbs: i32 = 101;
pub const kTfLiteBuiltinDiv: i32 = 42;
pub const kTfLiteBuiltinStridedSlice: i32 = 45;
pub const kTfLiteBuiltinExp: i32 = 47;
pub const kTfLiteBuiltinMaximum: i32 = 55;
pub const kTfLiteBuiltinMinimum: i32 = 57;
pub const kTfLiteBuiltinNeg: i32 = 59;
pub const kTfLiteBuiltinPadv2: i32 = 60;
pub const kTfLiteBuiltinSin: i32 = 66;
pub const kTfLiteBuiltinLog: i32 = 73;
pub const kTfLiteBuiltinSqrt: i32 = 75;
pub const kTfLiteBuiltinRsqrt: i32 = 76;
pub const kTfLiteBuiltinShape: i32 = 77;
pub const kTfLiteBuiltinReduceProd: i32 = 81;
pub const kTfLiteBuiltinPack: i32 = 83;
/// The code of a delegate kernel's node.
pub const kTfLiteBuiltinDelegate: i32 = 51;
pub const kTfLiteBuiltinQuantize: i32 = 114;
pub const kTfLiteBuiltinHardSwish: i32 = 117;
pub const kTfLiteBuiltinBatchMatmul: i32 = 126;
pub const kTfLiteBuiltinCumsum: i32 = 128;

/// The schema name of a builtin code, for reports (`None`: past the table,
/// a code newer than TF 2.21's schema).
pub const fn builtin_name(code: i32) -> Option<&'static str> {
    if code < 0 || code as usize >= BUILTIN_NAMES.len() {
        return None;
    }
    Some(BUILTIN_NAMES[code as usize])
}

/// The schema's name of every builtin code, by code (TF 2.21's
/// `schema_py_generated.BuiltinOperator`, codes 0 to 209; codes are
/// never renumbered, so an older runtime's codes are a prefix).
const BUILTIN_NAMES: [&str; 210] = [
    "ADD",
    "AVERAGE_POOL_2D",
    "CONCATENATION",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE",
    "DEQUANTIZE",
    "EMBEDDING_LOOKUP",
    "FLOOR",
    "FULLY_CONNECTED",
    "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION",
    "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC",
    "LSH_PROJECTION",
    "LSTM",
    "MAX_POOL_2D",
    "MUL",
    "RELU",
    "RELU_N1_TO_1",
    "RELU6",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RNN",
    "SOFTMAX",
    "SPACE_TO_DEPTH",
    "SVDF",
    "TANH",
    "CONCAT_EMBEDDINGS",
    "SKIP_GRAM",
    "CALL",
    "CUSTOM",
    "EMBEDDING_LOOKUP_SPARSE",
    "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN",
    "GATHER",
    "BATCH_TO_SPACE_ND",
    "SPACE_TO_BATCH_ND",
    "TRANSPOSE",
    "MEAN",
    "SUB",
    "DIV",
    "SQUEEZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN",
    "EXP",
    "TOPK_V2",
    "SPLIT",
    "LOG_SOFTMAX",
    "DELEGATE",
    "BIDIRECTIONAL_SEQUENCE_LSTM",
    "CAST",
    "PRELU",
    "MAXIMUM",
    "ARG_MAX",
    "MINIMUM",
    "LESS",
    "NEG",
    "PADV2",
    "GREATER",
    "GREATER_EQUAL",
    "LESS_EQUAL",
    "SELECT",
    "SLICE",
    "SIN",
    "TRANSPOSE_CONV",
    "SPARSE_TO_DENSE",
    "TILE",
    "EXPAND_DIMS",
    "EQUAL",
    "NOT_EQUAL",
    "LOG",
    "SUM",
    "SQRT",
    "RSQRT",
    "SHAPE",
    "POW",
    "ARG_MIN",
    "FAKE_QUANT",
    "REDUCE_PROD",
    "REDUCE_MAX",
    "PACK",
    "LOGICAL_OR",
    "ONE_HOT",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "UNPACK",
    "REDUCE_MIN",
    "FLOOR_DIV",
    "REDUCE_ANY",
    "SQUARE",
    "ZEROS_LIKE",
    "FILL",
    "FLOOR_MOD",
    "RANGE",
    "RESIZE_NEAREST_NEIGHBOR",
    "LEAKY_RELU",
    "SQUARED_DIFFERENCE",
    "MIRROR_PAD",
    "ABS",
    "SPLIT_V",
    "UNIQUE",
    "CEIL",
    "REVERSE_V2",
    "ADD_N",
    "GATHER_ND",
    "COS",
    "WHERE",
    "RANK",
    "ELU",
    "REVERSE_SEQUENCE",
    "MATRIX_DIAG",
    "QUANTIZE",
    "MATRIX_SET_DIAG",
    "ROUND",
    "HARD_SWISH",
    "IF",
    "WHILE",
    "NON_MAX_SUPPRESSION_V4",
    "NON_MAX_SUPPRESSION_V5",
    "SCATTER_ND",
    "SELECT_V2",
    "DENSIFY",
    "SEGMENT_SUM",
    "BATCH_MATMUL",
    "PLACEHOLDER_FOR_GREATER_OP_CODES",
    "CUMSUM",
    "CALL_ONCE",
    "BROADCAST_TO",
    "RFFT2D",
    "CONV_3D",
    "IMAG",
    "REAL",
    "COMPLEX_ABS",
    "HASHTABLE",
    "HASHTABLE_FIND",
    "HASHTABLE_IMPORT",
    "HASHTABLE_SIZE",
    "REDUCE_ALL",
    "CONV_3D_TRANSPOSE",
    "VAR_HANDLE",
    "READ_VARIABLE",
    "ASSIGN_VARIABLE",
    "BROADCAST_ARGS",
    "RANDOM_STANDARD_NORMAL",
    "BUCKETIZE",
    "RANDOM_UNIFORM",
    "MULTINOMIAL",
    "GELU",
    "DYNAMIC_UPDATE_SLICE",
    "RELU_0_TO_1",
    "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX",
    "UNSORTED_SEGMENT_SUM",
    "ATAN2",
    "UNSORTED_SEGMENT_MIN",
    "SIGN",
    "BITCAST",
    "BITWISE_XOR",
    "RIGHT_SHIFT",
    "STABLEHLO_LOGISTIC",
    "STABLEHLO_ADD",
    "STABLEHLO_DIVIDE",
    "STABLEHLO_MULTIPLY",
    "STABLEHLO_MAXIMUM",
    "STABLEHLO_RESHAPE",
    "STABLEHLO_CLAMP",
    "STABLEHLO_CONCATENATE",
    "STABLEHLO_BROADCAST_IN_DIM",
    "STABLEHLO_CONVOLUTION",
    "STABLEHLO_SLICE",
    "STABLEHLO_CUSTOM_CALL",
    "STABLEHLO_REDUCE",
    "STABLEHLO_ABS",
    "STABLEHLO_AND",
    "STABLEHLO_COSINE",
    "STABLEHLO_EXPONENTIAL",
    "STABLEHLO_FLOOR",
    "STABLEHLO_LOG",
    "STABLEHLO_MINIMUM",
    "STABLEHLO_NEGATE",
    "STABLEHLO_OR",
    "STABLEHLO_POWER",
    "STABLEHLO_REMAINDER",
    "STABLEHLO_RSQRT",
    "STABLEHLO_SELECT",
    "STABLEHLO_SUBTRACT",
    "STABLEHLO_TANH",
    "STABLEHLO_SCATTER",
    "STABLEHLO_COMPARE",
    "STABLEHLO_CONVERT",
    "STABLEHLO_DYNAMIC_SLICE",
    "STABLEHLO_DYNAMIC_UPDATE_SLICE",
    "STABLEHLO_PAD",
    "STABLEHLO_IOTA",
    "STABLEHLO_DOT_GENERAL",
    "STABLEHLO_REDUCE_WINDOW",
    "STABLEHLO_SORT",
    "STABLEHLO_WHILE",
    "STABLEHLO_GATHER",
    "STABLEHLO_TRANSPOSE",
    "DILATE",
    "STABLEHLO_RNG_BIT_GENERATOR",
    "REDUCE_WINDOW",
    "STABLEHLO_COMPOSITE",
    "STABLEHLO_SHIFT_LEFT",
    "STABLEHLO_CBRT",
    "STABLEHLO_CASE",
];

c_enum! {
    /// `TfLiteFusedActivation` (builtin_op_data.h).
    pub struct TfLiteFusedActivation(i32) {
        kTfLiteActNone = 0,
        kTfLiteActRelu = 1,
        kTfLiteActReluN1To1 = 2,
        kTfLiteActRelu6 = 3,
        kTfLiteActTanh = 4,
        kTfLiteActSignBit = 5,
        kTfLiteActSigmoid = 6,
    }
}

c_struct! {
    /// The first fields of `TfLiteFullyConnectedParams`, which every
    /// runtime from TF 2.15 on has; newer ones append
    /// (`quantized_bias_type`). Only ever read through the runtime's pointer.
    pub struct TfLiteFullyConnectedParams {
        pub activation: TfLiteFusedActivation,
        /// `TfLiteFullyConnectedWeightsFormat`: 0 is the default layout.
        pub weights_format: i32,
        pub keep_num_dims: bool,
        pub asymmetric_quantize_inputs: bool,
    }
}

c_struct! {
    /// `TfLiteAddParams`.
    pub struct TfLiteAddParams {
        pub activation: TfLiteFusedActivation,
        pub pot_scale_int16: bool,
    }
}

c_enum! {
    /// `TfLitePadding` (builtin_op_data.h).
    pub struct TfLitePadding(i32) {
        kTfLitePaddingUnknown = 0,
        kTfLitePaddingSame = 1,
        kTfLitePaddingValid = 2,
    }
}

c_struct! {
    /// The first fields of `TfLiteConvParams` (newer runtimes append
    /// `quantized_bias_type`).
    pub struct TfLiteConvParams {
        pub padding: TfLitePadding,
        pub stride_width: i32,
        pub stride_height: i32,
        pub activation: TfLiteFusedActivation,
        pub dilation_width_factor: i32,
        pub dilation_height_factor: i32,
    }
}

c_struct! {
    /// `TfLiteDepthwiseConvParams`.
    pub struct TfLiteDepthwiseConvParams {
        pub padding: TfLitePadding,
        pub stride_width: i32,
        pub stride_height: i32,
        pub depth_multiplier: i32,
        pub activation: TfLiteFusedActivation,
        pub dilation_width_factor: i32,
        pub dilation_height_factor: i32,
    }
}

c_struct! {
    /// The first fields of `TfLitePoolParams` (the runtime's own padding,
    /// `computed`, follows): `MAX_POOL_2D`, `AVERAGE_POOL_2D`.
    pub struct TfLitePoolParams {
        pub padding: TfLitePadding,
        pub stride_width: i32,
        pub stride_height: i32,
        pub filter_width: i32,
        pub filter_height: i32,
        pub activation: TfLiteFusedActivation,
    }
}

c_struct! {
    /// `TfLiteReducerParams`: `MEAN`, `SUM` and the other reductions.
    pub struct TfLiteReducerParams {
        pub keep_dims: bool,
    }
}

c_struct! {
    /// `TfLiteSoftmaxParams`.
    pub struct TfLiteSoftmaxParams {
        pub beta: f32,
    }
}

c_struct! {
    /// `TfLiteMulParams`.
    pub struct TfLiteMulParams {
        pub activation: TfLiteFusedActivation,
    }
}

c_struct! {
    /// `TfLiteLeakyReluParams`.
    pub struct TfLiteLeakyReluParams {
        pub alpha: f32,
    }
}

c_struct! {
    /// `TfLiteCumsumParams`.
    pub struct TfLiteCumsumParams {
        pub exclusive: bool,
        pub reverse: bool,
    }
}

c_struct! {
    /// The first fields of `TfLiteStridedSliceParams`, which every runtime
    /// from TF 2.15 on has; the `bool offset` after them is read by
    /// version 8 of the op only, which the delegate does not take. Only
    /// ever read through the runtime's pointer.
    pub struct TfLiteStridedSliceParams {
        pub begin_mask: i32,
        pub end_mask: i32,
        pub ellipsis_mask: i32,
        pub new_axis_mask: i32,
        pub shrink_axis_mask: i32,
    }
}

c_struct! {
    /// The first fields of `TfLiteBatchMatMulParams`, which every runtime
    /// from TF 2.15 on has (`asymmetric_quantize_inputs` follows, for
    /// quantized weights). Only ever read through the runtime's pointer.
    pub struct TfLiteBatchMatMulParams {
        pub adj_x: bool,
        pub adj_y: bool,
    }
}

c_struct! {
    /// `TfLiteGatherParams`.
    pub struct TfLiteGatherParams {
        pub axis: i32,
        pub batch_dims: i32,
    }
}

c_struct! {
    /// `TfLitePackParams`.
    pub struct TfLitePackParams {
        pub values_count: i32,
        pub axis: i32,
    }
}

c_struct! {
    /// `TfLiteConcatenationParams`.
    pub struct TfLiteConcatenationParams {
        pub axis: i32,
        pub activation: TfLiteFusedActivation,
    }
}
