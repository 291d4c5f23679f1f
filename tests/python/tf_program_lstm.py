"""A Keras LSTM's steps on /device:FPGA:0 as device programs.

    python tf_program_lstm.py <work dir>

An LSTM(4) over 5 steps of 3 features, built on /device:FPGA:0, predicts a
batch of 2 three times through one function with device programs on: each
step of its `while` loop (both products, `split` into the gates, the cell)
is one program. A second function, made with programs off, predicts once
more op by op: the commands are the same, so its output must be the same
bytes; both are within 1e-5 of the CPU. Prints

  lstm: the largest program <m> nodes; equal to op by op in 3 calls
"""
import os
import pathlib
import sys

work = pathlib.Path(sys.argv[1])
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "on"
os.environ["TENSORPLUG_FALLBACK_FILE"] = str(work / "report.txt")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from program_report import equal_op_by_op, largest_program  # noqa: E402

x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)


def build():
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4)])


with tf.device("/CPU:0"):
    cpu = build()(x).numpy()
with tf.device("/device:FPGA:0"):
    model = build()
    want = equal_op_by_op(lambda v: model(v, training=False), tf.constant(x))

np.testing.assert_allclose(want, cpu, atol=1e-5)
nodes = largest_program(work / "report.txt")
assert nodes, (work / "report.txt").read_text()
print(f"lstm: the largest program {nodes} nodes; equal to op by op in 3 calls")
