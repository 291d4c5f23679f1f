"""Host->device->host round trip of a 64 MiB tensor through TF on
/device:FPGA:0 against two baselines, same process, interleaved.
Bandwidth = bytes moved (2 x 64 MiB) / time.

- `memcpy`: numpy copies there and back between buffers allocated once
  (tf_copy_bandwidth);
- `tf_host`: what TF pays without the plugin for the same two copies
  into memory it allocates: a `DeepCopy` on the CPU (a new TF tensor) and
  its copy into a new numpy array, as `.numpy()` of a device tensor makes
  (tf_copy_vs_tf_host)."""
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
    if subject == "tf_host":
        start = clock()
        with tf.device("/device:CPU:0"):
            copied = tf.raw_ops.DeepCopy(x=host_tensor)
        result = np.array(copied)  # a new array: .numpy() of a CPU tensor is a view
        elapsed = clock() - start
        del copied, result
        return elapsed
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
timed("tf_host")  # TF's first host allocation of this size, not timed
medians = interleaved_medians(["memcpy", "tf_host", "tf"], REPS, timed)
gbps = {name: 2 * SIZE / seconds / 1e9 for name, seconds in medians.items()}
write_figure(
    "tf_copy_bandwidth",
    "64 MiB host->FPGA(sim)->host through TF vs memcpy there and back",
    gbps["tf"], gbps["memcpy"], "GB/s", "ratio >= 0.8",
)
write_figure(
    "tf_copy_vs_tf_host",
    "64 MiB host->FPGA(sim)->host through TF vs TF's own two host copies (DeepCopy, numpy)",
    gbps["tf"], gbps["tf_host"], "GB/s", "ratio >= 0.9",
)
