"""TensorFlow with the reference FPGA's driver on the MCU firmware under QEMU
(an `mcu-tcp:` device; the op-level link carries every op): a small Keras
convnet's `predict`, compared with the CPU.

The convnet has a Conv2D (with bias and ReLU: `_FusedConv2D` after the graph
pass), a DepthwiseConv2D, a MaxPooling2D, an AveragePooling2D and a Permute
(a Transpose), so the window ops and Transpose cross the link. Checks: every
compute node of `predict` on FPGA:0 (TF's placement log), and the result
equal to the CPU within 1e-5.

Usage: tf_qemu_convnet.py
"""
import numpy as np
import tensorflow as tf
import keras

from tf_kernels_common import StderrCapture, placements

FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
COMPUTE = {"Conv2D", "_FusedConv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool",
           "Transpose", "MatMul", "_FusedMatMul", "BiasAdd", "Relu", "Softmax"}
tf.debugging.set_log_device_placement(True)
keras.utils.set_random_seed(5)
x = np.random.default_rng(6).standard_normal((2, 8, 8, 3)).astype(np.float32)

with tf.device(CPU):
    model = keras.Sequential([
        keras.Input((8, 8, 3)),
        keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
        keras.layers.DepthwiseConv2D(3, padding="valid"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Permute((2, 1, 3)),
        keras.layers.AveragePooling2D(1),
        keras.layers.Flatten(),
        keras.layers.Dense(3, activation="softmax"),
    ], name="convnet")
    model.compile(jit_compile=False)
    cpu = model.predict(x, verbose=0)

with StderrCapture() as log, tf.device(FPGA):
    fpga = model.predict(x, batch_size=2, verbose=0)

placed = placements(log.text)
off = [(node, op, dev) for node, op, dev in placed if op in COMPUTE and not dev.endswith("FPGA:0")]
assert not off, f"compute ops not on the FPGA: {off}"
on = sorted({op for node, op, dev in placed if node.startswith("convnet") and dev.endswith("FPGA:0")})
want = {"DepthwiseConv2dNative", "MaxPool", "AvgPool", "Transpose", "Softmax"}
assert want <= set(on) and {"Conv2D", "_FusedConv2D"} & set(on), on
diff = float(np.abs(fpga - cpu).max())
assert diff <= 1e-5, f"predict differs from the CPU by {diff}"
print(f"convnet on the firmware's FPGA: model ops {on}, max |fpga - cpu| = {diff:.3g}")
