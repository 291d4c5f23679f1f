//! The TFLite mirrors' field tables: in declaration order, inside the
//! struct, not overlapping; the registration versions are prefixes of one
//! another (the runtime relies on that to read an older one).

use tensorplug_abi::tflite::*;

#[test]
fn field_tables_are_ordered_and_inside_their_struct() {
    for s in STRUCTS {
        let mut end = 0;
        for f in s.fields {
            assert!(f.offset >= end, "{}.{} overlaps", s.name, f.name);
            assert!(f.end() <= s.size, "{}.{} past the end", s.name, f.name);
            end = f.end();
        }
    }
}

#[test]
fn registration_versions_are_prefixes() {
    let full = <TfLiteRegistration as tensorplug_abi::tf::layout::CStruct>::LAYOUT;
    use tensorplug_abi::tf::layout::CStruct;
    for older in [
        TfLiteRegistration_V3::LAYOUT,
        TfLiteRegistration_V2::LAYOUT,
        TfLiteRegistration_V1::LAYOUT,
    ] {
        assert_eq!(
            older.fields,
            &full.fields[..older.fields.len()],
            "{}",
            older.name
        );
        // The first field the older one lacks starts at or after its end.
        let next = full.fields[older.fields.len()];
        assert!(next.offset >= older.size, "{}", older.name);
    }
}

#[test]
fn builtin_names() {
    assert_eq!(
        builtin_name(kTfLiteBuiltinFullyConnected),
        Some("FULLY_CONNECTED")
    );
    assert_eq!(builtin_name(kTfLiteBuiltinDelegate), Some("DELEGATE"));
    assert_eq!(builtin_name(9999), None);
    assert_eq!(builtin_name(-1), None);
    // Every code named in `abi::tflite` is the schema's op of that name.
    for (code, name) in [
        (kTfLiteBuiltinAdd, "ADD"),
        (kTfLiteBuiltinAveragePool2d, "AVERAGE_POOL_2D"),
        (kTfLiteBuiltinConcatenation, "CONCATENATION"),
        (kTfLiteBuiltinConv2d, "CONV_2D"),
        (kTfLiteBuiltinDepthwiseConv2d, "DEPTHWISE_CONV_2D"),
        (kTfLiteBuiltinDequantize, "DEQUANTIZE"),
        (kTfLiteBuiltinFloor, "FLOOR"),
        (kTfLiteBuiltinFullyConnected, "FULLY_CONNECTED"),
        (kTfLiteBuiltinLogistic, "LOGISTIC"),
        (kTfLiteBuiltinMaxPool2d, "MAX_POOL_2D"),
        (kTfLiteBuiltinMul, "MUL"),
        (kTfLiteBuiltinRelu, "RELU"),
        (kTfLiteBuiltinRelu6, "RELU6"),
        (kTfLiteBuiltinReshape, "RESHAPE"),
        (kTfLiteBuiltinSoftmax, "SOFTMAX"),
        (kTfLiteBuiltinTanh, "TANH"),
        (kTfLiteBuiltinPad, "PAD"),
        (kTfLiteBuiltinGather, "GATHER"),
        (kTfLiteBuiltinTranspose, "TRANSPOSE"),
        (kTfLiteBuiltinMean, "MEAN"),
        (kTfLiteBuiltinSub, "SUB"),
        (kTfLiteBuiltinLeakyRelu, "LEAKY_RELU"),
        (kTfLiteBuiltinSquaredDifference, "SQUARED_DIFFERENCE"),
        (kTfLiteBuiltinAbs, "ABS"),
        (kTfLiteBuiltinDiv, "DIV"),
        (kTfLiteBuiltinStridedSlice, "STRIDED_SLICE"),
        (kTfLiteBuiltinExp, "EXP"),
        (kTfLiteBuiltinMaximum, "MAXIMUM"),
        (kTfLiteBuiltinMinimum, "MINIMUM"),
        (kTfLiteBuiltinNeg, "NEG"),
        (kTfLiteBuiltinPadv2, "PADV2"),
        (kTfLiteBuiltinSin, "SIN"),
        (kTfLiteBuiltinLog, "LOG"),
        (kTfLiteBuiltinSqrt, "SQRT"),
        (kTfLiteBuiltinRsqrt, "RSQRT"),
        (kTfLiteBuiltinShape, "SHAPE"),
        (kTfLiteBuiltinReduceProd, "REDUCE_PROD"),
        (kTfLiteBuiltinPack, "PACK"),
        (kTfLiteBuiltinDelegate, "DELEGATE"),
        (kTfLiteBuiltinQuantize, "QUANTIZE"),
        (kTfLiteBuiltinHardSwish, "HARD_SWISH"),
        (kTfLiteBuiltinBatchMatmul, "BATCH_MATMUL"),
        (kTfLiteBuiltinCumsum, "CUMSUM"),
    ] {
        assert_eq!(builtin_name(code), Some(name), "code {code}");
    }
}
