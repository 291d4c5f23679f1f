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
from program_report import equal_op_by_op, largest_program  # noqa: E402

tf.keras.utils.set_random_seed(7)
qat, shape = quantized(convnet, samples=32)
x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (4, *shape)).astype(np.float32))

with tf.device("/device:FPGA:0"):
    equal_op_by_op(lambda t: qat(t, training=False), x)

nodes = largest_program(work / "report.txt")
assert nodes, (work / "report.txt").read_text()
print(f"qat: the largest program {nodes} nodes; equal to op by op in 3 calls")
