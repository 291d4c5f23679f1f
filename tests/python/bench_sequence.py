"""Bench rows: the forward pass of the Keras guide's transformer
block (MultiHeadAttention, LayerNormalization, the feed-forward Dense pair;
batch 32 of 64 tokens of 32) and one training step of a bidirectional LSTM
classifier (batch 32 of 40 tokens), each as one tf.function on
/device:FPGA:0 (sim) against the same model on /device:CPU:0, same
process, interleaved. Writes tf_transformer_block_forward_ratio and
tf_lstm_step_ratio."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402
from bench_common import clock, interleaved_medians, write_figure  # noqa: E402

REPS = 15
DEVICES = ("/device:CPU:0", "/device:FPGA:0")
rng = np.random.default_rng(0)


def transformer_block():
    inputs = keras.Input((64, 32))
    attn = layers.MultiHeadAttention(num_heads=2, key_dim=32)(inputs, inputs)
    out1 = layers.LayerNormalization(epsilon=1e-6)(inputs + attn)
    ffn = layers.Dense(32)(layers.Dense(32, activation="relu")(out1))
    outputs = layers.LayerNormalization(epsilon=1e-6)(out1 + ffn)
    model = keras.Model(inputs, outputs)
    x = rng.standard_normal((32, 64, 32)).astype(np.float32)
    return tf.function(lambda t: model(t, training=False), jit_compile=False), (x,)


def lstm_step():
    inputs = keras.Input((40,), dtype="int32")
    h = layers.Embedding(2000, 32)(inputs)
    h = layers.Bidirectional(layers.LSTM(32))(h)
    outputs = layers.Dense(1, activation="sigmoid")(h)
    model = keras.Model(inputs, outputs)
    loss_fn = keras.losses.BinaryCrossentropy()
    optimizer = keras.optimizers.Adam()
    x = rng.integers(0, 2000, (32, 40)).astype(np.int32)
    y = rng.integers(0, 2, (32, 1)).astype(np.float32)

    def step(t, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(t, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return tf.function(step, jit_compile=False), (x, y)


def measure(build, figure_id, figure):
    steps = {}
    for device in DEVICES:
        keras.utils.set_random_seed(1)
        with tf.device(device):
            fn, args = build()
            args = tuple(tf.identity(tf.constant(a)) for a in args)
        steps[device] = (fn, args)

    def timed(device):
        fn, args = steps[device]
        with tf.device(device):
            start = clock()
            fn(*args).numpy()
            return clock() - start

    for device in DEVICES:  # trace and warm up
        for _ in range(2):
            timed(device)
    medians = interleaved_medians(list(DEVICES), REPS, timed)
    write_figure(figure_id, figure, medians[DEVICES[1]] * 1e3, medians[DEVICES[0]] * 1e3,
                 "ms/step", "ratio <= 1")


measure(transformer_block, "tf_transformer_block_forward_ratio",
        "transformer block forward, batch 32x64x32: FPGA(sim) vs TF CPU")
measure(lstm_step, "tf_lstm_step_ratio",
        "BiLSTM(32) training step, batch 32x40: FPGA(sim) vs TF CPU")
