"""An int8 model from TFLite's converter, and what TFLite's reference
kernels compute with it: the ground truth for tensorplug's int8 reference.

Converts a small Keras model (Dense 24 -> 16 with ReLU, Dense 16 -> 10) with
full-integer post-training quantization (a seeded representative dataset),
runs it in tf.lite.Interpreter with the reference kernels
(OpResolverType.BUILTIN_REF) on 64 rows of int8 inputs, and prints every
FULLY_CONNECTED op of the flatbuffer as lines of whitespace-separated values:

  op FULLY_CONNECTED <activation: NONE | RELU | RELU6>
  input <zero point> <scale (float32 bits, hex)> <dims…>
  filter <zero points…> ; <scales (float32 bits)…> ; <quantized dim> ; <dims…>
  bias <dims…> | none
  output <zero point> <scale (float32 bits)> <dims…>
  input_data <int8…> / filter_data <int8…> / bias_data <int32…> / output_data <int8…>

tests/tests/int8_vs_tflite.rs runs tensorplug_core's int8 reference on the
same tensors and parameters and asserts the bytes are equal.
"""
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ACTIVATIONS = {0: "NONE", 1: "RELU", 3: "RELU6"}
BATCH = 64


def f32_bits(v):
    return struct.pack(">f", float(np.float32(v))).hex()


def model():
    tf.keras.utils.set_random_seed(7)
    bias = tf.keras.initializers.RandomNormal(stddev=0.5, seed=3)
    inputs = tf.keras.Input((24,))
    h = tf.keras.layers.Dense(16, activation="relu", bias_initializer=bias)(inputs)
    h = tf.keras.layers.Dense(12, activation="relu6", bias_initializer=bias)(h)
    outputs = tf.keras.layers.Dense(10)(h)  # zero bias: the converter drops it
    return tf.keras.Model(inputs, outputs)


def convert(m):
    rng = np.random.default_rng(11)

    def representative():
        for _ in range(64):
            yield [rng.normal(0, 2, (1, 24)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(m)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter.convert()


def tensor_line(name, detail):
    q = detail["quantization_parameters"]
    dims = " ".join(str(d) for d in detail["shape"])
    return q, dims


def main():
    flatbuffer = convert(model())
    interpreter = tf.lite.Interpreter(
        model_content=flatbuffer,
        experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True)
    inp = interpreter.get_input_details()[0]
    interpreter.resize_tensor_input(inp["index"], [BATCH, 24])
    interpreter.allocate_tensors()
    details = {d["index"]: d for d in interpreter.get_tensor_details()}
    inp = interpreter.get_input_details()[0]
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, size=inp["shape"], dtype=np.int8)
    interpreter.set_tensor(inp["index"], x)
    interpreter.invoke()
    options = {}
    try:
        # The fused activation of each FULLY_CONNECTED, from the flatbuffer.
        from tensorflow.lite.python import schema_py_generated as schema
        fb = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
        graph = fb.subgraphs[0]
        for op in graph.operators:
            code = fb.operatorCodes[op.opcodeIndex]
            builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
            if builtin == schema.BuiltinOperator.FULLY_CONNECTED:
                options[tuple(op.outputs)] = op.builtinOptions.fusedActivationFunction
    except ImportError as e:
        sys.exit(f"cannot read the flatbuffer's options: {e}")
    count = 0
    for op in interpreter._get_ops_details():
        if op["op_name"] != "FULLY_CONNECTED":
            continue
        i, f, b = op["inputs"]
        o = op["outputs"][0]
        act = ACTIVATIONS[options[(o,)]]
        print(f"op FULLY_CONNECTED {act}")
        for name, index in (("input", i), ("output", o)):
            d = details[index]
            zp = int(d["quantization_parameters"]["zero_points"][0])
            scale = d["quantization_parameters"]["scales"][0]
            print(f"{name} {zp} {f32_bits(scale)} " + " ".join(str(v) for v in d["shape"]))
        fq = details[f]["quantization_parameters"]
        print("filter " + " ".join(str(int(z)) for z in fq["zero_points"]) + " ; "
              + " ".join(f32_bits(s) for s in fq["scales"]) + f" ; {fq['quantized_dimension']} ; "
              + " ".join(str(v) for v in details[f]["shape"]))
        print("bias " + (" ".join(str(v) for v in details[b]["shape"]) if b >= 0 else "none"))
        tensors = [("input_data", i), ("filter_data", f), ("bias_data", b), ("output_data", o)]
        for name, index in (t for t in tensors if t[1] >= 0):
            data = interpreter.get_tensor(index).reshape(-1)
            print(name + " " + " ".join(str(int(v)) for v in data))
        count += 1
    if count == 0:
        sys.exit("no FULLY_CONNECTED op in the converted model")


if __name__ == "__main__":
    main()
