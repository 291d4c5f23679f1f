"""Device errors inside kernels reach Python as tf.errors naming the op and
the cause, and the process keeps working.

Run with TENSORPLUG_SIM_FAULTS="fault_next_command@softmax,lose_next_completion@relu"
and TENSORPLUG_TIMEOUT_MS=2000: the first Softmax launch ends in DEVICE_FAULT
(the device halts), the first Relu launch loses its completion (a timeout).
"""
import numpy as np
import tensorflow as tf

FPGA = "/device:FPGA:0"
x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)


def on_fpga(fn):
    with tf.device(FPGA):
        out = fn(tf.identity(tf.constant(x)))
    assert out.device.endswith("device:FPGA:0"), out.device
    return out.numpy()


def expect(error_type, fn, *needles):
    try:
        on_fpga(fn)
    except error_type as e:
        for needle in needles:
            assert needle in e.message, f"no {needle!r} in: {e.message}"
        print(f"{error_type.__name__}: {e.message.splitlines()[0]}")
        return
    raise AssertionError(f"expected {error_type.__name__}")


expect(tf.errors.InternalError, tf.nn.softmax, "FPGA Softmax 'Softmax'", "DEVICE_FAULT")
# The device was reset: the same op and others run again, with right results.
np.testing.assert_allclose(on_fpga(tf.nn.softmax), tf.nn.softmax(x).numpy(), rtol=1e-5)
expect(tf.errors.DeadlineExceededError, tf.nn.relu, "FPGA Relu 'Relu'", "2000 ms")
assert (on_fpga(tf.nn.relu) == np.maximum(x, 0)).all()
np.testing.assert_allclose(on_fpga(lambda t: tf.linalg.matmul(t, t, transpose_b=True)), x @ x.T,
                           rtol=1e-5, atol=1e-5)
print("after both faults the device keeps working")
