"""A Bidirectional LSTM's training step on the FPGA, its gradient loop's
list sums accumulated in place (`graph/list_grads.rs`) and its int32 lists
kept on the host (`graph/list_host.rs`), and not: three SGD
steps from the same weights each way, in one process
(`TENSORPLUG_GRAPH_LIST_GRADS` is read per graph), then one profiled step
each way. Prints

  variant_kernels <yes|no>        (TF_AddNVariant exported by this TF)
  keras <2|3>                     (tf.keras' major version)
  steps <n>                       (the sequence's length: each direction's
                                  loop and its gradient loop iterate n times)
  cpu_<off|on> [(op, count), …]   (the profiled step's ops on TF's CPU)
  lists_<off|on> push_cpu=<n> pop_cpu=<n> host_syncs=<n> host_copies=<n>
                                  (int32 list ops on the CPU; the FPGA
                                  plane's host waits and copies)
  losses_equal <True|False>       (bit for bit, all steps)
  weights_equal <True|False>
  off addn_cpu=<n> addn_device=<n> zeros_cpu=<n>
  on addn_cpu=<n> addn_device=<n> zeros_cpu=<n>
"""
import ctypes
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_profiler_scenarios import host_api, ops_in, profile  # noqa: E402

STEPS = 3
# Long enough that a wait per backward iteration would outnumber the
# step's other waits, whose number depends on timing.
TIME_STEPS = 16


def exported(symbol):
    """Whether TF's loaded libraries export `symbol` (RTLD_DEFAULT, then
    the framework library, as the plugin looks it up)."""
    for lib in (None, "libtensorflow_framework.so.2"):
        try:
            getattr(ctypes.CDLL(lib, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL), symbol)
            return True
        except (AttributeError, OSError):
            continue
    return False


def build():
    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([
        tf.keras.Input((TIME_STEPS, 4)),
        # Trained before the LSTM: the loop's input list needs a gradient.
        tf.keras.layers.Dense(4),
        tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(8)),
        tf.keras.layers.Dense(1),
    ])
    return model


def train(setting, model, start, x, y):
    os.environ["TENSORPLUG_GRAPH_LIST_GRADS"] = setting
    model.set_weights(start)
    sgd = tf.keras.optimizers.SGD(0.1)

    @tf.function(jit_compile=False)
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        sgd.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = [step().numpy() for _ in range(STEPS)]
    weights = [w.copy() for w in model.get_weights()]
    _, space = profile(lambda: step().numpy())
    device, cpu = ops_in(space)
    print(f"cpu_{setting}", sorted(cpu.items()))
    calls = host_api(space)
    print(f"lists_{setting} push_cpu={cpu.get('TensorListPushBack', 0)}",
          f"pop_cpu={cpu.get('TensorListPopBack', 0)}",
          f"host_syncs={calls.get('HostSync', 0)} host_copies={calls.get('HostCopy', 0)}")
    counts = (cpu.get("AddN", 0), device.get("AddN", 0), cpu.get("ZerosLike", 0))
    return losses, weights, counts


def main():
    print("variant_kernels", "yes" if exported("TF_AddNVariant") else "no")
    print("keras", keras.__version__.split(".")[0])
    print("steps", TIME_STEPS)
    rng = np.random.default_rng(0)
    with tf.device("/device:FPGA:0"):
        model = build()
        start = model.get_weights()
        x = tf.constant(rng.standard_normal((4, TIME_STEPS, 4)).astype(np.float32))
        y = tf.constant(rng.standard_normal((4, 1)).astype(np.float32))
        runs = {s: train(s, model, start, x, y) for s in ("off", "on")}
    (l_off, w_off, c_off), (l_on, w_on, c_on) = runs["off"], runs["on"]
    print("losses_equal", all(a.tobytes() == b.tobytes() for a, b in zip(l_off, l_on)))
    print("weights_equal", all(a.tobytes() == b.tobytes() for a, b in zip(w_off, w_on)))
    print("losses", [float(v) for v in l_on])
    for name, (addn_cpu, addn_device, zeros_cpu) in (("off", c_off), ("on", c_on)):
        print(f"{name} addn_cpu={addn_cpu} addn_device={addn_device} zeros_cpu={zeros_cpu}")


if __name__ == "__main__":
    main()
