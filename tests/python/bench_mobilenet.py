"""keras.applications.MobileNetV2(alpha=0.35, input_shape=(96, 96, 3),
weights=None) predict of a batch of 8, as one tf.function step: the model
(weights) on /device:FPGA:0 (sim) against the same model on /device:CPU:0
(TF's oneDNN kernels), same process, interleaved. Writes
tf_mobilenet_v2_predict_ratio."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402

REPS = 15
x = np.random.default_rng(0).standard_normal((8, 96, 96, 3)).astype(np.float32)
steps = {}
for device in ("/device:CPU:0", "/device:FPGA:0"):
    keras.utils.set_random_seed(1)
    with tf.device(device):
        model = keras.applications.MobileNetV2(alpha=0.35, input_shape=(96, 96, 3), weights=None)
        inputs = tf.identity(tf.constant(x))
    step = tf.function(lambda t, m=model: m(t, training=False), jit_compile=False)
    steps[device] = (step, inputs)


def timed(device):
    step, inputs = steps[device]
    with tf.device(device):
        start = clock()
        step(inputs).numpy()
        return clock() - start


for device in steps:  # trace and warm up
    for _ in range(2):
        timed(device)
medians = interleaved_medians(list(steps), REPS, timed)
write_figure(
    "tf_mobilenet_v2_predict_ratio",
    "MobileNetV2-0.35 96x96 predict, batch 8: FPGA(sim) vs TF CPU",
    medians["/device:FPGA:0"] * 1e3, medians["/device:CPU:0"] * 1e3, "ms/step",
    "ratio <= 1.0",
)
