"""TF's own grappler passes with the FPGA plugin loaded.

usage: tf_cpu_passes.py <cpu_partition | fpga_nodes>

cpu_partition: a tf.function on /CPU:0 that reads two FPGA-resident tensors
  (CPU-resident when no FPGA is registered) and computes relu(x @ w + b) *
  (2.0 * 3.0). Prints `cpu ops: <json>`: the op types of its CPU partition
  graph (transport nodes left out), which the Rust test compares between a
  process with the plugin and one without.
fpga_nodes: a tf.function on /device:FPGA:0 with patterns TF's arithmetic
  optimizer and constant folding rewrite (x + x -> Mul, 2.0 * 3.0 -> Const,
  d * d -> Square, (x - a)^2 -> SquaredDifference, log(q + 1) -> Log1p, a
  chain of adds -> AddN), soft placement off. Checks the result against the
  same function on the CPU, and that every op TF made runs on the FPGA
  (AddN and Log1p have FPGA kernels; an op TF makes without
  one is split back or moved to the CPU by the graph pass, which
  host-bridge/src/graph/runnable.rs tests).
Exits non-zero naming the first failed check.
"""
import collections
import json
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context

FPGA = "/device:FPGA:0"
# Nodes that only move data between partitions or wrap the function.
TRANSPORT = {"_Arg", "_Retval", "_Send", "_Recv", "_HostSend", "_HostRecv", "Identity", "NoOp"}


def check(cond, msg):
    if not cond:
        print(f"FAILED: {msg}", file=sys.stderr)
        sys.exit(1)


def partition_ops(fn, *args):
    """{device kind: sorted op types} over the partition graphs of one call."""
    context.enable_run_metadata()
    try:
        result = fn(*args)
        metadata = context.export_run_metadata()
    finally:
        context.disable_run_metadata()
    ops = collections.defaultdict(list)
    for function_graph in metadata.function_graphs:
        for graph in function_graph.partition_graphs:
            for node in graph.node:
                if node.op not in TRANSPORT:
                    kind = node.device.rsplit("/device:", 1)[-1].rsplit(":", 1)[0]
                    ops[kind].append(node.op)
    return result, {kind: sorted(names) for kind, names in ops.items()}


def inputs(device):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    with tf.device(device):
        return tf.constant(x), tf.identity(w), tf.identity(b)


def cpu_partition():
    has_fpga = bool(tf.config.list_physical_devices("FPGA"))
    x, w, b = inputs(FPGA if has_fpga else "/device:CPU:0")
    if has_fpga:
        check(w.device.endswith("FPGA:0"), f"w lives on the FPGA: {w.device}")

    @tf.function
    def model(x):
        with tf.device("/device:CPU:0"):
            y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
            return y * (tf.constant(2.0) * tf.constant(3.0))

    result, ops = partition_ops(model, x)
    want = np.maximum(x.numpy() @ w.numpy() + b.numpy(), 0) * 6.0
    err = float(np.abs(result.numpy() - want).max())
    check(err <= 1e-4, f"result differs from numpy by {err}")
    print(f"fpga registered: {has_fpga}")
    print("cpu ops: " + json.dumps(ops.get("CPU", [])))


def fpga_nodes():
    tf.config.set_soft_device_placement(False)
    x, w, b = inputs(FPGA)

    def body(x):
        a = x + x                                    # arithmetic optimizer: Mul(x, 2)
        c = tf.constant(2.0) * tf.constant(3.0)      # constant folding
        d = a * c
        s = d * d                                    # arithmetic optimizer: Square
        q = tf.square(x - a)                         # -> SquaredDifference
        g = tf.math.log(q + 1.0)                     # -> Log1p (no FPGA kernel)
        e = d + x + a + s + q + g                    # adds it merges into AddN
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(e, w), b))

    @tf.function
    def on_fpga(x):
        with tf.device(FPGA):
            return body(x)

    @tf.function
    def on_cpu(x):
        with tf.device("/device:CPU:0"):
            return body(x)

    result, ops = partition_ops(on_fpga, x)
    want = on_cpu(x).numpy()
    err = float(np.abs(result.numpy() - want).max())
    check(err <= 1e-4 * float(np.abs(want).max()), f"FPGA result differs from the CPU by {err}")
    fpga = ops.get("FPGA", [])
    cpu = ops.get("CPU", [])
    check("_FusedMatMul" in fpga, f"the matmul chain is fused on the FPGA: {ops}")
    check("AddN" in fpga, f"the AddN TF made runs on the FPGA: {ops}")
    check("Square" in fpga, f"the Square TF made from d * d runs on the FPGA: {ops}")
    check("SquaredDifference" in fpga, f"the SquaredDifference TF made runs on the FPGA: {ops}")
    check("Log1p" in fpga, f"the Log1p TF made runs on the FPGA: {ops}")
    check(cpu == [], f"nothing runs on the CPU: {ops}")
    print(f"max |fpga - cpu| = {err:.3g}")
    print("fpga ops: " + json.dumps(fpga))
    print("cpu ops: " + json.dumps(cpu))


if __name__ == "__main__":
    {"cpu_partition": cpu_partition, "fpga_nodes": fpga_nodes}[sys.argv[1]]()
