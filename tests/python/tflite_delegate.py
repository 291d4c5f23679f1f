"""The LiteRT external delegate (`export_delegate!`) under a real TFLite
runtime: a Keras model converted by TF's TFLite converter, run with and
without `load_delegate(<plugin>)`, in TF's `tf.lite.Interpreter`
(`--runtime tf`, the default) or in `ai_edge_litert.interpreter`
(`--runtime litert`, on the models a TF run left in `--out`: LiteRT's
venv has no TF). Float model first, then the int8 models (bit-exact).

Prints one `check <name> ok ...` line per check and exits 1 on the first
failure. The plugin is loaded by `load_delegate` only (not as a TF
pluggable device): the converter crashes with a plugin device registered
(FACTS.md), and LiteRT users have no TF.

usage: tflite_delegate.py --plugin <lib.so> --out <dir> [--npu-plugin <lib.so>]
       [--runtime tf|litert] [--no-mobilenets]
"""

import argparse
import json
import os
import sys

import numpy as np

# The runtime under test: TF's `tf.lite` (and the converter), or LiteRT's.
tf = None
rt = None


def use_runtime(name):
    global tf, rt
    if name == "tf":
        import tensorflow

        tf = tensorflow
        rt = argparse.Namespace(
            Interpreter=tf.lite.Interpreter,
            load_delegate=tf.lite.experimental.load_delegate,
            OpResolverType=tf.lite.experimental.OpResolverType,
            version=f"tf {tf.__version__}",
        )
    else:
        import importlib.metadata

        from ai_edge_litert import interpreter as litert

        rt = argparse.Namespace(
            Interpreter=litert.Interpreter,
            load_delegate=litert.load_delegate,
            OpResolverType=litert.OpResolverType,
            version=f"ai-edge-litert {importlib.metadata.version('ai-edge-litert')}",
        )

BATCH = 4
# Float tolerance of the model's output: the device's GEMM is within
# (k+2)·ε·Σ|a·b| of the exact result (docs/device-numerics.md) with
# k <= 16 here, ADD and RELU are exact; 1e-5 relative + 1e-6 absolute is
# above that bound through three layers and a softmax.
RTOL, ATOL = 1e-5, 1e-6


def fail(msg):
    print(f"FAIL {msg}", flush=True)
    sys.exit(1)


def model_bytes():
    """FC(relu) -> SIN -> RELU -> FC -> ADD(relu, with the input) -> FC
    -> SOFTMAX: SIN is not in the delegate's op set (the device has no
    sine), so the float nodes around it form two partitions, of 1 and 5
    nodes."""
    tf.keras.utils.set_random_seed(7)
    layers = tf.keras.layers
    x = tf.keras.Input((8,), batch_size=BATCH)
    h = layers.Dense(16, activation="relu")(x)
    t = layers.ReLU()(layers.Lambda(tf.math.sin)(h))
    z = layers.ReLU()(layers.Add()([layers.Dense(8)(t), x]))
    y = layers.Softmax()(layers.Dense(4)(z))
    model = tf.keras.Model(x, y)
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def float_cnn_bytes():
    """A float32 convnet of every float op the device takes: CONV_2D
    (RELU6, and plain 1x1s with LOGISTIC and TANH after them),
    DEPTHWISE_CONV_2D (stride 2 SAME + RELU, and 1x1), PAD, MAX_POOL_2D,
    AVERAGE_POOL_2D, MUL (a sigmoid gate), CONCATENATION of channels,
    SUB, LEAKY_RELU (Keras' 0.3), CUMSUM (exclusive, along the width),
    MEAN over height and width, FULLY_CONNECTED and SOFTMAX."""
    tf.keras.utils.set_random_seed(7)
    layers = tf.keras.layers
    x = tf.keras.Input((12, 12, 3), batch_size=2)
    h = layers.Conv2D(8, 3, padding="same", activation="relu6")(x)
    h = layers.DepthwiseConv2D(3, strides=2, padding="same", activation="relu")(h)
    h = layers.MaxPooling2D(2, strides=1)(layers.ZeroPadding2D(((0, 1), (1, 0)))(h))
    h = layers.Multiply()([h, layers.Conv2D(8, 1, activation="sigmoid")(h)])
    h = layers.AveragePooling2D(3, strides=1, padding="same")(h)
    c = layers.Concatenate()([h, layers.Conv2D(4, 1, activation="tanh")(h)])
    c = layers.LeakyReLU()(layers.Subtract()([c, layers.DepthwiseConv2D(1)(c)]))
    c = layers.Lambda(lambda t: tf.math.cumsum(t, axis=2, exclusive=True))(c)
    y = layers.Softmax()(layers.Dense(5)(layers.GlobalAveragePooling2D()(c)))
    model = tf.keras.Model(x, y)
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def with_batch_statistics(model):
    """Gives `model`'s batch norms one batch's statistics (left at 0/1, a
    random-weight MobileNet's activations lose their scale through the
    blocks); returns that batch, the int8 conversions' calibration."""
    calibration = np.random.default_rng(1).uniform(-1, 1, (8, 96, 96, 3)).astype(np.float32)
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            layer.momentum = 0.0
    model(calibration, training=True)
    return calibration


