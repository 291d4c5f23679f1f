"""A device fault in a variable update inside a tf.function. Run with
TENSORPLUG_SIM_FAULTS=fault_next_command@sub: the first Sub on the device
faults. The graph pass's update arithmetic waits for the device
(docs/ops.md, "Variables and training"), so the step fails with the
attributed error before the variable is assigned: the variable keeps its
value, and the next steps work.
"""
import numpy as np
import tensorflow as tf

with tf.device("/device:FPGA:0"):
    v = tf.Variable(tf.ones(4))


@tf.function
def step(g):
    v.assign_sub(g)
    return v.read_value()


try:
    step(tf.fill([4], 0.25)).numpy()
except tf.errors.InternalError as error:
    text = error.message
    assert "FPGA Sub 'AssignSubVariableOp/tensorplug_update'" in text, text
    assert "DEVICE_FAULT" in text, text
    assert text.count("FPGA Sub 'AssignSubVariableOp/tensorplug_update'") == 1, text
    print("faulted update: InternalError from FPGA Sub 'AssignSubVariableOp/tensorplug_update'")
else:
    raise AssertionError("the faulted update did not fail")
after = step(tf.fill([4], 0.25)).numpy()
assert np.array_equal(after, np.full(4, 0.75, np.float32)), after
assert np.array_equal(step(tf.fill([4], 0.25)).numpy(), np.full(4, 0.5, np.float32))
print("the variable kept its value through the fault; later steps work")
