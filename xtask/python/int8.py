"""Run a TFLite int8 model on /device:{device_type}:0, bit for bit as TFLite.

The calibration route for models without quantization-aware training (and
for QAT models too): TFLite's own converter quantizes the Keras model from
a representative dataset, and this module runs the int8 model it makes on
the device, with the plugin's int8 ops (`docs/ops.md`, "int8"):

    import tensorflow as tf
    import {lib}_int8 as int8

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative   # a few hundred inputs
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    fpga_model = int8.Int8Model(converter.convert())
    logits_q = fpga_model(x_q)            # int8 in, int8 out, as the interpreter

CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD (same shapes), MAX_POOL_2D,
AVERAGE_POOL_2D, QUANTIZE (float to int8), DEQUANTIZE and SOFTMAX (to
TFLite's 1/256 output) run on the device as TFLite's reference kernels do;
RESHAPE and PAD move bytes (exact). MEAN over one run of axes after the
batch, whose output is quantized unlike its input (Keras'
GlobalAveragePooling), runs as TFLite's `QuantizedMeanOrSum`: one
MatMulInt8 of a block-diagonal matrix of ones, made for the call's batch.
Another MEAN is computed in float between a Dequantize and a Quantize, so
it may differ from TFLite by a quantum; `Int8Model.float_ops` lists the
float ops a model has. Any other op raises NotImplementedError naming it.

A model converted without `inference_input_type`/`inference_output_type`
keeps float input and output: its graph then starts with the device's
Quantize and ends with its Dequantize, and takes and returns floats. Bad
quantization (a scale that is zero, negative or not finite, a zero point
out of range, a per-axis count that is not the channel count) is a
ValueError naming the op and tensor when the model is made.
"""
import numpy as np
import tensorflow as tf
from tensorflow.lite.python import schema_py_generated as schema
from tensorflow.python.framework import op_def_library, op_def_registry

DEVICE_TYPE = "{device_type}"
DOUBLE, SINGLE = 0, 1
# How this TF's TFLite rounds each op, as its reference kernels do
# (measured; docs/device-numerics.md, "int8 requantization"): every op
# twice, but FULLY_CONNECTED once from TF 2.20 on. tflite-micro rounds
# twice everywhere.
_TF_MINOR = tuple(int(p) for p in tf.__version__.split(".")[:2])
TFLITE_ROUNDING = {"FULLY_CONNECTED": SINGLE} if _TF_MINOR >= (2, 20) else {}
ACTIVATIONS = {0: None, 1: "RELU", 3: "RELU6"}


def int8_op(suffix, name=None, **inputs):
    """One of the plugin's int8 ops (`Conv2DInt8`, …, `Dequantize`) in the
    current graph; attributes not given take their defaults."""
    op_type = f"_Tensorplug{DEVICE_TYPE}{suffix}"
    op_def = op_def_registry.get(op_type)
    if op_def is None:
        raise RuntimeError(f"{op_type} is not defined: is the {DEVICE_TYPE} plugin loaded, with a "
                           "device that declares the int8 ops?")
    for attr in op_def.attr:
        if attr.name not in inputs and attr.HasField("default_value"):
            kind = attr.default_value.WhichOneof("value")
            value = getattr(attr.default_value, kind)
            inputs[attr.name] = list(value.i) if kind == "list" else value.decode() if kind == "s" else value
    return op_def_library._apply_op_helper(op_type, name=name or suffix, **inputs)[3][0]


def _round(v):
    """TfLiteRound: half away from zero."""
    return int(np.sign(v) * np.floor(abs(v) + 0.5))


def quantize_multiplier(real):
    """tflite::QuantizeMultiplier: (Q31 multiplier, shift)."""
    if real == 0:
        return 0, 0
    q, shift = np.frexp(real)
    q_fixed = int(np.floor(float(q) * (1 << 31) + 0.5))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        raise ValueError(f"requantization multiplier {real} is 2^30 or more")
    return q_fixed, int(shift)


def _quant(details):
    q = details["quantization_parameters"]
    return np.asarray(q["scales"], np.float32), np.asarray(q["zero_points"], np.int64)


