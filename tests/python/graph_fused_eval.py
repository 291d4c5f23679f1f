"""Runs a GraphDef and its rewritten version on TF's CPU kernels (TF has a
CPU `_FusedMatMul`) and checks the outputs are equal.

    python graph_fused_eval.py <original.pb> <rewritten.pb> <expected fused nodes>

Devices are cleared and grappler is off, so each graph runs exactly as written.
"""

import sys

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import graph_pb2


def load(path):
    graph = graph_pb2.GraphDef.FromString(open(path, "rb").read())
    for node in graph.node:
        node.device = ""
    return graph


def run(graph, x):
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    outputs = sorted(n.name + ":0" for n in graph.node if n.op == "Identity" and n.name.startswith("Identity"))
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph, name="")
        with tf.compat.v1.Session(graph=g, config=config) as session:
            return outputs, session.run(outputs, {"x:0": x})


def main():
    original, rewritten = load(sys.argv[1]), load(sys.argv[2])
    expected_fused = int(sys.argv[3])
    fused = [n for n in rewritten.node if n.op == "_FusedMatMul"]
    assert len(fused) == expected_fused, f"expected {expected_fused} _FusedMatMul, got {len(fused)}"
    assert not any(n.op == "_FusedMatMul" for n in original.node)
    x = np.random.default_rng(3).standard_normal([5, 3]).astype(np.float32)
    names, want = run(original, x)
    names_fused, got = run(rewritten, x)
    assert names == names_fused and names, (names, names_fused)
    for name, a, b in zip(names, want, got):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6, err_msg=name)
    print(f"EQUAL {len(names)} outputs, {len(fused)} fused nodes")


if __name__ == "__main__":
    main()
