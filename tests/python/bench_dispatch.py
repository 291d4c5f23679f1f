"""Eager dispatch of a tiny op: tf.nn.relu on 16 floats on /device:FPGA:0 vs
/device:CPU:0, same process, interleaved. Writes tf_eager_dispatch_ratio."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402

CALLS = 200  # per timed sample
REPS = 60

x = np.linspace(-1, 1, 16, dtype=np.float32)
inputs = {}
for device in ("/device:CPU:0", "/device:FPGA:0"):
    with tf.device(device):
        inputs[device] = tf.identity(tf.constant(x))


def timed(device):
    t = inputs[device]
    with tf.device(device):
        tf.nn.relu(t).numpy()  # drain earlier work; not timed
        start = clock()
        for _ in range(CALLS):
            y = tf.nn.relu(t)
        elapsed = clock() - start
        y.numpy()
    return elapsed / CALLS


for device in inputs:  # warm up kernels and caches
    for _ in range(3):
        timed(device)
medians = interleaved_medians(list(inputs), REPS, timed)
write_figure(
    "tf_eager_dispatch_ratio",
    "TF eager dispatch, relu on 16 floats: FPGA(sim) vs CPU",
    medians["/device:FPGA:0"] * 1e6, medians["/device:CPU:0"] * 1e6, "us/op",
    "ratio <= 1.0",
)
