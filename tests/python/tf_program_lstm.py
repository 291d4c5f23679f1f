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

x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)


def build():
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4)])


with tf.device("/CPU:0"):
    cpu = build()(x).numpy()
with tf.device("/device:FPGA:0"):
    model = build()
    t = tf.constant(x)
    programs = tf.function(lambda v: model(v, training=False))
    got = [programs(t).numpy() for _ in range(3)]
    # Read when TF optimizes the function, at its first call.
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "off"
    op_by_op = tf.function(lambda v: model(v, training=False))
    want = op_by_op(t).numpy()

assert all(g.tobytes() == want.tobytes() for g in got), (got, want)
np.testing.assert_allclose(want, cpu, atol=1e-5)
report = (work / "report.txt").read_text()
nodes = [int(line.rsplit(": ", 1)[1].split()[0]) for line in report.splitlines()
         if line.startswith("program ") and line.endswith(" nodes")]
assert nodes, report
print(f"lstm: the largest program {max(nodes)} nodes; equal to op by op in 3 calls")
