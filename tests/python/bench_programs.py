"""Bench rows: device programs (docs/device-programs.md) against the same
models op by op on /device:FPGA:0 (sim), and against TF's CPU, in the same
process, interleaved. Each model is one tf.function per subject; the
programs one is traced with TENSORPLUG_GRAPH_PROGRAMS=on (the pass reads
the setting at each graph it rewrites), the op-by-op one with it off.

Models: a Keras MLP's forward (784-256-256-10, batch 64), the small
convnet of tf_programs.py (batch 32 of 32x32x3), the transformer block of
bench_sequence.py (forward, batch 32x64x32), an MLP training step (SGD,
batch 64) and the convnet's (SGD, batch 32), whose backward window ops
programs hold since stop 59. Writes tf_programs_<model>_ratio (programs / op by op) and
tf_programs_<model>_vs_cpu (programs / TF CPU).

Fusion inside programs (docs/device-programs.md, "Fusion"): the transformer
block (its layer norms) and three Dense(512, gelu) layers (TF 2.21's gelu)
compiled as programs with TENSORPLUG_PROGRAM_FUSION off and on, in one
process: tf_programs_<model>_fused_ratio (fused / unfused). The fused
programs must have fewer commands (their dumps say) and give the same bits,
or the bench fails.

Each programs function must really hold a program: its graph is read back
(TENSORPLUG_GRAPH_DUMP_DIR) and a model without a `_TensorplugFPGAProgram`
node fails the bench instead of writing a figure."""
import os
import pathlib
import re
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
dump = pathlib.Path(tempfile.mkdtemp(prefix="bench_programs_"))
os.environ["TENSORPLUG_GRAPH_DUMP_DIR"] = str(dump)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402
from tensorflow.core.framework import graph_pb2  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402

REPS = 15
SUBJECTS = ("cpu", "ops", "programs")
rng = np.random.default_rng(0)


def mlp():
    return keras.Sequential([keras.Input((784,)), layers.Dense(256, activation="relu"),
                             layers.Dense(256, activation="relu"),
                             layers.Dense(10, activation="softmax")])


def forward(model, x):
    return tf.function(lambda t: model(t, training=False), jit_compile=False), (x,)


def mlp_predict():
    return forward(mlp(), rng.standard_normal((64, 784)).astype(np.float32))


def convnet_predict():
    return forward(convnet(), rng.standard_normal((32, 32, 32, 3)).astype(np.float32))


def transformer_forward():
    inputs = keras.Input((64, 32))
    attn = layers.MultiHeadAttention(num_heads=2, key_dim=32)(inputs, inputs)
    out1 = layers.LayerNormalization(epsilon=1e-6)(inputs + attn)
    ffn = layers.Dense(32)(layers.Dense(32, activation="relu")(out1))
    outputs = layers.LayerNormalization(epsilon=1e-6)(out1 + ffn)
    model = keras.Model(inputs, outputs)
    return forward(model, rng.standard_normal((32, 64, 32)).astype(np.float32))


def gelu_mlp():
    model = keras.Sequential([keras.Input((512,))]
                             + [layers.Dense(512, activation="gelu") for _ in range(3)])
    return forward(model, rng.standard_normal((256, 512)).astype(np.float32))


def convnet():
    return keras.Sequential([keras.Input((32, 32, 3)),
                             layers.Conv2D(8, 3, padding="same", activation="relu"),
                             layers.MaxPooling2D(), layers.Conv2D(8, 3, activation="relu"),
                             layers.Flatten(), layers.Dense(10, activation="softmax")])


def mlp_fit_step():
    return fit_step(mlp(), rng.standard_normal((64, 784)).astype(np.float32), 64)


def convnet_fit_step():
    return fit_step(convnet(), rng.standard_normal((32, 32, 32, 3)).astype(np.float32), 32)


