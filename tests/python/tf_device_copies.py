"""Tensors copied host -> FPGA -> host come back bit-exact, for many dtypes
and shapes (empty, scalar, odd sizes, 3 MiB), on every device listed.

Usage: tf_device_copies.py <device count>
"""
import sys

import numpy as np
import tensorflow as tf

count = int(sys.argv[1])
rng = np.random.default_rng(7)
cases = [
    rng.standard_normal((3, 5)).astype(np.float32),
    rng.integers(-(2**31), 2**31 - 1, size=(17,), dtype=np.int32),
    rng.integers(0, 255, size=(7, 3, 2), dtype=np.uint8),
    rng.standard_normal((129,)).astype(np.float64),
    np.array(3.5, dtype=np.float32),
    np.zeros((0, 4), dtype=np.float32),
    rng.standard_normal((768, 1024)).astype(np.float32),  # 3 MiB
]
copies = 0
for ordinal in range(count):
    for value in cases:
        with tf.device(f"/device:FPGA:{ordinal}"):
            on_device = tf.constant(value)
        assert on_device.device.endswith(f"device:FPGA:{ordinal}"), on_device.device
        back = on_device.numpy()
        assert back.dtype == value.dtype and back.shape == value.shape, (back.dtype, back.shape)
        assert np.array_equal(back, value), f"FPGA:{ordinal} changed a {value.dtype}{value.shape}"
        copies += 1
print(f"{copies} round trips bit-exact on {count} device(s)")
