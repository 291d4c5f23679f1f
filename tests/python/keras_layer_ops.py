"""Which TF ops the common Keras layers emit: each layer's forward pass as a
tf.function graph, its op types (variable reads, constants, identities and
shape bookkeeping left out). Prints the Markdown table of
docs/vendor-guide.md; `tests/tests/tf_two_plugins.rs` checks that the guide's
table is this output. No plugin needed: run with plain tensorflow-cpu."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

keras = tf.keras
L = keras.layers
LEFT_OUT = {
    "Placeholder", "ReadVariableOp", "Const", "Identity", "NoOp", "Shape",
    "StridedSlice", "Pack", "_Arg", "_Retval",
}

CASES = [
    ("Dense(8)", L.Dense(8), (4, 16)),
    ("Dense(8, activation=\"relu\")", L.Dense(8, activation="relu"), (4, 16)),
    ("Dense(8) on a sequence", L.Dense(8), (2, 5, 16)),
    ("Conv2D(8, 3, activation=\"relu\")", L.Conv2D(8, 3, activation="relu"), (1, 8, 8, 3)),
    ("DepthwiseConv2D(3)", L.DepthwiseConv2D(3), (1, 8, 8, 4)),
    ("MaxPooling2D()", L.MaxPooling2D(), (1, 8, 8, 4)),
    ("AveragePooling2D(2)", L.AveragePooling2D(2), (1, 8, 8, 4)),
    ("GlobalAveragePooling2D()", L.GlobalAveragePooling2D(), (1, 8, 8, 4)),
    ("BatchNormalization() (inference)", L.BatchNormalization(), (4, 8, 8, 4)),
    ("LayerNormalization()", L.LayerNormalization(), (4, 16)),
    ("Flatten()", L.Flatten(), (2, 4, 4)),
    ("Softmax()", L.Softmax(), (4, 16)),
    ("Activation(\"gelu\")", L.Activation("gelu"), (4, 16)),
    ("LeakyReLU()", L.LeakyReLU(), (4, 16)),
    ("Embedding(100, 8)", L.Embedding(100, 8), None),
    ("Dropout(0.5) (inference)", L.Dropout(0.5), (4, 16)),
    ("Add()", "add", (4, 16)),
    ("Concatenate()", "concat", (4, 16)),
    ("MultiHeadAttention(2, 8) (self-attention)", "mha", (2, 5, 16)),
]


def ops_of(layer, shape):
    if shape is None:
        x = tf.constant([[1, 2, 3]], tf.int32)
    else:
        x = tf.ones(shape)
    if layer == "add":
        layer, call = L.Add(), lambda v: L.Add()([v, v])
    elif layer == "concat":
        call = lambda v: L.Concatenate()([v, v])  # noqa: E731
    elif layer == "mha":
        layer = L.MultiHeadAttention(2, 8)
        call = lambda v: layer(v, v, training=False)  # noqa: E731
    else:
        call = lambda v: layer(v, training=False)  # noqa: E731
    call(x)  # builds the weights
    graph = tf.function(call).get_concrete_function(x).graph
    seen = []
    for op in graph.get_operations():
        if op.type not in LEFT_OUT and op.type not in seen:
            seen.append(op.type)
    return seen


print("| Keras layer | TF ops of its forward pass |")
print("|---|---|")
for name, layer, shape in CASES:
    ops = ", ".join(f"`{t}`" for t in ops_of(layer, shape)) or "none"
    print(f"| `{name}` | {ops} |")
