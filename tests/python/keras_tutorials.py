"""Keras programs written the way the Keras guides write them (keras.io, "The
Sequential model", "The Functional API", "Training & evaluation with the
built-in methods"): no device scope, no jit_compile, no extra arguments. Run
in a venv where the FPGA wheel is installed (its `.pth` hook makes
jit_compile="auto" mean no XLA on FPGA machines; docs/wheel.md).

Usage: keras_tutorials.py unchanged | keras-decides | explicit-jit
- unchanged: both programs compile/fit/evaluate/predict with every MatMul,
  BiasAdd and Relu on FPGA:0 (placement log), every node whose op and dtype
  have an FPGA kernel placed on FPGA:0 (placement log; dtypes from the graphs
  dumped through TENSORPLUG_GRAPH_DUMP_DIR), their variables on FPGA:0, and
  losses, metrics and predictions equal to the same program run under
  tf.device("/CPU:0") within 1e-5; prints the float ops that still run on
  the CPU, which must be among the metric ops listed in ON_CPU;
- keras-decides (TENSORPLUG_KERAS_AUTO_JIT=keras): Keras' own "auto" picks
  XLA and fit fails with "No JIT device registered for FPGA";
- explicit-jit: compile(jit_compile=True) fails at fit with an error that
  says to use jit_compile=False.
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the placement log is INFO
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from tf_kernels_common import StderrCapture, placements, tf_variable

KERAS_2 = keras.__version__.startswith("2.")

import glob  # noqa: E402
import tempfile  # noqa: E402

from tensorflow.core.framework import graph_pb2  # noqa: E402
from tensorflow.python.framework import kernels  # noqa: E402

# Every scratch directory of this run lives here, removed at exit.
SCRATCH = tempfile.TemporaryDirectory(prefix="tensorplug-test-")


def fpga_kernel_dtypes():
    """{op: set of T values} of the kernels registered for FPGA (None = any)."""
    out = {}
    for k in kernels.get_all_registered_kernels().kernel:
        if k.device_type == "FPGA":
            types = [c.allowed_values.list.type for c in k.constraint if c.name == "T"]
            out.setdefault(k.op, set()).update(types[0] if types else [None])
    return out


def graph_dtypes(dump_dir):
    """{node name: T} over the graphs our optimizer saw (`Fn/` call prefixes
    stripped, as the placement log names nodes), and the CPU float nodes of
    the graphs it returned, by op."""
    dtypes, cpu_float = {}, set()
    for path in glob.glob(os.path.join(dump_dir, "*.pb")):
        with open(path, "rb") as f:
            graph = graph_pb2.GraphDef.FromString(f.read())
        for node in graph.node:
            if "T" in node.attr:
                dtypes[node.name.rpartition("StatefulPartitionedCall/")[2]] = node.attr["T"].type
                if path.endswith("-out.pb") and "/device:CPU:" in node.device \
                        and node.attr["T"].type == tf.float32.as_datatype_enum:
                    cpu_float.add(node.op)
    return dtypes, cpu_float


def check_every_runnable_op_on_fpga(placed, dump_dir):
    """Every node TF's placer put on the CPU although its op and T have an
    FPGA kernel is an error (the placement log gives the op and device, the
    dumped graphs the dtype). Returns the float ops still on the CPU in the
    optimized graphs, for the report: ops with no FPGA kernel, and what TF's
    passes made of them there (a RealDiv on the CPU becomes a Mul)."""
    ours = fpga_kernel_dtypes()
    dtypes, cpu_float = graph_dtypes(dump_dir)
    misplaced = sorted(
        (op, node) for node, op, device in placed
        if device.endswith("CPU:0") and op in ours and node in dtypes
        and (None in ours[op] or dtypes[node] in ours[op]))
    assert not misplaced, f"ops with an FPGA kernel placed on the CPU: {misplaced}"
    return sorted(cpu_float)


# What the accuracy metrics compute with float inputs on the CPU: their
# results are bool or int64 (ArgMax, Equal), a bool select (SelectV2), a
# reinterpretation (Bitcast), or metadata (Shape, _Arg); the device computes
# float32 results only.
# A device program's gate routes an input made on the CPU (the batch)
# through a `Switch` there, so that it crosses only when the program's
# native segment runs (docs/device-programs.md, "The native segment"):
# routing, no arithmetic.
ON_CPU = {"ArgMax", "Bitcast", "Equal", "SelectV2", "Shape", "_Arg", "Switch"}

mode = sys.argv[1]
tf.debugging.set_log_device_placement(mode == "unchanged" or (mode == "explicit-jit" and KERAS_2))
rng = np.random.default_rng(5)
x_train = rng.standard_normal((512, 20)).astype("float32")
y_train = rng.integers(0, 4, 512)
x_val, y_val = x_train[-64:], y_train[-64:]
images = rng.random((128, 16, 16, 3)).astype("float32")
real = rng.integers(0, 2, (128, 1)).astype("float32")
x_test = rng.standard_normal((128, 20)).astype("float32")
y_test = rng.integers(0, 4, 128)


def sequential_guide(**compile_args):
    model = keras.Sequential([
        keras.Input(shape=(20,)),
        layers.Dense(64, activation="relu"),
        layers.Dense(64, activation="relu"),
        layers.Dense(4),
    ])
    model.compile(
        optimizer=keras.optimizers.RMSprop(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        **compile_args,
    )
    history = model.fit(x_train, y_train, batch_size=64, epochs=2,
                        validation_data=(x_val, y_val), verbose=0)
    results = model.evaluate(x_test, y_test, batch_size=128, verbose=0)
    predictions = model.predict(x_test[:3], verbose=0)
    return model, [*history.history["loss"], *results, *predictions.ravel()]


def functional_guide(**compile_args):
    inputs = keras.Input(shape=(20,), name="digits")
    x = layers.Dense(32, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(32, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(4, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], **compile_args)
    history = model.fit(x_train, y_train, batch_size=64, epochs=2, verbose=0)
    results = model.evaluate(x_test, y_test, verbose=0)
    return model, [*history.history["loss"], *results]


def dcgan_discriminator(**compile_args):
    """The discriminator of keras.io's "DCGAN to generate face images",
    smaller (16×16 images, 16 and 32 filters), trained as a classifier:
    Conv2D and LeakyReLU(0.2) (`LeakyRelu`, and `LeakyReluGrad` in fit)."""
    slope = {"alpha": 0.2} if KERAS_2 else {"negative_slope": 0.2}
    model = keras.Sequential([
        keras.Input(shape=(16, 16, 3)),
        layers.Conv2D(16, kernel_size=4, strides=2, padding="same"),
        layers.LeakyReLU(**slope),
        layers.Conv2D(32, kernel_size=4, strides=2, padding="same"),
        layers.LeakyReLU(**slope),
        layers.Flatten(),
        layers.Dropout(0.2),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-4),
                  loss=keras.losses.BinaryCrossentropy(), **compile_args)
    history = model.fit(images, real, batch_size=32, epochs=1, verbose=0)
    predictions = model.predict(images[:4], verbose=0)
    return model, [*history.history["loss"], *predictions.ravel()]


PROGRAMS = {"Sequential guide": sequential_guide, "Functional guide": functional_guide,
            "DCGAN discriminator": dcgan_discriminator}


def grouped_convnet():
    """ConvNeXt's depthwise convolution (`groups` = channels, 7×7), a
    grouped one with stride 2 and a dilated depthwise one: Keras 3 asks
    XLA for each (grouped convolutions are "broken on CPU without XLA")."""
    keras.utils.set_random_seed(3)
    x = keras.Input((16, 16, 8))
    h = layers.Conv2D(8, 7, padding="same", groups=8)(x)
    h = layers.Conv2D(12, 3, strides=2, padding="same", groups=2)(h)
    return keras.Model(x, layers.Conv2D(12, 3, dilation_rate=2, groups=12)(h))


GROUPED_X = rng.standard_normal((4, 16, 16, 8)).astype("float32")

if mode == "unchanged":
    for name, program in PROGRAMS.items():
        keras.utils.set_random_seed(11)
        with tf.device("/CPU:0"):
            _, cpu = program()
        keras.utils.set_random_seed(11)
        dump_dir = tempfile.mkdtemp(prefix="tensorplug-keras-graphs-", dir=SCRATCH.name)
        os.environ["TENSORPLUG_GRAPH_DUMP_DIR"] = dump_dir
        with StderrCapture() as log:
            model, fpga = program()
        del os.environ["TENSORPLUG_GRAPH_DUMP_DIR"]
        devices = {tf_variable(v).device.rpartition("/")[2] for v in model.variables}
        assert devices == {"device:FPGA:0"}, devices
        placed = placements(log.text)
        cpu_float_ops = check_every_runnable_op_on_fpga(placed, dump_dir)
        assert set(cpu_float_ops) <= ON_CPU, f"{name}: float ops on the CPU: {cpu_float_ops}"
        compute = [(op, dev) for _, op, dev in placed
                   if op in ("MatMul", "BiasAdd", "Relu", "LeakyRelu", "LeakyReluGrad")]
        off = {(op, dev) for op, dev in compute if not dev.endswith("FPGA:0")}
        assert compute and not off, off
        diff = float(np.abs(np.array(fpga) - np.array(cpu)).max())
        assert diff <= 1e-5, f"{name}: FPGA {fpga} vs CPU {cpu}"
        counts = {op: sum(1 for o, _ in compute if o == op) for op, _ in compute}
        print(f"{name}: unchanged program on FPGA:0, placements {counts}, "
              f"max |fpga - cpu| = {diff:.2g}")
        print(f"{name}: every op with an FPGA kernel for its dtype placed on FPGA:0; float "
              f"ops on the CPU after optimization: {cpu_float_ops}")
    if KERAS_2:  # TF 2.15: Keras 2 never turns XLA on by itself
        model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
        model.compile()
        assert not model._jit_compile, model._jit_compile
        print("auto decisions: Keras 2 leaves XLA off unless asked (jit_compile=None)")
        sys.exit(0)
    # The decision on other machines: fake device lists, same model.
    from collections import namedtuple
    from keras.src.trainers import trainer as trainer_module

    Device = namedtuple("Device", "name device_type")
    model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
    model.compile()
    decide = trainer_module.Trainer._resolve_auto_jit_compile
    real = tf.config.list_physical_devices
    try:
        for kinds, want in [(["CPU"], False), (["CPU", "FPGA"], False),
                            (["CPU", "FPGA", "GPU"], True), (["CPU", "GPU"], True)]:
            tf.config.list_physical_devices = lambda *_, k=kinds: [
                Device(f"/physical_device:{t}:0", t) for t in k]
            assert decide(model) is want, (kinds, want)
    finally:
        tf.config.list_physical_devices = real
    print("auto decisions: CPU only -> no XLA, FPGA -> no XLA, FPGA+GPU -> XLA, GPU -> XLA")
    # Grouped convolutions without XLA: the hook computes them with TF ops
    # (a depthwise convolution, or a Conv2D per group), placed on FPGA:0.
    with tf.device("/CPU:0"):
        cpu = grouped_convnet()
        want = cpu.predict(GROUPED_X, verbose=0)
    fpga = grouped_convnet()
    fpga.set_weights(cpu.get_weights())
    with StderrCapture() as log:
        got = fpga.predict(GROUPED_X, verbose=0)
    convs = {(op, dev) for _, op, dev in placements(log.text)
             if op in ("Conv2D", "DepthwiseConv2dNative")}
    assert {op for op, _ in convs} == {"Conv2D", "DepthwiseConv2dNative"}, convs
    assert all(dev.endswith("FPGA:0") for _, dev in convs), convs
    diff = float(np.abs(got - want).max())
    assert diff <= 1e-5 * float(np.abs(want).max()), diff
    print(f"grouped convolutions: no XLA, Conv2D and DepthwiseConv2dNative on FPGA:0, "
          f"max |fpga - cpu| = {diff:.2g}")
elif mode == "keras-decides" and KERAS_2:
    model, _ = sequential_guide()
    assert all(tf_variable(v).device.endswith("FPGA:0") for v in model.variables)
    print("keras decides: no XLA (Keras 2), the program ran on FPGA:0")
elif mode == "explicit-jit" and KERAS_2:
    # TF 2.15 runs a jit_compile=True function without XLA where the device
    # has no XLA backend (placement log: MatMul on FPGA:0).
    with StderrCapture() as log:
        sequential_guide(jit_compile=True)
    matmuls = {dev for _, op, dev in placements(log.text) if op == "MatMul"}
    assert matmuls and all(d.endswith("FPGA:0") for d in matmuls), matmuls
    print("explicit jit_compile=True (Keras 2): TF ran it without XLA, MatMul on FPGA:0")
elif mode == "keras-decides":
    try:
        sequential_guide()
    except tf.errors.InvalidArgumentError as error:
        assert "No JIT device registered for FPGA" in str(error), error
        print("keras decides: XLA, No JIT device registered for FPGA")
    else:
        raise AssertionError("Keras' own auto decision did not pick XLA")
    # Keras' own grouped convolution asks XLA too (what the hook avoids).
    model = grouped_convnet()
    try:
        model.predict(GROUPED_X, verbose=0)
    except tf.errors.InvalidArgumentError as error:
        assert "No JIT device registered for FPGA" in str(error), error
        print("keras decides: grouped convolutions through XLA, No JIT device registered")
    else:
        raise AssertionError("Keras' own grouped convolution did not ask XLA")
elif mode == "explicit-jit":
    try:
        sequential_guide(jit_compile=True)
    except tf.errors.InvalidArgumentError as error:
        text = str(error)
        assert "jit_compile=True asks XLA" in text and "jit_compile=False" in text, text
        print(f"explicit jit_compile=True: {text.splitlines()[0][:100]}")
    else:
        raise AssertionError("jit_compile=True on the FPGA did not fail")
else:
    raise SystemExit(f"unknown mode {mode}")
