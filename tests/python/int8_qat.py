"""Quantization-aware training with tensorflow-model-optimization, then the
int8 model TFLite's converter makes from the QAT model, on the FPGA with
the wheel's Int8Model, against TFLite's interpreter on the same model.

usage: int8_qat.py [convnet|mobilenet] [images]

tf_keras (TF_USE_LEGACY_KERAS=1) builds the model, tfmot's quantize_model
wraps it (FakeQuant on weights and activations), one epoch of `fit` on
seeded data sets its ranges (on the CPU: the FakeQuant ops have no FPGA
kernel), TFLiteConverter.from_keras_model makes the int8 model from those
ranges, and the int8 model runs on /device:FPGA:0. Prints the line of
int8_model_vs_tflite.py.
"""
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_model_optimization as tfmot  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_model_vs_tflite import compare  # noqa: E402


def convnet():
    L = tf.keras.layers
    inputs = tf.keras.Input((12, 12, 3))
    a = L.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    b = L.ReLU(6.0)(L.DepthwiseConv2D(3, padding="same")(a))
    c = L.MaxPooling2D(2)(b)
    d = L.Conv2D(8, 1)(c)
    e = L.Add()([c, d])
    f = L.Flatten()(e)
    return tf.keras.Model(inputs, L.Dense(5)(f)), (12, 12, 3)


def mobilenet():
    model = tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None,
                                              classes=100, classifier_activation=None)
    return model, (96, 96, 3)


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "convnet"
    images = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    tf.keras.utils.set_random_seed(7)
    with tf.device("/device:CPU:0"):
        model, shape = mobilenet() if name == "mobilenet" else convnet()
        qat = tfmot.quantization.keras.quantize_model(model)
        qat.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        rng = np.random.default_rng(3)
        x = rng.uniform(-1, 1, (64, *shape)).astype(np.float32)
        y = rng.integers(0, qat.output_shape[-1], 64)
        qat.fit(x, y, epochs=1, batch_size=16, verbose=0)
    fake_quants = [n.op for f in [tf.function(qat).get_concrete_function(tf.TensorSpec([1, *shape]))]
                   for n in f.graph.as_graph_def().node if n.op.startswith("FakeQuant")]
    if not fake_quants:
        sys.exit("quantize_model inserted no FakeQuant op")
    converter = tf.lite.TFLiteConverter.from_keras_model(qat)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    print(f"qat {name}: {len(fake_quants)} FakeQuant ops ({', '.join(sorted(set(fake_quants)))})")
    compare(f"qat-{name}", converter.convert(), shape, images)


if __name__ == "__main__":
    main()
