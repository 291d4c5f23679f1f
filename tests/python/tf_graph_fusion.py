"""A tf.function Dense+ReLU graph on /device:FPGA:0 with our graph optimizer.

    python tf_graph_fusion.py <dump dir> <fused | off>

The plugin is loaded through TF_PLUGGABLE_DEVICE_LIBRARY_PATH; the optimizer
dumps every graph_in/graph_out into <dump dir> (TENSORPLUG_GRAPH_DUMP_DIR).
Checks: the result equals the same function on CPU; the optimizer's output
graph has a `_FusedMatMul` and two `_FusedConv2D` (a Keras Conv2D with ReLU,
then one with ReLU6) on the FPGA (`fused`), or, with
TENSORPLUG_GRAPH_FUSION=0 (`off`), is byte-identical to its input; the
nodes-to-preserve list TF gave us names nodes of the graph. A frozen
inference graph (constant weights) has its two inference batch norms folded
into their convolutions (`fused`), or left as TF's passes leave them (`off`);
a training-mode batch norm is moved to the CPU.
"""

import os
import pathlib
import sys

dump_dir = pathlib.Path(sys.argv[1])
expect = sys.argv[2]
assert expect in ("fused", "off"), expect
os.environ["TENSORPLUG_GRAPH_DUMP_DIR"] = str(dump_dir)
os.environ["TENSORPLUG_GRAPH_FUSION"] = "1" if expect == "fused" else "0"
# The node lists below are the fusion pass's; device programs (on by
# default) would contract them (`tf_programs.py` checks those).
os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "0"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import graph_pb2  # noqa: E402

assert tf.config.list_logical_devices("FPGA"), "the plugin did not load"
tf.keras.utils.set_random_seed(11)
layer = tf.keras.layers.Dense(8, activation="relu")
layer.build([None, 16])


@tf.function
def dense_relu(x):
    return layer(x)


@tf.function
def twice(x):
    return x + x


conv_relu = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
conv_relu6 = tf.keras.layers.Conv2D(3, 3, strides=2, activation="relu6")
conv_relu.build([None, 6, 6, 2])
conv_relu6.build([None, 6, 6, 4])


@tf.function
def convs(x):
    return conv_relu6(conv_relu(x))


x = tf.constant(np.random.default_rng(5).standard_normal([4, 16]).astype(np.float32))
with tf.device("/device:CPU:0"):
    want = dense_relu(x).numpy()
with tf.device("/device:FPGA:0"):
    got = dense_relu(x).numpy()
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
# For the caller to compare the fused and unfused FPGA runs.
print("RESULT " + ",".join(repr(float(v)) for v in got.ravel()))
with tf.device("/device:FPGA:0"):
    np.testing.assert_array_equal(twice(x).numpy(), (x + x).numpy())
image = tf.constant(np.random.default_rng(6).standard_normal([2, 6, 6, 2]).astype(np.float32))
with tf.device("/device:CPU:0"):
    want = convs(image).numpy()
with tf.device("/device:FPGA:0"):
    got = convs(image).numpy()
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
assert (got == 0).any() and (got > 0).any(), "ReLU outputs expected"

# An inference graph with frozen weights (constants): Conv2D and depthwise
# convolutions, each followed by FusedBatchNormV3(is_training=False). TF's
# remapper decomposes each batch norm into Rsqrt/Mul/Sub/Add and its constant
# folding pushes the Conv2D's scale into the filter, before our pass; our pass
# folds the rest: the depthwise scale into its filter, each per-channel Add
# into a BiasAdd, and Conv2D → BiasAdd → Relu into one _FusedConv2D.
rng = np.random.default_rng(7)
w1, dw = rng.standard_normal([3, 3, 2, 4]), rng.standard_normal([3, 3, 4, 2])
bn_params = [[rng.standard_normal(c), rng.standard_normal(c), rng.standard_normal(c),
              np.abs(rng.standard_normal(c)) + 0.5] for c in (4, 8)]


def batch_norm(y, params, training=False):
    scale, offset, mean, var = (tf.constant(p.astype(np.float32)) for p in params)
    return tf.raw_ops.FusedBatchNormV3(x=y, scale=scale, offset=offset, mean=mean, variance=var,
                                       epsilon=1e-3, is_training=training)[0]


@tf.function
def frozen(x):
    y = tf.nn.relu(batch_norm(tf.nn.conv2d(x, tf.constant(w1.astype(np.float32)), 1, "SAME"),
                              bn_params[0]))
    y = tf.raw_ops.DepthwiseConv2dNative(input=y, filter=tf.constant(dw.astype(np.float32)),
                                         strides=[1, 1, 1, 1], padding="SAME")
    return tf.nn.relu6(batch_norm(y, bn_params[1]))


with tf.device("/device:CPU:0"):
    want = frozen(image).numpy()
tf.config.set_soft_device_placement(False)
with tf.device("/device:FPGA:0"):
    got = frozen(image).numpy()
tf.config.set_soft_device_placement(True)
np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
assert (got == 0).any() and (got > 0).any(), "ReLU6 outputs expected"


@tf.function
def train_batch_norm(x):
    return batch_norm(x, bn_params[1], training=True) * 2.0


