"""Keras programs written as the Keras guides write them (no device
scope, no jit_compile: run where the wheel is installed): the guide's "Text
classification with Transformer" on synthetic tokens, a bidirectional LSTM
classifier, and a convnet under `mixed_bfloat16` (and `mixed_float16`).
Each runs `fit` for three steps, then `predict`.

usage: keras_sequence.py <transformer | bilstm | bf16 | f16>

Checks, per program:
- the fallback report (TENSORPLUG_FALLBACK_FILE) names no float op on the
  CPU: every float compute node ran on FPGA:0 (soft placement on, as users
  have it);
- something ran on FPGA:0 (placement log);
- losses and predictions equal the same program under tf.device("/CPU:0")
  within 1e-4 relative (docs/device-numerics.md: GEMM orders differ); f16
  within four half ulps.
Prints `OK <program> ...`.
"""
import os
import sys
import tempfile

SCRATCH = tempfile.TemporaryDirectory(prefix="tensorplug-test-")
REPORT = os.path.join(SCRATCH.name, "fallback.txt")
os.environ["TENSORPLUG_FALLBACK_FILE"] = REPORT
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the placement log is INFO
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402
from half_convnet import half_convnet  # noqa: E402

# Keras 3's guide writes keras.ops; Keras 2's (TF 2.15) the same with tf.
ops = getattr(keras, "ops", None) or type("ops", (), {
    "shape": staticmethod(tf.shape),
    "arange": staticmethod(lambda start, stop, step: tf.range(start, stop, step)),
})

from tf_kernels_common import StderrCapture, placements  # noqa: E402

VOCAB, MAXLEN, EMBED, HEADS, FF = 2000, 64, 32, 2, 32


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        positions = self.pos_emb(positions)
        x = self.token_emb(x)
        return x + positions


def transformer():
    inputs = layers.Input(shape=(MAXLEN,))
    x = TokenAndPositionEmbedding(MAXLEN, VOCAB, EMBED)(inputs)
    x = TransformerBlock(EMBED, HEADS, FF)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = rng.integers(0, VOCAB, (96, MAXLEN)).astype("int32")
    return model, x, rng.integers(0, 2, 96)


def bilstm():
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(VOCAB, 32)(inputs)
    x = layers.Bidirectional(layers.LSTM(32, return_sequences=True))(x)
    x = layers.Bidirectional(layers.LSTM(32))(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model, rng.integers(0, VOCAB, (96, 40)).astype("int32"), rng.integers(0, 2, 96)


def bf16():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    return convnet()


def f16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    return convnet()


def convnet():
    model = half_convnet(keras)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model, rng.standard_normal((96, 28, 28, 1)).astype("float32"), rng.integers(0, 10, 96)


PROGRAMS = {"transformer": transformer, "bilstm": bilstm, "bf16": bf16, "f16": f16}


def run(name):
    global rng
    rng = np.random.default_rng(3)  # the same data for each run
    keras.utils.set_random_seed(7)
    model, x, y = PROGRAMS[name]()
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # three steps
    predictions = model.predict(x[:32], verbose=0)
    return np.array(history.history["loss"]), predictions


name = sys.argv[1]
tf.debugging.set_log_device_placement(True)
with tf.device("/CPU:0"):
    cpu_loss, cpu_pred = run(name)
open(REPORT, "w").close()
with StderrCapture() as log:
    fpga_loss, fpga_pred = run(name)
with open(REPORT) as f:
    # Device-program decisions (TENSORPLUG_GRAPH_PROGRAMS on) are no
    # fallbacks: their ops run on the device.
    fallbacks = sorted({line.strip() for line in f
                        if line.strip() and not line.startswith(("program ", "no program "))})
placed = placements(log.text)
on_fpga = sum(1 for _, _, dev in placed if dev.endswith("FPGA:0"))
assert on_fpga > 0, "nothing ran on FPGA:0"
rel = lambda a, b: float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3)))  # noqa: E731
loss_err, pred_err = rel(fpga_loss, cpu_loss), rel(fpga_pred, cpu_pred)
print(f"{name}: loss {fpga_loss} (CPU {cpu_loss}), relative error loss {loss_err:.2g}, "
      f"predictions {pred_err:.2g}", file=sys.stderr)
assert not fallbacks, f"{name}: float ops on the CPU: {fallbacks}"
# float16: TF's CPU kernels round to half at each step of a sum (Eigen's
# half arithmetic), the device once at the end: a few half ulps (2^-11).
# bfloat16: both round once, but oneDNN's fused bfloat16 convolution (on a
# CPU with AVX512_BF16) sums in another order than the device, which can put
# an activation one bfloat16 ulp (2^-8) away.
tolerance = {"f16": 4 * 2.0**-11, "bf16": 2.0**-8}.get(name, 1e-4)
assert loss_err <= tolerance and pred_err <= tolerance, (name, fpga_loss, cpu_loss, loss_err, pred_err)
print(f"OK {name}: {on_fpga} placements on FPGA:0, no float op on the CPU; loss {fpga_loss} "
      f"(CPU {cpu_loss}), max relative error loss {loss_err:.2g}, predictions {pred_err:.2g}")