def float_mobilenet_bytes():
    """keras.applications' MobileNetV2-0.35 in float32 (batch norms as the
    int8 one's, so its logits differ from image to image): CONV_2D and
    DEPTHWISE_CONV_2D with RELU6, ADD, MEAN, FULLY_CONNECTED, SOFTMAX, and
    on Keras 2 PAD."""
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.applications.MobileNetV2(
        input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10
    )
    with_batch_statistics(model)
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def float_transformer_bytes():
    """The Keras guide's transformer block (MultiHeadAttention,
    LayerNormalization, the feed-forward Dense pair) on a batch of 2 of 16
    tokens of 32, then GlobalAveragePooling1D and Dense(4): FULLY_CONNECTED,
    RESHAPE, TRANSPOSE, BATCH_MATMUL, MUL, SOFTMAX, ADD, MEAN over the last
    axis and over the tokens, SQUARED_DIFFERENCE, RSQRT and (Keras 3) NEG."""
    tf.keras.utils.set_random_seed(7)
    layers = tf.keras.layers
    x = tf.keras.Input((16, 32), batch_size=2)
    attn = layers.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)
    h = layers.LayerNormalization(epsilon=1e-6)(x + attn)
    ffn = layers.Dense(32)(layers.Dense(32, activation="relu")(h))
    h = layers.LayerNormalization(epsilon=1e-6)(h + ffn)
    # The Keras text-classification example's head: MEAN over the tokens.
    model = tf.keras.Model(x, layers.Dense(4)(layers.GlobalAveragePooling1D()(h)))
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def float_elementwise_bytes():
    """The float32 element-wise ops the transformer block does not use:
    ABS, SQRT, EXP, LOG, MAXIMUM and MINIMUM (broadcasting a row), a
    hard swish, which the converter fuses into HARD_SWISH, and a Dense
    with relu6, a FULLY_CONNECTED with the RELU6 fused."""
    tf.keras.utils.set_random_seed(7)
    x = tf.keras.Input((8,), batch_size=2)
    row = tf.constant(np.linspace(-0.5, 0.5, 8, dtype=np.float32))

    def body(t):
        a = tf.math.sqrt(tf.math.abs(t))
        b = tf.math.exp(tf.math.minimum(t, row))
        c = tf.math.log(tf.math.abs(t) + 1.0)
        return tf.math.maximum(a - b, c)

    h = tf.keras.layers.Lambda(body)(x)
    h = tf.keras.layers.Lambda(lambda t: t * tf.nn.relu6(t + 3.0) / 6.0)(h)
    h = tf.keras.layers.Dense(8, activation="relu6")(h)
    model = tf.keras.Model(x, tf.keras.layers.Dense(3)(h))
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def float_mobilenet_v3_bytes():
    """keras.applications' MobileNetV3Small-0.75 in float32 (batch norms
    as the int8 one's): HARD_SWISH (Keras 3; Keras 2 writes its parts),
    the squeeze-and-excitation MULs, MEAN with keep_dims, and on Keras 3
    the run-time shape of its classifier's Flatten."""
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.applications.MobileNetV3Small(
        input_shape=(96, 96, 3), alpha=0.75, weights=None, classes=10,
        include_preprocessing=False,
    )
    with_batch_statistics(model)
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def float_dense3d_bytes():
    """A Dense on a rank-3 input without a batch size, and the input's
    shape past the batch as a second output: on Keras 3 the shape
    arithmetic (SHAPE, GATHER, REDUCE_PROD, CONCATENATION, PACK) feeds
    RESHAPEs whose outputs the converter left as placeholders."""
    tf.keras.utils.set_random_seed(7)
    x = tf.keras.Input((4, 3))
    h = tf.keras.layers.Dense(2)(x)
    shape = tf.keras.layers.Lambda(lambda t: tf.shape(t)[1:])(h)
    return tf.lite.TFLiteConverter.from_keras_model(tf.keras.Model(x, [h, shape])).convert()


def folded_outputs_case(plugin, out, model):
    """Folded values the CPU reads: on Keras 3 the delegate folds the
    shape arithmetic at prepare into a partition of its own whose outputs
    the kernel writes at every invoke for the CPU's RESHAPEs (which stay
    on the CPU, the reason naming the placeholder shapes); the outputs
    equal the interpreter's exactly."""
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 4, 3)).astype(np.float32) for _ in range(2)]
    want = [run_all(interpreter(model), x) for x in xs]
    report_path = os.path.join(out, "report_dense3d.json")
    d = rt.load_delegate(plugin, {"allow_dynamic_tensors": "true", "report_file": report_path})
    dev = interpreter(model, [d])
    got = [run_all(dev, x) for x in xs]
    if any(not np.array_equal(g, w) for gs, ws in zip(got, want) for g, w in zip(gs, ws)):
        fail(f"dense3d: outputs {got} differ from the interpreter's {want}")
    with open(report_path) as f:
        nodes = json.load(f)["graphs"][0]["nodes"]
    folded = [n for n in nodes if n["folded"] is not None]
    if folded:
        reshapes = [n for n in nodes if n["op"] == "RESHAPE"]
        if any(n["decision"] != "cpu" or "placeholders" not in n["reason"] for n in reshapes):
            fail(f"dense3d: the RESHAPEs' decisions {reshapes}")
        if any(n["device_runs"] != len(xs) for n in folded):
            fail(f"dense3d: folded nodes did not run with their partition: {folded}")
    print(f"check dense3d ok folded={len(folded)} of {len(nodes)}", flush=True)


def run_all(interp, x):
    """Every output of one invoke on `x`."""
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return [interp.get_tensor(o["index"]).copy() for o in interp.get_output_details()]


def float_cumsum_bytes():
    """Two CUMSUMs (reverse along the rows, then exclusive along the
    columns) of a [3, 5, 7] input: the device's `Cumsum` record."""
    x = tf.keras.Input((5, 7), batch_size=3)
    h = tf.keras.layers.Lambda(lambda t: tf.math.cumsum(t, axis=1, reverse=True))(x)
    y = tf.keras.layers.Lambda(lambda t: tf.math.cumsum(t, axis=-1, exclusive=True))(h)
    return tf.lite.TFLiteConverter.from_keras_model(tf.keras.Model(x, y)).convert()


def cumsum_check(plugin, out, model):
    """Both CUMSUMs on the device, bit for bit equal to TFLite's kernel on
    values whose sums round differently in another order."""
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal((3, 5, 7)) * 10.0 ** rng.integers(-3, 6, (3, 5, 7)))
          .astype(np.float32) for _ in range(3)]
    want = run(interpreter(model), xs)
    report_path = os.path.join(out, "report_cumsum.json")
    got = run(interpreter(model, [rt.load_delegate(plugin, {"report_file": report_path})]), xs)
    if not all(np.array_equal(g, w) for g, w in zip(got, want)):
        fail(f"cumsum: max |diff| {max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))}")
    with open(report_path) as f:
        nodes = json.load(f)["graphs"][0]["nodes"]
    if [(n["op"], n["decision"]) for n in nodes] != [("CUMSUM", "device")] * 2:
        fail(f"cumsum: nodes {nodes}")
    print(f"check float_cumsum ok bit_exact_outputs={len(xs) * want[0].size}", flush=True)


def shared_constants_check(plugin, out, model):
    """Two interpreters given one delegate: the second binds the first's
    constants on the device (kept by content) and uploads none, both equal
    the interpreter's results, and the second still runs after the first
    is gone."""
    rng = np.random.default_rng(21)
    ref = interpreter(model)
    shape = tuple(ref.get_input_details()[0]["shape"])
    xs = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(2)]
    want = run(ref, xs)
    path = os.path.join(out, "report_shared.json")
    d = rt.load_delegate(plugin, {"report_file": path})
    first, second = interpreter(model, [d]), interpreter(model, [d])
    got = run(first, xs)
    del first
    again = run(second, xs)
    if not all(np.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip(got, want)):
        fail("shared_constants: outputs differ from the interpreter's")
    if not all(np.array_equal(a, g) for a, g in zip(again, got)):
        fail("shared_constants: the second interpreter's outputs differ from the first's")
    with open(path) as f:
        graphs = json.load(f)["graphs"]
    sums = [(sum(p["constants_uploaded"] for p in g["programs"]),
             sum(p["constants_reused"] for p in g["programs"])) for g in graphs]
    # The first may reuse within the model (equal biases or blocks); the
    # second binds all of its constants.
    if len(sums) != 2 or sums[0][0] == 0 or sums[1] != (0, sum(sums[0])):
        fail(f"shared_constants: (uploaded, reused) bytes per interpreter {sums}")
    print(f"check shared_constants ok first=(uploaded {sums[0][0]}, reused {sums[0][1]}) "
          f"second=(uploaded 0, reused {sums[1][1]})", flush=True)


