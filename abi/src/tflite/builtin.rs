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

/// The schema name of a builtin code, for reports (`None`: not in this
/// table, not unknown to TFLite).
pub const fn builtin_name(code: i32) -> Option<&'static str> {
    Some(match code {
        kTfLiteBuiltinAdd => "ADD",
        kTfLiteBuiltinAveragePool2d => "AVERAGE_POOL_2D",
        kTfLiteBuiltinConcatenation => "CONCATENATION",
        kTfLiteBuiltinConv2d => "CONV_2D",
        kTfLiteBuiltinDepthwiseConv2d => "DEPTHWISE_CONV_2D",
        kTfLiteBuiltinDequantize => "DEQUANTIZE",
        kTfLiteBuiltinFloor => "FLOOR",
        kTfLiteBuiltinFullyConnected => "FULLY_CONNECTED",
        kTfLiteBuiltinLogistic => "LOGISTIC",
        kTfLiteBuiltinMaxPool2d => "MAX_POOL_2D",
        kTfLiteBuiltinMul => "MUL",
        kTfLiteBuiltinRelu => "RELU",
        kTfLiteBuiltinRelu6 => "RELU6",
        kTfLiteBuiltinReshape => "RESHAPE",
        kTfLiteBuiltinSoftmax => "SOFTMAX",
        kTfLiteBuiltinTanh => "TANH",
        kTfLiteBuiltinPad => "PAD",
        kTfLiteBuiltinGather => "GATHER",
        kTfLiteBuiltinTranspose => "TRANSPOSE",
        kTfLiteBuiltinMean => "MEAN",
        kTfLiteBuiltinSub => "SUB",
        kTfLiteBuiltinLeakyRelu => "LEAKY_RELU",
        kTfLiteBuiltinDiv => "DIV",
        kTfLiteBuiltinPadv2 => "PADV2",
        kTfLiteBuiltinSin => "SIN",
        kTfLiteBuiltinStridedSlice => "STRIDED_SLICE",
        kTfLiteBuiltinExp => "EXP",
        kTfLiteBuiltinMaximum => "MAXIMUM",
        kTfLiteBuiltinMinimum => "MINIMUM",
        kTfLiteBuiltinNeg => "NEG",
        kTfLiteBuiltinLog => "LOG",
        kTfLiteBuiltinSqrt => "SQRT",
        kTfLiteBuiltinRsqrt => "RSQRT",
        kTfLiteBuiltinReduceProd => "REDUCE_PROD",
        kTfLiteBuiltinSquaredDifference => "SQUARED_DIFFERENCE",
        kTfLiteBuiltinAbs => "ABS",
        kTfLiteBuiltinBatchMatmul => "BATCH_MATMUL",
        kTfLiteBuiltinShape => "SHAPE",
        kTfLiteBuiltinPack => "PACK",
        kTfLiteBuiltinDelegate => "DELEGATE",
        kTfLiteBuiltinQuantize => "QUANTIZE",
        kTfLiteBuiltinHardSwish => "HARD_SWISH",
        kTfLiteBuiltinCumsum => "CUMSUM",
        _ => return None,
    })
}

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
