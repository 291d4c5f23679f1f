"""Keras MLP predict step time on /device:FPGA:0 in five modes, same
process, interleaved:

- off:       no profiler;
- tf_only:   tf.profiler on, our plugin tracing nothing
             (TENSORPLUG_PROFILER=off, read at every start): TF's own tracers;
- tf_only_b: the same again, an A/A control: its ratio to tf_only shows
             what the method cannot resolve (should be 1 within the noise);
- on:        tf.profiler on with our device planes (the default);
- on_device: ours with TF's host tracer off
             (ProfilerOptions(host_tracer_level=0)): device planes only.

Sessions are short (15 steps) and many (150 rounds); each round runs every
mode once, in the orders of a Williams design (cycled: each mode follows
each other mode equally often; a session after a profiler stop runs
measurably slower here, and a fixed rotation turned that into a 1 % A/A
difference), and the machine settles for 50 ms after every session.

Two models: the Keras MNIST MLP (784-512-512-10, batch 128; the issue's
row) and a tiny one (32-128-64-10, batch 128), where TF's per-op tracing
cost is a visible share of the step. Writes tf_profiler_overhead (MNIST
MLP, on / off: the goal's row), tf_profiler_plugin_share (on / tf_only),
and, informational: tf_profiler_tf_tracers (tf_only / off),
tf_profiler_aa_control (tf_only_b / tf_only), tf_profiler_device_only
(on_device / off) and tf_profiler_overhead_tiny (tiny MLP, on / off)."""
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_common import clock, write_figure  # noqa: E402

# Every scratch directory of this run lives here, removed at exit.
SCRATCH = tempfile.TemporaryDirectory(prefix="tensorplug-test-")

FPGA = "/device:FPGA:0"
REPS = int(os.environ.get("BENCH_REPS", "150"))  # rounds; each runs every mode once
STEPS = int(os.environ.get("BENCH_STEPS", "15"))  # timed steps per session
SETTLE_S = 0.05  # pause after every session
MODES = ("off", "tf_only", "tf_only_b", "on", "on_device")


def williams_orders(modes):
    """Orders in which every mode directly follows every other mode equally
    often (a Williams design; odd counts need the mirrored rows too)."""
    n = len(modes)
    first, low, high = [0], 1, n - 1
    for k in range(1, n):
        if k % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return [tuple(modes[x] for x in row) for row in rows]


ORDERS = williams_orders(MODES)


def mlp(inputs, widths):
    tf.keras.utils.set_random_seed(0)
    with tf.device(FPGA):
        layers = [tf.keras.Input((inputs,))]
        layers += [tf.keras.layers.Dense(w, activation="relu") for w in widths[:-1]]
        layers.append(tf.keras.layers.Dense(widths[-1], activation="softmax"))
        model = tf.keras.Sequential(layers)
        model.compile(jit_compile=False)
    return model


def measure(model, batch, steps=STEPS):
    """Per mode: the median step time of each round (seconds)."""
    logdir = tempfile.mkdtemp(prefix="tensorplug-bench-prof-", dir=SCRATCH.name)

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
            times = run_steps()
        else:
            os.environ["TENSORPLUG_PROFILER"] = "off" if mode.startswith("tf_only") else "on"
            options = None
            if mode == "on_device":
                options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=0)
            tf.profiler.experimental.start(logdir, options=options)
            times = run_steps()
            tf.profiler.experimental.stop()  # collection and writing: not timed
        time.sleep(SETTLE_S)
        return times

    run_steps()  # trace the predict function outside the measurement
    rounds = {mode: [] for mode in MODES}
    for round_ in range(REPS):
        for mode in ORDERS[round_ % len(ORDERS)]:
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
                rng.standard_normal((128, 784)).astype(np.float32))
tiny = measure(mlp(32, [128, 64, 10]),
               rng.standard_normal((128, 32)).astype(np.float32))
for name, r in (("mnist", mnist), ("tiny", tiny)):
    print(f"{name}: " + ", ".join(f"{m} {median(r, m):.1f} us" for m in MODES)
          + f"; paired on/off {paired(r, 'on', 'off'):.4f}"
          + f", on/tf_only {paired(r, 'on', 'tf_only'):.4f}"
          + f", tf_only/off {paired(r, 'tf_only', 'off'):.4f}"
          + f", A/A tf_only_b/tf_only {paired(r, 'tf_only_b', 'tf_only'):.4f}"
          + f", on_device/off {paired(r, 'on_device', 'off'):.4f}")
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
    "tf_profiler_tf_tracers",
    "same step: TF's tracers alone (TENSORPLUG_PROFILER=off) / no profiler, "
    "paired per round",
    paired(mnist, "tf_only", "off"), 1.0, "ratio", "informational (no goal)",
)
write_figure(
    "tf_profiler_aa_control",
    "same step: A/A control, TF's tracers alone in two identical slots, "
    "paired per round (1 within what the method resolves)",
    paired(mnist, "tf_only_b", "tf_only"), 1.0, "ratio", "informational (no goal)",
)
write_figure(
    "tf_profiler_device_only",
    "same step: profiler with our device planes and TF's host tracer off "
    "(ProfilerOptions(host_tracer_level=0)) / no profiler, paired per round",
    paired(mnist, "on_device", "off"), 1.0, "ratio", "informational (no goal)",
)
write_figure(
    "tf_profiler_overhead_tiny",
    f"tiny MLP predict step (32-128-64-10, batch 128), {median(tiny, 'off'):.0f} "
    f"us/step: profiler on / off, paired (TF's tracers alone: "
    f"{paired(tiny, 'tf_only', 'off'):.3f})",
    paired(tiny, "on", "off"), 1.0, "ratio", "informational (no goal)",
)
