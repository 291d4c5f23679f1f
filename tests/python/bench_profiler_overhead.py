"""Keras MLP predict step time on /device:FPGA:0 in three modes, same
process, interleaved (the order rotates every round):

- off:     no profiler;
- tf_only: tf.profiler on, our plugin tracing nothing (TENSORPLUG_PROFILER=off,
           read at every start): TF's own tracers alone;
- on:      tf.profiler on with our device planes (the default).

Two models: the Keras MNIST MLP (784-512-512-10, batch 128; the issue's
row) and a tiny one (32-128-64-10, batch 128), where TF's per-op tracing
cost is a visible share of a ~0.5 ms step. Writes tf_profiler_overhead
(MNIST MLP, on vs off), tf_profiler_plugin_share (MNIST MLP, on vs tf_only)
and tf_profiler_overhead_tiny (tiny MLP, on vs off; informational)."""
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_common import clock, write_figure  # noqa: E402

FPGA = "/device:FPGA:0"
REPS = int(os.environ.get("BENCH_REPS", "20"))  # rounds; each runs every mode once
MODES = ("off", "tf_only", "on")


def mlp(inputs, widths):
    tf.keras.utils.set_random_seed(0)
    with tf.device(FPGA):
        layers = [tf.keras.Input((inputs,))]
        layers += [tf.keras.layers.Dense(w, activation="relu") for w in widths[:-1]]
        layers.append(tf.keras.layers.Dense(widths[-1], activation="softmax"))
        model = tf.keras.Sequential(layers)
        model.compile(jit_compile=False)
    return model


def measure(model, batch, steps):
    """Per mode: the median step time of each round (seconds)."""
    logdir = tempfile.mkdtemp(prefix="tensorplug-bench-prof-")

    def run_steps():
        times = []
        with tf.device(FPGA):
            for _ in range(steps):
                start = clock()
                model.predict_on_batch(batch)
                times.append(clock() - start)
        return times

    def in_mode(mode):
        if mode == "off":
            return run_steps()
        os.environ["TENSORPLUG_PROFILER"] = "off" if mode == "tf_only" else "on"
        tf.profiler.experimental.start(logdir)
        times = run_steps()
        tf.profiler.experimental.stop()  # collection and writing: not timed
        return times

    run_steps()  # trace the predict function outside the measurement
    rounds = {mode: [] for mode in MODES}
    for round_ in range(REPS):
        for i in range(len(MODES)):
            mode = MODES[(round_ + i) % len(MODES)]
            rounds[mode].append(float(np.median(in_mode(mode))))
    os.environ.pop("TENSORPLUG_PROFILER", None)
    return rounds


def paired(rounds, mode, base):
    """Median over rounds of (mode / base) within a round: the machine's slow
    drifts (seconds long, several per cent here) hit both sides alike."""
    return float(np.median(np.array(rounds[mode]) / np.array(rounds[base])))


def median(rounds, mode):
    return float(np.median(rounds[mode])) * 1e6


rng = np.random.default_rng(0)
mnist = measure(mlp(784, [512, 512, 10]),
                rng.standard_normal((128, 784)).astype(np.float32),
                steps=int(os.environ.get("BENCH_STEPS", "50")))
tiny = measure(mlp(32, [128, 64, 10]),
               rng.standard_normal((128, 32)).astype(np.float32), steps=100)
for name, r in (("mnist", mnist), ("tiny", tiny)):
    print(f"{name}: " + ", ".join(f"{m} {median(r, m):.1f} us" for m in MODES)
          + f"; paired on/off {paired(r, 'on', 'off'):.4f}"
          + f", on/tf_only {paired(r, 'on', 'tf_only'):.4f}"
          + f", tf_only/off {paired(r, 'tf_only', 'off'):.4f}")
    print(f"  per-round on/off: " + " ".join(
        f"{a / b:.3f}" for a, b in zip(r["on"], r["off"])))

STEP = ("MNIST MLP predict step (784-512-512-10, batch 128) on FPGA(sim), "
        f"{median(mnist, 'off'):.0f} us/step without profiler")
write_figure(
    "tf_profiler_overhead",
    f"{STEP}: profiler on / off, paired per round",
    paired(mnist, "on", "off"), 1.0, "ratio", "value <= 1.02",
)
write_figure(
    "tf_profiler_plugin_share",
    "same step: profiler with our device planes / TF's tracers alone "
    "(TENSORPLUG_PROFILER=off), paired per round",
    paired(mnist, "on", "tf_only"), 1.0, "ratio", "value <= 1.02",
)
write_figure(
    "tf_profiler_overhead_tiny",
    f"tiny MLP predict step (32-128-64-10, batch 128), {median(tiny, 'off'):.0f} "
    f"us/step: profiler on / off, paired (TF's tracers alone: "
    f"{paired(tiny, 'tf_only', 'off'):.3f})",
    paired(tiny, "on", "off"), 1.0, "ratio", "informational (no goal)",
)
