"""get_memory_info on FPGA:0 follows a tensor's life on the device."""
import tensorflow as tf

MiB = 1 << 20
before = tf.config.experimental.get_memory_info("FPGA:0")
assert set(before) == {"current", "peak"}, before
with tf.device("/device:FPGA:0"):
    x = tf.constant(tf.zeros([4 * MiB // 4], tf.float32).numpy())
assert x.device.endswith("device:FPGA:0"), x.device
during = tf.config.experimental.get_memory_info("FPGA:0")
assert during["current"] - before["current"] >= 4 * MiB, (before, during)
assert during["peak"] >= during["current"], during
del x
after = tf.config.experimental.get_memory_info("FPGA:0")
assert after["current"] <= during["current"] - 4 * MiB, (during, after)
assert after["peak"] >= during["current"], (during, after)
print(f"memory info: before {before}, with a 4 MiB tensor {during}, after {after}")
