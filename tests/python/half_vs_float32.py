"""A Keras convnet under `mixed_float16` and `mixed_bfloat16`, its `predict`
on /device:FPGA:0 (no scope) and on /CPU:0, each against the same weights in
float32 on the CPU: how far each half-precision run is from the float32
result (`docs/device-numerics.md`, the half-precision row).

The device computes each op in float32 and rounds once to the half type
(the graph pass, "Half precision"); TF 2.15's CPU float16 kernels round at
more steps, so there the CPU, not the device, is the one further off.

Prints, per policy: `<policy> fpga <e> cpu <e>` (max relative error against
float32, |a-b| / max(|b|, 1e-3)), then `done`. The device run's
convolution and matmul are checked on the FPGA's plane of a profile, and
none on TF's CPU executor, so the device's figure is the device's.
"""
import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from half_convnet import half_convnet  # noqa: E402
from tf_profiler_scenarios import profiled_ops  # noqa: E402

keras = tf.keras
KERAS3 = getattr(keras, "__version__", "2").startswith("3")


def convnet(policy):
    keras.mixed_precision.set_global_policy(policy)
    model = half_convnet(keras)
    if KERAS3:
        model.compile(jit_compile=False)
    return model


def rel(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3)))


x = np.random.default_rng(3).standard_normal((32, 28, 28, 1)).astype("float32")
keras.utils.set_random_seed(7)
with tf.device("/CPU:0"):
    reference = convnet("float32")
    weights = reference.get_weights()
    exact = reference.predict(x, verbose=0)
for policy in ["mixed_float16", "mixed_bfloat16"]:
    with tf.device("/CPU:0"):
        cpu = convnet(policy)
        cpu.set_weights(weights)
        on_cpu = cpu.predict(x, verbose=0)
    fpga = convnet(policy)
    fpga.set_weights(weights)
    kernel = fpga.weights[0]
    device = kernel.device if hasattr(kernel, "device") else kernel.value.device
    assert device.endswith("FPGA:0"), f"{policy}: the kernel lives on {device}"
    on_fpga = fpga.predict(x, verbose=0)
    device, cpu = profiled_ops(lambda: fpga.predict(x, verbose=0))
    ran = " ".join(sorted(device))
    assert any("Conv2D" in op for op in device), f"{policy}: no convolution on FPGA:0: {ran}"
    assert any("MatMul" in op for op in device), f"{policy}: no matmul on FPGA:0: {ran}"
    on_cpu_ops = sorted(op for op in cpu if "Conv" in op or "MatMul" in op)
    assert not on_cpu_ops, f"{policy}: {on_cpu_ops} ran on the CPU"
    print(f"{policy} fpga {rel(on_fpga, exact):.3g} cpu {rel(on_cpu, exact):.3g}", flush=True)
print("done")
