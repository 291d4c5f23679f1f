"""The LiteRT delegate on bench_int8_mobilenet's int8 MobileNetV2-0.35
(96x96, 100 classes, batch 8), same process, interleaved:

- TFLite's interpreter with the delegate (`load_delegate`, device `sim`,
  every node on the device: checked in its report, else the bench fails);
- the same interpreter without it (its default kernels: XNNPACK, 2 threads);
- the wheel's Int8Model route (a TF graph of the plugin's int8 ops on
  /device:FPGA:0, also `sim`).

Writes tflite_delegate_mobilenet_vs_cpu and
tflite_delegate_mobilenet_vs_int8model (ms per invoke of a batch of 8).

Then the Keras guide's transformer block in float32 (batch 8 of 64 tokens
of 32, as bench_sequence's), with and without the delegate: writes
tflite_delegate_transformer_vs_cpu."""
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402
from int8_model_vs_tflite import int8_module, mobilenet  # noqa: E402
from tflite_int8_dump import convert  # noqa: E402

REPS = 15
BATCH = 8
PLUGIN = os.environ["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"]

tf.keras.utils.set_random_seed(7)
model, shape = mobilenet()
flatbuffer = convert(model, shape)
x = np.random.default_rng(0).integers(-128, 128, size=(BATCH, *shape), dtype=np.int8)
report = os.path.join(tempfile.mkdtemp(), "report.json")


def interpreter(delegates=None):
    it = tf.lite.Interpreter(model_content=flatbuffer, num_threads=2,
                             experimental_delegates=delegates)
    index = it.get_input_details()[0]["index"]
    it.resize_tensor_input(index, [BATCH, *shape])
    it.allocate_tensors()
    return it, index, it.get_output_details()[0]["index"]


cpu = interpreter()
delegated = interpreter([tf.lite.experimental.load_delegate(
    PLUGIN, {"device": "sim", "report_file": report})])
fpga = int8_module().Int8Model(flatbuffer)
x_t = tf.constant(x)


def invoke(subject):
    it, index, output = subject
    it.set_tensor(index, x)
    it.invoke()
    return it.get_tensor(output)


def timed(subject):
    start = clock()
    if subject == "int8model":
        fpga(x_t).numpy()
    else:
        invoke(cpu if subject == "cpu" else delegated)
    return clock() - start


subjects = ["cpu", "delegate", "int8model"]
for subject in subjects:  # trace and warm up
    for _ in range(2):
        timed(subject)
with open(report) as f:
    graphs = json.load(f)["graphs"]
nodes = graphs[-1]["nodes"]
off = sorted({n["op"] for n in nodes if n["decision"] != "device"})
if off:
    raise SystemExit(f"the delegate left {off} on the CPU: the bench would not measure the device")
medians = interleaved_medians(subjects, REPS, timed)
note = (f"informational: {len(nodes)} of {len(nodes)} nodes on the device, one program "
        "replayed on sim (the model's int8 kernels in this process)")
write_figure(
    "tflite_delegate_mobilenet_vs_cpu",
    "LiteRT delegate, int8 MobileNetV2-0.35 96x96 batch 8: FPGA(sim) vs TFLite's CPU kernels",
    medians["delegate"] * 1e3, medians["cpu"] * 1e3, "ms/invoke", note,
)
write_figure(
    "tflite_delegate_mobilenet_vs_int8model",
    "LiteRT delegate vs the Int8Model route (TF graph), int8 MobileNetV2-0.35 batch 8, both FPGA(sim)",
    medians["delegate"] * 1e3, medians["int8model"] * 1e3, "ms/invoke",
    "informational: the same device kernels; the difference is TF's dispatch vs one program",
)


def transformer_block():
    """bench_sequence's block, with a batch size: every node delegated."""
    inputs = keras.Input((64, 32), batch_size=BATCH)
    layers = keras.layers
    attn = layers.MultiHeadAttention(num_heads=2, key_dim=32)(inputs, inputs)
    out1 = layers.LayerNormalization(epsilon=1e-6)(inputs + attn)
    ffn = layers.Dense(32)(layers.Dense(32, activation="relu")(out1))
    outputs = layers.LayerNormalization(epsilon=1e-6)(out1 + ffn)
    return tf.lite.TFLiteConverter.from_keras_model(keras.Model(inputs, outputs)).convert()


block = transformer_block()
block_report = os.path.join(tempfile.mkdtemp(), "report.json")
block_x = np.random.default_rng(1).standard_normal((BATCH, 64, 32)).astype(np.float32)


def block_interpreter(delegates=None):
    it = tf.lite.Interpreter(model_content=block, num_threads=2,
                             experimental_delegates=delegates)
    it.allocate_tensors()
    return it, it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]


block_subjects = {
    "cpu": block_interpreter(),
    "delegate": block_interpreter([tf.lite.experimental.load_delegate(
        PLUGIN, {"device": "sim", "report_file": block_report})]),
}


def block_timed(subject):
    it, index, output = block_subjects[subject]
    start = clock()
    it.set_tensor(index, block_x)
    it.invoke()
    it.get_tensor(output)
    return clock() - start


for subject in block_subjects:
    for _ in range(2):
        block_timed(subject)
with open(block_report) as f:
    nodes = json.load(f)["graphs"][-1]["nodes"]
off = sorted({n["op"] for n in nodes if n["decision"] != "device"})
if off:
    raise SystemExit(f"the delegate left {off} of the transformer block on the CPU")
medians = interleaved_medians(list(block_subjects), REPS, block_timed)
write_figure(
    "tflite_delegate_transformer_vs_cpu",
    "LiteRT delegate, float32 transformer block batch 8 of 64x32: FPGA(sim) vs TFLite's CPU kernels",
    medians["delegate"] * 1e3, medians["cpu"] * 1e3, "ms/invoke",
    f"informational: {len(nodes)} of {len(nodes)} nodes on the device, one partition",
)
