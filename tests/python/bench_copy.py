"""Host->device->host round trip of a 64 MiB tensor through TF on
/device:FPGA:0 vs a numpy copy (memcpy) there and back, same process,
interleaved. Bandwidth = bytes moved (2 x 64 MiB) / time. Writes
tf_copy_bandwidth."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402

SIZE = 64 << 20
REPS = 15

host = np.random.default_rng(0).standard_normal(SIZE // 4).astype(np.float32)
with tf.device("/device:CPU:0"):
    host_tensor = tf.constant(host)
middle = np.empty_like(host)
back = np.empty_like(host)


def timed(subject):
    if subject == "memcpy":
        start = clock()
        np.copyto(middle, host)
        np.copyto(back, middle)
        return clock() - start
    start = clock()
    with tf.device("/device:FPGA:0"):
        on_device = tf.identity(host_tensor)
    result = on_device.numpy()
    elapsed = clock() - start
    del on_device, result
    return elapsed


timed("tf")  # first allocation of device memory, not timed
with tf.device("/device:FPGA:0"):
    check = tf.identity(host_tensor)
if not check.device.endswith("FPGA:0") or not np.array_equal(check.numpy(), host):
    raise SystemExit(f"round trip through {check.device} changed the data")
del check
medians = interleaved_medians(["memcpy", "tf"], REPS, timed)
gbps = {name: 2 * SIZE / seconds / 1e9 for name, seconds in medians.items()}
write_figure(
    "tf_copy_bandwidth",
    "64 MiB host->FPGA(sim)->host through TF vs memcpy there and back",
    gbps["tf"], gbps["memcpy"], "GB/s", "ratio >= 0.8",
)
