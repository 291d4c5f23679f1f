"""A Keras MLP's predict on /device:FPGA:0 with device programs on.

    python tf_programs.py <work dir> [deep | convnet | lone | shared | reduce | attention | fit]

With TENSORPLUG_GRAPH_PROGRAMS=1 the graph pass contracts the dense stack
on the FPGA into program nodes. Checks: predict equals the same model on
the CPU; the pass's output graph has a `_TensorplugFPGAProgram` node and no
MatMul left on the FPGA; the report (TENSORPLUG_FALLBACK_FILE) names the
program; the compiled program is dumped (TENSORPLUG_GRAPH_DUMP_DIR); and
the profile's FPGA plane shows each TF node of the program by its own op
type, with none of them on the CPU (under the profiler a program's
commands are launched one by one, each under its node's tag).

`deep`: a stack of 60 Dense layers instead, whose one program (about
8.7 KiB) is more than the firmware's 8 KiB store takes: it must still
predict equal to the CPU, its commands run one by one; on an MCU, the same
model made again under `TENSORPLUG_FALLBACK=error` fails its step instead.

`convnet`: a small Keras convnet (Conv2D with ReLU, max pooling, another
Conv2D, Flatten, Dense with softmax) on 16×16×3 images: its convolution
block, Flatten and its dense head become one program, equal to the CPU. Then the same
model built under `tf.device("/CPU:0")`, as many examples do, predicts
with no scope: its ops run on the FPGA, its variables stay on the CPU, and
the programs take them as host weights, uploaded once (the HIL test counts
the bytes on the link against the `bytes:` line printed here).

`lone`: a one-layer model (`Dense(32)`, one `_FusedMatMul`) built under a
CPU scope predicts with no scope: its lone node reads the CPU's variables,
so it is a one-node program whose weights the device keeps (the HIL test
counts the bytes on the link against the `bytes:` line printed here).

`shared`: a Keras MLP built under a CPU scope, then `predict` and
`evaluate` with no scope: each traces a function of its own whose
programs take the CPU's weights as host weights; the second finds the
copy the first keeps on the device and holds no second one (TF's memory
statistics of the FPGA say so).

`reduce`: a Keras model with LayerNormalization, GlobalAveragePooling2D
and a `reduce_sum` over a middle axis, its reductions held by programs,
equal to the CPU.

`fit`: Keras `fit` of an MLP through programs, its variables on the FPGA
and, built under a CPU scope, on the CPU (the programs' host weights then
change every step), of a small convnet and of an unrolled LSTM: losses
and trained weights bit-equal to the same `fit` op by op, in the same
process; the convnet's window gradients (`MaxPoolGrad`, `AvgPoolGrad`,
`Conv2DBackpropFilter`, `Conv2DBackpropInput`), the LSTM's gates
(`Split`) and their gradients (`ConcatV2`, `BiasAddGrad`) are held by
programs. The LSTM's kernel gradient is an `AddN` of its steps', which
sums in input order.
"""

import os
import pathlib
import sys

work = pathlib.Path(sys.argv[1])
reduce = sys.argv[2:] == ["reduce"]
deep = sys.argv[2:] == ["deep"]
convnet = sys.argv[2:] == ["convnet"]
fit = sys.argv[2:] == ["fit"]
attention = sys.argv[2:] == ["attention"]
lone = sys.argv[2:] == ["lone"]
shared = sys.argv[2:] == ["shared"]
os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "1"
# TF's warnings on: a rewritten function TF refuses is only a warning
# ("Ignoring multi-device function optimization failure"), after which TF
# runs the graph without any of the plugin's rewrites; the tests look for it.
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
os.environ["TENSORPLUG_GRAPH_DUMP_DIR"] = str(work)
os.environ["TENSORPLUG_FALLBACK_FILE"] = str(work / "report.txt")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import graph_pb2  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from tf_profiler_scenarios import profiled_ops  # noqa: E402

assert tf.config.list_logical_devices("FPGA"), "the plugin did not load"
keras = tf.keras


def held_by_programs():
    """The op types the program nodes of every rewritten graph hold."""
    held = []
    for path in sorted(work.glob("graph-*-out.pb")):
        graph = graph_pb2.GraphDef()
        graph.ParseFromString(path.read_bytes())
        for n in list(graph.node) + [m for f in graph.library.function for m in f.node_def]:
            if n.op == "_TensorplugFPGAProgram":
                seg = graph_pb2.GraphDef()
                seg.ParseFromString(n.attr["segment"].s)
                held += [m.op for m in seg.node]
    return held


