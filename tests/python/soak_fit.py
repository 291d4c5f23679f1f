"""The training soak: a Keras MLP fits on /device:FPGA:0 (or
$TENSORPLUG_SOAK_ON, e.g. /CPU:0 for the control) for
`minutes`, and every `every` seconds the process's RSS, open file
descriptors and threads and the device's memory in use are written to
`csv` (`cargo xtask soak` runs it on `sim` and on a `tcp:` device, then
plots and checks the samples).

soak_fit.py <minutes> <csv> [every_seconds]
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FPGA = os.environ.get("TENSORPLUG_SOAK_ON", "/device:FPGA:0")
minutes, path = float(sys.argv[1]), sys.argv[2]
every = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0


def usage():
    status = open("/proc/self/status").read().splitlines()
    field = lambda name: int(next(l for l in status if l.startswith(name)).split()[1])
    return field("VmRSS:"), len(os.listdir("/proc/self/fd")), field("Threads:")


rng = np.random.default_rng(5)
x = rng.standard_normal((512, 64)).astype(np.float32)
y = rng.integers(0, 10, 512)
with tf.device(FPGA):
    model = tf.keras.Sequential([
        tf.keras.Input((64,)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer="adam", jit_compile=False,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

start = time.time()
last = -every
epochs = 0
with open(path, "w") as out:
    out.write("seconds,epochs,rss_kib,fds,threads,device_bytes\n")
    while time.time() - start < minutes * 60:
        with tf.device(FPGA):
            history = model.fit(x, y, batch_size=64, epochs=1, verbose=0)
        epochs += 1
        now = time.time() - start
        if now - last >= every:
            last = now
            rss, fds, threads = usage()
            device = tf.config.experimental.get_memory_info(FPGA)["current"] if "FPGA" in FPGA else 0
            out.write(f"{now:.1f},{epochs},{rss},{fds},{threads},{device}\n")
            out.flush()
            print(f"soak_fit: {now:.0f}/{minutes * 60:.0f} s, {epochs} epochs, RSS {rss} KiB, "
                  f"{fds} fds, {threads} threads, device {device} B", file=sys.stderr, flush=True)
loss = history.history["loss"][-1]
assert np.isfinite(loss), loss
print(f"ok: {epochs} epochs in {minutes} min, last loss {loss:.4f}")
