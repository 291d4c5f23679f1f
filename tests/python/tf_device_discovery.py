"""Device discovery: TensorFlow lists exactly the FPGA devices TENSORPLUG_DEVICE names.

Usage: tf_device_discovery.py <expected device count>

With 0 (the plugin declined), TF must still run on the CPU.
"""
import sys

import tensorflow as tf

expected = int(sys.argv[1])
physical = tf.config.list_physical_devices("FPGA")
names = [d.name for d in physical]
assert len(physical) == expected, f"expected {expected} FPGA devices, got {names}"
assert names == [f"/physical_device:FPGA:{i}" for i in range(expected)], names
logical = [d.name for d in tf.config.list_logical_devices("FPGA")]
assert logical == [f"/device:FPGA:{i}" for i in range(expected)], logical
if expected == 0:  # the plugin declined: TF goes on with the CPU
    product = (tf.constant([[1.0, 2.0]]) @ tf.constant([[3.0], [4.0]])).numpy()
    assert product.tolist() == [[11.0]], product
    print(f"discovered 0 FPGA devices; the CPU computes ({product.tolist()})")
    sys.exit(0)
details = tf.config.experimental.get_device_details(physical[0])
print(f"discovered {len(physical)} FPGA devices: {names}; details {details}")
