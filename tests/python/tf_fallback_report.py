"""The fallback report with real TF: float ops of a graph on /device:FPGA:0
that TF places on the CPU because the device cannot run them.

usage: tf_fallback_report.py [warn|error]

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
"""
import importlib.util
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
MODE = sys.argv[1] if len(sys.argv) > 1 else "warn"
if MODE in ("error", "off"):
    os.environ["TENSORPLUG_FALLBACK"] = MODE
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


def main():
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