def _check(op, details, channels=None):
    """The quantization of a tensor `op` uses, or a ValueError naming both:
    scales finite and > 0, int8 zero points in [-128, 127], and one scale or
    `channels` of them."""
    scales, zps = _quant(details)
    where = f"{op['op_name']} (output '{op['output_name']}'), tensor '{details['name']}'"
    if scales.size == 0:
        raise ValueError(f"{where} is not quantized")
    bad = [float(s) for s in scales if not (np.isfinite(s) and s > 0)]
    if bad:
        raise ValueError(f"{where}: scale {bad[0]} cannot be represented (it must be a finite number > 0)")
    if details["dtype"] == np.int8 and np.any((zps < -128) | (zps > 127)):
        raise ValueError(f"{where}: zero point {int(zps[(zps < -128) | (zps > 127)][0])} is outside int8's [-128, 127]")
    if channels is not None and scales.size not in (1, channels):
        raise ValueError(f"{where}: {scales.size} per-axis scales for {channels} channels")


def activation_range(act, scale, zp):
    """CalculateActivationRangeQuantized, in f32."""
    def q(f):
        return int(zp) + _round(np.float32(np.float32(f) / np.float32(scale)))
    lo, hi = -128, 127
    if act == "RELU":
        return max(lo, q(0.0)), hi
    if act == "RELU6":
        return max(lo, q(0.0)), min(hi, q(6.0))
    return lo, hi


def mean_multiplier(s_in, s_out, n):
    """TFLite's mean multiplier (`QuantizedMeanOrSum`): QuantizeMultiplier
    of s_in / s_out in double, with 1/n folded in: (m << k) / n, the shift
    less k, k = floor(log2 n)."""
    m, shift = quantize_multiplier(float(s_in) / float(s_out))
    k = min(n.bit_length() - 1, 32, 31 + shift)
    return (m << k) // n, shift - k


def header(zps, out_zp, lo, hi, rounding, channels):
    """The quantization block's eight header words (docs/device-numerics.md)."""
    return [int(zps[0]), int(zps[1]), int(out_zp), lo, hi, rounding, channels, 0]


def conv_block(inp, flt, bias, out, act, rounding, channels):
    """The block of a CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED with
    `channels` outputs, from its tensors' details (`bias`: the int32 values
    or None): TFLite's `Prepare` (multipliers from double products of the
    float32 scales, the activation range in float32)."""
    (in_s, in_z), (w_s, _) = _quant(inp), _quant(flt)
    out_s, out_z = _quant(out)
    w_s = np.repeat(w_s, channels) if w_s.size == 1 else w_s
    pairs = [quantize_multiplier(float(in_s[0]) * float(s) / float(out_s[0])) for s in w_s]
    lo, hi = activation_range(act, out_s[0], out_z[0])
    b = [0] * channels if bias is None else list(np.asarray(bias, np.int64))
    return (header([in_z[0], 0], out_z[0], lo, hi, rounding, channels)
            + b + [m for m, _ in pairs] + [sh for _, sh in pairs])


def add_block(in1, in2, out, act, rounding):
    """The block of an int8 ADD: TFLite's `Prepare` (each input rescaled to
    twice the larger scale after a left shift of 20)."""
    (s1, z1), (s2, z2), (so, zo) = _quant(in1), _quant(in2), _quant(out)
    twice_max = float(np.float32(2.0) * max(s1[0], s2[0]))
    out_scale = float(np.float32(1 << 20) * so[0])
    words = []
    for real in (float(s1[0]) / twice_max, float(s2[0]) / twice_max, twice_max / out_scale):
        words += list(quantize_multiplier(real))
    lo, hi = activation_range(act, so[0], zo[0])
    return header([z1[0], z2[0]], zo[0], lo, hi, rounding, 0) + words