if expect == "fused":
    # Training mode has no FPGA kernel: the pass moves the node to the CPU
    # (soft placement is on, as for Keras' functions) and the step runs.
    conv_out = tf.constant(rng.standard_normal([2, 3, 3, 8]).astype(np.float32))
    with tf.device("/device:CPU:0"):
        want = train_batch_norm(conv_out).numpy()
    with tf.device("/device:FPGA:0"):
        got = train_batch_norm(conv_out).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

pairs = sorted(dump_dir.glob("graph-*-in.pb"))
assert pairs, f"the optimizer was never called (no dumps in {dump_dir})"
fused = fused_conv = 0
for graph_in in pairs:
    graph_out = graph_in.with_name(graph_in.name.replace("-in.pb", "-out.pb"))
    before, after = graph_in.read_bytes(), graph_out.read_bytes()
    nodes = graph_pb2.GraphDef.FromString(after).node
    on_fpga = [n for n in nodes if n.op == "_FusedMatMul" and "/device:FPGA:" in n.device]
    fused += len(on_fpga)
    fused_conv += sum(1 for n in nodes if n.op == "_FusedConv2D" and "/device:FPGA:" in n.device)
    # TF_GetNodesToPreserveList through our FFI: a function body keeps its
    # _Arg/_Retval nodes (or their fetches), so the list is never empty.
    preserve = graph_in.with_name(graph_in.name.replace("-in.pb", "-preserve.txt")).read_text().split()
    assert preserve, f"{graph_in.name}: empty nodes-to-preserve list"
    names = {n.name for n in graph_pb2.GraphDef.FromString(before).node}
    assert set(preserve) <= names, f"{graph_in.name}: preserve {preserve} not all in the graph"
    if expect == "off":
        # Only what makes a node runnable may change: TF's remapper may leave
        # a _FusedBatchNormEx on the FPGA, which the pass splits back into
        # FusedBatchNormV3 and its activation (graph/unfuse.rs).
        ops_in = sorted(n.op for n in graph_pb2.GraphDef.FromString(before).node)
        ops_out = sorted(n.op for n in nodes)
        unfused = ops_in.count("_FusedBatchNormEx") - ops_out.count("_FusedBatchNormEx")
        if unfused == 0:
            assert before == after, f"{graph_out.name} differs from its input"
        else:
            split = [op for op in ops_in if op != "_FusedBatchNormEx"] + ["FusedBatchNormV3"] * unfused
            assert sorted(op for op in ops_out if op not in ("Relu", "Relu6")) == sorted(
                op for op in split if op not in ("Relu", "Relu6")), (ops_in, ops_out)
# TF's arithmetic optimizer stays on (docs/graph-optimizer.md) and runs
# before our pass: `x + x` reaches us as Mul(x, 2) on the FPGA, which has a
# Mul kernel, so the node stays there (its result was checked above).
graphs = [graph_pb2.GraphDef.FromString(p.read_bytes()) for p in pairs]
twice_graphs = [g for g in graphs if not any(n.op in ("ReadVariableOp", "Conv2D", "DepthwiseConv2dNative",
                                                       "FusedBatchNormV3") for n in g.node)]
assert twice_graphs, "the optimizer never saw twice()"
for g in twice_graphs:
    ops = sorted(n.op for n in g.node)
    assert "Mul" in ops and "AddV2" not in ops, f"x + x reached us as {ops}"
    assert all("/device:FPGA:" in n.device for n in g.node if n.op == "Mul"), ops
devices = sorted({n.device for p in pairs for n in graph_pb2.GraphDef.FromString(p.read_bytes()).node})
print(f"graphs {len(pairs)}, fused {fused}, fused convolutions {fused_conv}, "
      f"devices in graph_in: {devices}")
outs = [graph_pb2.GraphDef.FromString(p.with_name(p.name.replace("-in.pb", "-out.pb")).read_bytes())
        for p in pairs]
frozen_in = [g for g in graphs
             if any(n.op == "DepthwiseConv2dNative" and "/device:FPGA:" in n.device for n in g.node)]
frozen_out = [o for g, o in zip(graphs, outs) if g in frozen_in]
assert frozen_in, "the optimizer never saw frozen()"
bn_ops = [sorted(n.op for n in o.node if n.op not in ("Const", "_Arg", "_Retval")) for o in frozen_out]
print(f"frozen(): {bn_ops}")
train_out = [o for g, o in zip(graphs, outs)
             if any(n.op == "FusedBatchNormV3" and n.attr["is_training"].b for n in g.node)]
if expect == "fused":
    # The last meta-optimizer iteration's graph is the one that runs.
    assert bn_ops[-1] == ["BiasAdd", "DepthwiseConv2dNative", "Relu6", "_FusedConv2D"], bn_ops
    assert train_out, "the optimizer never saw train_batch_norm()"
    for o in train_out:
        bn = [n for n in o.node if n.op == "FusedBatchNormV3"]
        assert bn and all("/device:CPU:" in n.device for n in bn), [n.device for n in bn]
else:
    assert "_FusedConv2D" not in bn_ops[-1] and "BiasAdd" not in bn_ops[-1], bn_ops
if expect == "fused":
    assert fused >= 1, "no _FusedMatMul on the FPGA in any optimized graph"
    assert fused_conv >= 2, "the two Conv2D chains were not fused on the FPGA"
else:
    assert fused == fused_conv == 0
print("OK", expect)
