"""A QDQ graph in the form Intel Neural Compressor writes for ITEX, run by
TF with the plugin loaded: the graph pass rewrites it into int8 device ops.

usage: int8_qdq.py [images]

The graph is built by hand, as neural_compressor's `InsertQDQPattern`
(itex mode) writes it: a Keras convnet (Conv2D ReLU, DepthwiseConv2D ReLU6,
MaxPool, a 1×1 Conv2D, Add, Flatten, Dense) frozen, calibrated on seeded
data, then

- a `QuantizeV2` → `Dequantize` pair (`SCALED`, `HALF_TO_EVEN`; `quint8`
  for a tensor that is never negative, else `qint8`; one pair per tensor)
  on every input of `Conv2D`, `DepthwiseConv2dNative`, `MatMul`, `AddV2`
  and `MaxPool`, with the calibrated min and max as constants;
- per-channel weights: `QuantizeV2(w, −r, r, qint8, SCALED, axis)` →
  `Dequantize(axis)` with `r` each output channel's largest |w| (`axis` 3
  for `Conv2D`, 1 for `MatMul`; the depthwise filter reshaped to
  `[kh, kw, c·m]`, quantized on axis 2 and reshaped back, as INC does).
  TF's constant folding turns each constant weight pair into the float
  constant of its dequantized values before the plugin's pass sees it;
  the pass takes those as plain weights, whose per-channel largest value
  (127 steps) gives back the same int8 weights;
- a pair on the model's output too, so that every op has an int8 output
  (INC leaves the last `MatMul` float; ITEX fuses its dequantize).

TFLite's converter cannot read a QDQ graph, so the reference is TF's own
CPU run of the same graph (the float simulation it defines, with
TENSORPLUG_GRAPH_INT8=off), with TF's reference kernels
(TF_ENABLE_ONEDNN_OPTS=0): oneDNN's `_MklQuantizeV2`, TF's default on x86,
quantizes SCALED `qint8` with another step than the op's definition and
its own `Dequantize` (measured: 864 of 3 456 inputs one step off, e.g.
0.61 → 78 where 0.61 · 127.007 = 77.47). The outputs are compared in
quanta of the output pair's step. Prints

  qdq images=<n> top1_agree=<k> max_diff_quanta=<d> differ=<outputs> of <t>
  device_ops … / cpu_ops …   (one call under tf.profiler, as int8_qat.py)
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # TF's reference QuantizeV2 (see above)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import attr_value_pb2, node_def_pb2  # noqa: E402
from tensorflow.python.framework import convert_to_constants  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_profiler_scenarios import profiled_ops  # noqa: E402

QUANTIZED = {"Conv2D", "DepthwiseConv2dNative", "MatMul", "AddV2", "MaxPool"}
WEIGHT_AXIS = {"Conv2D": 3, "MatMul": 1, "DepthwiseConv2dNative": 2}


def convnet():
    L = tf.keras.layers
    inputs = tf.keras.Input((12, 12, 3), batch_size=8)
    a = L.Conv2D(8, 3, padding="same", activation="relu", bias_initializer="glorot_uniform")(inputs)
    b = L.DepthwiseConv2D(3, padding="same", activation="relu6")(a)
    c = L.MaxPooling2D(2)(b)
    d = L.Conv2D(8, 1, bias_initializer="glorot_uniform")(c)
    e = L.Add()([c, d])
    return tf.keras.Model(inputs, L.Dense(10)(L.Flatten()(e)))


def frozen(model):
    """The inference GraphDef with its weights as constants, and the
    input and output names."""
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec(model.input.shape, tf.float32))
    fn = convert_to_constants.convert_variables_to_constants_v2(fn)
    graph_def = fn.graph.as_graph_def()
    return graph_def, fn.inputs[0].name, fn.outputs[0].name


def run_graph(graph_def, inp, out, x):
    def body():
        tf.compat.v1.import_graph_def(graph_def, name="")
    wrapped = tf.compat.v1.wrap_function(body, [])
    fn = wrapped.prune(wrapped.graph.as_graph_element(inp), wrapped.graph.as_graph_element(out))
    return fn, np.concatenate([fn(tf.constant(x[i:i + 8])).numpy() for i in range(0, len(x), 8)])


def tensor_ranges(graph_def, inp, names, x):
    """min and max of each tensor in `names` over the calibration data."""
    def body():
        tf.compat.v1.import_graph_def(graph_def, name="")
    wrapped = tf.compat.v1.wrap_function(body, [])
    g = wrapped.graph
    fn = wrapped.prune(g.as_graph_element(inp), [g.as_graph_element(n) for n in names])
    with tf.device("/device:CPU:0"):
        values = [fn(tf.constant(x[i:i + 8])) for i in range(0, len(x), 8)]
    return {n: (float(min(np.min(v[k]) for v in values)), float(max(np.max(v[k]) for v in values)))
            for k, n in enumerate(names)}


def const(name, value, dtype=tf.float32):
    n = node_def_pb2.NodeDef(name=name, op="Const")
    n.attr["dtype"].type = dtype.as_datatype_enum
    n.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype))
    return n


def scaled_step(lo, hi, ensure=0.01):
    """Dequantize's SCALED step for QuantizeV2's range [lo, hi] (its f32
    arithmetic; `quint8` when lo >= 0, as the pairs are made)."""
    f32 = np.float32
    signed = lo < 0
    t_lo, t_hi = (f32(-128), f32(127)) if signed else (f32(0), f32(255))
    min_range = min(f32(lo), f32(0))
    eps = max(f32(1), max(abs(f32(lo)), abs(f32(hi)))) * f32(ensure)
    max_range = max(max(f32(hi), min_range + eps), f32(0))
    from_min = t_lo / min_range if t_lo * min_range > 0 else f32(np.finfo(np.float32).max)
    from_max = t_hi / max_range if t_hi * max_range > 0 else f32(np.finfo(np.float32).max)
    factor = min(from_min, from_max)
    if signed:
        return float(max((t_lo / factor) / t_lo, (t_hi / factor) / t_hi))
    return float((t_hi / factor) / t_hi)


def reshape(name, tensor, shape):
    n = node_def_pb2.NodeDef(name=name, op="Reshape", input=[tensor, shape])
    n.attr["T"].type = tf.float32.as_datatype_enum
    n.attr["Tshape"].type = tf.int32.as_datatype_enum
    return n


def qdq_pair(prefix, tensor, lo, hi, dtype, axis=-1):
    """QuantizeV2 → Dequantize of `tensor` as INC writes it: the nodes and
    the Dequantize's name."""
    q = node_def_pb2.NodeDef(name=prefix + "_quantize", op="QuantizeV2",
                             input=[tensor, prefix + "_min", prefix + "_max"])
    d = node_def_pb2.NodeDef(name=prefix + "_dequantize", op="Dequantize",
                             input=[q.name, q.name + ":1", q.name + ":2"])
    for n in (q, d):
        n.attr["T"].type = dtype.as_datatype_enum
        n.attr["mode"].s = b"SCALED"
        if axis != -1:
            n.attr["axis"].i = axis
    q.attr["round_mode"].s = b"HALF_TO_EVEN"
    return [const(prefix + "_min", lo), const(prefix + "_max", hi), q, d], d.name