class Int8Model(tf.Module):
    """A TFLite int8 model as a TF graph of the plugin's int8 ops.

    `rounding` maps an op kind to its requantization (DOUBLE or SINGLE);
    kinds not named round twice. The default is this TF's TFLite
    (`TFLITE_ROUNDING`)."""

    def __init__(self, flatbuffer, rounding=None, device=f"/device:{DEVICE_TYPE}:0"):
        super().__init__()
        self._device = device
        self._rounding = dict(TFLITE_ROUNDING if rounding is None else rounding)
        interpreter = tf.lite.Interpreter(
            model_content=flatbuffer,
            experimental_op_resolver_type=tf.lite.experimental.OpResolverType.BUILTIN_REF)
        try:
            interpreter.allocate_tensors()
        except RuntimeError as error:  # TFLite's Prepare refused a parameter
            raise ValueError(f"TFLite refuses this int8 model: {error}") from error
        self._details = {d["index"]: d for d in interpreter.get_tensor_details()}
        self._ops = interpreter._get_ops_details()
        for op in self._ops:
            op["output_name"] = self._details[op["outputs"][0]]["name"]
        fb = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
        self._options = {op.outputs[0]: op.builtinOptions for op in fb.subgraphs[0].operators}
        self._inputs = [d["index"] for d in interpreter.get_input_details()]
        self._outputs = [d["index"] for d in interpreter.get_output_details()]
        produced = {o for op in self._ops for o in op["outputs"]}
        self._constants = {}
        for op in self._ops:
            for i in op["inputs"]:
                if i >= 0 and i not in produced and i not in self._inputs:
                    self._constants[i] = np.array(interpreter.get_tensor(i))
        self._float_ops = set()
        unsupported = sorted({op["op_name"] for op in self._ops} - set(self._builders()))
        if unsupported:
            raise NotImplementedError(f"ops this module cannot run: {', '.join(unsupported)}")
        specs = []
        for i in self._inputs:
            d = self._details[i]
            specs.append(tf.TensorSpec([None, *d["shape"][1:]], d["dtype"]))
        self._call = tf.function(self._forward, input_signature=specs, autograph=False)
        self._call.get_concrete_function()  # bad quantization fails here
        self.float_ops = sorted(self._float_ops)

    def __call__(self, *inputs):
        out = self._call(*inputs)
        return out[0] if len(out) == 1 else out

    def _builders(self):
        return {
            "CONV_2D": self._conv, "DEPTHWISE_CONV_2D": self._conv,
            "FULLY_CONNECTED": self._fully_connected, "ADD": self._add,
            "MAX_POOL_2D": self._pool, "AVERAGE_POOL_2D": self._pool,
            "QUANTIZE": self._quantize, "DEQUANTIZE": self._dequantize,
            "RESHAPE": self._reshape, "PAD": self._pad, "PADV2": self._pad,
            "MEAN": self._mean, "SOFTMAX": self._softmax,
            # The shape arithmetic before a RESHAPE (Keras' Flatten): RESHAPE
            # takes its output's static shape, so these compute nothing.
            "SHAPE": self._shape_op, "STRIDED_SLICE": self._shape_op, "PACK": self._shape_op,
        }

    def _forward(self, *inputs):
        values = dict(zip(self._inputs, inputs))
        builders = self._builders()
        with tf.device(self._device):
            for op in self._ops:
                out = op["outputs"][0]
                values[out] = builders[op["op_name"]](op, values)
        return [values[i] for i in self._outputs]

    def _input(self, values, index):
        if index in values:
            return values[index]
        return tf.constant(self._constants[index])

    def _block(self, words):
        return tf.constant(np.array(words, np.int64).astype(np.int32))

    def _per_channel_block(self, op, act, channels):
        ins = op["inputs"]
        for i in (ins[0], op["outputs"][0]):
            _check(op, self._details[i])
        _check(op, self._details[ins[1]], channels)
        bias = self._constants[ins[2]] if len(ins) > 2 and ins[2] >= 0 else None
        words = conv_block(self._details[ins[0]], self._details[ins[1]], bias,
                           self._details[op["outputs"][0]], act,
                           self._rounding.get(op["op_name"], DOUBLE), channels)
        return self._block(words)

    def _act(self, op):
        o = self._options[op["outputs"][0]]
        return ACTIVATIONS.get(getattr(o, "fusedActivationFunction", 0), "unsupported")

    def _conv(self, op, values):
        o = self._options[op["outputs"][0]]
        x = self._input(values, op["inputs"][0])
        w = self._constants[op["inputs"][1]]
        out_channels = self._details[op["outputs"][0]]["shape"][-1]
        q = self._per_channel_block(op, self._act(op), out_channels)
        common = dict(strides=[1, o.strideH, o.strideW, 1],
                      dilations=[1, o.dilationHFactor, o.dilationWFactor, 1],
                      padding="SAME" if o.padding == 0 else "VALID")
        if op["op_name"] == "CONV_2D":
            filt = tf.constant(np.ascontiguousarray(np.transpose(w, (1, 2, 3, 0))))
            return int8_op("Conv2DInt8", input=x, filter=filt, quantization=q, **common)
        c = self._details[op["inputs"][0]]["shape"][-1]
        filt = tf.constant(w.reshape(w.shape[1], w.shape[2], c, w.shape[3] // c))
        return int8_op("DepthwiseConv2DInt8", input=x, filter=filt, quantization=q, **common)

    def _fully_connected(self, op, values):
        x = self._input(values, op["inputs"][0])
        w = self._constants[op["inputs"][1]]
        q = self._per_channel_block(op, self._act(op), w.shape[0])
        y = int8_op("MatMulInt8", a=tf.reshape(x, [-1, w.shape[1]]), b=tf.constant(w),
                quantization=q, transpose_b=True)
        shape = self._details[op["outputs"][0]]["shape"]
        return tf.reshape(y, [-1, *shape[1:]])

    def _add(self, op, values):
        a_i, b_i = op["inputs"]
        # AddInt8 broadcasts its second addend along the first's leading
        # axes; the sum is symmetric, so the larger goes first.
        if np.prod(self._details[b_i]["shape"]) > np.prod(self._details[a_i]["shape"]):
            a_i, b_i = b_i, a_i
        for i in (a_i, b_i, op["outputs"][0]):
            _check(op, self._details[i])
        words = add_block(self._details[a_i], self._details[b_i], self._details[op["outputs"][0]],
                          self._act(op), self._rounding.get("ADD", DOUBLE))
        return int8_op("AddInt8", x=self._input(values, a_i), y=self._input(values, b_i),
                       quantization=self._block(words))

    def _pool(self, op, values):
        o = self._options[op["outputs"][0]]
        s, z = _quant(self._details[op["outputs"][0]])
        lo, hi = activation_range(self._act(op), s[0], z[0])
        q = self._block(header([0, 0], 0, lo, hi, DOUBLE, 0))
        suffix = "MaxPoolInt8" if op["op_name"] == "MAX_POOL_2D" else "AvgPoolInt8"
        return int8_op(suffix, input=self._input(values, op["inputs"][0]), quantization=q,
                       ksize=[1, o.filterHeight, o.filterWidth, 1],
                       strides=[1, o.strideH, o.strideW, 1],
                       padding="SAME" if o.padding == 0 else "VALID")

    def _scales_block(self, index, zp_in, zp_out):
        s, z = _quant(self._details[index])
        if not np.all(np.isfinite(s) & (s > 0)) or not -128 <= zp_in <= 127 or not -128 <= zp_out <= 127:
            raise ValueError(f"tensor '{self._details[index]['name']}': scale {s.tolist()} or zero point "
                             f"{zp_in or zp_out} cannot be represented")
        words = [int(v) for v in s.astype(np.float32).view(np.int32)]
        return self._block(header([zp_in, 0], zp_out, -128, 127, DOUBLE, len(words)) + words)

    def _quantize(self, op, values):
        x_i, out = op["inputs"][0], op["outputs"][0]
        if self._details[x_i]["dtype"] != np.float32:
            raise NotImplementedError("QUANTIZE from an integer type (a requantize)")
        z = _quant(self._details[out])[1][0]
        return int8_op("Quantize", input=self._input(values, x_i), quantization=self._scales_block(out, 0, z))

    def _dequantize(self, op, values):
        x_i = op["inputs"][0]
        z = _quant(self._details[x_i])[1][0]
        return int8_op("Dequantize", input=self._input(values, x_i), quantization=self._scales_block(x_i, z, 0))

    def _shape_op(self, op, values):
        if self._details[op["outputs"][0]]["dtype"] != np.int32:
            raise NotImplementedError(f"{op['op_name']} on a tensor that is not a shape")
        return None

    def _reshape(self, op, values):
        shape = self._details[op["outputs"][0]]["shape"]
        return tf.reshape(self._input(values, op["inputs"][0]), [-1, *shape[1:]])

    def _pad(self, op, values):
        x_i, pads_i = op["inputs"][0], op["inputs"][1]
        z = _quant(self._details[op["outputs"][0]])[1][0]
        return tf.pad(self._input(values, x_i), self._constants[pads_i], constant_values=int(z))

    def _softmax(self, op, values):
        """SOFTMAX on the device's SoftmaxInt8: TFLite's fixed-point kernel,
        its input scaling as `PreprocessSoftmaxScaling` computes it (double
        rounding, the build every runtime measured uses)."""
        x_i, out = op["inputs"][0], op["outputs"][0]
        for i in (x_i, out):
            _check(op, self._details[i])
        (s_in, _), (s_out, z_out) = _quant(self._details[x_i]), _quant(self._details[out])
        if abs(float(s_out[0]) - 1 / 256) > 1e-9 or int(z_out[0]) != -128:
            raise ValueError(f"SOFTMAX (output '{op['output_name']}'): output scale {s_out[0]} and "
                             f"zero point {z_out[0]}, not TFLite's 1/256 and -128")
        beta = float(getattr(self._options[out], "beta", 1.0))
        real = min(beta * float(s_in[0]) * float(1 << 26), float((1 << 31) - 1))
        if real <= 1.0:
            raise ValueError(f"SOFTMAX (output '{op['output_name']}'): input scale {s_in[0]} is too "
                             "small for TFLite's kernel (it aborts on it)")
        multiplier, shift = quantize_multiplier(real)
        diff_min = -int(np.floor(31.0 * float(1 << 26) / float(1 << shift)))
        words = header([0, 0], -128, -128, 127, DOUBLE, 0) + [multiplier, shift, diff_min]
        return int8_op("SoftmaxInt8", logits=self._input(values, x_i), quantization=self._block(words))

    def _mean(self, op, values):
        """MEAN as TFLite's `QuantizedMeanOrSum`, bit for bit: the int32 sum
        of x - zp_in over the n reduced values, requantized with 1/n folded
        into the multiplier, as one MatMulInt8 of a block-diagonal matrix
        of int8 ones (a row per mean, made for the call's batch) times x
        viewed as [outer * n, inner]; the block's bias -zp_in * n. Equal
        input and output quantization (TFLite then divides in integers),
        per-axis scales, or axes that are not one run after the batch:
        in float."""
        x_i, axes_i, out = op["inputs"][0], op["inputs"][1], op["outputs"][0]
        xd, od = self._details[x_i], self._details[out]
        (s_in, z_in), (s_out, z_out) = _quant(xd), _quant(od)
        dims = [int(d) for d in xd["shape"]]
        axes = sorted({int(a) % len(dims) for a in np.ravel(self._constants[axes_i])})
        one_run = axes and axes[0] > 0 and axes == list(range(axes[0], axes[-1] + 1))
        same = (s_in.size, s_out.size) == (1, 1) and (float(s_in[0]), int(z_in[0])) == (
            float(s_out[0]), int(z_out[0]))
        if not one_run or same or s_in.size != 1 or s_out.size != 1:
            return self._float_op(op, values)
        for i in (x_i, out):
            _check(op, self._details[i])
        n = int(np.prod([dims[a] for a in axes]))
        inner = int(np.prod(dims[axes[-1] + 1:]))
        m, shift = mean_multiplier(s_in[0], s_out[0], n)
        rounding = self._rounding.get("MEAN", DOUBLE)
        words = (header([0, 0], z_out[0], -128, 127, rounding, inner)
                 + [-int(z_in[0]) * n] * inner + [m] * inner + [shift] * inner)
        x = self._input(values, x_i)
        outer = tf.shape(x)[0] * int(np.prod(dims[1:axes[0]]))
        ones = tf.cast(tf.repeat(tf.eye(outer, dtype=tf.int32), n, axis=1), tf.int8)
        y = int8_op("MatMulInt8", a=ones, b=tf.reshape(x, [-1, inner]),
                    quantization=self._block(words), transpose_b=False)
        return tf.reshape(y, [-1, *od["shape"][1:]])

    def _float_op(self, op, values):
        """MEAN: Dequantize, the float op, Quantize (not bit-exact)."""
        self._float_ops.add(op["op_name"])
        x_i, out = op["inputs"][0], op["outputs"][0]
        x = int8_op("Dequantize", input=self._input(values, x_i),
                quantization=self._scales_block(x_i, _quant(self._details[x_i])[1][0], 0))
        keep = bool(getattr(self._options[out], "keepDims", False))
        y = tf.reduce_mean(x, axis=self._constants[op["inputs"][1]].tolist(), keepdims=keep)
        z = _quant(self._details[out])[1][0]
        return int8_op("Quantize", input=y, quantization=self._scales_block(out, 0, z))