def fit_step(model, x, batch):
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    optimizer = keras.optimizers.SGD(0.01)
    y = rng.integers(0, 10, (batch,)).astype(np.int32)

    def step(t, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(t, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return tf.function(step, jit_compile=False), (x, y)


def program_nodes():
    """Program nodes in the graphs the pass wrote since the last call."""
    count = 0
    for path in sorted(dump.glob("graph-*-out.pb")):
        graph = graph_pb2.GraphDef()
        graph.ParseFromString(path.read_bytes())
        nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
        count += sum(n.op == "_TensorplugFPGAProgram" for n in nodes)
        path.unlink()
    for path in dump.glob("*"):
        path.unlink()
    return count


def commands():
    """Commands of the programs compiled since the last call (their dumps'
    summary lines); clears the dump directory."""
    total = sum(int(re.search(r": (\d+) commands,", p.read_text()).group(1))
                for p in dump.glob("program_*.txt"))
    program_nodes()
    return total


def measure_fusion(name, build, figure):
    """`build`'s function compiled with fusion off and on (the setting is
    read when a program compiles), timed interleaved."""
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "on"
    keras.utils.set_random_seed(1)
    with tf.device("/device:FPGA:0"):
        fn, args = build()
        args = tuple(tf.identity(tf.constant(a)) for a in args)
    model_call = fn.python_function
    steps, outs, counts = {}, {}, {}
    commands()
    for subject, setting in (("unfused", "off"), ("fused", "on")):
        os.environ["TENSORPLUG_PROGRAM_FUSION"] = setting
        step = tf.function(model_call, jit_compile=False)
        with tf.device("/device:FPGA:0"):
            outs[subject] = step(*args).numpy()
            step(*args).numpy()
        counts[subject] = commands()
        steps[subject] = step
    del os.environ["TENSORPLUG_PROGRAM_FUSION"]
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "off"
    print(f"{name}: {counts['unfused']} commands unfused, {counts['fused']} fused")
    if not 0 < counts["fused"] < counts["unfused"]:
        raise SystemExit(f"{name}: fusion made no command fewer ({counts})")
    if not np.array_equal(outs["fused"].view(np.uint32), outs["unfused"].view(np.uint32)):
        raise SystemExit(f"{name}: the fused program's output is not bit-equal")

    def timed(subject):
        with tf.device("/device:FPGA:0"):
            start = clock()
            steps[subject](*args).numpy()
            return clock() - start

    medians = interleaved_medians(["unfused", "fused"], REPS, timed)
    write_figure(f"tf_programs_{name}_fused_ratio",
                 f"{figure}: programs fused vs unfused, FPGA(sim)",
                 medians["fused"] * 1e3, medians["unfused"] * 1e3, "ms/step", "ratio <= 1")


def measure(name, build, figure):
    steps = {}
    for subject in SUBJECTS:
        device = "/device:CPU:0" if subject == "cpu" else "/device:FPGA:0"
        keras.utils.set_random_seed(1)
        with tf.device(device):
            fn, args = build()
            args = tuple(tf.identity(tf.constant(a)) for a in args)
        steps[subject] = (device, fn, args)

    def timed(subject):
        device, fn, args = steps[subject]
        with tf.device(device):
            start = clock()
            fn(*args).numpy()
            return clock() - start

    for subject in SUBJECTS:  # trace, rewrite and warm up
        os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "on" if subject == "programs" else "off"
        program_nodes()
        for _ in range(2):
            timed(subject)
        held = program_nodes()
        if subject == "programs" and not held:
            raise SystemExit(f"{name}: the programs function holds no program node")
        print(f"{name} {subject}: {held} program node(s)")
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "off"
    medians = interleaved_medians(list(SUBJECTS), REPS, timed)
    ms = {s: medians[s] * 1e3 for s in SUBJECTS}
    write_figure(f"tf_programs_{name}_ratio", f"{figure}: programs vs op by op, FPGA(sim)",
                 ms["programs"], ms["ops"], "ms/step", "ratio <= 1")
    write_figure(f"tf_programs_{name}_vs_cpu", f"{figure}: programs on FPGA(sim) vs TF CPU",
                 ms["programs"], ms["cpu"], "ms/step", "ratio <= 1")


measure("mlp_predict", mlp_predict, "MLP 784-256-256-10 forward, batch 64")
measure("convnet_predict", convnet_predict, "small convnet forward, batch 32 of 32x32x3")
measure("transformer_forward", transformer_forward, "transformer block forward, batch 32x64x32")
measure("mlp_fit_step", mlp_fit_step, "MLP 784-256-256-10 SGD step, batch 64")
measure("convnet_fit_step", convnet_fit_step, "small convnet SGD step, batch 32 of 32x32x3")
measure_fusion("transformer_forward", transformer_forward,
               "transformer block forward (its layer norms), batch 32x64x32")
measure_fusion("gelu_mlp", gelu_mlp, "three Dense(512, gelu), batch 256")