def insert_qdq(graph_def, inp, out, calibration):
    """The QDQ graph, and its new output name."""
    nodes = {n.name: n for n in graph_def.node}
    targets = [n for n in graph_def.node if n.op in QUANTIZED]
    activations = sorted({t for n in targets for t in
                          (n.input[:2] if n.op == "AddV2" else n.input[:1])} | {out.split(":")[0]})
    ranges = tensor_ranges(graph_def, inp, [a if ":" in a else a + ":0" for a in activations],
                           calibration)
    new = graph_def.__class__()
    new.CopyFrom(graph_def)
    by_name = {n.name: n for n in new.node}
    pairs = {}
    for t in activations:
        lo, hi = ranges[t if ":" in t else t + ":0"]
        dtype = tf.quint8 if lo >= 0 else tf.qint8
        made, deq = qdq_pair("qdq/" + t.replace(":", "_"), t, lo, hi, dtype)
        new.node.extend(made)
        pairs[t] = deq
    for n in targets:
        target = by_name[n.name]
        count = 2 if n.op == "AddV2" else 1
        for i in range(count):
            target.input[i] = pairs[target.input[i]]
        if n.op in WEIGHT_AXIS:
            w_node = nodes[n.input[1].split(":")[0]]
            while w_node.op == "Identity":
                w_node = nodes[w_node.input[0].split(":")[0]]
            w = tf.make_ndarray(w_node.attr["value"].tensor)
            axis = WEIGHT_AXIS[n.op]
            prefix = "qdq/" + w_node.name
            source = w_node.name
            if n.op == "DepthwiseConv2dNative":
                w = w.reshape(*w.shape[:2], -1)
                new.node.extend([const(prefix + "_shape3", np.array(w.shape, np.int32), tf.int32),
                                 reshape(prefix + "_reshape3", source, prefix + "_shape3")])
                source = prefix + "_reshape3"
            r = np.abs(w).max(axis=tuple(range(w.ndim - 1)))
            made, deq = qdq_pair(prefix, source, -r, r, tf.qint8, axis)
            new.node.extend(made)
            if n.op == "DepthwiseConv2dNative":
                shape = tf.make_ndarray(w_node.attr["value"].tensor).shape
                new.node.extend([const(prefix + "_shape4", np.array(shape, np.int32), tf.int32),
                                 reshape(prefix + "_reshape4", deq, prefix + "_shape4")])
                deq = prefix + "_reshape4"
            target.input[1] = deq
    out_node = out.split(":")[0]
    identity = node_def_pb2.NodeDef(name="qdq_output", op="Identity", input=[pairs[out_node]])
    identity.attr["T"].type = tf.float32.as_datatype_enum
    new.node.extend([identity])
    return new, "qdq_output:0"


