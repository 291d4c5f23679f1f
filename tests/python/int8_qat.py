"""Quantization-aware training with tensorflow-model-optimization, then the
QAT model in int8 on the FPGA two ways, each against TFLite's interpreter on
the int8 model TFLite's converter makes from the same QAT model:

- the calibration route: that int8 model through the wheel's Int8Model;
- in the graph: `qat.predict(x)`, unchanged, which the plugin's graph pass
  rewrites into int8 device ops (`docs/graph-optimizer.md`, "int8 from QAT
  and QDQ graphs").

usage: int8_qat.py [convnet|mobilenet] [images]
       int8_qat.py uncalibrated
       int8_qat.py fake_quant

tf_keras (TF_USE_LEGACY_KERAS=1) builds the model, tfmot's quantize_model
wraps it (FakeQuant on weights and activations), one epoch on seeded data
sets its ranges (on the CPU: the FakeQuant ops have no FPGA kernel): `fit`
for the convnet, as users write it; for MobileNet only the epoch's forward
passes in training mode, which set the same ranges (`quantized`). Prints
the lines of int8_model_vs_tflite.py, then

  predict <name> images=<n> top1_agree=<k> max_diff_quanta=<d> differ=<outputs>
  device_ops <op type>=<count>…   (one predict step under tf.profiler: the
                                   events of the FPGA's plane)
  cpu_ops <op type>=<count>…      (the same step's ops on TF's CPU executor)
  program_nodes <n>               (the largest device program's nodes, from
                                   the fallback report)
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
from tflite_int8_dump import invoke  # noqa: E402
from tf_profiler_scenarios import PLANE_PREFIX, SCRATCH, profile, profiled_ops, stats  # noqa: E402
from program_report import largest_program  # noqa: E402


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


def uncalibrated():
    """A QAT model before any training: its ranges are [0, 0], which no
    int8 scale represents. `predict` must fail naming the node and saying
    why; with TENSORPLUG_GRAPH_INT8=off it runs the float simulation."""
    tf.keras.utils.set_random_seed(7)
    x = np.zeros((2, 12, 12, 3), np.float32)
    try:
        tfmot.quantization.keras.quantize_model(convnet()[0]).predict(x, verbose=0)
        print("uncalibrated: accepted")
    except tf.errors.InvalidArgumentError as error:
        lines = [line for line in error.message.splitlines() if "cannot be represented" in line]
        print(f"uncalibrated: InvalidArgumentError: {(lines or ['-'])[0].strip()}")
    os.environ["TENSORPLUG_GRAPH_INT8"] = "off"
    out = tfmot.quantization.keras.quantize_model(convnet()[0]).predict(x, verbose=0)
    print(f"uncalibrated, int8 off: predict gave {out.shape}")


def fake_quant():
    """The weights op applying a weight fake-quant itself (what the pass
    makes of a fake-quant only the convolution reads) against the same op
    on TF's fake-quant output, per tensor and per channel, on weights
    spread over the range and beyond it, with ranges TF nudges:

      fake_quant <op> weights=<n> equal=<k> scales_equal=<bool>
    """
    from tensorflow.core.framework import node_def_pb2
    rng = np.random.default_rng(5)
    op = "_TensorplugFPGAQatWeights"
    for fq_op, kind, channels in [("FakeQuantWithMinMaxVars", "per_tensor", 1),
                                  ("FakeQuantWithMinMaxVarsPerChannel", "per_channel", 16)]:
        hi = rng.uniform(0.01, 2, channels).astype(np.float32)
        w = (rng.uniform(-1.2, 1.2, (3, 3, 8, 16)) * np.resize(hi, 16)).astype(np.float32)
        # Values on and next to the grid's half steps, where rounding turns.
        step = np.resize(hi / np.float32(127), 16)
        w[0, 0] = (np.arange(-4, 4)[:, None] + np.float32(0.5)) * step
        w[0, 1] = np.nextafter(w[0, 0], np.float32(1))
        shape = [] if kind == "per_tensor" else [channels]

        def graph():
            def c(name, value):
                return tf.constant(value, name=name)
            wt, lo, up = c("w", w), c("lo", (-hi).reshape(shape)), c("hi", hi.reshape(shape))
            empty = c("empty", np.zeros([0], np.float32))
            fq = getattr(tf.quantization, {"per_tensor": "fake_quant_with_min_max_vars",
                                           "per_channel": "fake_quant_with_min_max_vars_per_channel"}[kind])
            fq(wt, lo, up, num_bits=8, narrow_range=True, name="fq")
            gd = tf.compat.v1.get_default_graph().as_graph_def()
            for name, src, attrs in [("by_tf", "fq", {}), ("by_op", "w", {"apply_fake_quant": kind})]:
                n = node_def_pb2.NodeDef(name=name, op=op, input=[src, "empty", "lo", "hi"])
                n.device = "/device:CPU:0"
                for k, v in attrs.items():
                    n.attr[k].s = v.encode()
                gd.node.append(n)
            return gd

        with tf.Graph().as_default():
            gd = graph()
        wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(gd, name=""), [])
        g = wrapped.graph
        fn = wrapped.prune([], [g.as_graph_element(t) for t in
                                ["by_tf:0", "by_tf:1", "by_op:0", "by_op:1"]])
        with tf.device("/device:CPU:0"):
            q_tf, s_tf, q_op, s_op = [t.numpy() for t in fn()]
        print(f"fake_quant {fq_op} weights={w.size} equal={int(np.sum(q_tf == q_op))} "
              f"scales_equal={bool(np.array_equal(s_tf.view(np.uint32), s_op.view(np.uint32)))}")


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "convnet"
    if name == "uncalibrated":
        return uncalibrated()
    if name == "fake_quant":
        return fake_quant()
    images = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    # The graph pass reports each program it makes there (read per graph).
    os.environ.setdefault("TENSORPLUG_FALLBACK_FILE", os.path.join(SCRATCH.name, "report.txt"))
    tf.keras.utils.set_random_seed(7)
    qat, shape = quantized(mobilenet if name == "mobilenet" else convnet,
                           train=name == "convnet")
    flatbuffer = convert(name, qat, shape)
    compare(f"qat-{name}", flatbuffer, shape, images)
    got = in_graph(f"qat-{name}", qat, flatbuffer, shape, images)
    if name == "mobilenet":
        frozen(f"qat-{name}-frozen", qat, flatbuffer, shape, images, got)
    if name == "convnet":
        changed_weights(qat, shape, images)


def quantized(build, samples=64, train=True):
    """`build()`'s model wrapped by tfmot's `quantize_model`, its ranges set
    on the CPU by one epoch on seeded data: `(qat, input shape)`.

    `train`: by `fit`, as users do. Otherwise by that epoch's forward
    passes in training mode only, which is what sets the ranges in `fit`
    (the weight quantizers take the weights' range, the activations' move
    their averages, batch norms their statistics); the gradient and the
    optimizer's update only move the weights. Tracing those took QAT
    MobileNet's `fit` 20 s of CPU; the forward passes take 2 s."""
    with tf.device("/device:CPU:0"):
        model, shape = build()
        qat = tfmot.quantization.keras.quantize_model(model)
        rng = np.random.default_rng(3)
        x = rng.uniform(-1, 1, (samples, *shape)).astype(np.float32)
        if train:
            qat.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            y = rng.integers(0, qat.output_shape[-1], samples)
            qat.fit(x, y, epochs=1, batch_size=16, verbose=0)
        else:
            for batch in np.split(x, samples // 16):
                qat(batch, training=True)
    return qat, shape


def convert(name, qat, shape):
    """TFLite's int8 model of `qat`'s current values."""
    traced = tf.function(qat).get_concrete_function(tf.TensorSpec([None, *shape], tf.float32))
    fake_quants = [n.op for n in traced.graph.as_graph_def().node if n.op.startswith("FakeQuant")]
    if not fake_quants:
        sys.exit("quantize_model inserted no FakeQuant op")
    # From the traced model, frozen directly: `from_keras_model` always
    # saves a SavedModel first (even with `experimental_lower_to_saved_model`
    # off), which cost QAT MobileNet 85 s of Python tracing here.
    converter = tf.lite.TFLiteConverter.from_concrete_functions([traced], qat)
    converter.experimental_lower_to_saved_model = False
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    print(f"qat {name}: {len(fake_quants)} FakeQuant ops ({', '.join(sorted(set(fake_quants)))})")
    return converter.convert()


def changed_weights(qat, shape, images):
    """The int8 parameters are computed and uploaded when the variables
    change, not every step: after one conv kernel is halved, the next step
    uploads its int8 weights once more than a step on unchanged variables,
    and predicts what TFLite does on the model converted anew.

      copies steady=<sizes> changed=<sizes>   (the bytes of each host copy
                                              on the FPGA's plane, sorted)
      kernel <size in elements>
    """
    x = np.random.default_rng(11).uniform(-1, 1, (8, *shape)).astype(np.float32)

    def copies():
        _, space = profile(lambda: qat.predict(x, batch_size=8, verbose=0))
        return sorted(stats(plane, e).get("bytes_transferred", 0)
                      for plane in space.planes if plane.name.startswith(PLANE_PREFIX)
                      for line in plane.lines for e in line.events
                      if plane.event_metadata[e.metadata_id].name == "HostCopy")

    steady = copies()
    kernel = next(v for v in qat.trainable_variables if "conv2d/kernel" in v.name)
    kernel.assign(kernel * 0.5)
    changed = copies()
    print(f"copies steady={','.join(map(str, steady))} changed={','.join(map(str, changed))}")
    print(f"kernel {int(np.prod(kernel.shape))}")
    in_graph("qat-convnet-changed", qat, convert("convnet-changed", qat, shape), shape, images)


def in_graph(name, qat, flatbuffer, shape, images):
    """`qat.predict` on float inputs that quantize exactly to TFLite's int8
    inputs; its outputs in quanta of TFLite's output scale. Returns them."""
    x, want, out_scale = tflite_reference(flatbuffer, shape, images)
    got = qat.predict(x, batch_size=8, verbose=0)
    agreement(name, got, want, out_scale)
    device, cpu = profiled_ops(lambda: qat.predict(x[:8], batch_size=8, verbose=0))
    print("device_ops " + " ".join(f"{k}={v}" for k, v in sorted(device.items())))
    print("cpu_ops " + " ".join(f"{k}={v}" for k, v in sorted(cpu.items())))
    print(f"program_nodes {largest_program(os.environ['TENSORPLUG_FALLBACK_FILE'])}")
    return got


def frozen(name, qat, flatbuffer, shape, images, in_graph_got):
    """The same model frozen (its variables made constants, as for a
    deployed graph) and called on /device:FPGA:0 in batches of 8: TF's
    optimizers split each batch norm over constants before our pass sees
    it, which must still fold into the int8 convolutions. Prints the
    `predict` line, `frozen equal=<bytes equal to the variables' route>`
    and its ops as `frozen_device_ops`, `frozen_cpu_ops`."""
    from tensorflow.python.framework.convert_to_constants import \
        convert_variables_to_constants_v2
    x, want, out_scale = tflite_reference(flatbuffer, shape, images)
    spec = tf.TensorSpec([8, *shape], tf.float32)
    with tf.device("/device:FPGA:0"):
        fn = convert_variables_to_constants_v2(
            tf.function(lambda t: qat(t, training=False)).get_concrete_function(spec))

        def f(batch):
            out = fn(tf.constant(batch))
            return (out[0] if isinstance(out, (list, tuple)) else out).numpy()
        got = np.concatenate([f(b) for b in np.split(x, len(x) // 8)])
        agreement(name, got, want, out_scale)
        print(f"frozen equal={np.array_equal(got, in_graph_got)}")
        device, cpu = profiled_ops(lambda: f(x[:8]))
    print("frozen_device_ops " + " ".join(f"{k}={v}" for k, v in sorted(device.items())))
    print("frozen_cpu_ops " + " ".join(f"{k}={v}" for k, v in sorted(cpu.items())))


def tflite_reference(flatbuffer, shape, images):
    """Float inputs that quantize exactly to TFLite's int8 inputs, TFLite's
    int8 outputs on them, and its output quantization."""
    interpreter, _, q = invoke(flatbuffer, shape, 5, batch=images, preserve=False)
    want = interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).astype(np.int64)
    (s_in, z_in), out_scale = (interpreter.get_input_details()[0]["quantization"],
                               interpreter.get_output_details()[0]["quantization"])
    x = (np.float32(s_in) * (q.astype(np.float32) - np.float32(z_in))).astype(np.float32)
    return x, want, out_scale


def agreement(name, got, want, out_scale):
    """The `predict` line: `got` in quanta of TFLite's output against `want`."""
    s_out, z_out = out_scale
    got_q = np.round(got.astype(np.float64) / s_out).astype(np.int64) + z_out
    diff = np.abs(got_q - want)
    agree = int(np.sum(np.argmax(got_q, -1) == np.argmax(want, -1)))
    print(f"predict {name} images={len(want)} top1_agree={agree} max_diff_quanta={int(diff.max())} "
          f"differ={int(np.count_nonzero(diff))} of {diff.size}")


if __name__ == "__main__":
    main()
