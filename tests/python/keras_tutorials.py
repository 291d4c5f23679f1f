"""Keras programs written the way the Keras guides write them (keras.io, "The
Sequential model", "The Functional API", "Training & evaluation with the
built-in methods"): no device scope, no jit_compile, no extra arguments. Run
in a venv where the FPGA wheel is installed (its `.pth` hook makes
jit_compile="auto" mean no XLA on FPGA machines; docs/wheel.md).

Usage: keras_tutorials.py unchanged | keras-decides | explicit-jit
- unchanged: both programs compile/fit/evaluate/predict with every MatMul,
  BiasAdd and Relu on FPGA:0 (placement log), their variables on FPGA:0,
  and losses, metrics and predictions equal to the same program run under
  tf.device("/CPU:0") within 1e-5;
- keras-decides (TENSORPLUG_KERAS_AUTO_JIT=keras): Keras' own "auto" picks
  XLA and fit fails with "No JIT device registered for FPGA";
- explicit-jit: compile(jit_compile=True) fails at fit with an error that
  says to use jit_compile=False.
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the placement log is INFO
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from tf_kernels_common import StderrCapture, placements

mode = sys.argv[1]
tf.debugging.set_log_device_placement(mode == "unchanged")
rng = np.random.default_rng(5)
x_train = rng.standard_normal((512, 20)).astype("float32")
y_train = rng.integers(0, 4, 512)
x_val, y_val = x_train[-64:], y_train[-64:]
x_test = rng.standard_normal((128, 20)).astype("float32")
y_test = rng.integers(0, 4, 128)


def sequential_guide(**compile_args):
    model = keras.Sequential([
        keras.Input(shape=(20,)),
        layers.Dense(64, activation="relu"),
        layers.Dense(64, activation="relu"),
        layers.Dense(4),
    ])
    model.compile(
        optimizer=keras.optimizers.RMSprop(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        **compile_args,
    )
    history = model.fit(x_train, y_train, batch_size=64, epochs=2,
                        validation_data=(x_val, y_val), verbose=0)
    results = model.evaluate(x_test, y_test, batch_size=128, verbose=0)
    predictions = model.predict(x_test[:3], verbose=0)
    return model, [*history.history["loss"], *results, *predictions.ravel()]


def functional_guide(**compile_args):
    inputs = keras.Input(shape=(20,), name="digits")
    x = layers.Dense(32, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(32, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(4, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], **compile_args)
    history = model.fit(x_train, y_train, batch_size=64, epochs=2, verbose=0)
    results = model.evaluate(x_test, y_test, verbose=0)
    return model, [*history.history["loss"], *results]


PROGRAMS = {"Sequential guide": sequential_guide, "Functional guide": functional_guide}

if mode == "unchanged":
    for name, program in PROGRAMS.items():
        keras.utils.set_random_seed(11)
        with tf.device("/CPU:0"):
            _, cpu = program()
        keras.utils.set_random_seed(11)
        with StderrCapture() as log:
            model, fpga = program()
        devices = {v.value.device.rpartition("/")[2] for v in model.variables}
        assert devices == {"device:FPGA:0"}, devices
        placed = placements(log.text)
        compute = [(op, dev) for _, op, dev in placed if op in ("MatMul", "BiasAdd", "Relu")]
        off = {(op, dev) for op, dev in compute if not dev.endswith("FPGA:0")}
        assert compute and not off, off
        diff = float(np.abs(np.array(fpga) - np.array(cpu)).max())
        assert diff <= 1e-5, f"{name}: FPGA {fpga} vs CPU {cpu}"
        print(f"{name}: unchanged program on FPGA:0, {len(compute)} MatMul/BiasAdd/Relu "
              f"placements, max |fpga - cpu| = {diff:.2g}")
    # The decision on other machines: fake device lists, same model.
    from collections import namedtuple
    from keras.src.trainers import trainer as trainer_module

    Device = namedtuple("Device", "name device_type")
    model = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
    model.compile()
    decide = trainer_module.Trainer._resolve_auto_jit_compile
    real = tf.config.list_physical_devices
    try:
        for kinds, want in [(["CPU"], False), (["CPU", "FPGA"], False),
                            (["CPU", "FPGA", "GPU"], True), (["CPU", "GPU"], True)]:
            tf.config.list_physical_devices = lambda *_, k=kinds: [
                Device(f"/physical_device:{t}:0", t) for t in k]
            assert decide(model) is want, (kinds, want)
    finally:
        tf.config.list_physical_devices = real
    print("auto decisions: CPU only -> no XLA, FPGA -> no XLA, FPGA+GPU -> XLA, GPU -> XLA")
elif mode == "keras-decides":
    try:
        sequential_guide()
    except tf.errors.InvalidArgumentError as error:
        assert "No JIT device registered for FPGA" in str(error), error
        print("keras decides: XLA, No JIT device registered for FPGA")
    else:
        raise AssertionError("Keras' own auto decision did not pick XLA")
elif mode == "explicit-jit":
    try:
        sequential_guide(jit_compile=True)
    except tf.errors.InvalidArgumentError as error:
        text = str(error)
        assert "jit_compile=True asks XLA" in text and "jit_compile=False" in text, text
        print(f"explicit jit_compile=True: {text.splitlines()[0][:100]}")
    else:
        raise AssertionError("jit_compile=True on the FPGA did not fail")
else:
    raise SystemExit(f"unknown mode {mode}")
