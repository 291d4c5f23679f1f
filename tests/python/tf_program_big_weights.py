"""Weights the device's memory cannot hold (issue 43), on the firmware of
a board with little device memory: Keras MLPs built under a CPU scope
(their weights are host weights a program keeps on the device,
docs/device-programs.md, "Host inputs") predict on the FPGA.

Runs, in one process:
  small  64-32-32-4 (13 KB of weights): runs, equal to the CPU;
  mid    64-64-4 (18 KB): runs too (on the STM32 board's 36 KB heap since
         its event ring is 256 entries; with 1 024 its heap was 24 KB);
  big    64-256-4 (71 KB, more than the device's memory): each step fails
         with a ResourceExhaustedError naming the program node;
  again  the small model once more: the device still serves.

Prints one line per step:
  <model> step <k> ok <seconds> max_diff <x>
  <model> step <k> error <ErrorType> <node named: True|False>

Usage: tf_program_big_weights.py
"""
import time

import numpy as np
import tensorflow as tf
import keras

FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
STEPS = 3
x = np.random.default_rng(4).standard_normal((4, 64)).astype(np.float32)


def model_of(widths, name):
    keras.utils.set_random_seed(3)
    with tf.device(CPU):
        model = keras.Sequential(
            [keras.Input((64,))] + [keras.layers.Dense(n, activation="relu") for n in widths]
            + [keras.layers.Dense(4)], name=name)
        expected = model(x).numpy()
        size = sum(w.size * 4 for w in model.get_weights())
    print(name, "weights_bytes", size, flush=True)
    return tf.function(lambda t: model(t)), expected


def run(label, fn, expected):
    with tf.device(FPGA):
        t = tf.identity(tf.constant(x))
        for step in range(STEPS):
            start = time.time()
            try:
                out = fn(t).numpy()
                print(label, "step", step, "ok", f"{time.time() - start:.2f}",
                      "max_diff", float(np.max(np.abs(out - expected))), flush=True)
            except tf.errors.OpError as e:
                named = "tensorplug_program" in str(e)
                print(label, "step", step, "error", type(e).__name__, named, flush=True)


small = model_of([32, 32], "small")
run("small", *small)
run("mid", *model_of([64], "mid"))
run("big", *model_of([256], "big"))
run("again", *small)
