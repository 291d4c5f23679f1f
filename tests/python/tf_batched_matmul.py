"""A batched matrix product is one device command (the catalogue's
`BatchMatMul` record) where the batch does not broadcast `a`: TF's
`BatchMatMulV2` and the `Einsum` of Keras' MultiHeadAttention each launch
one command on the FPGA's profile plane, not one `MatMul` per matrix, and
equal TF's CPU. A broadcast `a` still runs one `MatMul` per matrix.
Soft placement is off: an op on the CPU fails the script."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tf_profiler_scenarios import profiled_ops  # noqa: E402

tf.config.set_soft_device_placement(False)
rng = np.random.default_rng(5)


def check(cond, msg):
    if not cond:
        raise SystemExit(f"FAIL: {msg}")


def on_both(fn, *shapes):
    """`fn` on the CPU and on the FPGA; the FPGA's op counts of one call."""
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    with tf.device("/CPU:0"):
        want = tf.function(fn)(*args).numpy()
    with tf.device("/device:FPGA:0"):
        device_fn = tf.function(fn)
        got = device_fn(*args).numpy()
        device, _ = profiled_ops(lambda: device_fn(*args).numpy())
    worst = float(np.abs(got - want).max())
    check(got.shape == want.shape, f"shape {got.shape} against {want.shape}")
    check(worst <= 1e-5, f"{worst} from the CPU")
    return device, worst


cases = [
    # name, fn, shapes, the op, its device commands per call
    ("equal batch", lambda a, b: tf.linalg.matmul(a, b), [(4, 3, 5, 6), (4, 3, 6, 7)],
     "BatchMatMulV2", 1),
    ("adjoints", lambda a, b: tf.linalg.matmul(a, b, adjoint_a=True, adjoint_b=True),
     [(2, 6, 5), (2, 7, 6)], "BatchMatMulV2", 1),
    ("b of batch 1", lambda a, b: tf.linalg.matmul(a, b, adjoint_a=True),
     [(3, 6, 5), (1, 6, 7)], "BatchMatMulV2", 1),
    ("a broadcast", lambda a, b: tf.linalg.matmul(a, b), [(1, 5, 6), (3, 6, 2)],
     "BatchMatMulV2", 3),
    ("attention scores", lambda k, q: tf.einsum("aecd,abcd->acbe", k, q),
     [(4, 16, 2, 8), (4, 16, 2, 8)], "Einsum", None),
]
# Outputs that interleave the product's groups (each failed on the device
# before stop 66: the result's transpose took its merged shape), eagerly,
# in a function, and inside a device program (the element-wise ops around
# make a segment).
interleaved = [
    ("ij,bjk->bik", [(4, 5), (3, 5, 6)]),
    ("abc,cd->adb", [(2, 3, 4), (4, 5)]),
    ("zac,zcde->zdae", [(2, 3, 4), (2, 4, 5, 6)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (3, 5, 6)]),
    ("adbcfg,afgde->abcde", [(2, 3, 4, 5, 6, 7), (2, 6, 7, 3, 8)]),
]
for eq, shapes in interleaved:
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    with tf.device("/CPU:0"):
        want = tf.einsum(eq, *args).numpy()
    with tf.device("/device:FPGA:0"):
        eager = tf.einsum(eq, *args).numpy()
        traced = tf.function(lambda a, b, eq=eq: tf.nn.relu(tf.einsum(eq, a, b) * 2.0) + 1.0)
        in_program = traced(*args).numpy()
    worst = max(float(np.abs(eager - want).max()),
                float(np.abs(in_program - (np.maximum(want * 2.0, 0) + 1.0)).max()))
    check(worst <= 1e-5, f"{eq}: {worst} from the CPU")
print(f"{len(interleaved)} interleaving Einsums equal the CPU, eagerly and in a program")

for name, fn, shapes, op, commands in cases:
    device, worst = on_both(fn, *shapes)
    count = device.get(op, 0)
    print(f"{name}: {op} {count} device command(s), {worst:.2e} from the CPU")
    if commands is not None:
        check(count == commands, f"{name}: {count} device commands for {op}, not {commands}")
    else:
        # Its operands moved into [a, c, ·, ·] and one product of the 8
        # matrices; one MatMul each would be 8 more.
        check(1 <= count < 8, f"{name}: {count} device commands for {op}")
print("batched products: OK")
