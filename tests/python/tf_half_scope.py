"""Half-precision ops and device scopes. In a `tf.function` that uses the
FPGA, a bfloat16 `MatMul` with no scope runs on the device and one under
`tf.device("/CPU:0")` stays on the CPU, read from the profile's planes
(`docs/graph-optimizer.md`, "Half precision"). In eager mode, bfloat16 and
float16 ops with no scope run on the device (their half kernels cast
around the float32 ones) and equal the float32 op rounded once, to one of
the type's ulps (TF's CPU kernels may round more often: TF 2.15's float16
`MatMul` and bfloat16 `Mean` do).

Prints:
  graph_device <op>=<n>…   (the FPGA's plane, one call)
  graph_cpu <op>=<n>…      (MatMuls on TF's CPU executor, oneDNN's too)
  pinned_exact <bool>      (the pinned MatMul equals the CPU's bit for bit)
  eager <name> <device> <device's and CPU's max relative diff from the
        float32 op rounded once>
  leaky <dtype> <devices of LeakyRelu, LeakyReluGrad> <both equal the
        CPU's, eager and in a function> <LeakyRelu, LeakyReluGrad events
        on the FPGA's plane, one call of the function>
  int8_matmul <device> <dtype> <equal> <equal, transposed in a function>
  int8_matmul_long refused <names the limit>
  done
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_profiler_scenarios import profile, profiled_ops  # noqa: E402

rng = np.random.default_rng(5)
x = tf.cast(rng.standard_normal((8, 16)).astype("float32"), tf.bfloat16)
w = tf.cast(rng.standard_normal((16, 16)).astype("float32"), tf.bfloat16)


@tf.function
def mixed(x, w):
    y = tf.nn.relu(tf.matmul(x, w))
    with tf.device("/CPU:0"):
        z = tf.matmul(y, w)
    return y, z


y, z = mixed(x, w)
device, _ = profiled_ops(lambda: mixed(x, w))


def cpu_matmuls():
    """The MatMul events of TF's CPU executor, oneDNN's `_MklMatMul` too
    (which `profiled_ops` skips: it is no registered op)."""
    _, space = profile(lambda: mixed(x, w))
    out = {}
    for plane in (p for p in space.planes if p.name == "/host:CPU"):
        for line in plane.lines:
            for event in line.events:
                kind = plane.event_metadata[event.metadata_id].name.rsplit(":", 1)[-1]
                if kind.endswith("MatMul"):
                    out[kind] = out.get(kind, 0) + 1
    return out


cpu = cpu_matmuls()
with tf.device("/CPU:0"):
    want_z = tf.matmul(y, w)


def counts(ops):
    return " ".join(f"{k}={v}" for k, v in sorted(ops.items()))


print("graph_device", counts(device))
print("graph_cpu", counts(cpu))
print("pinned_exact", bool(np.array_equal(z.numpy(), want_z.numpy())))


def relative(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float((np.abs(got - want) / np.maximum(np.abs(want), 1e-2)).max())


images = rng.standard_normal((2, 9, 9, 3)).astype("float32")
kernel = rng.standard_normal((3, 3, 3, 4)).astype("float32")
for dtype in (tf.bfloat16, tf.float16):
    cases = {
        "matmul": (tf.matmul, (x, w)),
        "conv2d": (
            lambda a, b: tf.nn.conv2d(a, b, 1, "SAME"),
            (tf.constant(images), tf.constant(kernel)),
        ),
        "mean": (lambda a: tf.reduce_mean(a, axis=1), (x,)),
    }
    for name, (fn, args) in cases.items():
        args = [tf.cast(a, dtype) for a in args]
        with tf.device("/CPU:0"):
            args = [tf.identity(a) for a in args]
            # The float32 op on the half inputs, rounded once.
            want = tf.cast(fn(*[tf.cast(a, tf.float32) for a in args]), dtype)
            cpu = fn(*args)
        got = fn(*args)
        print("eager", f"{name}_{dtype.name}", got.device.rsplit("/", 1)[-1],
              relative(got.numpy(), want.numpy()), relative(cpu.numpy(), want.numpy()))
# LeakyRelu and its gradient in the half types: alpha rounds to the type
# first, as TF's kernels cast it, so the device equals the CPU bit for bit,
# eager (the half kernels) and in a function (the graph pass's lowering).
for dtype in (tf.bfloat16, tf.float16):
    v = tf.cast(rng.standard_normal((4, 33)).astype("float32") * 4, dtype)
    g = tf.cast(rng.standard_normal((4, 33)).astype("float32"), dtype)

    def leaky(a, b):
        return (tf.nn.leaky_relu(a, 0.3),
                tf.raw_ops.LeakyReluGrad(gradients=b, features=a, alpha=0.3))

    with tf.device("/CPU:0"):
        v, g = tf.identity(v), tf.identity(g)
        want = leaky(v, g)
    eager = leaky(v, g)
    in_graph = tf.function(leaky)
    graph = in_graph(v, g)
    ran, _ = profiled_ops(lambda: in_graph(v, g))
    exact = [bool(np.array_equal(a.numpy(), b.numpy())) for a, b in zip(eager + graph, want + want)]
    print("leaky", dtype.name, eager[0].device.rsplit("/", 1)[-1], eager[1].device.rsplit("/", 1)[-1],
          all(exact), ran.get("LeakyRelu", 0), ran.get("LeakyReluGrad", 0))
# int8 x int8 -> int32 (BatchMatMulV3): on the device, exact; past 1024
# terms it is refused, naming the limit.
tf.config.set_soft_device_placement(False)
ints = np.random.default_rng(9)
a8 = tf.constant(ints.integers(-128, 128, (3, 5, 1000)), tf.int8)
b8 = tf.constant(ints.integers(-128, 128, (1, 1000, 4)), tf.int8)
b8_t = tf.transpose(b8, [0, 2, 1])
with tf.device("/device:FPGA:0"):
    got = tf.linalg.matmul(a8, b8, output_type=tf.int32)
    got_t = tf.function(lambda a, b: tf.linalg.matmul(a, b, transpose_b=True,
                                                       output_type=tf.int32))(a8, b8_t)
want = np.matmul(a8.numpy().astype(np.int64), b8.numpy().astype(np.int64))
print("int8_matmul", got.device.rsplit("/", 1)[-1], got.dtype.name,
      bool(np.array_equal(got.numpy(), want)), bool(np.array_equal(got_t.numpy(), want)))
long_a, long_b = tf.ones((2, 1100), tf.int8), tf.ones((1100, 2), tf.int8)
try:
    with tf.device("/device:FPGA:0"):
        tf.linalg.matmul(long_a, long_b, output_type=tf.int32).numpy()
    print("int8_matmul_long ran")
except tf.errors.OpError as e:
    print("int8_matmul_long refused", "exact up to 1024 terms" in e.message)
print("done")
