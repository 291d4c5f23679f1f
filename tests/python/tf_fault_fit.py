"""A Keras model training on /device:FPGA:0 while the test harness breaks
the device (tests/tests/tf_fault_matrix.rs, docs/reliability.md).

`tf_fault_fit.py fit <stamp>`: builds and fits a small MLP in a loop,
printing "training" once it runs. The harness then breaks the device and
writes the time it did (seconds since the epoch) into the file <stamp>.
The fit must fail with a tf.errors error naming the FPGA op and the
device, within BOUND_S of the fault; the CPU must still compute after it.

`tf_fault_fit.py after`: a new process, the device back: predict on the
FPGA equals the same model on the CPU.

Run with TENSORPLUG_TIMEOUT_MS=6000 (the harness does).
"""
import os
import re
import sys
import time

import numpy as np
import tensorflow as tf

FPGA = "/device:FPGA:0"
BOUND_S = 30.0

rng = np.random.default_rng(7)
x = rng.standard_normal((256, 32)).astype(np.float32)
y = rng.integers(0, 10, 256)


def mlp():
    model = tf.keras.Sequential([
        tf.keras.Input((32,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
    return model


def fit(stamp):
    with tf.device(FPGA):
        model = mlp()
    started = time.time()
    try:
        while True:
            with tf.device(FPGA):
                model.fit(x, y, batch_size=32, epochs=1, verbose=0)
            print("training", flush=True)
            if os.path.exists(stamp) and time.time() - float(open(stamp).read()) > BOUND_S:
                raise AssertionError(f"still training {BOUND_S} s after the fault")
            if time.time() - started > 120:
                raise AssertionError("the harness never broke the device")
    except tf.errors.OpError as error:
        assert os.path.exists(stamp), f"the fit failed before the fault: {error.message}"
        elapsed = time.time() - float(open(stamp).read())
        text = error.message
        first = text.splitlines()[0] if text else ""
        print(f"failed after {elapsed:.1f} s: {type(error).__name__}: {first}", flush=True)
        print("message: " + " | ".join(text.splitlines()), flush=True)
        assert elapsed < BOUND_S, f"{elapsed:.1f} s after the fault"
        # Ours ("FPGA MatMul 'dense/MatMul'"), or TF's node or eager op of
        # a copy ("{{node Cast_1/_8}}", "in order to run _EagerConst").
        named = r"FPGA \w+ '[^']+'|\{\{node [^}]+\}\}|in order to run \w+"
        assert re.search(named, text), f"no op named: {text}"
        assert "FPGA:0" in text, f"the error names no device: {text}"
    with tf.device("/CPU:0"):
        a = tf.constant(x[:8, :8])
        product = tf.matmul(a, a).numpy()
    np.testing.assert_allclose(product, x[:8, :8] @ x[:8, :8], rtol=1e-4, atol=1e-5)
    print("ok: the fit failed, naming the op and the device; the CPU still computes")


def after():
    with tf.device(FPGA):
        model = mlp()
        out = model.predict(x[:16], verbose=0)
    with tf.device("/CPU:0"):
        cpu = mlp()
        cpu.set_weights(model.get_weights())
        want = cpu.predict(x[:16], verbose=0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    print("ok: a new process predicts on the FPGA, equal to the CPU")


if __name__ == "__main__":
    if sys.argv[1] == "fit":
        fit(sys.argv[2])
    else:
        after()
