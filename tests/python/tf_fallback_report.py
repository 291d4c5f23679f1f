"""The fallback report with real TF: float ops of a graph on /device:FPGA:0
that TF places on the CPU because the device cannot run them.

usage: tf_fallback_report.py [warn|error|bilstm]

warn (the default; `off` silences stderr, not the helper): a Keras model
built to fall back (a Dense layer, then a `sin` activation, whose `Sin`
has no FPGA kernel, then a Dense layer) predicts on the FPGA, and a plain
MLP predicts; stderr carries the pass's report.
The wheel's `<lib>_fallback.report` is asked about both. Prints

  report sin <the lines report() returned, ' | '-joined, or ->
  report mlp <the same>
  predicted

error: TENSORPLUG_FALLBACK=error, the `sin` model's predict must fail:

  error <the assertion's line>

bilstm: TENSORPLUG_FALLBACK=error, a Bidirectional LSTM trains one epoch
(no float op may run on the CPU), then one profiled epoch:

  bilstm fit ok
  cpu_ops <op type>=<count>…     (TF's CPU executor: the gradient loop's
                                  variant TensorList ops, int64 counters)
  device_ops <op type>=<count>…
"""
import importlib.util
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
MODE = sys.argv[1] if len(sys.argv) > 1 else "warn"
if MODE in ("error", "off", "bilstm"):
    os.environ["TENSORPLUG_FALLBACK"] = "off" if MODE == "off" else "error"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def fallback_module():
    """The wheel's module, as `cargo xtask dist` writes it."""
    path = os.path.join(HERE, "..", "..", "xtask", "python", "fallback.py")
    source = open(path).read().replace("{device_type}", "FPGA").replace("{lib}", "tensorplug_fpga")
    spec = importlib.util.spec_from_loader("tensorplug_fpga_fallback", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def model(activation):
    tf.keras.utils.set_random_seed(1)
    m = tf.keras.Sequential([
        tf.keras.Input((8,)),
        tf.keras.layers.Dense(16),
        tf.keras.layers.Activation(activation),
        tf.keras.layers.Dense(4),
    ])
    m.compile(jit_compile=False)  # the wheel's Keras hook does this; the tests load the .so bare
    return m


def bilstm():
    sys.path.insert(0, HERE)
    from tf_profiler_scenarios import profiled_ops
    tf.keras.utils.set_random_seed(1)
    m = tf.keras.Sequential([
        tf.keras.Input((8, 4)),
        tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16, return_sequences=True)),
        tf.keras.layers.LSTM(8),
        tf.keras.layers.Dense(1),
    ])
    m.compile("adam", "mse", jit_compile=False)
    rng = np.random.default_rng(0)
    x, y = rng.random((32, 8, 4), np.float32), rng.random((32, 1), np.float32)
    m.fit(x, y, epochs=1, verbose=0)
    print("bilstm fit ok")
    device, cpu = profiled_ops(lambda: m.fit(x, y, epochs=1, verbose=0))
    print("cpu_ops " + " ".join(f"{k}={v}" for k, v in sorted(cpu.items())))
    print("device_ops " + " ".join(f"{k}={v}" for k, v in sorted(device.items())))


def main():
    if MODE == "bilstm":
        return bilstm()
    x = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    sin = model(tf.math.sin)
    mlp = model("relu")
    if MODE == "error":
        try:
            sin.predict(x, verbose=0)
            print("error none")
        except tf.errors.InvalidArgumentError as error:
            lines = [line.strip() for line in error.message.splitlines() if "TENSORPLUG_FALLBACK" in line]
            print(f"error {(lines or ['-'])[0]}")
        return
    report = fallback_module().report
    for name, m in (("sin", sin), ("mlp", mlp)):
        print(f"report {name} {' | '.join(report(m, x)) or '-'}")
    sin.predict(x, verbose=0)
    mlp.predict(x, verbose=0)
    print("predicted")


if __name__ == "__main__":
    main()
