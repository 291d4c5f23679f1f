"""Int8 models from TFLite's converter, and what TFLite's reference kernels
compute with them: the ground truth for tensorplug's int8 reference kernels.

Converts two small Keras models with full-integer post-training
quantization (a seeded representative dataset): an MLP (Dense 24 -> 16
ReLU, -> 12 ReLU6, -> 10 without a bias) and a convnet (Conv2D SAME ReLU,
Conv2D VALID strided, DepthwiseConv2D multiplier 2 ReLU6, MaxPool, an Add
of two branches, AveragePool, Dense). Runs each in tf.lite.Interpreter with
the reference kernels (OpResolverType.BUILTIN_REF) on seeded int8 inputs and
prints every op of the kinds below as

  op <MODEL> <KIND> <key>=<value> …      (activation, strides, dilations,
                                           depth multiplier, pool size)
  tensor <role> <zero points…> ; <scales (float32 bits, hex)…> ; <quantized dim> ; <dims…> ; <values…>

with roles input, input2, filter, bias, output (a missing bias is not
printed). tests/tests/int8_vs_tflite.rs runs tensorplug_core's int8
reference kernels on the same tensors and parameters and asserts that the
bytes are equal.
"""
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402

ACTIVATIONS = {0: "NONE", 1: "RELU", 3: "RELU6"}
KINDS = {"FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "MAX_POOL_2D",
         "AVERAGE_POOL_2D", "ADD"}
BATCH = 16


def f32_bits(v):
    return struct.pack(">f", float(np.float32(v))).hex()


def mlp():
    bias = tf.keras.initializers.RandomNormal(stddev=0.5, seed=3)
    inputs = tf.keras.Input((24,))
    h = tf.keras.layers.Dense(16, activation="relu", bias_initializer=bias)(inputs)
    h = tf.keras.layers.Dense(12, activation="relu6", bias_initializer=bias)(h)
    outputs = tf.keras.layers.Dense(10)(h)  # zero bias: the converter drops it
    return tf.keras.Model(inputs, outputs), (24,)


def convnet():
    bias = tf.keras.initializers.RandomNormal(stddev=0.3, seed=4)
    L = tf.keras.layers
    inputs = tf.keras.Input((12, 12, 3))
    a = L.Conv2D(8, 3, padding="same", activation="relu", bias_initializer=bias)(inputs)
    b = L.Conv2D(8, 3, strides=2, padding="valid", bias_initializer=bias)(a)
    c = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu6",
                          bias_initializer=bias)(b)
    d = L.MaxPooling2D(2, padding="same")(c)
    e = L.Conv2D(16, 1, bias_initializer=bias)(d)
    f = L.Add()([d, e])
    g = L.AveragePooling2D(2, padding="same")(f)
    h = L.Flatten()(g)
    outputs = L.Dense(5, bias_initializer=bias)(h)
    return tf.keras.Model(inputs, outputs), (12, 12, 3)


def convert(model, shape, int8_io=True):
    """Full-int8 post-training quantization; with `int8_io` False the model
    keeps float input and output (a QUANTIZE and a DEQUANTIZE at its edges)."""
    rng = np.random.default_rng(11)

    def representative():
        for _ in range(64):
            yield [rng.normal(0, 2, (1, *shape)).astype(np.float32)]

    # From the traced model, frozen directly: `from_keras_model` first saves
    # a SavedModel, whose Python tracing cost MobileNet 13 s more here.
    traced = tf.function(model).get_concrete_function(tf.TensorSpec([None, *shape], tf.float32))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([traced], model)
    converter.experimental_lower_to_saved_model = False
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if int8_io:
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def options(flatbuffer):
    """Each op's builtin options, by its output tensor index."""
    fb = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    out = {}
    for op in fb.subgraphs[0].operators:
        o = op.builtinOptions
        fields = {}
        if hasattr(o, "fusedActivationFunction"):
            fields["activation"] = ACTIVATIONS[o.fusedActivationFunction]
        for name in ("strideH", "strideW", "dilationHFactor", "dilationWFactor",
                     "depthMultiplier", "filterHeight", "filterWidth"):
            if hasattr(o, name):
                fields[name] = getattr(o, name)
        out[op.outputs[0]] = fields
    return out


def invoke(flatbuffer, shape, seed, batch=BATCH, preserve=True):
    """TFLite's reference kernels on `batch` seeded int8 inputs: the
    interpreter (every tensor kept when `preserve`), its tensor details by
    index, and the input."""
    interpreter = tf.lite.Interpreter(
        model_content=flatbuffer,
        experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=preserve)
    inp = interpreter.get_input_details()[0]
    interpreter.resize_tensor_input(inp["index"], [batch, *shape])
    interpreter.allocate_tensors()
    inp = interpreter.get_input_details()[0]
    details = {d["index"]: d for d in interpreter.get_tensor_details()}
    rng = np.random.default_rng(seed)
    if inp["dtype"] == np.float32:
        x = rng.normal(0, 2, size=inp["shape"]).astype(np.float32)
    else:
        x = rng.integers(-128, 128, size=inp["shape"], dtype=np.int8)
    interpreter.set_tensor(inp["index"], x)
    interpreter.invoke()
    return interpreter, details, x


def dump(name, model, shape, seed):
    flatbuffer = convert(model, shape)
    interpreter, details, _ = invoke(flatbuffer, shape, seed)
    opts = options(flatbuffer)
    count = 0
    for op in interpreter._get_ops_details():
        kind = op["op_name"]
        if kind not in KINDS:
            continue
        out = op["outputs"][0]
        fields = " ".join(f"{k}={v}" for k, v in opts[out].items())
        print(f"op {name} {kind} {fields}")
        roles = (["input", "input2"] if kind == "ADD"
                 else ["input", "filter", "bias"] if kind not in ("MAX_POOL_2D", "AVERAGE_POOL_2D")
                 else ["input"])
        for role, index in [*zip(roles, op["inputs"]), ("output", out)]:
            if index < 0:
                continue
            d = details[index]
            q = d["quantization_parameters"]
            values = interpreter.get_tensor(index).reshape(-1)
            print(f"tensor {role} " + " ".join(str(int(z)) for z in q["zero_points"]) + " ; "
                  + " ".join(f32_bits(s) for s in q["scales"]) + f" ; {q['quantized_dimension']} ; "
                  + " ".join(str(v) for v in d["shape"]) + " ; "
                  + " ".join(str(int(v)) for v in values))
        count += 1
    if count == 0:
        sys.exit(f"no op of {sorted(KINDS)} in the converted {name}")


def main():
    tf.keras.utils.set_random_seed(7)
    dump("mlp", *mlp(), seed=5)
    dump("convnet", *convnet(), seed=6)


if __name__ == "__main__":
    main()
