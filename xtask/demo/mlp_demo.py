"""`cargo xtask demo`: a Keras MLP on /device:FPGA:0 under TF's profiler.

usage: mlp_demo.py <logdir>

TensorFlow finds the plugin the way a user's install does: the wheel put
libtensorplug_fpga.so in site-packages/tensorflow-plugins/. The model
(its variables) is built on the CPU, and predict, then a short fit, run
under tf.device('/device:FPGA:0'), each under the profiler: TF cannot update
variables that live on the FPGA (docs/ops.md, "Variables and training").
The script prints for each

1. where each op ran (TF's placement log, printed by the placer to stdout),
2. the device time per op, read back from the collected .xplane.pb,
3. the log directory to open in xprof / TensorBoard.

Exits non-zero if there is no FPGA, no device plane in the profile, or a
compute op of predict did not run on the FPGA.
"""
import collections
import ctypes
import glob
import os
import re
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

FPGA = "/device:FPGA:0"
DEVICE_PLANE = "/device:GPU:1000"  # our plane: xprof reads GPU planes (docs/xspace-layout.md)
# Ops that move or hold tensors rather than compute: not "compute ops".
BOOKKEEPING = {
    "_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Const", "NoOp",
    "Identity", "IdentityN", "ReadVariableOp", "VarHandleOp",
    "AssignVariableOp", "_Send", "_Recv", "StatefulPartitionedCall",
    "PartitionedCall", "Shape",
}
LAYERS = ("dense_1", "dense_2", "output")
PLACEMENT = re.compile(r"^(?P<node>\S+): \((?P<op>\w+)\): \S*?/device:(?P<device>\w+:\d+)$")


def fail(message):
    print(f"demo FAILED: {message}", file=sys.stderr)
    sys.exit(1)


class PlacementLog:
    """TF's placer printf()s `node: (Op): device` to C stdout for every graph
    it places once log_device_placement is on (it must be on before TF's
    context exists). fd 1 goes to a temp file for the whole run; Python's
    own prints go to the real stdout; `lines()` reads what was placed since
    the last call."""

    def __init__(self):
        self._libc = ctypes.CDLL(None)
        sys.stdout.flush()
        sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
        self._file = tempfile.TemporaryFile()
        os.dup2(self._file.fileno(), 1)
        self._read = 0
        tf.debugging.set_log_device_placement(True)

    def lines(self):
        self._libc.fflush(None)
        end = os.fstat(self._file.fileno()).st_size
        text = os.pread(self._file.fileno(), end - self._read, self._read)
        self._read = end
        placed = []
        for line in text.decode(errors="replace").splitlines():
            match = PLACEMENT.match(line.strip())
            if match:
                placed.append((match["node"], match["op"], match["device"]))
        return placed


def make_model():
    tf.keras.utils.set_random_seed(0)
    # Variables on the host; the compute runs where predict/fit are called
    # (on the FPGA). Optimizer updates of FPGA-placed variables would fail
    # with an UnimplementedError (docs/ops.md, "Variables and training").
    with tf.device("/CPU:0"):
        model = tf.keras.Sequential([
            tf.keras.Input((32,)),
            tf.keras.layers.Dense(128, activation="relu", name=LAYERS[0]),
            tf.keras.layers.Dense(64, activation="relu", name=LAYERS[1]),
            tf.keras.layers.Dense(10, activation="softmax", name=LAYERS[2]),
        ])
        # XLA has no FPGA backend: Keras must not jit-compile the steps.
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1),
                      loss="sparse_categorical_crossentropy", jit_compile=False)
    return model


def make_data(n=1024):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 32)).astype(np.float32)
    teacher = rng.standard_normal((32, 10)).astype(np.float32)
    return x, np.argmax(x @ teacher, axis=1)


def profiled(log, logdir, body):
    """Runs `body` on the FPGA under tf.profiler; returns its result, the ops
    TF placed meanwhile and the collected XSpace."""
    log.lines()  # drop what was placed before
    tf.profiler.experimental.start(logdir)
    try:
        with tf.device(FPGA):
            result = body()
    finally:
        tf.profiler.experimental.stop()
    return result, log.lines(), read_profile(logdir)


def print_predict_placement(placed):
    print("\n== Where each op ran (TF's placement log) ==")
    # Keras scopes a layer's ops as <model>/<layer>[_<n>]/<op>.
    layer = re.compile("/(" + "|".join(LAYERS) + r")(_\d+)?/")
    model_ops = [(n, o, d) for n, o, d in placed
                 if o not in BOOKKEEPING and layer.search(n)]
    for node, op, device in model_ops:
        print(f"  {device:<8} {op:<10} {node}")
    if not model_ops or any(not d.startswith("FPGA") for _, _, d in model_ops):
        fail("a compute op of the model did not run on the FPGA")
    on_cpu = sorted({o for _, o, d in placed if o not in BOOKKEEPING and d.startswith("CPU")})
    print(f"every model compute op ran on FPGA:0; on CPU: {', '.join(on_cpu) or 'nothing'} "
          "(Keras' input pipeline)")
    print("(TF places ops before graph optimization; tensorplug's pass then fuses each "
          "MatMul+BiasAdd(+Relu) into one _FusedMatMul on the FPGA, as the device time shows)")


