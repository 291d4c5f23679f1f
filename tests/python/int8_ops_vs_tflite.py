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
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402
from tensorflow.python.framework import op_def_library, op_def_registry  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from requantize_golden import quantize_multiplier  # noqa: E402
from tflite_int8_dump import BATCH, convert, convnet, mlp  # noqa: E402

DEVICE_TYPE = os.environ.get("TENSORPLUG_DEVICE_TYPE", "FPGA")
DEV = f"/device:{DEVICE_TYPE}:0"
DOUBLE, SINGLE = 0, 1
# TF 2.21's TFLite rounds per op (tests/tests/int8_vs_tflite.rs).
ROUNDING = {"CONV_2D": DOUBLE, "DEPTHWISE_CONV_2D": DOUBLE, "FULLY_CONNECTED": SINGLE,
            "ADD": DOUBLE, "MAX_POOL_2D": DOUBLE, "AVERAGE_POOL_2D": DOUBLE}
ACTIVATIONS = {0: None, 1: "RELU", 3: "RELU6"}


def op_name(suffix):
    return f"_Tensorplug{DEVICE_TYPE}{suffix}"


def call(suffix, name, **inputs):
    """One of the plugin's int8 ops, in the current graph; attributes not
    given take their defaults (generated wrappers pass every one)."""
    op_def = op_def_registry.get(op_name(suffix))
    for attr in op_def.attr:
        if attr.name not in inputs and attr.HasField("default_value"):
            kind = attr.default_value.WhichOneof("value")
            value = getattr(attr.default_value, kind)
            inputs[attr.name] = list(value.i) if kind == "list" else value.decode() if kind == "s" else value
    return op_def_library._apply_op_helper(op_name(suffix), name=name, **inputs)[3][0]


def f32(v):
    return float(np.float32(v))


def activation_range(act, scale, zp):
    """CalculateActivationRangeQuantized, in f32."""
    def q(f):
        return zp + int(math.copysign(math.floor(abs(f32(f32(f) / f32(scale))) + 0.5), f32(f) / f32(scale)))
    lo, hi = -128, 127
    if act == "RELU":
        return max(lo, q(0.0)), hi
    if act == "RELU6":
        return max(lo, q(0.0)), min(hi, q(6.0))
    return lo, hi


def header(zps, out_zp, lo, hi, rounding, channels):
    return [zps[0], zps[1], out_zp, lo, hi, rounding, channels, 0]


def per_channel_block(kind, inp, flt, bias, out, act):
    in_s, in_z = inp["quantization_parameters"]["scales"][0], inp["quantization_parameters"]["zero_points"][0]
    out_q = out["quantization_parameters"]
    out_s, out_z = out_q["scales"][0], int(out_q["zero_points"][0])
    w_scales = flt["quantization_parameters"]["scales"]
    oc = len(w_scales) if len(w_scales) > 1 else out["shape"][-1]
    if len(w_scales) == 1:
        w_scales = np.repeat(w_scales, oc)
    mults, shifts = [], []
    for ws in w_scales:
        m, s = quantize_multiplier(float(np.float32(in_s)) * float(np.float32(ws)) / float(np.float32(out_s)))
        mults.append(m)
        shifts.append(s)
    lo, hi = activation_range(act, out_s, out_z)
    b = list(bias) if bias is not None else [0] * oc
    return header([int(in_z), 0], out_z, lo, hi, ROUNDING[kind], oc) + b + mults + shifts


def add_block(in1, in2, out, act):
    (s1, z1), (s2, z2) = [(np.float32(t["quantization_parameters"]["scales"][0]),
                           int(t["quantization_parameters"]["zero_points"][0])) for t in (in1, in2)]
    so, zo = np.float32(out["quantization_parameters"]["scales"][0]), int(out["quantization_parameters"]["zero_points"][0])
    twice_max = float(np.float32(2.0) * max(s1, s2))
    out_scale = float(np.float32(1 << 20) * so)
    words = []
    for real in (float(s1) / twice_max, float(s2) / twice_max, twice_max / out_scale):
        words += list(quantize_multiplier(real))
    lo, hi = activation_range(act, so, zo)
    return header([z1, z2], zo, lo, hi, ROUNDING["ADD"], 0) + words


def builtin_options(flatbuffer):
    fb = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    return {op.outputs[0]: op.builtinOptions for op in fb.subgraphs[0].operators}


def run_model(name, model, shape, seed):
    flatbuffer = convert(model, shape)
    interpreter = tf.lite.Interpreter(
        model_content=flatbuffer,
        experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True)
    inp = interpreter.get_input_details()[0]
    interpreter.resize_tensor_input(inp["index"], [BATCH, *shape])
    interpreter.allocate_tensors()
    inp = interpreter.get_input_details()[0]
    details = {d["index"]: d for d in interpreter.get_tensor_details()}
    x = np.random.default_rng(seed).integers(-128, 128, size=inp["shape"], dtype=np.int8)
    interpreter.set_tensor(inp["index"], x)
    interpreter.invoke()
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
                block = per_channel_block(kind, ins[0], ins[1], bias, out, act)
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
                q = tf.constant(np.array(add_block(ins[0], ins[1], out, act), np.int32))
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


def main():
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
