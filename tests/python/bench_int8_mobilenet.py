"""Int8 MobileNetV2-0.35 (96x96, 100 classes) predict of a batch of 8: the
int8 model TFLite's converter makes, run with the wheel's Int8Model on
/device:FPGA:0 (sim) against the same model in TFLite's CPU interpreter
(its default kernels), same process, interleaved. Writes
tf_int8_mobilenet_v2_predict_ratio."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402
from int8_model_vs_tflite import int8_module, mobilenet  # noqa: E402
from tflite_int8_dump import convert  # noqa: E402

REPS = 15
BATCH = 8
tf.keras.utils.set_random_seed(7)
model, shape = mobilenet()
flatbuffer = convert(model, shape)
x = np.random.default_rng(0).integers(-128, 128, size=(BATCH, *shape), dtype=np.int8)
interpreter = tf.lite.Interpreter(model_content=flatbuffer, num_threads=2)
index = interpreter.get_input_details()[0]["index"]
interpreter.resize_tensor_input(index, [BATCH, *shape])
interpreter.allocate_tensors()
output = interpreter.get_output_details()[0]["index"]
fpga = int8_module().Int8Model(flatbuffer)
x_t = tf.constant(x)


def timed(subject):
    start = clock()
    if subject == "tflite":
        interpreter.set_tensor(index, x)
        interpreter.invoke()
        interpreter.get_tensor(output)
    else:
        fpga(x_t).numpy()
    return clock() - start


for subject in ("tflite", "fpga"):  # trace and warm up
    for _ in range(2):
        timed(subject)
medians = interleaved_medians(["tflite", "fpga"], REPS, timed)
write_figure(
    "tf_int8_mobilenet_v2_predict_ratio",
    "int8 MobileNetV2-0.35 96x96 predict, batch 8: FPGA(sim) vs TFLite's CPU interpreter",
    medians["fpga"] * 1e3, medians["tflite"] * 1e3, "ms/step",
    "informational: TF dispatch and the sim's model kernels vs TFLite's XNNPACK",
)
