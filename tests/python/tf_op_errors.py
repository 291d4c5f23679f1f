"""Errors the device finds in an op's input (not faults: no reset) reach
Python at the op's result as `InvalidArgumentError` naming the op, its node
and the device's reason, in eager mode and in a tf.function, instead of
TF's "PluggableDevice SyncAll failed."; the next, unrelated ops succeed.

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
print("done")
