"""A Keras convnet under `mixed_bfloat16`, as a user writes it: no device
scope. On a CPU with oneDNN's bfloat16 support (AVX512_BF16), TF's
remapper fuses the CPU's bfloat16 `Conv2D → BiasAdd → Relu` into
`_FusedConv2D` (and `MatMul → BiasAdd` into `_FusedMatMul`), which then
run as oneDNN's kernels. The half-precision kernels on our device let TF's
placer put the block there first, so the CPU has nothing to fuse
(`docs/graph-optimizer.md`, "Half precision").

Reads the profile's device plane, not TF's placement log (which shows the
graph before the plugin's pass). Prints:

  fused_by_tf <yes|no>     (whether the graph our pass saw had CPU fusions)
  device_ops <op>=<n>…     (the FPGA's plane, one predict)
  cpu_compute <op>=<n>…    (the convolution and matmul ops on TF's CPU executor)
  max_diff <d>             (against the same model on /CPU:0)
  done
"""
import glob
import os
import sys
import tempfile

DUMP = tempfile.TemporaryDirectory(prefix="tensorplug-half-fused-")
os.environ["TENSORPLUG_GRAPH_DUMP_DIR"] = DUMP.name
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import graph_pb2  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from half_convnet import half_convnet  # noqa: E402
from tf_profiler_scenarios import profiled_ops  # noqa: E402

keras = tf.keras
keras.mixed_precision.set_global_policy("mixed_bfloat16")
keras.utils.set_random_seed(7)
model = half_convnet(keras)
# Loaded without the wheel: Keras 3 would turn XLA on (docs/wheel.md).
model.compile(jit_compile=False)
x = np.random.default_rng(3).standard_normal((32, 28, 28, 1)).astype("float32")
got = model.predict(x, verbose=0)
device, cpu = profiled_ops(lambda: model.predict(x, verbose=0))

fused = False
for path in glob.glob(os.path.join(DUMP.name, "*-in.pb")):
    graph = graph_pb2.GraphDef()
    with open(path, "rb") as f:
        graph.ParseFromString(f.read())
    fused |= any(n.op in ("_FusedConv2D", "_FusedMatMul") and "CPU" in n.device for n in graph.node)

with tf.device("/CPU:0"):
    want = model(x, training=False).numpy()


def counts(ops):
    return " ".join(f"{k}={v}" for k, v in sorted(ops.items()))


compute = {k: v for k, v in cpu.items() if "Conv" in k or "MatMul" in k}
print("fused_by_tf", "yes" if fused else "no")
print("device_ops", counts(device))
print("cpu_compute", counts(compute))
print("max_diff", float(np.abs(got - want).max()))
print("done")
