"""Writes the GraphDef fixtures of the graph optimizer's unit tests
(host-bridge/src/graph/testdata/*.pb): tf.function graphs traced by TF 2.21,
with every node's device set as TF's placer writes it before grappler runs.

    python graph_fixtures.py [out_dir]
    python graph_fixtures.py --from-dump <graph-…-in.pb> [out_dir]

`--from-dump` takes a `graph_in` our optimizer dumped inside TF
(TENSORPLUG_GRAPH_DUMP_DIR; a function body with `_Arg`/`_Retval`) and
writes it as `tf_function_body.pb` with its MatMul/BiasAdd/Relu moved to the
FPGA, as they are placed once the FPGA kernels exist.
"""

import pathlib
import sys

import tensorflow as tf

FPGA = "/job:localhost/replica:0/task:0/device:FPGA:0"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
OUT = pathlib.Path(__file__).resolve().parents[2] / "host-bridge/src/graph/testdata"

tf.keras.utils.set_random_seed(7)
SPEC = tf.TensorSpec([None, 3], tf.float32, name="x")


def graph_of(fn, placement=None):
    """The traced GraphDef with devices: `placement(node) -> device or None`
    (None: FPGA)."""
    graph = tf.function(fn).get_concrete_function(SPEC).graph.as_graph_def()
    for node in graph.node:
        node.device = (placement and placement(node)) or FPGA
    return graph


def weights(shape):
    return tf.constant(tf.random.normal(shape))


W, B = weights([3, 4]), weights([4])
W_T = weights([4, 3])
W2, B2 = weights([4, 5]), weights([5])
W3, B3 = weights([5, 2]), weights([2])


def dense_relu():
    layer = tf.keras.layers.Dense(4, activation="relu")
    layer.build([None, 3])
    return graph_of(lambda x: layer(x))


def mlp():
    model = tf.keras.Sequential(
        [
            tf.keras.Input([3]),
            tf.keras.layers.Dense(4, activation="relu"),
            tf.keras.layers.Dense(5, activation="relu"),
            tf.keras.layers.Dense(2, activation="softmax"),
        ]
    )
    return graph_of(lambda x: model(x))


def shared_matmul():
    def fn(x):
        product = tf.matmul(x, W, name="product")
        return tf.nn.relu(tf.nn.bias_add(product, B, name="bias"), name="act"), product * 2.0

    return graph_of(fn)


def shared_bias():
    def fn(x):
        biased = tf.nn.bias_add(tf.matmul(x, W, name="product"), B, name="bias")
        return tf.nn.relu(biased, name="act"), biased

    return graph_of(fn)


def cross_device():
    def fn(x):
        product = tf.matmul(x, W, name="product")
        return tf.nn.relu(tf.nn.bias_add(product, B, name="bias"), name="act")

    return graph_of(fn, lambda node: CPU if node.name == "bias" else None)


def transpose_control():
    def fn(x):
        marker = tf.raw_ops.NoOp(name="marker")
        with tf.control_dependencies([marker]):
            product = tf.matmul(x, W_T, transpose_b=True, name="product")
        return tf.nn.relu(tf.nn.bias_add(product, B, name="bias"), name="act")

    return graph_of(fn)


def cpu_only():
    def fn(x):
        product = tf.matmul(x, W, name="product")
        return tf.nn.relu(tf.nn.bias_add(product, B, name="bias"), name="act")

    return graph_of(fn, lambda node: CPU)


def chain_of_three():
    def fn(x):
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, W, name="mm1"), B, name="b1"), name="r1")
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, W2, name="mm2"), B2, name="b2"), name="r2")
        return tf.nn.bias_add(tf.matmul(h, W3, name="mm3"), B3, name="b3")

    return graph_of(fn)


FIXTURES = {
    name: fn
    for name, fn in [
        ("dense_relu", dense_relu),
        ("mlp", mlp),
        ("shared_matmul", shared_matmul),
        ("shared_bias", shared_bias),
        ("cross_device", cross_device),
        ("transpose_control", transpose_control),
        ("cpu_only", cpu_only),
        ("chain_of_three", chain_of_three),
    ]
}


def from_dump(path, out):
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef.FromString(pathlib.Path(path).read_bytes())
    for node in graph.node:
        if node.op in ("MatMul", "BiasAdd", "Relu"):
            node.device = FPGA
    data = graph.SerializeToString(deterministic=True)
    (out / "tf_function_body.pb").write_bytes(data)
    print(f"tf_function_body.pb {len(data)} bytes")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--from-dump":
        out = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else OUT
        return from_dump(sys.argv[2], out)
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in FIXTURES.items():
        data = fn().SerializeToString(deterministic=True)
        (out / f"{name}.pb").write_bytes(data)
        print(f"{name}.pb {len(data)} bytes")


if __name__ == "__main__":
    main()