def float_check(plugin, out, name, model):
    """Every node of a float model on the device, its outputs within the
    float tolerance of TFLite's kernels over 8 invokes, and top-1 equal."""
    rng = np.random.default_rng(13)
    ref = interpreter(model)
    shape = tuple(ref.get_input_details()[0]["shape"])
    xs = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(8)]
    want = run(ref, xs)
    report_path = os.path.join(out, f"report_{name}.json")
    options = {"report_file": report_path}
    if name == "float_mobilenet_v3":
        # Keras 3 flattens its classifier with a shape computed at run time.
        options["allow_dynamic_tensors"] = "true"
    d = rt.load_delegate(plugin, options)
    got = run(interpreter(model, [d]), xs)
    worst = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
    if not all(np.allclose(g, w, rtol=1e-4, atol=1e-6) for g, w in zip(got, want)):
        fail(f"{name}: max |diff| {worst} past rtol 1e-4")
    top1 = sum(int(np.sum(g.argmax(-1) == w.argmax(-1))) for g, w in zip(got, want))
    if top1 != sum(w.shape[0] for w in want):
        fail(f"{name}: top-1 agrees on {top1} images only")
    with open(report_path) as f:
        nodes = json.load(f)["graphs"][0]["nodes"]
    off = [(n["op"], n["reason"]) for n in nodes if n["decision"] != "device"]
    if off:
        fail(f"{name}: not every node ran on the device: {off}")
    if any(n["device_runs"] != len(xs) for n in nodes):
        fail(f"{name}: a node did not run on every invoke: {nodes}")
    ops = sorted({n["op"] for n in nodes})
    print(f"check {name} ok max_abs_diff={worst:.3g} top1_equal={top1} nodes={len(nodes)} "
          f"ops={ops}", flush=True)


def int8_models(only=None):
    """The converter's full-integer models of an MLP with a residual ADD:
    `per_tensor` (`_experimental_disable_per_channel`: one weight scale
    per FULLY_CONNECTED) and `default` (TF 2.21's converter gives
    FULLY_CONNECTED per-channel weight scales, TF 2.15's per-tensor), and
    the others below; with `only`, just those named."""
    models = {}
    layers = tf.keras.layers
    for name, per_tensor in [("per_tensor", True), ("default", False), ("conv", False),
                             ("float_io", False), ("mobilenet", False), ("softmax", False),
                             ("activations", False), ("dynamic", False), ("mean_keepdims", False),
                             ("mobilenet_v3", False), ("concat", False)]:
        if only is not None and name not in only:
            continue
        tf.keras.utils.set_random_seed(7)
        calibration = None
        if name in ("mobilenet", "mobilenet_v3"):
            # keras.applications' MobileNetV2-0.35 (untrained, 10 classes):
            # CONV_2D, DEPTHWISE_CONV_2D, ADD, MEAN, FULLY_CONNECTED and
            # SOFTMAX; MobileNetV3Small-0.75 adds HARD_SWISH, MUL (its
            # squeeze-and-excitation blocks) and MEAN with keep_dims. Their
            # batch norms take one batch's statistics first, so activations
            # keep their scale through the blocks (left at 0/1, the
            # converter's softmax input scale is so small that TFLite's own
            # reference kernel aborts on it).
            if name == "mobilenet":
                model = tf.keras.applications.MobileNetV2(
                    input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10
                )
            else:
                model = tf.keras.applications.MobileNetV3Small(
                    input_shape=(96, 96, 3), alpha=0.75, weights=None, classes=10,
                    include_preprocessing=False,
                )
            calibration = with_batch_statistics(model)
        elif name == "softmax":
            # SOFTMAX over 37 classes of logits spread wide enough that
            # `diff_min` drops the tail of some rows, and MEAN over the
            # middle axis of a 3-D tensor (batch 3: the ones matrix is
            # block-diagonal).
            x = tf.keras.Input((5, 6), batch_size=3)
            wide = tf.keras.initializers.RandomNormal(stddev=4.0)
            h = layers.Dense(37, kernel_initializer=wide)(layers.GlobalAveragePooling1D()(x))
            model = tf.keras.Model(x, layers.Softmax()(h))
        elif name == "concat":
            # CONCATENATION of two convolutions' channels (a U-Net's skip
            # join: rows of 4 and 6 bytes, 128 rows), then of three tensors
            # along the width (two joins, one through a temporary). The
            # converter gives every input the output's quantization.
            x = tf.keras.Input((8, 8, 3), batch_size=2)
            a = layers.Conv2D(4, 3, padding="same", activation="relu")(x)
            h = layers.Concatenate()([a, layers.Conv2D(6, 1)(x)])
            c = layers.Conv2D(5, 3, padding="same")(h)
            model = tf.keras.Model(x, layers.Concatenate(axis=2)([c, c, layers.Conv2D(5, 1)(c)]))
        elif name == "mean_keepdims":
            # GlobalAveragePooling2D(keepdims=True): MEAN over axes 1 and 2
            # keeping them, a batch of 2 (the SE blocks' form). Before it
            # an ADD of a constant per position and channel ([7, 7, 16],
            # which no bias can fold), broadcast along the batch (device
            # ABI 1.9).
            x = tf.keras.Input((7, 7, 5), batch_size=2)
            h = layers.Conv2D(16, 3, padding="same", activation="relu")(x)
            table = np.random.default_rng(2).uniform(-1, 1, (7, 7, 16)).astype(np.float32)
            h = layers.Lambda(lambda t: t + tf.constant(table))(h)
            model = tf.keras.Model(x, layers.GlobalAveragePooling2D(keepdims=True)(h))
        elif name == "dynamic":
            # No batch size: Flatten's shape is computed at run time (SHAPE,
            # STRIDED_SLICE, PACK, RESHAPE), a dynamic tensor.
            x = tf.keras.Input((4, 4, 2))
            h = layers.Conv2D(4, 3, activation="relu")(x)
            model = tf.keras.Model(x, layers.Dense(3)(layers.Flatten()(h)))
        elif name == "activations":
            # int8 LOGISTIC and TANH (Dense's sigmoid and tanh, which an
            # int8 FULLY_CONNECTED cannot fuse): lookup tables.
            x = tf.keras.Input((8,), batch_size=BATCH)
            h = layers.Dense(16, activation="sigmoid")(x)
            h = layers.Dense(8, activation="tanh")(h)
            h = layers.Dense(8)(h)
            # Keras 3's hard_swish converts to HARD_SWISH, here the output
            # itself (Keras 2 has none: its model ends with the Dense).
            if hasattr(tf.keras.activations, "hard_swish"):
                h = layers.Activation("hard_swish")(h)
            model = tf.keras.Model(x, h)
        elif name == "conv":
            # CONV_2D SAME + RELU, MAX_POOL_2D 2×2 stride 1 SAME (its
            # padding after), DEPTHWISE_CONV_2D stride 2 SAME + RELU6, a
            # 1×1 CONV_2D VALID, AVERAGE_POOL_2D 3×3 stride 1 SAME (border
            # averages over fewer taps), DEPTHWISE_CONV_2D ×2 VALID: the
            # last one's 2×4×4×12 values are the output (nothing after it
            # to hide a one-off).
            x = tf.keras.Input((12, 12, 3), batch_size=2)
            h = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
            h = layers.MaxPooling2D(2, strides=1, padding="same")(h)
            h = layers.DepthwiseConv2D(3, strides=2, padding="same", activation=tf.nn.relu6)(h)
            h = layers.Conv2D(6, 1, padding="valid")(h)
            h = layers.AveragePooling2D(3, strides=1, padding="same")(h)
            model = tf.keras.Model(x, layers.DepthwiseConv2D(3, depth_multiplier=2)(h))
        elif name == "float_io":
            # Float input and output, int8 inside: QUANTIZE, CONV_2D,
            # RESHAPE (Flatten), FULLY_CONNECTED, DEQUANTIZE, all on the
            # device, one partition.
            x = tf.keras.Input((6, 6, 2), batch_size=2)
            h = layers.Conv2D(4, 3, activation="relu")(x)
            model = tf.keras.Model(x, layers.Dense(5)(layers.Flatten()(h)))
        else:
            x = tf.keras.Input((8,), batch_size=BATCH)
            h = layers.Dense(16, activation="relu")(x)
            z = layers.ReLU()(layers.Add()([layers.Dense(8)(h), x]))
            model = tf.keras.Model(x, layers.Dense(4)(z))
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        rng = np.random.default_rng(5)
        shape = tuple(d or 2 for d in model.inputs[0].shape)
        if calibration is not None:
            conv.representative_dataset = lambda: ([calibration[i:i + 1]] for i in range(8))
        else:
            conv.representative_dataset = lambda: (
                [rng.standard_normal(shape).astype(np.float32)] for _ in range(16)
            )
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if name != "float_io":
            conv.inference_input_type = tf.int8
            conv.inference_output_type = tf.int8
        if per_tensor:
            conv._experimental_disable_per_channel = True
        models[name] = conv.convert()
    return models


