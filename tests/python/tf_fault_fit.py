"""A Keras model training on /device:FPGA:0 while the test harness breaks
the device (tests/tests/tf_fault_matrix.rs, docs/reliability.md).

`tf_fault_fit.py fit <stamp>`: builds and fits a small MLP in a loop,
printing "training" once it runs. The harness then breaks the device and
writes the time it did (seconds since the epoch) into the file <stamp>.
The fit must fail with a tf.errors error naming the FPGA op and the
device, within BOUND_S of the fault (two wait budgets, TENSORPLUG_TIMEOUT_MS:
the failing wait's and the reset's after it, plus MARGIN_S); the CPU must still compute after it.
No variable may be left half-updated: read after the failure, each one
holds its value from before the failed step or after it (the same step on
the CPU), or fails to read with an error naming the device (its memory went
with the device). It prints "variables: ..." with which.

With TENSORPLUG_FAULT_SAME_PROCESS=1 (an MCU that restarts), the same
process then assigns the weights again and predicts on the FPGA, equal to
the CPU.

`tf_fault_fit.py after`: a new process, the device back: predict on the
FPGA equals the same model on the CPU.

Run with TENSORPLUG_TIMEOUT_MS set (the harness: 6000).
"""
import os
import re
import sys
import time

import numpy as np
import tensorflow as tf

FPGA = "/device:FPGA:0"
BUDGET_S = int(os.environ["TENSORPLUG_TIMEOUT_MS"]) / 1000
# What a loaded 2-core machine adds: TF's own unwinding, the stamp's write.
MARGIN_S = 5.0
BOUND_S = 2 * BUDGET_S + MARGIN_S
BATCH = 32

rng = np.random.default_rng(7)
x = rng.standard_normal((64, 32)).astype(np.float32)
y = rng.integers(0, 10, 64)


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


class Snapshots(tf.keras.callbacks.Callback):
    """The weights after each step, and the batch of the step under way."""

    def __init__(self):
        super().__init__()
        self.weights = None
        self.batch = 0

    def on_train_batch_begin(self, batch, logs=None):
        self.batch = batch

    def on_train_batch_end(self, batch, logs=None):
        self.weights = self.model.get_weights()


def check_variables(model, snapshots):
    """Each variable holds its value from before the failed step or after
    it, or cannot be read (an error naming the device)."""
    before = snapshots.weights
    i = snapshots.batch * BATCH
    with tf.device("/CPU:0"):
        cpu = mlp()
        cpu.set_weights(before)
        cpu.train_on_batch(x[i:i + BATCH], y[i:i + BATCH])
        stepped = cpu.get_weights()
    try:
        now = model.get_weights()
    except tf.errors.OpError as error:
        first = error.message.splitlines()[0] if error.message else ""
        # TF's SynchronizeAllActivity returns a bool: it logs our status
        # (naming the device) and raises its own text.
        tf_sync = first == "PluggableDevice SyncAll failed."
        assert "FPGA:0" in error.message or tf_sync, f"a read failed, naming no device: {first}"
        print(f"variables: unreadable, {type(error).__name__}: {first}", flush=True)
        return
    states = []
    for value, old, new in zip(now, before, stepped):
        if np.array_equal(value, old):
            states.append("before")
        elif np.allclose(value, new, rtol=1e-4, atol=1e-6):
            states.append("after")
        else:
            raise AssertionError(
                f"a variable is half-updated: {np.mean(value != old):.0%} of it "
                f"changed, max distance to the step {np.max(np.abs(value - new)):.3g}")
    print(f"variables: whole, {' '.join(states)} the failed step (batch {snapshots.batch})",
          flush=True)


def fit(stamp):
    with tf.device(FPGA):
        model = mlp()
    snapshots = Snapshots()
    started = time.time()
    try:
        while True:
            with tf.device(FPGA):
                history = model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                                    shuffle=False, callbacks=[snapshots])
            # Keras computes the epoch's metrics eagerly, on the device, and
            # converts them to floats under a bare `except` (its
            # `pythonify_logs`): a failed read leaves the tensor in the
            # history. Reading it raises the device's error.
            [float(value) for value in history.history["loss"]]
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
        # a copy ("{{node Cast_1/_8}}", "in order to run _EagerConst"), or
        # the copy itself (the snapshots' read: "tensorplug memcpy_dtoh"),
        # or the epoch's eager metric (the history's read: "FPGA DivNoNan").
        named = r"FPGA \w+ '[^']+'|\{\{node [^}]+\}\}|in order to run \w+|tensorplug memcpy_\w+"
        assert re.search(named, text), f"no op named: {text}"
        assert "FPGA:0" in text, f"the error names no device: {text}"
        check_variables(model, snapshots)
    with tf.device("/CPU:0"):
        a = tf.constant(x[:8, :8])
        product = tf.matmul(a, a).numpy()
    np.testing.assert_allclose(product, x[:8, :8] @ x[:8, :8], rtol=1e-4, atol=1e-5)
    if os.environ.get("TENSORPLUG_FAULT_SAME_PROCESS") == "1":
        same_process(model, snapshots.weights)
    print("ok: the fit failed, naming the op and the device; the CPU still computes")


def same_process(model, weights):
    """After an MCU restart, this process uses the device again: the
    weights assigned again (the restart took them), predict on the FPGA
    equals the CPU."""
    model.set_weights(weights)
    with tf.device(FPGA):
        out = model.predict(x[:16], verbose=0)
    with tf.device("/CPU:0"):
        cpu = mlp()
        cpu.set_weights(weights)
        want = cpu.predict(x[:16], verbose=0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    print("same process: predicts on the FPGA again, equal to the CPU", flush=True)


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
