"""A program the device refuses runs its native segment on the CPU.

    python tf_program_native.py <work dir>

With TENSORPLUG_GRAPH_PROGRAMS=1 a function's MatMul → Mul → AddV2 →
Softmax on /device:FPGA:0 becomes one program node. (Not a bias add: TF
fuses MatMul and BiasAdd into `_FusedMatMul`, which alone is no program.) Called on x [4, 5] the program
runs on the device and the native segment's copies run nothing (the
FPGA plane shows the program's commands under their nodes' names, none of
the copies'). Called on x [4, 0] (an empty contraction: a non-empty
output from an empty input, which a program refuses, naming the node) the
program says `ran` false and the copies, the segment's nodes as they
were, run op by op on the FPGA: equal to TF's CPU, said once in the
report.
The same function made under TENSORPLUG_FALLBACK=error fails that call.

Prints `ran ok <max |diff|>`, `native ok <max |diff|>`, `device_native
<copies' ops> <program's ops>` (on the FPGA plane, a call the device
runs), `refused_native` (the same, a refused call), `report <lines naming
the fallback>`, `error ok <message>`.
"""

import os
import pathlib
import sys

work = pathlib.Path(sys.argv[1])
os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "1"
os.environ["TENSORPLUG_FALLBACK_FILE"] = str(work / "report.txt")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from tf_profiler_scenarios import PLANE_PREFIX, profile, stats  # noqa: E402

tf.config.set_soft_device_placement(False)
SIG = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None, None], tf.float32),
       tf.TensorSpec([None], tf.float32)]


def make():
    @tf.function(input_signature=SIG)
    def layer(x, w, b):
        with tf.device("/device:FPGA:0"):
            return tf.nn.softmax(tf.matmul(x, w) * 2.0 + b)
    return layer


def want(x, w, b):
    h = (x @ w) * 2 + b
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


rng = np.random.default_rng(3)
b = rng.standard_normal(3).astype(np.float32)
x5, w5 = (rng.standard_normal(s).astype(np.float32) for s in [(4, 5), (5, 3)])
x0, w0 = np.zeros((4, 0), np.float32), np.zeros((0, 3), np.float32)
layer = make()
got = layer(x5, w5, b).numpy()
print(f"ran ok {np.max(np.abs(got - want(x5, w5, b))):.3g}")
got = layer(x0, w0, b).numpy()
if got.shape != (4, 3):
    sys.exit(f"native: shape {got.shape}")
print(f"native ok {np.max(np.abs(got - want(x0, w0, b))):.3g}")
def device_ops(x, w):
    """The FPGA plane's ops of one call: (the native segment's copies,
    the program's)."""
    _, space = profile(lambda: layer(x, w, b).numpy())
    ops = [stats(plane, e).get("tf_op", "") for plane in space.planes
           if plane.name.startswith(PLANE_PREFIX) for line in plane.lines for e in line.events]
    native = sum("/native/" in op for op in ops)
    return native, sum(op.startswith("MatMul:") or op.startswith("Softmax:") for op in ops)


print("device_native {} {}".format(*device_ops(x5, w5)))
print("refused_native {} {}".format(*device_ops(x0, w0)))
said = [line for line in (work / "report.txt").read_text().splitlines() if "native segment" in line]
print(f"report {len(said)}")
for line in said:
    print(f"  {line}")
os.environ["TENSORPLUG_FALLBACK"] = "error"
strict = make()
strict(x5, w5, b).numpy()
try:
    strict(x0, w0, b).numpy()
    sys.exit("error: a refused program did not fail under TENSORPLUG_FALLBACK=error")
except tf.errors.OpError as e:
    why = [line for line in e.message.splitlines() if "empty input" in line] or ["-"]
    print(f"error ok {type(e).__name__}: {why[0].strip()}")
