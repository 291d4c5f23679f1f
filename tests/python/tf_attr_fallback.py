"""Attribute values the FPGA cannot run fall back to the CPU in a graph:
Einsum equations it does not lower (a repeated label) and GatherV2 with
batch_dims != 0. With no device scope (the FPGA is the default device)
each runs in a tf.function, equals numpy, and the fallback report names it
`(not with these attributes)`. Before the graph pass knew these values,
each step failed with UnimplementedError. A label summed within one
operand (`ij->i`) runs on the device (a device ReduceSum first): in a
graph the report names nothing, and eagerly too (`eager_einsum_summed_in_one_operand
ok on FPGA:0`; it failed with UnimplementedError). An eager repeated label
(`ii->i`, the trace `ii`) runs on the device too (a device Gather of the
diagonal), where it failed: TF cannot place an eager op by a string
attribute, so the kernel lowers it.

Then, in eager mode: GatherV2 is registered for batch_dims = 0 only, so TF
places batch_dims = 1 on the CPU (`eager_gather_batch_dims_1 ok on CPU`)
and batch_dims = 0 on the FPGA; before, it failed with UnimplementedError.
ThreeFry (alg 2) has no CPU kernel either: the FPGA fails it with the
CPU's error class (`threefry <case> same error as the CPU: <class>`).
Last, with TENSORPLUG_FALLBACK=error the graph gather fails the step.

Prints `<case> ok <report line>` per case, then `done`.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf_fallback_report import fallback_module  # noqa: E402

rng = np.random.default_rng(3)
a = rng.standard_normal((3, 4)).astype(np.float32)
sq = rng.standard_normal((4, 4)).astype(np.float32)
b = rng.standard_normal((4, 5)).astype(np.float32)
c = rng.standard_normal((5, 2)).astype(np.float32)
params = rng.standard_normal((2, 6, 3)).astype(np.float32)
idx = np.array([[0, 5, 2], [1, 1, 4]], np.int32)

# Eager tensors (on the FPGA, the default device): numpy constants would
# be folded into the graph's constants before any op runs.
ta, tsq, tb, tc, tparams = (tf.constant(v) for v in (a, sq, b, c, params))
CASES = [
    ("einsum_summed_in_one_operand", lambda: tf.einsum("ij->i", ta), a.sum(axis=1), None),
    ("einsum_repeated_label", lambda: tf.einsum("ii->i", tsq), np.diagonal(sq), "Einsum"),
    # TF splits three operands into two-operand Einsums, which the FPGA
    # lowers: no fallback.
    ("einsum_three_operands", lambda: tf.einsum("ij,jk,kl->il", ta, tb, tc), a @ b @ c, None),
    ("gather_batch_dims_1", lambda: tf.gather(tparams, idx, axis=1, batch_dims=1),
     np.stack([params[i][idx[i]] for i in range(2)]), "GatherV2"),
]

report = fallback_module().report
for name, fn, want, op in CASES:
    got = tf.function(fn)().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    lines = report(fn)
    if op is None:
        assert not lines, (name, lines)
        print(f"{name} ok on the device")
        continue
    lines = [line for line in lines if line.startswith(f"{op} ")]
    assert lines and all(line.endswith("(not with these attributes)") for line in lines), (name, lines)
    print(f"{name} ok {lines[0]}")

# Eager: TF itself picks the device from the kernels' attribute constraints.
eager_idx = tf.constant(idx)
for name, fn, device, want in [
    ("eager_einsum_summed_in_one_operand", lambda: tf.einsum("ij->i", ta), "FPGA:0", a.sum(1)),
    ("eager_einsum_two_operands_each_summing", lambda: tf.einsum("ij,kl->ik", ta, tc),
     "FPGA:0", np.einsum("ij,kl->ik", a, c)),
]:
    got = fn()
    assert got.device.endswith(device), (name, got.device)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    print(f"{name} ok on {device}")
for name, eq in [("eager_einsum_repeated_label", "ii->i"), ("eager_einsum_trace", "ii")]:
    got = tf.einsum(eq, tsq)
    assert got.device.endswith("FPGA:0"), (name, got.device)
    np.testing.assert_allclose(got.numpy(), np.einsum(eq, sq), rtol=1e-5, atol=1e-5)
    print(f"{name} ok on FPGA:0")

for name, batch_dims, axis, device, want in [
    ("eager_gather_batch_dims_1", 1, 1, "CPU:0", CASES[3][2]),
    ("eager_gather_batch_dims_0", 0, 0, "FPGA:0", params[[1, 0]]),
]:
    indices = eager_idx if batch_dims else tf.constant([1, 0])
    got = tf.gather(tparams, indices, axis=axis, batch_dims=batch_dims)
    assert got.device.endswith(device), (name, got.device)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    print(f"{name} ok on {device}")


def threefry_cases():
    key, counter = tf.constant([1], tf.uint64), tf.constant([0, 0], tf.uint64)
    return [
        ("stateless_uniform",
         lambda: tf.random.stateless_uniform([3], seed=[1, 2], alg="threefry")),
        ("raw_alg_2", lambda: tf.raw_ops.StatelessRandomUniformV2(
            shape=[3], key=key, counter=counter, alg=2)),
    ]


def error_class(fn):
    try:
        fn().numpy()
    except tf.errors.OpError as e:
        return type(e).__name__, e.message
    return "no error", ""


for name, fn in threefry_cases():
    ours, message = error_class(fn)
    with tf.device("/CPU:0"):
        cpu, cpu_message = error_class(fn)
    assert ours == cpu != "no error", (name, ours, message, cpu, cpu_message)
    print(f"threefry {name} same error as the CPU: {ours}")

os.environ["TENSORPLUG_FALLBACK"] = "error"
try:
    tf.function(CASES[3][1])().numpy()
except tf.errors.InvalidArgumentError as e:
    assert "GatherV2 node" in e.message and "TENSORPLUG_FALLBACK=error" in e.message, e.message
    print("fallback error ok")
else:
    raise AssertionError("TENSORPLUG_FALLBACK=error: the gather ran")
print("done")