def mlp():
    tf.keras.utils.set_random_seed(3)
    if deep:
        layers = [keras.layers.Dense(8, activation="relu") for _ in range(60)]
        return keras.Sequential([keras.Input(shape=(16,))] + layers)
    if convnet:
        return keras.Sequential(
            [
                keras.Input(shape=(16, 16, 3)),
                keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Conv2D(8, 3, activation="relu"),
                keras.layers.Flatten(),
                keras.layers.Dense(10, activation="softmax"),
            ]
        )
    return keras.Sequential(
        [
            keras.Input(shape=(16,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(32, activation="tanh"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )


if lone:
    def one_layer():
        tf.keras.utils.set_random_seed(3)
        return keras.Sequential([keras.Input(shape=(64,)), keras.layers.Dense(32)])

    x = np.random.default_rng(7).standard_normal([8, 64]).astype(np.float32)
    with tf.device("/device:CPU:0"):
        cpu = one_layer()
        want = cpu.predict(x, batch_size=4, verbose=0)
        hostvars = one_layer()
    hostvars.set_weights(cpu.get_weights())
    hostvars.compile(jit_compile=False)
    for _ in range(2):
        got = hostvars.predict(x, batch_size=4, verbose=0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    places = [getattr(v, "device", None) or v.value.device for v in hostvars.weights]
    assert all("CPU" in p for p in places), places
    held = held_by_programs()
    # (A segment carries NoOps for its control edges.)
    assert set(held) - {"NoOp"} == {"_FusedMatMul"}, held
    weights = sum(w.nbytes for w in cpu.get_weights())
    # Two predicts of x, two steps each.
    print(f"bytes: inputs={2 * x.nbytes} steps=4 weights={weights}")
    print("one layer with CPU variables: a one-node program, equal to the CPU")
    print("done")
    sys.exit(0)

if shared:
    x = np.random.default_rng(7).standard_normal([8, 64]).astype(np.float32)
    with tf.device("/device:CPU:0"):
        tf.keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input(shape=(64,)),
                                  keras.layers.Dense(256, activation="relu"),
                                  keras.layers.Dense(256, activation="relu"),
                                  keras.layers.Dense(10)])
        want = model(x).numpy()
        weights = sum(w.nbytes for w in model.get_weights())
    model.compile(loss="mse", jit_compile=False)

    def used():
        return tf.config.experimental.get_memory_info("FPGA:0")["current"]

    got = model.predict(x, batch_size=8, verbose=0)
    after_predict = used()
    loss = model.evaluate(x, want, batch_size=8, verbose=0)
    grew = used() - after_predict
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert loss < 1e-9, loss
    # The predict's programs keep the weights on the device...
    assert after_predict >= weights, (after_predict, weights)
    # ...and the evaluate's take that copy: no second one.
    assert grew < weights // 2, (grew, weights)
    print(f"shared: weights={weights} device_bytes_after_predict={after_predict} "
          f"evaluate_added={grew}")
    print("done")
    sys.exit(0)

if reduce:
    # Reductions in programs: LayerNormalization's Mean over the last axis
    # (keep_dims), GlobalAveragePooling2D's over [1, 2] (moved last and
    # merged), and a Sum over a middle axis without keep_dims.
    inputs = keras.Input((8, 8, 4))
    h = keras.layers.Conv2D(6, 3, padding="same", activation="relu")(inputs)
    h = keras.layers.LayerNormalization()(h)
    pooled = keras.layers.GlobalAveragePooling2D()(h)
    summed = keras.layers.Lambda(lambda t: tf.reduce_sum(t, axis=1))(h)
    out = keras.layers.Concatenate()([keras.layers.Dense(3)(pooled),
                                      keras.layers.Flatten()(summed)])
    tf.keras.utils.set_random_seed(4)
    with tf.device("/device:CPU:0"):
        model = keras.Model(inputs, out)
    x = np.random.default_rng(2).standard_normal((4, 8, 8, 4)).astype(np.float32)
    with tf.device("/device:CPU:0"):
        want = model(x).numpy()
    call = tf.function(lambda t: model(t, training=False), jit_compile=False)
    with tf.device("/device:FPGA:0"):
        got = call(tf.constant(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    held = held_by_programs()
    # GlobalAveragePooling2D's Mean, and LayerNormalization's where Keras
    # computes it with Mean (Keras 3; Keras 2 on TF 2.15 uses one
    # FusedBatchNormV3).
    assert "Mean" in held and "Sum" in held, sorted(held)
    # An empty batch through the programs: empty outputs, as op by op (it
    # failed with "a program runs no empty tensors").
    relaxed = tf.function(lambda t: model(t, training=False), jit_compile=False,
                          reduce_retracing=True)
    with tf.device("/device:FPGA:0"):
        relaxed(tf.constant(x))
        empty = relaxed(tf.constant(x[:0]))
    assert empty.shape == (0, want.shape[1]), empty.shape
    # Under the profiler every command, a reduction's fill and copies too,
    # shows under its TF node's own op type, none under the program's.
    with tf.device("/device:FPGA:0"):
        device, _ = profiled_ops(lambda: call(tf.constant(x)).numpy())
    assert "Mean" in device and "Sum" in device, device
    assert not [op for op in device if op.endswith("Program")], device
    print(f"reduce: equal to the CPU; programs hold {held.count('Mean')} Mean and "
          f"{held.count('Sum')} Sum among {len(held)} nodes")
    print("done")
    sys.exit(0)

if attention:
    # Keras' MultiHeadAttention, a residual and a LayerNormalization: the
    # projections (`BatchMatMulV2`) and the two `Einsum`s are one
    # `BatchMatMul` record each, so the block is one program.
    tf.keras.utils.set_random_seed(6)
    inputs = keras.Input((6, 8))
    attn = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
    norm = keras.layers.LayerNormalization(epsilon=1e-6)
    out = keras.layers.Dense(8, activation="gelu")(norm(inputs + attn))
    model = keras.Model(inputs, out)
    rng = np.random.default_rng(9)
    norm.gamma.assign(rng.uniform(0.5, 2.0, 8).astype(np.float32))
    norm.beta.assign(rng.standard_normal(8).astype(np.float32))
    x = np.random.default_rng(8).standard_normal((4, 6, 8)).astype(np.float32)
    with tf.device("/device:CPU:0"):
        want = tf.function(lambda t: model(t, training=False), jit_compile=False)(x).numpy()
    call = tf.function(lambda t: model(t, training=False), jit_compile=False)
    with tf.device("/device:FPGA:0"):
        for _ in range(3):
            got = call(tf.constant(x)).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    held = held_by_programs()
    assert "Einsum" in held, sorted(set(held))
    programs = sum(1 for path in sorted(work.glob("program_*.txt")))
    with tf.device("/device:FPGA:0"):
        device, on_cpu = profiled_ops(lambda: call(tf.constant(x)).numpy())
    assert "Einsum" in device, device
    assert not [op for op in on_cpu if op in ("Einsum", "BatchMatMulV2", "Softmax")], on_cpu
    print(f"attention: equal to the CPU in 3 calls; {programs} program(s) compiled; programs "
          f"hold {sorted(set(held) & {'Einsum', 'BatchMatMulV2', 'Softmax', 'Mean'})}")
    # Fusion: Keras 3's LayerNormalization (eleven ops, its `Rsqrt` among
    # them) is one `LayerNorm` command, and `gelu` one `Gelu`, bit-equal to
    # them. Keras 2 (TF 2.15) computes the layer with one FusedBatchNormV3,
    # which is not fused.
    os.environ["TENSORPLUG_PROGRAM_FUSION"] = "off"
    unfused = tf.function(lambda t: model(t, training=False), jit_compile=False)
    with tf.device("/device:FPGA:0"):
        plain = unfused(tf.constant(x)).numpy()
        device_off, _ = profiled_ops(lambda: unfused(tf.constant(x)).numpy())
    del os.environ["TENSORPLUG_PROGRAM_FUSION"]
    # TF 2.15's `tf.keras` has no `__version__`; its package has.
    keras_version = getattr(keras, "__version__", None) or __import__("keras").__version__
    if int(keras_version.split(".")[0]) >= 3:
        assert "Rsqrt" in device_off, (device_off, device, on_cpu)
        assert "LayerNorm" in device and "Rsqrt" not in device, (device, device_off)
        assert "LayerNorm" not in device_off, device_off
        assert np.array_equal(plain.view(np.uint32), got.view(np.uint32)), np.abs(plain - got).max()
        fused = sum(device_off.values()) - sum(device.values())
        print(f"layer norm: one LayerNorm command, bit-equal to the unfused program; "
              f"{fused} fewer launches on the device plane a call")
    else:
        print(f"layer norm: Keras {keras_version} writes FusedBatchNormV3, not fused")
    # `gelu`: TF 2.21's tf.nn.gelu is `(0.5 * erfc(-x / sqrt(2))) * x`, one
    # `Gelu` command; older TFs write it with `Erf`, which is not fused.
    if "Erfc" in device_off:
        assert "Gelu" in device and "Erfc" not in device, (device, device_off)
        assert np.array_equal(plain.view(np.uint32), got.view(np.uint32))
        print("gelu: one Gelu command, bit-equal to the unfused program")
    else:
        assert "Gelu" not in device, device
        print(f"gelu: TF {tf.__version__} writes it with Erf, not fused")
    print("done")
    sys.exit(0)

if fit:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((128, 16)).astype(np.float32)
    ys = rng.integers(0, 4, 128)

    images = rng.standard_normal((64, 12, 12, 3)).astype(np.float32)
    sequences = rng.standard_normal((64, 5, 3)).astype(np.float32)

    def train(programs, scope, kind="mlp"):
        # The pass reads the setting at each graph it rewrites.
        os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = programs
        tf.keras.utils.set_random_seed(1)
        with tf.device(scope):
            if kind == "lstm":
                # Unrolled: each step's cell is in the graph, its
                # gradients summed by AddNs of 5.
                m = keras.Sequential(
                    [
                        keras.Input(shape=(5, 3)),
                        keras.layers.LSTM(6, unroll=True),
                        keras.layers.Dense(4, activation="softmax"),
                    ]
                )
            elif kind == "conv":
                m = keras.Sequential(
                    [
                        keras.Input(shape=(12, 12, 3)),
                        keras.layers.Conv2D(4, 3, activation="relu"),
                        keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
                        keras.layers.MaxPooling2D(),
                        keras.layers.AveragePooling2D(2),
                        keras.layers.Flatten(),
                        keras.layers.Dense(4, activation="softmax"),
                    ]
                )
            else:
                m = keras.Sequential(
                    [
                        keras.Input(shape=(16,)),
                        keras.layers.Dense(32, activation="relu"),
                        keras.layers.Dense(4, activation="softmax"),
                    ]
                )
        m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", jit_compile=False)
        data = {"conv": (images, ys[:64]), "lstm": (sequences, ys[:64])}.get(kind, (xs, ys))
        losses = m.fit(*data, batch_size=32, epochs=3, verbose=0, shuffle=False).history["loss"]
        return losses, m.get_weights()

    for scope, kind in (("/device:FPGA:0", "mlp"), ("/device:CPU:0", "mlp"),
                        ("/device:FPGA:0", "conv"), ("/device:FPGA:0", "lstm")):
        (want, w_want), (got, w_got) = train("0", scope, kind), train("1", scope, kind)
        assert got == want, (scope, kind, got, want)
        for a, b in zip(w_got, w_want):
            np.testing.assert_array_equal(a, b)
        what = {"mlp": "an MLP", "conv": "a convnet", "lstm": "an unrolled LSTM"}[kind]
        print(f"fit of {what}, variables on {scope}: losses {got} bit-equal op by op")
    report = (work / "report.txt").read_text()
    assert "program " in report, report
    # The convnet's backward window ops are program commands too.
    held = held_by_programs()
    grads = {op: held.count(op) for op in ("MaxPoolGrad", "AvgPoolGrad", "Conv2DBackpropFilter",
                                           "Conv2DBackpropInput", "ConcatV2", "BiasAddGrad", "Split")}
    assert all(grads.values()), sorted(held)
    print("fit: programs hold", " ".join(f"{k}={v}" for k, v in sorted(grads.items())))
    print("done")
    sys.exit(0)

# deep: one step of 32 (its commands cross the MCU's UART one by one).
shape = [8, 16, 16, 3] if convnet else [32 if deep else 64, 16]
x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
with tf.device("/device:CPU:0"):
    cpu = mlp()
    want = cpu.predict(x, batch_size=32 if not convnet else 4, verbose=0)
fpga = mlp()
fpga.set_weights(cpu.get_weights())
# Without the wheel's Keras hook, Keras 3 would ask for XLA (docs/wheel.md).
fpga.compile(jit_compile=False)
batch = 4 if convnet else 32
got = fpga.predict(x, batch_size=batch, verbose=0)
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
if convnet:
    report = (work / "report.txt").read_text()
    assert "program " in report, report
    ops = set()
    for path in sorted(work.glob("graph-*-out.pb")):
        graph = graph_pb2.GraphDef()
        graph.ParseFromString(path.read_bytes())
        for f in [graph] + list(graph.library.function):
            for n in getattr(f, "node", []) or getattr(f, "node_def", []):
                if n.op == "_TensorplugFPGAProgram":
                    seg = graph_pb2.GraphDef()
                    seg.ParseFromString(n.attr["segment"].s)
                    ops.update(m.op for m in seg.node)
    # One program: the views (the biases' Reshape and Squeeze, Flatten's
    # Reshape) join the convolution block and the dense head.
    assert {"_FusedConv2D", "MaxPool", "Reshape", "_FusedMatMul", "Softmax"} <= ops, ops
    np.testing.assert_allclose(fpga.predict(x, batch_size=batch, verbose=0), want, rtol=1e-5, atol=1e-6)
    print(f"convnet: equal to the CPU; programs hold {sorted(ops)}; {report.strip()}")
    with tf.device("/device:CPU:0"):
        hostvars = mlp()
    hostvars.set_weights(cpu.get_weights())
    hostvars.compile(jit_compile=False)
    for _ in range(2):
        got = hostvars.predict(x, batch_size=batch, verbose=0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # Keras 3's variables hold TF's in `.value`; Keras 2's are TF's.
    places = [getattr(v, "device", None) or v.value.device for v in hostvars.weights]
    assert all("CPU" in p for p in places), places
    weights = sum(w.nbytes for w in cpu.get_weights())
    # Four predicts of x (two per model), two steps each.
    print(f"bytes: inputs={4 * x.nbytes} steps=8 weights={weights}")
    print("convnet with CPU variables: equal to the CPU")
    print("done")
    sys.exit(0)
if deep:
    assert (got > 0).any(), "a dead stack tests nothing"
    report = (work / "report.txt").read_text()
    assert "program " in report, report
    print(f"deep: equal to the CPU; {report.strip()}")
    if os.environ.get("TENSORPLUG_DEVICE", "").startswith("mcu"):
        # With TENSORPLUG_FALLBACK=error (read when a kernel is made), the
        # refused program fails the step instead of running one by one.
        os.environ["TENSORPLUG_FALLBACK"] = "error"
        strict = mlp()
        strict.set_weights(cpu.get_weights())
        strict.compile(jit_compile=False)
        try:
            strict.predict(x, batch_size=32, verbose=0)
            raise AssertionError("TENSORPLUG_FALLBACK=error: the refused program ran anyway")
        except tf.errors.OpError as e:
            assert "Bytes limit" in e.message, e.message
            print(f"deep, TENSORPLUG_FALLBACK=error: {type(e).__name__}: {e.message.splitlines()[0]}")
    print("done")
    sys.exit(0)

device, on_cpu = profiled_ops(lambda: fpga.predict(x, batch_size=32, verbose=0))
# Once more after the profile: a device that keeps programs runs it again.
np.testing.assert_allclose(fpga.predict(x, batch_size=32, verbose=0), want, rtol=1e-5, atol=1e-6)
ran = " ".join(sorted(device))
# The fusion pass has made each Dense a _FusedMatMul (with its ReLU).
for op in ("_FusedMatMul", "Tanh", "Softmax"):
    assert op in device, f"no {op} on the FPGA's plane: {ran}"
assert any("MatMul" in op for op in device), f"no matmul on the FPGA's plane: {ran}"
assert not [op for op in on_cpu if "MatMul" in op or op in ("Tanh", "Softmax")], on_cpu

programs = []
for path in sorted(work.glob("graph-*-out.pb")):
    graph = graph_pb2.GraphDef()
    graph.ParseFromString(path.read_bytes())
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    programs += [n for n in nodes if n.op == "_TensorplugFPGAProgram"]
    left = [n.name for n in nodes if n.op == "MatMul" and "FPGA" in n.device]
    assert not left, f"{path.name}: MatMul left op by op on the FPGA: {left}"
assert programs, "no program node in any graph the pass wrote"
report = (work / "report.txt").read_text()
assert "program " in report, report
dumped = sorted(work.glob("program_*.tppg"))
assert dumped and dumped[0].read_bytes()[:4] == b"TPPG", dumped
summary = sorted(work.glob("program_*.txt"))[0].read_text()
print(f"{len(programs)} program node(s); {report.strip()}; {summary.strip()}")
print("done")
