"""Errors the device finds in an op's input (not faults: no reset) reach
Python at the op's result as `InvalidArgumentError` naming the op, its node
and the device's reason, in eager mode and in a tf.function, instead of
TF's "PluggableDevice SyncAll failed."; the next, unrelated ops succeed.

Then what used to report a stale error or none (`after <case> ok`), eager
and in a tf.function:
- `unread`: a failed gather whose result is never read, then `tf.fill` (a
  host-to-device copy of its dims) and `x * 2`: both succeed (the fill
  failed with the gather's error);
- `consumer`: `gather(...) * 2` read after the gather's failure was found:
  fails naming the gather (it returned stale memory, no error);
- `folded`: after a failure was reported, a tf.function whose constant
  output needs no device work copies fine (it failed with the old error).

Prints one `<case>: <first line of the error>` per case, then `done`.
"""
import numpy as np
import tensorflow as tf

FPGA = "/device:FPGA:0"
params = np.arange(12, dtype=np.float32).reshape(4, 3)
data = np.ones((3, 2), np.float32)


def gather(p):
    return tf.gather(p, tf.constant([0, 7]))


def segment_sum(d):
    return tf.math.unsorted_segment_sum(d, tf.constant([0, 5, 1]), 2)


CASES = [
    ("eager_gather", gather, params, "GatherV2"),
    ("graph_gather", tf.function(gather), params, "GatherV2"),
    ("eager_segment_sum", segment_sum, data, "UnsortedSegmentSum"),
    ("graph_segment_sum", tf.function(segment_sum), data, "UnsortedSegmentSum"),
]

for name, fn, arg, op in CASES:
    with tf.device(FPGA):
        x = tf.identity(tf.constant(arg))
        try:
            out = fn(x)
            assert out.device.endswith("device:FPGA:0"), out.device
            out.numpy()
        except tf.errors.InvalidArgumentError as e:
            # TF may put its own lines first ("Graph execution error:").
            ours = [line for line in e.message.splitlines() if f"FPGA {op} '" in line]
            assert ours and "INVALID_ARGUMENT" in ours[0], (name, e.message)
            assert "SyncAll" not in e.message, (name, e.message)
            print(f"{name}: {ours[0].strip()}")
        else:
            raise AssertionError(f"{name}: no error")
        # The next ops are unrelated: they succeed, with right results.
        filled = tf.fill([2, 3], 2.0)
        np.testing.assert_array_equal(filled.numpy(), np.full((2, 3), 2.0, np.float32))
        np.testing.assert_array_equal((x * 2.0).numpy(), arg * 2)


def fails_naming(op, fn):
    try:
        fn()
    except tf.errors.InvalidArgumentError as e:
        assert f"FPGA {op} '" in e.message and "INVALID_ARGUMENT" in e.message, e.message
        return
    raise AssertionError(f"no error naming {op}")


# TF 2.15 and 2.16 abort on a failed device-to-host copy, so there every
# kernel waits for the device: a failed op raises at its call.
KERNELS_WAIT = tuple(int(v) for v in tf.__version__.split(".")[:2]) < (2, 17)


def unread(p):
    try:
        tf.gather(p, tf.constant([0, 7]))  # fails on the device, never read
    except tf.errors.InvalidArgumentError as e:
        assert KERNELS_WAIT and "FPGA GatherV2 '" in e.message, e.message
    return tf.fill([2, 3], 2.0)


def consumer(p):
    return tf.gather(p, tf.constant([0, 7])) * 2.0


with tf.device(FPGA):
    x = tf.identity(tf.constant(params))
    for mode, wrap in [("eager", lambda f: f), ("graph", tf.function)]:
        # `unread`: the gather's failure is not the fill's.
        filled = wrap(unread)(x)
        np.testing.assert_array_equal(filled.numpy(), np.full((2, 3), 2.0, np.float32))
        np.testing.assert_array_equal((x * 2.0).numpy(), params * 2)
        print(f"after {mode}_unread ok")
        # `consumer`: found by the fill's copy first, then read through `* 2`.
        if not KERNELS_WAIT:
            y = tf.gather(x, tf.constant([0, 7]))
            tf.fill([2], 1.0).numpy()
            fails_naming("GatherV2", lambda: wrap(lambda t: t * 2.0)(y).numpy())
        fails_naming("GatherV2", lambda: wrap(consumer)(x).numpy())
        print(f"after {mode}_consumer ok")
        # `folded`: no device work in the function; its copy is clean.
        folded = tf.function(lambda: tf.fill([2], 5.0))
        np.testing.assert_array_equal(folded().numpy(), [5.0, 5.0])
        print(f"after {mode}_folded ok")
print("done")
