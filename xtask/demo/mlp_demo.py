"""`cargo xtask demo`: a Keras MLP on /device:FPGA:0 under TF's profiler.

usage: mlp_demo.py <logdir>

TensorFlow finds the plugin the way a user's install does: the wheel put
libtensorplug_host_bridge.so in site-packages/tensorflow-plugins/. The script
runs predict and a short fit on the FPGA while profiling, then prints

1. where each op ran (TF's placement log, printed by the placer to stdout),
2. the device time per op, read back from the collected .xplane.pb,
3. the log directory to open in xprof / TensorBoard.

Exits non-zero if there is no FPGA, no device plane in the profile, or a
compute op of predict did not run on the FPGA.
"""
import collections
import contextlib
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
DEVICE_PLANE = "/device:CUSTOM:0"  # how TF names a pluggable device's plane
# Ops that move or hold tensors rather than compute: not "compute ops".
BOOKKEEPING = {
    "_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Const", "NoOp",
    "Identity", "IdentityN", "ReadVariableOp", "VarHandleOp",
    "AssignVariableOp", "_Send", "_Recv", "StatefulPartitionedCall",
    "PartitionedCall", "Shape",
}
PLACEMENT = re.compile(r"^(?P<node>\S+): \((?P<op>\w+)\): \S*?/device:(?P<device>\w+:\d+)$")


def fail(message):
    print(f"demo FAILED: {message}", file=sys.stderr)
    sys.exit(1)


@contextlib.contextmanager
def placement_log(into):
    """Collects TF's placement lines (`node: (Op): device`). The placer
    printf()s them to C stdout, so fd 1 is redirected and C's buffer flushed."""
    libc = ctypes.CDLL(None)
    tf.debugging.set_log_device_placement(True)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield
        finally:
            libc.fflush(None)
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            tf.debugging.set_log_device_placement(False)
            tmp.seek(0)
            for line in tmp.read().decode(errors="replace").splitlines():
                match = PLACEMENT.match(line.strip())
                if match:
                    into.append((match["node"], match["op"], match["device"]))
                else:
                    print(line)  # not ours: pass it through


def make_model():
    tf.keras.utils.set_random_seed(0)
    with tf.device(FPGA):
        model = tf.keras.Sequential([
            tf.keras.Input((32,)),
            tf.keras.layers.Dense(128, activation="relu", name="dense_1"),
            tf.keras.layers.Dense(64, activation="relu", name="dense_2"),
            tf.keras.layers.Dense(10, activation="softmax", name="output"),
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


def run_workload(model, x, y, placed):
    with tf.device(FPGA):
        with placement_log(placed["predict"]):
            probs = model.predict(x, batch_size=128, verbose=0)
        with placement_log(placed["fit"]):
            history = model.fit(x, y, batch_size=128, epochs=3, verbose=0)
    return probs, history.history["loss"]


def print_placement(placed):
    print("\n== Where each op ran (TF's placement log) ==")
    layers = ("/dense_1/", "/dense_2/", "/output/")
    model_ops = [(n, o, d) for n, o, d in placed["predict"]
                 if o not in BOOKKEEPING and any(layer in n for layer in layers)]
    print(f"predict, model ops ({len(model_ops)}):")
    for node, op, device in model_ops:
        print(f"  {device:<8} {op:<10} {node}")
    off_fpga = [(n, o, d) for n, o, d in placed["predict"]
                if o not in BOOKKEEPING and not d.startswith("FPGA")]
    if not model_ops or any(not d.startswith("FPGA") for _, _, d in model_ops):
        fail("a predict compute op of the model did not run on the FPGA")
    print(f"predict: every model compute op on FPGA:0 "
          f"({len(off_fpga)} input-pipeline ops on CPU)")
    per_device = collections.Counter()
    for _, op, device in placed["fit"]:
        if op not in BOOKKEEPING:
            per_device[device.split(":")[0], op] += 1
    print("fit, compute ops by device (op type x count):")
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
            per_op[plane.event_metadata[event.metadata_id].name].append(event.duration_ps)
    if not per_op:
        fail(f"{DEVICE_PLANE} has no device op events")
    rows = sorted(per_op.items(), key=lambda kv: -sum(kv[1]))
    width = max(len(name) for name, _ in rows)
    print(f"\n== Device time per op (from {DEVICE_PLANE} in the profile) ==")
    print(f"  {'op':<{width}} {'count':>6} {'total us':>10} {'mean us':>9}")
    for name, durations in rows:
        total_us = sum(durations) / 1e6
        print(f"  {name:<{width}} {len(durations):>6} {total_us:>10.1f} "
              f"{total_us / len(durations):>9.2f}")
    events = sum(len(d) for d in per_op.values())
    total = sum(sum(d) for d in per_op.values()) / 1e6
    print(f"  {'all':<{width}} {events:>6} {total:>10.1f}")


def main():
    if len(sys.argv) != 2:
        fail("usage: mlp_demo.py <logdir>")
    logdir = os.path.abspath(sys.argv[1])
    fpgas = tf.config.list_physical_devices("FPGA")
    if not fpgas:
        fail("TensorFlow sees no FPGA: is tensorplug-fpga installed in this venv?")
    plugin_dir = [p for p in sys.path if os.path.isdir(os.path.join(p, "tensorflow-plugins"))]
    print(f"TensorFlow {tf.__version__}: {[d.name for d in fpgas]} "
          f"(plugin from {plugin_dir[0] + '/tensorflow-plugins' if plugin_dir else '?'}, "
          f"TENSORPLUG_DEVICE={os.environ.get('TENSORPLUG_DEVICE', 'sim (default)')})")

    model = make_model()
    x, y = make_data()
    placed = {"predict": [], "fit": []}
    tf.profiler.experimental.start(logdir)
    try:
        probs, losses = run_workload(model, x, y, placed)
    finally:
        tf.profiler.experimental.stop()
    print(f"predict: {probs.shape[0]} samples -> {probs.shape[1]} classes, "
          f"rows sum to 1 within {np.abs(probs.sum(axis=1) - 1).max():.1e}")
    print("fit: loss per epoch " + ", ".join(f"{v:.4f}" for v in losses))

    print_placement(placed)
    path, space = read_profile(logdir)
    print_device_time(space)
    print(f"\nprofile: {path}")
    print(f"open it:  xprof --logdir {logdir}   (pip install xprof; or tensorboard "
          f"--logdir {logdir} with tensorboard-plugin-profile)")


if __name__ == "__main__":
    main()
