"""Two tensorplug plugins in one process: the reference FPGA and the example
NPU (loaded from one TF_PLUGGABLE_DEVICE_LIBRARY_PATH folder).

Checks, with soft placement off unless said otherwise:
- /device:FPGA:0 and /device:NPU:0 both exist and compute (MatMul, Relu);
- an op the NPU does not declare (Softmax) has no NPU kernel: with soft
  placement off it is refused, with it on TF places it elsewhere (the FPGA,
  which has one); an op no tensorplug device has (Tanh) runs on the CPU;
- one profiler session shows one device plane per plugin, each with ops.

Usage: tf_two_plugins.py <log dir>
"""
import glob
import sys

import numpy as np
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

logdir = sys.argv[1]
tf.config.set_soft_device_placement(False)

fpga = [d.name for d in tf.config.list_logical_devices("FPGA")]
npu = [d.name for d in tf.config.list_logical_devices("NPU")]
assert fpga == ["/device:FPGA:0"], fpga
assert npu == ["/device:NPU:0"], npu

rng = np.random.default_rng(7)
a = rng.standard_normal((8, 16)).astype(np.float32)
b = rng.standard_normal((16, 4)).astype(np.float32)
want = np.maximum(a @ b, 0)


def mlp_step(device):
    with tf.device(device):
        x = tf.constant(a)
        y = tf.nn.relu(tf.matmul(x, tf.constant(b)))
    assert y.device.endswith(device.lstrip("/")), (device, y.device)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)


tf.profiler.experimental.start(logdir)
mlp_step("/device:FPGA:0")
mlp_step("/device:NPU:0")
tf.profiler.experimental.stop()
print("matmul+relu correct on FPGA:0 and NPU:0")

with tf.device("/device:NPU:0"):
    x = tf.constant(a)
try:
    with tf.device("/device:NPU:0"):
        tf.nn.softmax(x)
    raise AssertionError("Softmax ran on the NPU, which does not declare it")
except tf.errors.InvalidArgumentError as e:
    assert "NPU" in str(e), e
tf.config.set_soft_device_placement(True)
with tf.device("/device:NPU:0"):
    s = tf.nn.softmax(x)  # TF picks the next device with a kernel: the FPGA.
    t = tf.math.sin(x)  # No tensorplug device has one: the CPU.
assert not s.device.endswith("NPU:0"), s.device
assert t.device.endswith("CPU:0"), t.device
np.testing.assert_allclose(s.numpy().sum(axis=1), np.ones(8), rtol=1e-5)
with tf.device("/CPU:0"):
    np.testing.assert_allclose(t.numpy(), tf.math.sin(a).numpy(), rtol=1e-6)
print(f"softmax without an NPU kernel: refused, then ran on {s.device}; sin on {t.device}")

paths = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
assert len(paths) == 1, paths
space = xplane_pb2.XSpace()
space.ParseFromString(open(paths[0], "rb").read())
device_planes = [p for p in space.planes if p.name.startswith("/device:GPU:")]
names = sorted(p.name for p in device_planes)
ids = sorted(p.id for p in device_planes)
assert len(device_planes) == 2, names
assert len(set(ids)) == 2, ids
for plane in device_planes:
    ops = {plane.event_metadata[e.metadata_id].name for line in plane.lines for e in line.events}
    assert any("MatMul" in op for op in ops) and any("Relu" in op for op in ops), (plane.name, ops)
print(f"profile: one plane per device: {names}")
