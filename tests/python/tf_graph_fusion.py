"""A tf.function Dense+ReLU graph on /device:FPGA:0 with our graph optimizer.

    python tf_graph_fusion.py <dump dir> <fused | off>

The plugin is loaded through TF_PLUGGABLE_DEVICE_LIBRARY_PATH; the optimizer
dumps every graph_in/graph_out into <dump dir> (TENSORPLUG_GRAPH_DUMP_DIR).
Checks: the result equals the same function on CPU; the optimizer's output
graph has a `_FusedMatMul` and two `_FusedConv2D` (a Keras Conv2D with ReLU,
then one with ReLU6) on the FPGA (`fused`), or, with
TENSORPLUG_GRAPH_FUSION=0 (`off`), is byte-identical to its input; the
nodes-to-preserve list TF gave us names nodes of the graph.
"""

import os
import pathlib
import sys

dump_dir = pathlib.Path(sys.argv[1])
expect = sys.argv[2]
assert expect in ("fused", "off"), expect
os.environ["TENSORPLUG_GRAPH_DUMP_DIR"] = str(dump_dir)
os.environ["TENSORPLUG_GRAPH_FUSION"] = "1" if expect == "fused" else "0"

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
        assert before == after, f"{graph_out.name} differs from its input"
# TF's arithmetic optimizer stays on (docs/graph-optimizer.md) and runs
# before our pass: `x + x` reaches us as Mul(x, 2) on the FPGA, which has a
# Mul kernel, so the node stays there (its result was checked above).
graphs = [graph_pb2.GraphDef.FromString(p.read_bytes()) for p in pairs]
twice_graphs = [g for g in graphs if not any(n.op in ("ReadVariableOp", "Conv2D") for n in g.node)]
assert twice_graphs, "the optimizer never saw twice()"
for g in twice_graphs:
    ops = sorted(n.op for n in g.node)
    assert "Mul" in ops and "AddV2" not in ops, f"x + x reached us as {ops}"
    assert all("/device:FPGA:" in n.device for n in g.node if n.op == "Mul"), ops
devices = sorted({n.device for p in pairs for n in graph_pb2.GraphDef.FromString(p.read_bytes()).node})
print(f"graphs {len(pairs)}, fused {fused}, fused convolutions {fused_conv}, "
      f"devices in graph_in: {devices}")
if expect == "fused":
    assert fused >= 1, "no _FusedMatMul on the FPGA in any optimized graph"
    assert fused_conv >= 2, "the two Conv2D chains were not fused on the FPGA"
else:
    assert fused == fused_conv == 0
print("OK", expect)