def fc_rounding():
    """How this runtime's reference int8 FULLY_CONNECTED rounds, as
    measured (stop 57, every model of this test bit for bit): twice on TF
    2.15.1, 2.16.2, 2.17.1, 2.18.1 and 2.19.1; once on TF 2.20.0 and
    2.21.0 and ai-edge-litert 2.3.0. The delegate's `fc_rounding=auto`
    (its default) must say the same in its report."""
    if tf is not None:
        major, minor = (int(p) for p in tf.__version__.split(".")[:2])
        if (major, minor) < (2, 20):
            return "double"
    return "single"


# The int8 ops every int8 model must run on the device, every invoke.
DEVICE_INT8_OPS = (
    "QUANTIZE",
    "DEQUANTIZE",
    "RESHAPE",
    "ADD",
    "FULLY_CONNECTED",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "MAX_POOL_2D",
    "AVERAGE_POOL_2D",
    "MEAN",
    "SOFTMAX",
    "PAD",
    "LOGISTIC",
    "TANH",
    "HARD_SWISH",
    "MUL",
    "CONCATENATION",
)


def int8_check(plugin, out, name, model):
    """`model` with and without the delegate: bit-exact over 16 invokes
    with TFLite's reference kernels, and every node of `DEVICE_INT8_OPS`
    ran on the device on every invoke."""
    rng = np.random.default_rng(11)
    ref = interpreter(model, reference=True)
    shape = tuple(ref.get_input_details()[0]["shape"])
    if ref.get_input_details()[0]["dtype"] == np.float32:
        # Past the calibrated range too, where QUANTIZE clamps.
        xs = [3 * rng.standard_normal(shape).astype(np.float32) for _ in range(16)]
    else:
        xs = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(16)]
    want = run(ref, xs)
    report_path = os.path.join(out, f"report_int8_{name}.json")
    options = {"report_file": report_path}
    if name == "mobilenet_v3":
        # Keras 3 flattens its classifier with a shape computed at run time.
        options["allow_dynamic_tensors"] = "true"
    d = rt.load_delegate(plugin, options)
    got = run(interpreter(model, [d], reference=True), xs)
    differ = sum(int(np.sum(g.view(np.uint8) != w.view(np.uint8))) for g, w in zip(got, want))
    if differ:
        fail(f"int8 {name}: {differ} of {len(xs) * want[0].size} outputs differ from the interpreter's")
    with open(report_path) as f:
        report = json.load(f)
    graph = report["graphs"][0]
    nodes, programs = graph["nodes"], graph["programs"]
    if report["fc_rounding"] != fc_rounding():
        fail(f"int8 {name}: the delegate rounds FULLY_CONNECTED {report['fc_rounding']} "
             f"({report['fc_rounding_source']}), this runtime {fc_rounding()}")
    scales = {d["index"]: len(d["quantization_parameters"]["scales"]) for d in ref.get_tensor_details()}
    weights = {d["index"]: d["inputs"][1] for d in ref._get_ops_details() if d["op_name"] == "FULLY_CONNECTED"}
    for n in nodes:
        if n["op"] in DEVICE_INT8_OPS and (
            n["decision"] != "device" or n["device_runs"] != len(xs)
        ):
            fail(f"int8 {name}: {n} should have run on the device {len(xs)} times")
    per_channel = sorted({scales[w] for w in weights.values()})
    if name == "conv" and any(n["op"] == "RELU6" for n in nodes):
        fail("int8 conv: the converter left RELU6 unfused; the fused RELU6 is not tested")
    if name == "float_io":
        ops = sorted({n["op"] for n in nodes})
        if ops != ["CONV_2D", "DEQUANTIZE", "FULLY_CONNECTED", "QUANTIZE", "RESHAPE"]:
            fail(f"int8 float_io: the converter wrote {ops}")
        if any(n["decision"] != "device" for n in nodes):
            fail(f"int8 float_io: not every node ran on the device: {nodes}")
    if name in ("mobilenet", "softmax", "activations", "mean_keepdims", "concat"):
        # Every node on the device: the "100% delegated".
        ops = sorted({n["op"] for n in nodes})
        want_ops = {
            "mobilenet": ["ADD", "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "MEAN", "SOFTMAX"],
            "softmax": ["FULLY_CONNECTED", "MEAN", "SOFTMAX"],
            "activations": ["FULLY_CONNECTED", "LOGISTIC", "TANH"],
            "mean_keepdims": ["ADD", "CONV_2D", "MEAN"],
            "concat": ["CONCATENATION", "CONV_2D"],
        }[name]
        if name == "activations" and "HARD_SWISH" in ops:
            want_ops = ["FULLY_CONNECTED", "HARD_SWISH", "LOGISTIC", "TANH"]
        # Keras 2's converter (TF 2.15) writes ZeroPadding2D as PAD; Keras
        # 3's folds it into the convolutions.
        if sorted(set(ops) - {"PAD"}) != want_ops:
            fail(f"int8 {name}: the converter wrote {ops}, expected {want_ops} (and PAD)")
        off = [(n["op"], n["reason"]) for n in nodes if n["decision"] != "device"]
        if off:
            fail(f"int8 {name}: not every node ran on the device: {off}")
    if name == "mobilenet_v3":
        # Every node, the shape arithmetic Keras 3 puts before the
        # classifier's RESHAPE (SHAPE, STRIDED_SLICE, PACK) included: the
        # delegate evaluates it at prepare, and the report gives its value.
        shape_ops = {"SHAPE", "STRIDED_SLICE", "PACK"}
        ops = sorted({n["op"] for n in nodes} - shape_ops - {"RESHAPE", "PAD"})
        want_ops = ["ADD", "CONV_2D", "DEPTHWISE_CONV_2D", "HARD_SWISH", "MEAN", "MUL", "SOFTMAX"]
        if ops != want_ops:
            fail(f"int8 mobilenet_v3: the converter wrote {ops}, expected {want_ops}")
        off = [(n["op"], n["reason"]) for n in nodes if n["decision"] != "device"]
        if off:
            fail(f"int8 mobilenet_v3: not every node ran on the device: {off}")
        folded = {n["op"]: n["folded"] for n in nodes if n["op"] in shape_ops}
        if folded and folded != {"SHAPE": [1, 1, 1, 10], "STRIDED_SLICE": [1], "PACK": [1, 10]}:
            fail(f"int8 mobilenet_v3: the shape arithmetic folded to {folded}")
        if len(graph["partitions"]) != 1:
            fail(f"int8 mobilenet_v3: {len(graph['partitions'])} partitions, expected 1")
        # Past the format's 256 buffers a partition is several programs.
        if len(programs) < 2:
            fail(f"int8 mobilenet_v3: {len(programs)} program(s), expected the partition split")
    if name == "conv":
        pools = sorted(n["op"] for n in nodes if "POOL" in n["op"])
        if pools != ["AVERAGE_POOL_2D", "MAX_POOL_2D"]:
            fail(f"int8 conv: the model's pools are {pools}, not one of each")
    # The partition's intermediates share one arena planned by liveness.
    arena, unshared = programs[0]["arena_bytes"], programs[0]["unshared_bytes"]
    if arena > unshared or (name.startswith("mobilenet") and 2 * arena > unshared):
        fail(f"int8 {name}: an arena of {arena} bytes for {unshared} bytes of intermediates")
    on_device = [n["op"] for n in nodes if n["decision"] == "device"]
    if len(on_device) > 12:
        on_device = f"{len(on_device)} of {len(nodes)} nodes"
    print(
        f"check int8_{name} ok bit_exact_outputs={len(xs) * want[0].size} "
        f"fc_rounding={fc_rounding()} fc_weight_scales={per_channel} device={on_device} "
        f"programs={len(programs)} arena={arena} of {unshared}",
        flush=True,
    )


def interpreter(model, delegates=None, reference=False):
    """TFLite's builtin kernels, without XNNPACK (the default delegate):
    the optimized ones, or with `reference` its reference kernels (what
    int8 results must equal bit for bit)."""
    resolver = (
        rt.OpResolverType.BUILTIN_REF
        if reference
        else rt.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    return rt.Interpreter(
        model_content=model,
        experimental_delegates=delegates or [],
        experimental_op_resolver_type=resolver,
    )


def run(interp, xs):
    interp.allocate_tensors()
    inp = interp.get_input_details()[0]["index"]
    out = interp.get_output_details()[0]["index"]
    results = []
    for x in xs:
        interp.set_tensor(inp, x)
        interp.invoke()
        results.append(interp.get_tensor(out).copy())
    return results


def expect_value_error(plugin, options, needle):
    try:
        rt.load_delegate(plugin, options)
    except ValueError as e:
        if needle not in str(e):
            fail(f"load_delegate({options}) raised {e!r}, without {needle!r}")
        return str(e).strip().splitlines()[-1]
    fail(f"load_delegate({options}) did not raise")


# The models `--no-mobilenets` leaves out.
MOBILENETS = ("float_mobilenet", "float_mobilenet_v3", "int8_mobilenet", "int8_mobilenet_v3")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--npu-plugin", help="the example NPU's plugin, a second backend")
    ap.add_argument("--runtime", default="tf", choices=["tf", "litert"])
    ap.add_argument("--no-mobilenets", action="store_true",
                    help="leave out the four keras.applications MobileNets (about 95 s of "
                         "TF 2.15's converter): the older TFs' runs in CI")
    args = ap.parse_args()
    use_runtime(args.runtime)
    large = MOBILENETS if args.no_mobilenets else ()
    print(rt.version, flush=True)
    # A TF run converts the models and leaves them in --out; a LiteRT run
    # (no TF) reads them from there.
    names = ["model", "float_cnn", "float_mobilenet", "float_mobilenet_v3", "float_transformer",
             "float_elementwise", "float_dense3d", "float_cumsum",
             "int8_per_tensor", "int8_default", "int8_conv", "int8_float_io",
             "int8_mobilenet", "int8_softmax", "int8_activations", "int8_dynamic",
             "int8_mean_keepdims", "int8_mobilenet_v3", "int8_concat"]
    names = [n for n in names if n not in large]
    paths = {n: os.path.join(args.out, f"{n}.tflite") for n in names}
    if args.runtime == "tf":
        makers = {"model": model_bytes, "float_cnn": float_cnn_bytes,
                  "float_mobilenet": float_mobilenet_bytes,
                  "float_mobilenet_v3": float_mobilenet_v3_bytes,
                  "float_transformer": float_transformer_bytes,
                  "float_elementwise": float_elementwise_bytes,
                  "float_dense3d": float_dense3d_bytes,
                  "float_cumsum": float_cumsum_bytes}
        models = {n: make() for n, make in makers.items() if n not in large}
        int8 = [n[len("int8_"):] for n in names if n.startswith("int8_")]
        models.update({f"int8_{k}": v for k, v in int8_models(only=int8).items()})
        for n in names:
            with open(paths[n], "wb") as f:
                f.write(models[n])
    else:
        models = {}
        for n in names:
            with open(paths[n], "rb") as f:
                models[n] = f.read()
    model = models["model"]

    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((BATCH, 8)).astype(np.float32) for _ in range(3)]

    ref = interpreter(model)
    want = run(ref, xs)
    ops = {d["index"]: d["op_name"] for d in ref._get_ops_details()}

    # The cost model off: the 1-node partition is delegated too (the
    # default keeps it on the CPU, `cost_model_case`).
    report_path = os.path.join(args.out, "report.json")
    delegate = rt.load_delegate(
        args.plugin, {"device": "sim", "report_file": report_path, "cost_model": "off"}
    )
    dev = interpreter(model, [delegate])
    got = run(dev, xs)
    worst = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
    for g, w in zip(got, want):
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            fail(f"delegate output differs: max |diff| {worst}\n{g}\n{w}")
    print(f"check outputs ok max_abs_diff={worst:.3g} invokes={len(xs)}", flush=True)

    with open(report_path) as f:
        report = json.load(f)
    graph = report["graphs"][0]
    nodes = {n["index"]: n for n in graph["nodes"]}
    # The report's view of the nodes (read through abi's TfLiteRegistration)
    # is the runtime's own view.
    if {i: n["op"] for i, n in nodes.items()} != ops:
        fail(f"report ops {nodes} != runtime ops {ops}")
    on_device = sorted(n["op"] for n in nodes.values() if n["decision"] == "device")
    on_cpu = sorted(n["op"] for n in nodes.values() if n["decision"] == "cpu")
    if on_device != ["ADD", "FULLY_CONNECTED", "FULLY_CONNECTED", "FULLY_CONNECTED", "RELU",
                     "SOFTMAX"]:
        fail(f"device nodes {on_device}")
    if on_cpu != ["SIN"]:
        fail(f"cpu nodes {on_cpu}")
    # The op set once, at the top; a reason points to it.
    sin = next(n for n in nodes.values() if n["op"] == "SIN")
    if "FULLY_CONNECTED" not in report.get("op_set", "") or "`op_set`" not in sin["reason"]:
        fail(f"op_set {report.get('op_set')!r}, SIN's reason {sin['reason']!r}")
    for n in nodes.values():
        if n["decision"] == "cpu" and not n["reason"]:
            fail(f"node {n} stays on the CPU without a reason")
        runs = len(xs) if n["decision"] == "device" else 0
        if n["device_runs"] != runs:
            fail(f"node {n} ran {n['device_runs']} times on the device, expected {runs}")
    if sorted(map(len, graph["partitions"])) != [1, 5]:
        fail(f"partitions {graph['partitions']}")
    # TFLite's own plan: the delegated nodes are gone, DELEGATE nodes run.
    plan = [d["op_name"] for d in dev._get_ops_details()]
    delegate_nodes = [d for d in dev._get_ops_details() if d["op_name"] == "DELEGATE"]
    print(
        f"check report ok device={on_device} cpu={on_cpu} partitions={graph['partitions']} "
        f"runtime_delegate_nodes={len(delegate_nodes)}",
        flush=True,
    )
    for n in sorted(nodes.values(), key=lambda n: n["index"]):
        print(f"  node {n['index']} {n['op']} {n['decision']} partition={n['partition']} "
              f"reason={n['reason']}", flush=True)
    if len(delegate_nodes) != len(graph["partitions"]):
        fail(f"runtime plan {plan} has {len(delegate_nodes)} DELEGATE nodes")

    # The report's tensors (read through abi's TfLiteTensor) against the
    # runtime's: name, shape, type, quantization.
    type_codes = {np.float32: 1, np.int32: 2, np.int8: 9, np.int64: 4, np.uint8: 3}
    details = {d["index"]: d for d in ref.get_tensor_details()}
    checked = 0
    for t in graph["tensors"]:
        d = details.get(t["index"])
        if d is None:
            continue
        if t["name"] != d["name"] or t["dims"] != list(d["shape"]):
            fail(f"tensor {t} != runtime {d}")
        if type_codes.get(d["dtype"]) not in (None, t["type"]):
            fail(f"tensor {t} type != runtime {d['dtype']}")
        scale, zp = d["quantization"]
        if (t["scale"], t["zero_point"]) != (scale, zp):
            fail(f"tensor {t} quantization != runtime {d['quantization']}")
        checked += 1
    if checked != len(details):
        fail(f"checked {checked} of {len(details)} tensors")
    print(f"check layout ok tensors={checked} nodes={len(nodes)}", flush=True)
    del dev
    del delegate

    # A partition below min_nodes stays on the CPU, with the reason.
    report2 = os.path.join(args.out, "report2.json")
    d2 = rt.load_delegate(
        args.plugin, {"min_nodes": "3", "report_file": report2}
    )
    got2 = run(interpreter(model, [d2]), xs[:1])
    if not np.allclose(got2[0], want[0], rtol=RTOL, atol=ATOL):
        fail("min_nodes=3 output differs")
    with open(report2) as f:
        g2 = json.load(f)["graphs"][0]
    small = [n for n in g2["nodes"] if n["reason"] and "min_nodes=3" in n["reason"]]
    big = [p for p in graph["partitions"] if len(p) >= 3]
    if len(small) != 1 or g2["partitions"] != big:
        fail(f"min_nodes=3: {g2}")
    print(f"check min_nodes ok cpu_by_min_nodes={[n['op'] for n in small]}", flush=True)

    cost_model_case(args.plugin, args.out, model, xs, want, graph)

    # profile_file: the device's launches as a Chrome trace, each named by
    # its TFLite node, every delegated node on every invoke.
    trace_path = os.path.join(args.out, "trace.json")
    report7 = os.path.join(args.out, "report7.json")
    d7 = rt.load_delegate(args.plugin, {"profile_file": trace_path, "report_file": report7})
    run(interpreter(model, [d7]), xs)
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    with open(report7) as f:
        g7 = json.load(f)["graphs"][0]
    for n in (n for n in g7["nodes"] if n["decision"] == "device"):
        mine = [e for e in events if e["args"]["node"] == n["index"]]
        if len(mine) < len(xs) or any(
            e["dur"] < 0 or e["name"] != f"{n['op']} (node {n['index']})" for e in mine
        ):
            fail(f"profile_file: node {n['index']} ({n['op']}) has events {mine}")
    print(f"check profile_file ok events={len(events)}", flush=True)

    # max_partitions=1: the larger partition only, the other on the CPU
    # with the reason; the output unchanged.
    report5 = os.path.join(args.out, "report5.json")
    d6 = rt.load_delegate(args.plugin, {"max_partitions": "1", "report_file": report5})
    got5 = run(interpreter(model, [d6]), xs)
    if not all(np.allclose(g, w, rtol=RTOL, atol=ATOL) for g, w in zip(got5, want)):
        fail("max_partitions=1 output differs")
    with open(report5) as f:
        g5 = json.load(f)["graphs"][0]
    capped = [n for n in g5["nodes"] if n["reason"] and "max_partitions=1" in n["reason"]]
    if len(g5["partitions"]) != 1 or len(g5["partitions"][0]) != 5 or len(capped) != 1:
        fail(f"max_partitions=1: {g5}")
    print(f"check max_partitions ok cpu_by_max_partitions={[n['op'] for n in capped]}", flush=True)

    # A resized input: without kTfLiteDelegateFlagsAllowDynamicTensors the
    # runtime undoes the delegation and prepares the delegate again, so
    # the partitions are rebuilt for the new shape (a second graph in the
    # report).
    report3 = os.path.join(args.out, "report3.json")
    x2 = xs[0][:2]
    def resized(delegates):
        it = interpreter(model, delegates)
        it.allocate_tensors()
        inp = it.get_input_details()[0]["index"]
        it.resize_tensor_input(inp, [2, 8])
        return run(it, [x2])[0]
    want3 = resized([])
    got3 = resized([rt.load_delegate(args.plugin, {"report_file": report3,
                                                    "cost_model": "off"})])
    with open(report3) as f:
        graphs3 = json.load(f)["graphs"]
    runs3 = [n["device_runs"] for n in graphs3[-1]["nodes"] if n["decision"] == "device"]
    if got3.shape != (2, 4) or not np.allclose(got3, want3, rtol=RTOL, atol=ATOL):
        fail(f"resized output differs:\n{got3}\n{want3}")
    if len(graphs3) != 2 or runs3 != [1] * 6:
        fail(f"resize: {len(graphs3)} graphs, device runs {runs3}")
    print(f"check resize ok graphs={len(graphs3)}", flush=True)

    # Bad options and devices: a ValueError with the reason, no crash.
    e1 = expect_value_error(args.plugin, {"devcie": "sim"}, "unknown option `devcie`")
    e2 = expect_value_error(args.plugin, {"device": "nosuch:x"}, "cannot open device `nosuch:x`")
    e3 = expect_value_error(args.plugin, {"min_nodes": "zero"}, "min_nodes")
    expect_value_error(args.plugin, {"max_partitions": "0"}, "max_partitions")
    expect_value_error(args.plugin, {"host_gflops": "fast"}, "host_gflops")
    # Without the option, the device comes from the plugin's own setting.
    os.environ["TENSORPLUG_FPGA_DEVICE"] = "nosuch:y, sim"
    e4 = expect_value_error(args.plugin, {}, "cannot open device `nosuch:y`")
    del os.environ["TENSORPLUG_FPGA_DEVICE"]
    print(f"check errors ok\n  {e1}\n  {e2}\n  {e3}\n  {e4}", flush=True)

    # Injected failures (`fault`): a failed kernel init fails the
    # delegation (the runtime keeps its CPU plan, the report says why); a
    # failed invoke is an error of that invoke. Neither crashes.
    report4 = os.path.join(args.out, "report4.json")
    d4 = rt.load_delegate(args.plugin, {"fault": "init", "report_file": report4})
    try:
        interpreter(model, [d4])
        fail("fault=init: the interpreter was created")
    except (RuntimeError, ValueError) as e:
        if "injected fault: kernel init" not in str(e):
            fail(f"fault=init raised {e!r}")
        f4 = str(e).splitlines()[0]
    with open(report4) as f:
        g4 = json.load(f)["graphs"][0]
    if g4["partitions"] or any(n["decision"] != "cpu" for n in g4["nodes"]) or not any(
        "the delegation failed" in (n["reason"] or "") for n in g4["nodes"]
    ):
        fail(f"fault=init report: {g4}")
    d5 = rt.load_delegate(args.plugin, {"fault": "invoke"})
    it5 = interpreter(model, [d5])
    try:
        run(it5, xs[:1])
        fail("fault=invoke: invoke succeeded")
    except RuntimeError as e:
        if "injected fault: invoke" not in str(e):
            fail(f"fault=invoke raised {e!r}")
        f5 = str(e).splitlines()[0]
    print(f"check faults ok\n  {f4}\n  {f5}", flush=True)
    again = run(interpreter(model), xs[:1])
    if not np.array_equal(again[0], want[0]):
        fail("the interpreter without the delegate changed after the errors")
    print("check after_errors ok", flush=True)

    if args.npu_plugin:
        npu_case(args.npu_plugin, args.out, model, xs, want)

    for name in ["float_cnn", "float_mobilenet", "float_mobilenet_v3", "float_transformer",
                 "float_elementwise"]:
        if name not in large:
            float_check(args.plugin, args.out, name, models[name])
    cumsum_check(args.plugin, args.out, models["float_cumsum"])
    shared_constants_check(args.plugin, args.out, models["float_cnn"])
    for name in ["per_tensor", "default", "conv", "float_io", "mobilenet", "softmax", "activations",
                 "mean_keepdims", "mobilenet_v3", "concat"]:
        if f"int8_{name}" not in large:
            int8_check(args.plugin, args.out, name, models[f"int8_{name}"])
    dynamic_case(args.plugin, args.out, models["int8_dynamic"])
    folded_outputs_case(args.plugin, args.out, models["float_dense3d"])


def cost_model_case(plugin, out, model, xs, want, graph):
    """The cost model judges every partition but the largest. On `sim` it
    measures a link of well under a microsecond, so its decision on the
    split model's 1-node partition (a 512-flop FULLY_CONNECTED) may go
    either way; the check is that it follows its own estimate. With a
    100 µs round trip (a USB or SPI link) that partition stays on the CPU;
    with a free link it is delegated."""
    small = min(graph["partitions"], key=len)
    big = max(graph["partitions"], key=len)

    def load(name, options):
        report = os.path.join(out, f"report_{name}.json")
        d = rt.load_delegate(plugin, {"report_file": report, **options})
        got = run(interpreter(model, [d]), xs)
        if not all(np.allclose(g, w, rtol=RTOL, atol=ATOL) for g, w in zip(got, want)):
            fail(f"cost model {name}: output differs")
        with open(report) as f:
            r = json.load(f)
        g = r["graphs"][0]
        costs = g["partition_costs"]
        if [c["nodes"] for c in costs] != [big, small] or \
                costs[0]["decision"] != "device (the largest partition)":
            fail(f"cost model {name}: partition_costs {costs}")
        c = costs[1]
        on_cpu = [n["index"] for n in g["nodes"]
                  if n["reason"] and "the cost model keeps" in n["reason"]]
        kept = c["device_us"] < c["host_us"]
        if c["decision"] != ("device" if kept else "cpu") or on_cpu != ([] if kept else small) \
                or sorted(g["partitions"]) != sorted([big, small] if kept else [big]):
            fail(f"cost model {name}: {c} but partitions {g['partitions']}, by cost {on_cpu}")
        return r["cost_model"], c

    measured, c = load("measured", {})
    if measured["link_round_trip_source"] != "measured" or not measured["host_gflops"] > 0:
        fail(f"cost model: figures {measured}")
    usb, c_usb = load("usb", {"link_round_trip_us": "100"})
    if c_usb["decision"] != "cpu" or usb["link_round_trip_source"] != "options" \
            or usb["link_rate_source"] != "measured":
        fail(f"cost model, 100 µs link: {c_usb} {usb}")
    free, c_free = load("free", {"link_round_trip_us": "0", "link_mbytes_per_s": "1e9"})
    if c_free["decision"] != "device":
        fail(f"cost model, free link: {c_free} {free}")
    print(f"check cost_model ok sim_round_trip_us={measured['link_round_trip_us']:.2f} "
          f"sim_mbytes_per_s={measured['link_mbytes_per_s']:.0f} "
          f"host_gflops={measured['host_gflops']:.2f} sim_small={c['decision']} "
          f"usb_small={c_usb['device_us']:.1f}us_vs_{c_usb['host_us']:.2f}us", flush=True)


def dynamic_case(plugin, out, model):
    """A graph with a dynamic tensor (Flatten's shape computed at run
    time): the runtime refuses a delegate that does not allow them (its
    own error), and with `allow_dynamic_tensors` the delegate takes every
    node in one partition, bit-exact: the convolution and the
    FULLY_CONNECTED run on the device, the shape arithmetic (SHAPE,
    STRIDED_SLICE, PACK) is evaluated at prepare, so the RESHAPE has a
    known shape. A resize is then refused, naming the tensor."""
    ops = {o["op_name"] for o in interpreter(model)._get_ops_details()}
    # Keras 2's converter (TF 2.15) writes Flatten with a constant shape.
    dynamic = "SHAPE" in ops
    if dynamic:
        try:
            interpreter(model, [rt.load_delegate(plugin, {})], reference=True)
            fail("dynamic: the runtime applied a delegate without allow_dynamic_tensors")
        except (RuntimeError, ValueError):
            pass
    report_path = os.path.join(out, "report_dynamic.json")
    d = rt.load_delegate(plugin, {"allow_dynamic_tensors": "true", "report_file": report_path})
    rng = np.random.default_rng(13)
    ref = interpreter(model, reference=True)
    shape = tuple(ref.get_input_details()[0]["shape"])
    xs = [rng.integers(-128, 128, shape, dtype=np.int8) for _ in range(4)]
    want = run(ref, xs)
    got = run(interpreter(model, [d], reference=True), xs)
    if any(not np.array_equal(g, w) for g, w in zip(got, want)):
        fail("dynamic: the outputs differ from the reference kernels'")
    with open(report_path) as f:
        nodes = json.load(f)["graphs"][0]["nodes"]
    on_device = sorted(n["op"] for n in nodes if n["decision"] == "device")
    want = ["CONV_2D", "FULLY_CONNECTED", "RESHAPE"]
    if dynamic:
        want = ["CONV_2D", "FULLY_CONNECTED", "PACK", "RESHAPE", "SHAPE", "STRIDED_SLICE"]
    if on_device != want:
        fail(f"dynamic: device {on_device}: {nodes}")
    folded = {n["op"]: n["folded"] for n in nodes if n["folded"] is not None}
    if dynamic and folded != {"SHAPE": [1, 2, 2, 4], "STRIDED_SLICE": [1], "PACK": [1, 16]}:
        fail(f"dynamic: folded {folded}")
    runs = {n["device_runs"] for n in nodes}
    if runs != {len(xs)}:
        fail(f"dynamic: device runs {runs}, expected {len(xs)} for every node")
    # The folded shape holds for the shapes the partition was built for only.
    resized = interpreter(model, [d], reference=True)
    resized.resize_tensor_input(resized.get_input_details()[0]["index"], (2,) + shape[1:])
    try:
        resized.allocate_tensors()
        fail("dynamic: a resize of the delegated partition's input was accepted")
    except RuntimeError as e:
        if "convert the model with the shape it runs at" not in str(e):
            fail(f"dynamic: the resize failed without the reason: {e}")
    print(f"check int8_dynamic ok dynamic_tensor={dynamic} device={on_device} folded={folded}",
          flush=True)


def npu_case(plugin, out, model, xs, want):
    """The example NPU's delegate (`export_delegate!(NpuBackend)`, no other
    code): the same model, split by what the NPU declares. It has no
    float Add, so the ADD node stays on the CPU with that reason."""
    report_path = os.path.join(out, "report_npu.json")
    d = rt.load_delegate(plugin, {"report_file": report_path})
    got = run(interpreter(model, [d]), xs)
    for g, w in zip(got, want):
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            fail(f"NPU delegate output differs:\n{g}\n{w}")
    with open(report_path) as f:
        report = json.load(f)
    nodes = report["graphs"][0]["nodes"]
    by_op = {}
    for n in nodes:
        by_op.setdefault(n["op"], set()).add(n["decision"])
    add = [n for n in nodes if n["op"] == "ADD"]
    if (
        by_op.get("FULLY_CONNECTED") != {"device"}
        or by_op.get("RELU") != {"device"}
        or len(add) != 1
        or add[0]["decision"] != "cpu"
        or "does not declare Binary(Add)" not in add[0]["reason"]
        or any(n["device_runs"] != len(xs) for n in nodes if n["decision"] == "device")
    ):
        fail(f"NPU decisions: {nodes}")
    print(f"check npu ok device_name={report['device_name']!r} add_reason={add[0]['reason']!r}",
          flush=True)


if __name__ == "__main__":
    main()
