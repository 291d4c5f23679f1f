"""tf.distribute.MirroredStrategy over two FPGA devices (TENSORPLUG_DEVICE=sim,sim):
Keras `fit` under strategy.scope() matches the single-device losses.

Checks: the mirrored variables have one copy on each FPGA, the model's
MatMul runs on FPGA:0 and FPGA:1 (placement log), and the losses of three
epochs equal a single-FPGA run's within 1e-5. TF's copies between the
replicas go device to device through the plugin (cross-device
`memcpy_dtod` and stream dependencies, docs/host-bridge.md).
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the placement log is INFO
import numpy as np
import tensorflow as tf
import keras

from tf_kernels_common import StderrCapture, placements, tf_variable

tf.debugging.set_log_device_placement(True)
x = np.random.default_rng(1).standard_normal((128, 12)).astype(np.float32)
y = np.random.default_rng(2).integers(0, 3, 128)


def build():
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
    return model


assert [d.name for d in tf.config.list_logical_devices("FPGA")] == [
    "/device:FPGA:0", "/device:FPGA:1"]
keras.utils.set_random_seed(7)
single = build().fit(x, y, epochs=3, batch_size=32, verbose=0, shuffle=False).history["loss"]

strategy = tf.distribute.MirroredStrategy(["/device:FPGA:0", "/device:FPGA:1"])
keras.utils.set_random_seed(7)
with strategy.scope():
    model = build()
copies = {c.device.rpartition("/")[2] for v in model.variables
          for c in getattr(tf_variable(v), "values", [tf_variable(v)])}
assert copies == {"device:FPGA:0", "device:FPGA:1"}, copies
with StderrCapture() as log:
    mirrored = model.fit(x, y, epochs=3, batch_size=32, verbose=0, shuffle=False).history["loss"]
matmuls = {dev.rpartition("/")[2] for _, op, dev in placements(log.text) if op == "MatMul"}
assert {"device:FPGA:0", "device:FPGA:1"} <= matmuls, matmuls
diff = float(np.abs(np.array(single) - np.array(mirrored)).max())
assert diff <= 1e-5, f"single {single} vs mirrored {mirrored}"
print(f"mirrored fit on FPGA:0 and FPGA:1: loss {', '.join(f'{v:.4f}' for v in mirrored)}, "
      f"max |mirrored - single| = {diff:.2g}")
