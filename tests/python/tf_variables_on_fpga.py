"""Variables placed on /device:FPGA:0.

Inside a tf.function (Keras `fit`), the plugin's graph pass rewrites each
AssignAdd/AssignSubVariableOp on the FPGA into ReadVariableOp -> AddV2/Sub ->
AssignVariableOp (docs/ops.md, "Variables and training"), so training with
variables on the FPGA works. Eager updates outside a tf.function still raise
a clear TF error (no SIGSEGV from TF's DEVICE_DEFAULT kernels).

Checks, in order:
1. our FPGA kernels for AssignAdd/AssignSubVariableOp are registered with no
   dtype constraint (so TF never falls back to DEVICE_DEFAULT for them);
2. without a device scope, new variables land on the FPGA; eager
   assign_add/assign_sub on FPGA variables (float32, int64) raise
   UnimplementedError naming the op and the way out;
3. a Keras MLP built and trained on the FPGA (variables, optimizer slots and
   the int64 step counter there) with SGD, SGD with momentum, Adam, AdamW
   and RMSprop: the losses equal a CPU run's within 1e-5, and the model's
   MatMul/BiasAdd/Relu, the variable updates, the backward pass (ReluGrad,
   SparseSoftmaxCrossEntropyWithLogits) and the optimizer's math (Sqrt,
   RealDiv, Pow, ...) are placed on the FPGA;
4. the older pattern (model built on the CPU, fit on the FPGA) still trains.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the placement log is INFO
import numpy as np
import tensorflow as tf
import keras
from tensorflow.python.framework import kernels

from tf_kernels_common import StderrCapture, placements, tf_variable

FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
tf.debugging.set_log_device_placement(True)  # before TF runs anything
WAY_OUT = ("call it from a tf.function", "tf.device('/CPU:0')")
x = np.random.default_rng(1).standard_normal((128, 12)).astype(np.float32)
y = np.random.default_rng(2).integers(0, 3, 128)


def expect_refusal(what, op_types, body):
    """`body` must raise UnimplementedError from one of our refusing kernels."""
    try:
        body()
    except tf.errors.UnimplementedError as error:
        text = str(error)
        # Our message names the node; TF's eager wrapper names the op.
        assert "FPGA variable op '" in text, f"{what}: not our refusal:\n{text}"
        named = [op for op in op_types if f"[Op:{op}]" in text]
        assert named, f"{what}: the error names none of {op_types}:\n{text}"
        assert all(hint in text for hint in WAY_OUT), f"{what}: no way out in:\n{text}"
        print(f"{what}: UnimplementedError from FPGA {named[0]}")
        return
    raise AssertionError(f"{what}: no error")


# 1. Registration: a device-specific kernel with no dtype constraint.
for op in ("AssignAddVariableOp", "AssignSubVariableOp"):
    fpga = [k for k in kernels.get_registered_kernels_for_op(op).kernel
            if k.device_type == "FPGA"]
    # (A DT_RESOURCE input always lives in host memory.)
    assert len(fpga) == 1 and not fpga[0].constraint, f"{op}: {fpga}"
print("registered: FPGA AssignAddVariableOp and AssignSubVariableOp for every dtype")

# 2. Without a device scope TF puts new variables on the FPGA (docs/ops.md).
unscoped = tf.Variable(1.0)
assert unscoped.device.endswith("FPGA:0"), unscoped.device
print(f"no device scope: a new variable lives on {unscoped.device.rpartition('/')[2]}")

# Eager updates, float32 and an int64 counter.
with tf.device(FPGA):
    weights = tf.Variable(tf.ones(4))
    counter = tf.Variable(0, dtype=tf.int64)
assert weights.device.endswith("FPGA:0") and counter.device.endswith("FPGA:0")
expect_refusal("eager float32 assign_sub", ["AssignSubVariableOp"],
               lambda: weights.assign_sub(tf.ones(4)))
expect_refusal("eager int64 assign_add", ["AssignAddVariableOp"],
               lambda: counter.assign_add(1))
# The variables are intact and still readable.
assert np.array_equal(weights.numpy(), np.ones(4, np.float32)), weights.numpy()
assert counter.numpy() == 0, counter.numpy()
weights.assign(tf.fill([4], 2.0))  # a plain assign only swaps the buffer
assert np.array_equal(weights.numpy(), np.full(4, 2.0, np.float32)), weights.numpy()
print("eager: failed updates left the variables intact; assign works")


def mlp(optimizer):
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    # XLA has no FPGA backend.
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                  jit_compile=False)
    return model


OPTIMIZERS = {
    "SGD": lambda: keras.optimizers.SGD(0.1),
    "SGD with momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "Adam": lambda: keras.optimizers.Adam(0.01),
    "AdamW": lambda: keras.optimizers.AdamW(0.01),
    "RMSprop": lambda: keras.optimizers.RMSprop(0.01),
}


# Float ops of the backward pass and the optimizers, each with an FPGA kernel.
TRAINING_MATH = {"ReluGrad", "SparseSoftmaxCrossEntropyWithLogits", "Softmax", "LogSoftmax",
                 "Sqrt", "Rsqrt", "RealDiv", "DivNoNan", "Pow", "BiasAddGrad"}


def train(name, device):
    keras.utils.set_random_seed(7)
    with tf.device(device):
        model = mlp(OPTIMIZERS[name]())
        loss = model.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False).history["loss"]
    return np.array(loss), model


# 3. The model built and trained on the FPGA, every optimizer.
for name in OPTIMIZERS:
    cpu_loss, _ = train(name, CPU)
    with StderrCapture() as log:
        fpga_loss, model = train(name, FPGA)
    state = model.variables + model.optimizer.variables
    assert all(tf_variable(v).device.endswith("FPGA:0") for v in state), \
        sorted({tf_variable(v).device for v in state})
    diff = float(np.abs(fpga_loss - cpu_loss).max())
    assert diff <= 1e-5, f"{name}: FPGA loss {fpga_loss} vs CPU {cpu_loss}"
    assert fpga_loss[-1] < fpga_loss[0], fpga_loss
    placed = placements(log.text)
    on = {op for _, op, dev in placed if dev.endswith("FPGA:0")}
    off = {op for _, op, dev in placed if op in ("MatMul", "BiasAdd", "Relu") and not dev.endswith("FPGA:0")}
    updates = on & {"AssignAddVariableOp", "AssignSubVariableOp"}
    assert {"MatMul", "BiasAdd", "Relu"} <= on and updates and not off, (on, off)
    math_off = {op for _, op, dev in placed if op in TRAINING_MATH and not dev.endswith("FPGA:0")}
    backward = {"ReluGrad", "SparseSoftmaxCrossEntropyWithLogits"}
    assert backward <= on and not math_off, (sorted(on & TRAINING_MATH), math_off)
    print(f"keras fit, {name}, variables and training math "
          f"({', '.join(sorted(on & TRAINING_MATH))}) on the FPGA: loss "
          f"{', '.join(f'{v:.4f}' for v in fpga_loss)}, max |fpga - cpu| = {diff:.2g}")

# 4. The supported pattern, in the same process.
with tf.device(CPU):
    model = mlp(keras.optimizers.SGD(0.1))
with tf.device(FPGA):
    loss = model.fit(x, y, batch_size=32, epochs=3, verbose=0).history["loss"]
assert all(np.isfinite(loss)) and loss[-1] < loss[0], loss
assert all(tf_variable(v).device.endswith("CPU:0") for v in model.variables)
print(f"supported pattern: fit on the FPGA with CPU variables, loss "
      f"{', '.join(f'{v:.4f}' for v in loss)}")
print("variables on the FPGA: training works, eager updates are clear errors")