def main():
    images = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    tf.keras.utils.set_random_seed(11)
    graph_def, inp, out = frozen(convnet())
    rng = np.random.default_rng(3)
    calibration = rng.uniform(-1, 1, (64, 12, 12, 3)).astype(np.float32)
    qdq, qdq_out = insert_qdq(graph_def, inp, out, calibration)
    ops = sorted({n.op for n in qdq.node})
    print(f"qdq graph: {sum(n.op == 'QuantizeV2' for n in qdq.node)} QuantizeV2, ops {' '.join(ops)}")
    x = np.random.default_rng(5).uniform(-1, 1, (images, 12, 12, 3)).astype(np.float32)
    os.environ["TENSORPLUG_GRAPH_INT8"] = "off"
    with tf.device("/device:CPU:0"):
        _, want = run_graph(qdq, inp, qdq_out, x)
    os.environ["TENSORPLUG_GRAPH_INT8"] = "on"
    fn, got = run_graph(qdq, inp, qdq_out, x)
    lo, hi = tensor_ranges(graph_def, inp, [out], calibration)[out]
    step = scaled_step(lo, hi)
    # Both are Dequantize outputs: q · step, so q comes back exactly.
    got_q, want_q = (np.round(v.astype(np.float64) / step).astype(np.int64) for v in (got, want))
    diff = np.abs(got_q - want_q)
    print("quanta apart: " + " ".join(f"{d}:{int(np.sum(diff == d))}" for d in range(int(diff.max()) + 1)))
    agree = int(np.sum(np.argmax(got, -1) == np.argmax(want, -1)))
    print(f"qdq images={images} top1_agree={agree} max_diff_quanta={int(diff.max())} "
          f"differ={int(np.count_nonzero(diff))} of {diff.size}")
    device, cpu = profiled_ops(lambda: fn(tf.constant(x[:8])))
    print("device_ops " + " ".join(f"{k}={v}" for k, v in sorted(device.items())))
    print("cpu_ops " + " ".join(f"{k}={v}" for k, v in sorted(cpu.items())))


if __name__ == "__main__":
    main()
