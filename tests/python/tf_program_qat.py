"""A QAT convnet's int8 ops on /device:FPGA:0 as one device program.

    python tf_program_qat.py <work dir>

tf_keras (TF_USE_LEGACY_KERAS=1) builds `int8_qat.py`'s convnet, tfmot's
`quantize_model` wraps it, and one epoch of `fit` on the CPU sets its
ranges. Then one function calls it on a batch of 4 on /device:FPGA:0 three
times with device programs on: the graph pass rewrites it into int8 ops,
which one program holds. A second function, made with programs off, calls
it once more op by op: the int8 ops are exact, so its output must be the
same bytes. Prints

  qat: the largest program <m> nodes; equal to op by op in 3 calls
"""
import os
import pathlib
import sys

work = pathlib.Path(sys.argv[1])
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "on"
os.environ["TENSORPLUG_FALLBACK_FILE"] = str(work / "report.txt")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from int8_qat import convnet, quantized  # noqa: E402

tf.keras.utils.set_random_seed(7)
qat, shape = quantized(convnet, samples=32)
x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (4, *shape)).astype(np.float32))

with tf.device("/device:FPGA:0"):
    programs = tf.function(lambda t: qat(t, training=False))
    got = [programs(x).numpy() for _ in range(3)]
    # Read when TF optimizes the function, at its first call.
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "off"
    op_by_op = tf.function(lambda t: qat(t, training=False))
    want = op_by_op(x).numpy()

assert all(g.tobytes() == want.tobytes() for g in got), (got, want)
report = (work / "report.txt").read_text()
nodes = [int(line.rsplit(": ", 1)[1].split()[0]) for line in report.splitlines()
         if line.startswith("program ") and line.endswith(" nodes")]
assert nodes, report
print(f"qat: the largest program {max(nodes)} nodes; equal to op by op in 3 calls")
