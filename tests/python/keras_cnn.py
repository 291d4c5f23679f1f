"""Convolutional Keras models on /device:FPGA:0, written as the Keras guides
write them, against the same models on the CPU:

- predict: a small convnet (Conv2D, MaxPooling2D, DepthwiseConv2D,
  AveragePooling2D, GlobalAveragePooling2D, Dense), a ResNet-style block (Conv2D, batch norm,
  ReLU, an `Add` skip) and keras.applications.MobileNetV2(alpha=0.35,
  input_shape=(96, 96, 3), weights=None) with seeded weights. Every compute
  node (convolutions, depthwise convolutions, pools, batch-norm arithmetic,
  activations, padding, the classifier) is placed on FPGA:0 (placement
  log), and the outputs equal the CPU's within 1e-4 of their largest
  magnitude (MobileNetV2's untrained logits are about 1e-10, so an absolute
  bound would say nothing).
- fit: the small convnet trains (SGD) with losses equal to the CPU's within
  a relative 1e-4, its forward and backward ops (Conv2DBackpropInput/Filter,
  DepthwiseConv2dNativeBackpropInput/Filter, MaxPoolGrad, AvgPoolGrad,
  ReluGrad, BiasAddGrad) on FPGA:0: no node of
  the gradient but constants and arguments is on the CPU.

Needs jit_compile=False without the wheel's Keras hook (docs/wheel.md).
"""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # the placement log is INFO
import numpy as np
import tensorflow as tf
import keras
from keras import layers

from tf_kernels_common import StderrCapture, placements

FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
COMPUTE = {"Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "Mean", "Relu", "Relu6",
           "Rsqrt", "Mul", "Sub", "AddV2", "Add", "Pad", "MatMul", "BiasAdd", "Softmax",
           "FusedBatchNormV3", "_FusedConv2D", "_FusedMatMul"}
KERAS_2 = keras.__version__.startswith("2.")
tf.debugging.set_log_device_placement(True)
rng = np.random.default_rng(4)


def small_convnet():
    return keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        layers.Conv2D(8, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2, activation="relu"),
        layers.AveragePooling2D(2),
        layers.GlobalAveragePooling2D(),
        layers.Dense(10, activation="softmax"),
    ], name="convnet")


def resnet_block():
    inputs = keras.Input(shape=(16, 16, 8))
    x = layers.Conv2D(8, 3, padding="same", use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.Conv2D(8, 3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.add([x, inputs])
    outputs = layers.Activation("relu")(x)
    return keras.Model(inputs, outputs, name="resnet_block")


def mobilenet():
    return keras.applications.MobileNetV2(alpha=0.35, input_shape=(96, 96, 3), weights=None,
                                          classifier_activation=None)


def predict(name, build, shape, must_run):
    keras.utils.set_random_seed(9)
    model = build()
    model.compile(jit_compile=False)
    x = rng.standard_normal(shape).astype("float32")
    with tf.device(CPU):
        cpu = model.predict(x, verbose=0)
    with StderrCapture() as log:
        fpga = model.predict(x, verbose=0)
    placed = placements(log.text)
    off = sorted({(op, dev) for _, op, dev in placed if op in COMPUTE and not dev.endswith("FPGA:0")})
    on = {op for _, op, dev in placed if op in COMPUTE and dev.endswith("FPGA:0")}
    assert not off, f"{name}: compute ops not on the FPGA: {off}"
    assert must_run <= on, f"{name}: {sorted(must_run - on)} not placed on the FPGA: {sorted(on)}"
    scale = float(np.abs(cpu).max())
    diff = float(np.abs(fpga - cpu).max())
    assert scale > 0 and diff <= 1e-4 * scale, f"{name}: |fpga - cpu| {diff} vs scale {scale}"
    count = sum(1 for _, op, dev in placed if op in COMPUTE)
    print(f"{name} predict {shape}: {count} compute nodes on FPGA:0 ({', '.join(sorted(on))}); "
          f"max |fpga - cpu| = {diff:.3g} = {diff / scale:.2g} of max |output| {scale:.3g}")


def fit():
    x = rng.standard_normal((128, 28, 28, 1)).astype("float32")
    y = rng.integers(0, 10, 128)
    losses = {}
    for device in (CPU, FPGA):
        keras.utils.set_random_seed(5)
        with tf.device(device):
            model = small_convnet()
            model.compile(optimizer=keras.optimizers.SGD(0.05), jit_compile=False,
                          loss="sparse_categorical_crossentropy")
        with StderrCapture() as log, tf.device(device):
            losses[device] = np.array(model.fit(x, y, batch_size=32, epochs=2, shuffle=False,
                                                verbose=0).history["loss"])
    placed = placements(log.text)
    on = sorted({op for _, op, dev in placed if op in COMPUTE and dev.endswith("FPGA:0")})
    grads = {op for node, op, dev in placed if "gradient" in node.lower() and dev.endswith("FPGA:0")}
    host = sorted({op for node, op, dev in placed
                   if "gradient" in node.lower() and not dev.endswith("FPGA:0")} - {"Const", "_Arg"})
    rel = float((np.abs(losses[FPGA] - losses[CPU]) / losses[CPU]).max())
    assert rel <= 1e-4, f"fit losses: fpga {losses[FPGA]} cpu {losses[CPU]}"
    assert {"Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "Mean"} <= set(on), on
    backward = {"Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPoolGrad", "AvgPoolGrad",
                "ReluGrad", "BiasAddGrad", "DepthwiseConv2dNativeBackpropInput",
                "DepthwiseConv2dNativeBackpropFilter"}
    assert backward <= grads, f"not on FPGA:0: {sorted(backward - grads)}"
    assert not host, f"gradient ops on the CPU: {host}"
    print(f"convnet fit: losses fpga {np.round(losses[FPGA], 6).tolist()} cpu "
          f"{np.round(losses[CPU], 6).tolist()}, max relative difference {rel:.2g}; forward on "
          f"FPGA:0: {on}; backward on FPGA:0: {sorted(grads)}")


mode = sys.argv[1]
if mode == "predict":
    predict("convnet", small_convnet, (16, 28, 28, 1),
            {"Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "Mean", "Relu", "MatMul",
             "Softmax"})
    # Keras 3 computes BatchNormalization with Rsqrt/Mul/Sub; Keras 2 (TF
    # 2.15) with one FusedBatchNormV3 (is_training false in predict).
    batch_norm = {"FusedBatchNormV3"} if KERAS_2 else {"Rsqrt", "Mul", "Sub"}
    predict("resnet_block", resnet_block, (4, 16, 16, 8),
            {"Conv2D", "AddV2", "Relu"} | batch_norm)
    predict("MobileNetV2-0.35", mobilenet, (2, 96, 96, 3),
            {"Conv2D", "DepthwiseConv2dNative", "Relu6", "Pad", "Mean", "MatMul"} | batch_norm)
elif mode == "fit":
    fit()
else:
    raise SystemExit(f"unknown mode {mode}")
