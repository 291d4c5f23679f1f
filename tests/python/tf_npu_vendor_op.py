"""The example NPU's own op in real TensorFlow: Keras' LeakyReLU layer runs
on /device:NPU:0 through the NPU's vendor op (`LeakyRelu`, declared in the
NPU's crate with its reference kernel and cases; its TF kernel registered
through `Backend::KERNELS` by the NPU's plugin), with soft placement off.

Checks: the layer alone equals TF's CPU kernel bit for bit (NaN, ±inf, -0.0
included) for two slopes; a Dense (no bias) + LeakyReLU model called on the
NPU equals the CPU within 1e-5 (the NPU's MatMul rounds in its own order);
both results live on the NPU.

Usage: tf_npu_vendor_op.py
"""
import numpy as np
import tensorflow as tf
import keras

tf.config.set_soft_device_placement(False)
NPU, CPU = "/device:NPU:0", "/device:CPU:0"
assert [d.name for d in tf.config.list_logical_devices("NPU")] == [NPU]


def leaky_relu(slope):
    try:
        return keras.layers.LeakyReLU(negative_slope=slope)  # Keras 3
    except TypeError:
        return keras.layers.LeakyReLU(alpha=slope)  # Keras 2 (TF 2.15)


rng = np.random.default_rng(11)
x = rng.standard_normal((4, 8)).astype(np.float32)
x[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]

for slope in (0.3, 0.01):
    layer = leaky_relu(slope)
    with tf.device(CPU):
        want = layer(x).numpy()
    with tf.device(NPU):
        got = layer(x)
    assert got.device.endswith("NPU:0"), got.device
    got = got.numpy()
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all() and (np.signbit(got) == np.signbit(want)).all(), (slope, got, want)
print("LeakyReLU on the NPU's own op: bit-exact with the CPU for slopes 0.3 and 0.01")

keras.utils.set_random_seed(2)
with tf.device(CPU):
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(6, use_bias=False),
                              leaky_relu(0.2)])
    cpu = model(x[1:]).numpy()
with tf.device(NPU):
    npu = model(x[1:])
assert npu.device.endswith("NPU:0"), npu.device
diff = float(np.abs(npu.numpy() - cpu).max())
assert diff <= 1e-5, diff
print(f"Dense + LeakyReLU on the NPU: max |npu - cpu| = {diff:.3g}")

# The same model as a graph, so the plugin's graph pass runs for the NPU.
with tf.device(NPU):
    graph = tf.function(lambda v: model(v))(x[1:])
assert graph.device.endswith("NPU:0"), graph.device
diff = float(np.abs(graph.numpy() - cpu).max())
assert diff <= 1e-5, diff
print(f"Dense + LeakyReLU on the NPU in a tf.function: max |npu - cpu| = {diff:.3g}")
