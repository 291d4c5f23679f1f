"""MLP predict step time with tf.profiler on vs off, on /device:FPGA:0, same
process, interleaved. Writes tf_profiler_overhead."""
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_common import clock, write_figure  # noqa: E402

STEPS = 40  # timed steps per round and mode
REPS = 12
FPGA = "/device:FPGA:0"

tf.keras.utils.set_random_seed(0)
with tf.device(FPGA):
    model = tf.keras.Sequential([
        tf.keras.Input((32,)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(jit_compile=False)
batch = np.random.default_rng(0).standard_normal((128, 32)).astype(np.float32)
logdir = tempfile.mkdtemp(prefix="tensorplug-bench-prof-")


def steps():
    times = []
    with tf.device(FPGA):
        for _ in range(STEPS):
            start = clock()
            model.predict_on_batch(batch)
            times.append(clock() - start)
    return times


steps()  # trace the predict function outside the measurement
samples = {"off": [], "on": []}

def profiled_steps():
    tf.profiler.experimental.start(logdir)
    times = steps()
    tf.profiler.experimental.stop()  # collection and writing: not timed
    return times


for round_ in range(REPS):  # alternate which mode goes first
    if round_ % 2:
        samples["on"] += profiled_steps()
        samples["off"] += steps()
    else:
        samples["off"] += steps()
        samples["on"] += profiled_steps()
median = {mode: float(np.median(times)) for mode, times in samples.items()}
write_figure(
    "tf_profiler_overhead",
    "MLP predict step (batch 128) on FPGA(sim): profiler on vs off",
    median["on"] * 1e6, median["off"] * 1e6, "us/step", "ratio <= 1.02",
)
