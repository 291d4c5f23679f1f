"""A Keras Sequential MLP (Dense+ReLU, Dense+ReLU, Dense+softmax) on
/device:FPGA:0: `predict` with every compute op on the FPGA (proved from TF's
placement log) and equal to the CPU; `fit` reaching the CPU's losses.

Tolerances (docs/ops.md): predictions |fpga - cpu| <= 1e-5 (probabilities);
per-epoch training loss relative difference <= 1e-4.
"""
import os
import sys

import numpy as np
import tensorflow as tf
import keras

from tf_kernels_common import StderrCapture, placements

FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
COMPUTE = {"MatMul", "_FusedMatMul", "BiasAdd", "AddV2", "Add", "Sub", "Mul", "Maximum",
           "Relu", "Softmax", "Sum", "BiasAddGrad", "Neg", "Square", "ReluGrad",
           "SoftmaxCrossEntropyWithLogits", "DivNoNan", "RealDiv"}
# Read when the context starts: set before the first op. Only predict's part
# of the log is captured and checked.
tf.debugging.set_log_device_placement(True)
keras.utils.set_random_seed(7)
x = np.random.default_rng(1).standard_normal((256, 20)).astype(np.float32)
y = keras.utils.to_categorical(np.random.default_rng(2).integers(0, 4, 256), 4)


def mlp():
    model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(4, activation="softmax")], name="mlp")
    # Keras' jit_compile="auto" turns XLA on whenever a non-CPU device exists,
    # and XLA has no FPGA backend ("No JIT device registered for FPGA").
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="categorical_crossentropy",
                  jit_compile=False)
    return model


# Variables stay on the host: TF's C API cannot update resource variables on
# the FPGA, so our AssignSub/AssignAddVariableOp kernels refuse with an
# UnimplementedError (docs/ops.md, 'Variables and training').
with tf.device(CPU):
    cpu_model, fpga_model = mlp(), mlp()
    initial = cpu_model.get_weights()
    fpga_model.set_weights(initial)

# predict, with the placement log captured.
with StderrCapture() as log, tf.device(FPGA):
    fpga_pred = fpga_model.predict(x, batch_size=64, verbose=0)
with tf.device(CPU):
    cpu_pred = cpu_model.predict(x, batch_size=64, verbose=0)

placed = placements(log.text)
model_nodes = [(node, op, dev) for node, op, dev in placed if node.startswith("mlp")]
assert model_nodes, "no model node in the placement log:\n" + log.text[-3000:]
off_fpga = [(node, op, dev) for node, op, dev in placed
            if op in COMPUTE and not dev.endswith("FPGA:0")]
assert not off_fpga, f"compute ops not on the FPGA: {off_fpga}"
# The only model nodes allowed on the host read the (host) variables; their
# values are copied to the device.
VARIABLE_READS = {"_Arg", "ReadVariableOp"}
model_off = [(node, op, dev) for node, op, dev in model_nodes
             if not dev.endswith("FPGA:0") and op not in VARIABLE_READS]
assert not model_off, f"model ops not on the FPGA: {model_off}"
model_on = sorted({op for _, op, dev in model_nodes if dev.endswith("FPGA:0")})
assert {"MatMul", "BiasAdd", "Relu", "Softmax"} <= set(model_on), model_on
on_fpga = sorted({op for _, op, dev in placed if dev.endswith("FPGA:0")})
elsewhere = sorted({op for _, op, dev in placed if not dev.endswith("FPGA:0")})
print(f"placement: {len(model_nodes)} model nodes; model op types on FPGA:0: {model_on}; "
      f"all op types on FPGA:0: {on_fpga}")
print(f"placement: op types on other devices (input pipeline, bookkeeping): {elsewhere}")

diff = float(np.abs(fpga_pred - cpu_pred).max())
assert fpga_pred.shape == (256, 4) and diff <= 1e-5, f"predict differs by {diff}"
print(f"predict: {fpga_pred.shape} max |fpga - cpu| = {diff:.3g} (tolerance 1e-5)")

# fit: same weights, same data order, plain SGD.
histories = {}
for name, device, model in [("cpu", CPU, cpu_model), ("fpga", FPGA, fpga_model)]:
    with StderrCapture() as fit_log, tf.device(device):
        model.set_weights(initial)
        histories[name] = model.fit(x, y, batch_size=32, epochs=3, shuffle=False,
                                    verbose=0).history["loss"]
fit_placed = placements(fit_log.text)
fit_fpga = sorted({op for _, op, dev in fit_placed if op in COMPUTE and dev.endswith("FPGA:0")})
fit_host = sorted({op for node, op, dev in fit_placed
                   if "gradient" in node and not dev.endswith("FPGA:0")} - {"Const", "_Arg"})
assert {"MatMul", "BiasAdd", "Relu", "Softmax", "BiasAddGrad", "ReluGrad",
        "SoftmaxCrossEntropyWithLogits"} <= set(fit_fpga), fit_fpga
assert not fit_host, f"gradient ops on the host: {fit_host}"
print(f"fit placement: compute op types on FPGA:0: {fit_fpga}; gradient ops on the host: {fit_host}")
cpu_loss, fpga_loss = np.array(histories["cpu"]), np.array(histories["fpga"])
rel = float((np.abs(fpga_loss - cpu_loss) / cpu_loss).max())
assert fpga_loss[-1] < fpga_loss[0], f"fit did not learn: {fpga_loss}"
assert rel <= 1e-4, f"fit losses differ: fpga {fpga_loss} cpu {cpu_loss}"
print(f"fit: losses fpga {np.round(fpga_loss, 6).tolist()} cpu {np.round(cpu_loss, 6).tolist()} "
      f"max relative difference {rel:.3g} (tolerance 1e-4)")
print("keras MLP on FPGA matches the CPU")
