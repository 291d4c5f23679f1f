"""TensorFlow with the FPGA behind the MCU firmware under QEMU (a `tcp:`
device on the firmware's UART; the model runs in the MCU's RAM): a small
Keras MLP's `predict` under tf.profiler, compared with the CPU.

Checks: every compute op of `predict` on FPGA:0 (TF's placement log), the
result equal to the CPU within 1e-5, and the profile's device plane holding
the device ops the firmware's model stamped.

Usage: tf_qemu_mlp.py <log dir>
"""
import glob
import sys

import numpy as np
import tensorflow as tf
import keras
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from tf_kernels_common import StderrCapture, placements

logdir = sys.argv[1]
FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
COMPUTE = {"MatMul", "_FusedMatMul", "BiasAdd", "Relu", "Softmax"}
tf.debugging.set_log_device_placement(True)
keras.utils.set_random_seed(3)
x = np.random.default_rng(4).standard_normal((8, 8)).astype(np.float32)

with tf.device(CPU):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4, activation="softmax")], name="tiny")
    model.compile(jit_compile=False)
    cpu = model.predict(x, verbose=0)

tf.profiler.experimental.start(logdir)
with StderrCapture() as log, tf.device(FPGA):
    fpga = model.predict(x, batch_size=8, verbose=0)
tf.profiler.experimental.stop()

placed = placements(log.text)
off = [(node, op, dev) for node, op, dev in placed if op in COMPUTE and not dev.endswith("FPGA:0")]
assert not off, f"compute ops not on the FPGA: {off}"
on = sorted({op for node, op, dev in placed if node.startswith("tiny") and dev.endswith("FPGA:0")})
assert {"MatMul", "Relu", "Softmax"} <= set(on), on
diff = float(np.abs(fpga - cpu).max())
assert diff <= 1e-5, f"predict differs from the CPU by {diff}"
print(f"predict on the firmware's FPGA: model ops {on}, max |fpga - cpu| = {diff:.3g}")

paths = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
assert len(paths) == 1, paths
space = xplane_pb2.XSpace()
space.ParseFromString(open(paths[0], "rb").read())
planes = [p for p in space.planes if p.name.startswith("/device:GPU:")]
assert len(planes) == 1, [p.name for p in space.planes]
ops = sorted({planes[0].event_metadata[e.metadata_id].name
              for line in planes[0].lines if line.name.startswith("Queue")
              for e in line.events})
# Events are named after the TF node; the fusion pass turned each
# Dense layer's MatMul+BiasAdd(+Relu) into one _FusedMatMul named after its
# last node, so three ops: two fused layers and the softmax.
assert len(ops) == 3 and any(op.endswith("Softmax") for op in ops), ops
print(f"profile: {planes[0].name} device ops {ops}")