def print_fit_placement(placed):
    print("\n== Where each op ran (TF's placement log), compute ops by device ==")
    per_device = collections.Counter()
    for _, op, device in placed:
        if op not in BOOKKEEPING:
            per_device[device, op] += 1
    for device in sorted({d for d, _ in per_device}):
        ops = sorted((op, n) for (d, op), n in per_device.items() if d == device)
        print(f"  {device}: " + ", ".join(f"{op} x{n}" for op, n in ops))


def read_profile(logdir):
    paths = sorted(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")))
    if not paths:
        fail(f"the profiler wrote no .xplane.pb under {logdir}")
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as f:
        space.ParseFromString(f.read())
    return paths[-1], space


def op_type(plane, event):
    """The TF op type from the event's `tf_op` stat (`node:Type`), a ref to
    the stat metadata that holds the string."""
    for stat in event.stats:
        if plane.stat_metadata[stat.metadata_id].name == "tf_op":
            return plane.stat_metadata[stat.ref_value].name.rpartition(":")[2]
    return "?"


def print_device_time(space):
    planes = [p for p in space.planes if p.name == DEVICE_PLANE]
    if not planes:
        fail(f"no {DEVICE_PLANE} plane in the profile: {[p.name for p in space.planes]}")
    plane = planes[0]
    per_op = collections.defaultdict(list)
    for line in plane.lines:
        if not line.name.startswith("Queue"):
            continue
        for event in line.events:
            meta = plane.event_metadata[event.metadata_id]
            # Ops of a tf.function are nested under its call node.
            name = meta.name.removeprefix("StatefulPartitionedCall/")
            per_op[name, op_type(plane, event)].append(event.duration_ps)
    if not per_op:
        fail(f"{DEVICE_PLANE} has no device op events")
    rows = sorted(per_op.items(), key=lambda kv: -sum(kv[1]))
    width = max(len(name) for (name, _), _ in rows)
    kind = max(len("type"), *(len(t) for (_, t), _ in rows))
    print(f"\n== Device time per op (from {DEVICE_PLANE} in the profile; count = device "
          "commands) ==")
    print(f"  {'op':<{width}} {'type':<{kind}} {'count':>6} {'total us':>10} {'mean us':>9}")
    for (name, type_), durations in rows:
        total_us = sum(durations) / 1e6
        print(f"  {name:<{width}} {type_:<{kind}} {len(durations):>6} {total_us:>10.1f} "
              f"{total_us / len(durations):>9.2f}")
    events = sum(len(d) for d in per_op.values())
    total = sum(sum(d) for d in per_op.values()) / 1e6
    print(f"  {'all':<{width}} {'':<{kind}} {events:>6} {total:>10.1f}")


def main():
    if len(sys.argv) != 2:
        fail("usage: mlp_demo.py <logdir>")
    logdir = os.path.abspath(sys.argv[1])
    log = PlacementLog()  # before anything creates TF's context
    fpgas = tf.config.list_physical_devices("FPGA")
    if not fpgas:
        fail("TensorFlow sees no FPGA: is tensorplug-fpga installed in this venv?")
    plugin_dir = [p for p in sys.path if os.path.isdir(os.path.join(p, "tensorflow-plugins"))]
    print(f"TensorFlow {tf.__version__}: {[d.name for d in fpgas]} "
          f"(plugin from {plugin_dir[0] + '/tensorflow-plugins' if plugin_dir else '?'}, "
          f"TENSORPLUG_DEVICE={os.environ.get('TENSORPLUG_DEVICE', 'sim (default)')})")

    model = make_model()
    x, y = make_data()

    print("\n### predict (1024 samples, batch 128) under tf.profiler")
    probs, placed, (path, space) = profiled(
        log, os.path.join(logdir, "predict"),
        lambda: model.predict(x, batch_size=128, verbose=0))
    print(f"{probs.shape[0]} samples -> {probs.shape[1]} classes, rows sum to 1 "
          f"within {np.abs(probs.sum(axis=1) - 1).max():.1e}")
    print_predict_placement(placed)
    print_device_time(space)
    print(f"profile: {path}")

    print("\n### fit (3 epochs, batch 128, SGD) under tf.profiler")
    history, placed, (path, space) = profiled(
        log, os.path.join(logdir, "fit"),
        lambda: model.fit(x, y, batch_size=128, epochs=3, verbose=0))
    print("loss per epoch: " + ", ".join(f"{v:.4f}" for v in history.history["loss"]))
    print_fit_placement(placed)
    print_device_time(space)
    print(f"profile: {path}")

    print(f"\nopen the profiles:  xprof --logdir {logdir}")
    print("  (pip install xprof; or tensorboard --logdir ... with tensorboard-plugin-profile)")


if __name__ == "__main__":
    main()
