"""The plugin's int8 TF ops on the FPGA against TFLite's int8 kernels.

Converts the MLP and convnet of tflite_int8_dump.py to int8 with TFLite's
converter, runs them in tf.lite.Interpreter (reference kernels), and for
every FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, MAX/AVERAGE_POOL_2D and
ADD runs the plugin's op (`_Tensorplug<DEVICE>…Int8`) on /device:<DEVICE>:0
with soft placement off, on the same int8 input, weights and quantization
(the block built here from the tensors' scales and zero points, as a graph
rewrite would), plus `Quantize`/`Dequantize` of the model's float edge.
Prints one line per op

  op <MODEL> <KIND> outputs=<n> differ=<d>

and a total; exits 1 on any difference. The ops have no CPU kernel, so
with soft placement off they can only run on the device.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402
from tensorflow.python.framework import op_def_library, op_def_registry  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from int8_model_vs_tflite import int8_module  # noqa: E402
from tflite_int8_dump import convert, convnet, invoke, mlp  # noqa: E402

DEVICE_TYPE = os.environ.get("TENSORPLUG_DEVICE_TYPE", "FPGA")
DEV = f"/device:{DEVICE_TYPE}:0"
INT8 = int8_module()
DOUBLE, SINGLE = INT8.DOUBLE, INT8.SINGLE
# TF 2.21's TFLite rounds per op (tests/tests/int8_vs_tflite.rs).
ROUNDING = {"CONV_2D": DOUBLE, "DEPTHWISE_CONV_2D": DOUBLE, "FULLY_CONNECTED": SINGLE,
            "ADD": DOUBLE, "MAX_POOL_2D": DOUBLE, "AVERAGE_POOL_2D": DOUBLE}
ACTIVATIONS = {0: None, 1: "RELU", 3: "RELU6"}
activation_range, header = INT8.activation_range, INT8.header


def op_name(suffix):
    return f"_Tensorplug{DEVICE_TYPE}{suffix}"


def call(suffix, name, **inputs):
    return INT8.int8_op(suffix, name, **inputs)


def builtin_options(flatbuffer):
    fb = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    return {op.outputs[0]: op.builtinOptions for op in fb.subgraphs[0].operators}


def run_model(name, model, shape, seed):
    flatbuffer = convert(model, shape)
    interpreter, details, _ = invoke(flatbuffer, shape, seed)
    opts = builtin_options(flatbuffer)
    value = interpreter.get_tensor
    total = differ = 0
    for op in interpreter._get_ops_details():
        kind = op["op_name"]
        if kind not in ROUNDING:
            continue
        out_index = op["outputs"][0]
        out = details[out_index]
        o = opts[out_index]
        act = ACTIVATIONS.get(getattr(o, "fusedActivationFunction", 0))
        ins = [details[i] if i >= 0 else None for i in op["inputs"]]
        xin = value(ins[0]["index"])
        feeds = [xin]
        g = tf.Graph()
        with g.as_default(), tf.device(DEV):
            x_t = tf.compat.v1.placeholder(tf.int8, xin.shape, name="x")
            if kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
                w = value(ins[1]["index"])
                bias = value(ins[2]["index"]) if len(ins) > 2 and ins[2] is not None else None
                channels = w.shape[0] if kind != "DEPTHWISE_CONV_2D" else w.shape[3]
                block = INT8.conv_block(ins[0], ins[1], bias, out, act, ROUNDING[kind], channels)
                q = tf.constant(np.array(block, np.int32))
                if kind == "FULLY_CONNECTED":
                    x2 = xin.reshape(-1, w.shape[1])
                    feeds = [x2]
                    x_t = tf.compat.v1.placeholder(tf.int8, x2.shape, name="x2")
                    y = call("MatMulInt8", "fc", a=x_t, b=tf.constant(w), quantization=q, transpose_b=True)
                else:
                    if kind == "CONV_2D":
                        filt = np.transpose(w, (1, 2, 3, 0))  # OHWI -> HWIO
                        suffix = "Conv2DInt8"
                    else:
                        c = xin.shape[-1]
                        filt = w.reshape(w.shape[1], w.shape[2], c, w.shape[3] // c)
                        suffix = "DepthwiseConv2DInt8"
                    dil = [1, getattr(o, "dilationHFactor", 1), getattr(o, "dilationWFactor", 1), 1]
                    y = call(suffix, "conv", input=x_t, filter=tf.constant(filt), quantization=q,
                             strides=[1, o.strideH, o.strideW, 1], dilations=dil,
                             padding="SAME" if o.padding == 0 else "VALID")
            elif kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
                oq = out["quantization_parameters"]
                lo, hi = activation_range(act, oq["scales"][0], int(oq["zero_points"][0]))
                q = tf.constant(np.array(header([0, 0], 0, lo, hi, DOUBLE, 0), np.int32))
                y = call("MaxPoolInt8" if kind == "MAX_POOL_2D" else "AvgPoolInt8", "pool",
                         input=x_t, quantization=q, ksize=[1, o.filterHeight, o.filterWidth, 1],
                         strides=[1, o.strideH, o.strideW, 1],
                         padding="SAME" if o.padding == 0 else "VALID")
            else:  # ADD
                x2 = value(ins[1]["index"])
                feeds = [xin, x2]
                y_t = tf.compat.v1.placeholder(tf.int8, x2.shape, name="y")
                q = tf.constant(np.array(INT8.add_block(ins[0], ins[1], out, act, DOUBLE), np.int32))
                y = call("AddInt8", "add", x=x_t, y=y_t, quantization=q)
                placeholders = [x_t, y_t]
            if kind != "ADD":
                placeholders = [x_t]
        config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            got = sess.run(y, dict(zip(placeholders, feeds)))
        want = value(out_index)
        d = int(np.count_nonzero(got.reshape(-1) != want.reshape(-1)))
        print(f"op {name} {kind} outputs={want.size} differ={d}")
        total += want.size
        differ += d
    return total, differ


def edges():
    """Quantize and Dequantize of a float tensor, per tensor and per
    channel, against TFLite's formulas (the converter's QUANTIZE/DEQUANTIZE
    ops run the same arithmetic: round(x / scale) + zp, scale · (q − zp))."""
    rng = np.random.default_rng(3)
    x = (rng.normal(0, 3, (64, 5))).astype(np.float32)
    scales = np.array([0.031, 0.05, 0.02, 0.07, 0.011], np.float32)
    total = differ = 0
    for per_channel in (False, True):
        s = scales if per_channel else scales[:1]
        zp = 0 if per_channel else -7
        lo = -127 if per_channel else -128
        block = np.array(header([zp, 0], zp, lo, 127, DOUBLE, len(s)) + [int(v) for v in s.view(np.int32)], np.int32)
        g = tf.Graph()
        with g.as_default(), tf.device(DEV):
            xt = tf.compat.v1.placeholder(tf.float32, x.shape)
            q = call("Quantize", "quantize", input=xt, quantization=tf.constant(block))
            back = call("Dequantize", "dequantize", input=q, quantization=tf.constant(block))
        with tf.compat.v1.Session(graph=g, config=tf.compat.v1.ConfigProto(allow_soft_placement=False)) as sess:
            got_q, got_x = sess.run([q, back], {xt: x})
        want_q = np.clip(np.round(x / s).astype(np.float32), -1e9, 1e9)
        # np.round is half-to-even: TFLite rounds half away from zero.
        ratio = (x / s).astype(np.float32)
        want_q = (np.sign(ratio) * np.floor(np.abs(ratio) + 0.5)).astype(np.int64) + zp
        want_q = np.clip(want_q, lo, 127).astype(np.int8)
        want_x = (s.astype(np.float64) * (want_q.astype(np.int64) - zp)).astype(np.float32)
        d = int(np.count_nonzero(got_q != want_q)) + int(np.count_nonzero(got_x != want_x))
        label = "per-channel" if per_channel else "per-tensor"
        print(f"op edges QUANTIZE+DEQUANTIZE({label}) outputs={2 * x.size} differ={d}")
        total += 2 * x.size
        differ += d
    return total, differ


def bad_blocks():
    """`Quantize` on the FPGA with a block that cannot be represented: each
    must fail naming the node and the reason (`bad <what>: <message>`)."""
    half = int(np.float32(0.5).view(np.int32))
    cases = [("zero_point", header([0, 0], 300, -128, 127, DOUBLE, 1) + [half]),
             ("scale", header([0, 0], 0, -128, 127, DOUBLE, 1) + [0]),
             ("length", header([0, 0], 0, -128, 127, DOUBLE, 2) + [half, half])]
    for what, words in cases:
        g = tf.Graph()
        with g.as_default(), tf.device(DEV):
            x = tf.compat.v1.placeholder(tf.float32, [4, 3])
            y = call("Quantize", "my_quantize", input=x,
                     quantization=tf.constant(np.array(words, np.int32)))
        config = tf.compat.v1.ConfigProto(allow_soft_placement=False)
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            try:
                sess.run(y, {x: np.ones((4, 3), np.float32)})
                print(f"bad {what}: accepted")
            except tf.errors.OpError as error:
                message = " ".join(str(error).split())
                print(f"bad {what}: {type(error).__name__}: {message}")


def main():
    if sys.argv[1:] == ["bad"]:
        return bad_blocks()
    from tensorflow.python.framework import kernels
    for suffix in ("Conv2DInt8", "DepthwiseConv2DInt8", "MatMulInt8", "AddInt8", "MaxPoolInt8",
                   "AvgPoolInt8", "Quantize", "Dequantize"):
        devices = {k.device_type for k in kernels.get_registered_kernels_for_op(op_name(suffix)).kernel}
        if devices != {DEVICE_TYPE}:
            sys.exit(f"{op_name(suffix)} has kernels for {sorted(devices)}, expected only {DEVICE_TYPE}")
    tf.keras.utils.set_random_seed(7)
    results = [run_model("mlp", *mlp(), seed=5), run_model("convnet", *convnet(), seed=6), edges()]
    total = sum(t for t, _ in results)
    differ = sum(d for _, d in results)
    print(f"int8 ops on {DEV}: {total} outputs, {differ} differ from TFLite")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
