"""Computes each case of a kernels_vs_tf manifest with TensorFlow's CPU kernels.

Usage: kernels_reference.py <dir>

<dir>/cases.txt has one case per line (fields separated by spaces; a shape is
comma-separated dims, `-` for rank 0):
    matmul     <id> <m> <n> <k> <transpose_a> <transpose_b> <bias> <relu>
    bias_add   <id> <x shape>
    binary     <id> <add|sub|mul|maximum> <a shape> <b shape>
    relu       <id> <shape>
    softmax    <id> <shape>
    reduce_sum <id> <shape>
Inputs are <dir>/<id>.<name>.f32 (raw little-endian f32, row-major) with names
a, b, bias (matmul), x, bias (bias_add), a, b (binary), x (the rest). Each
result is written to <dir>/<id>.out.f32. TF is imported once for all cases.
"""

import os
import sys

import numpy as np
import tensorflow as tf

BINARY = {
    "add": tf.add,
    "sub": tf.subtract,
    "mul": tf.multiply,
    "maximum": tf.maximum,
}


def shape(field):
    return [] if field == "-" else [int(d) for d in field.split(",")]


def load(case_dir, case_id, name, dims):
    path = os.path.join(case_dir, f"{case_id}.{name}.f32")
    data = np.fromfile(path, dtype="<f4")
    return tf.constant(data.reshape(dims), dtype=tf.float32)


def run(case_dir, fields):
    kind, case_id = fields[0], fields[1]
    arg = lambda name, dims: load(case_dir, case_id, name, dims)
    if kind == "matmul":
        m, n, k, ta, tb, bias, relu = (int(f) for f in fields[2:9])
        a = arg("a", [k, m] if ta else [m, k])
        b = arg("b", [n, k] if tb else [k, n])
        out = tf.linalg.matmul(a, b, transpose_a=bool(ta), transpose_b=bool(tb))
        if bias:
            out = tf.nn.bias_add(out, arg("bias", [n]))
        if relu:
            out = tf.nn.relu(out)
    elif kind == "bias_add":
        dims = shape(fields[2])
        out = tf.nn.bias_add(arg("x", dims), arg("bias", dims[-1:]))
    elif kind == "binary":
        op = BINARY[fields[2]]
        out = op(arg("a", shape(fields[3])), arg("b", shape(fields[4])))
    elif kind == "relu":
        out = tf.nn.relu(arg("x", shape(fields[2])))
    elif kind == "softmax":
        out = tf.nn.softmax(arg("x", shape(fields[2])))
    elif kind == "reduce_sum":
        out = tf.reduce_sum(arg("x", shape(fields[2])), axis=-1)
    else:
        raise ValueError(f"unknown case kind {kind!r}")
    path = os.path.join(case_dir, f"{case_id}.out.f32")
    np.asarray(out.numpy(), dtype="<f4").tofile(path)


def main():
    case_dir = sys.argv[1]
    with tf.device("/CPU:0"):
        with open(os.path.join(case_dir, "cases.txt")) as manifest:
            for line in manifest:
                if line.strip():
                    run(case_dir, line.split())


if __name__ == "__main__":
    main()
