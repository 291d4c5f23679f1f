"""Every op TF runs beside a variable, with the variable on /device:FPGA:0.

TF must run gathers, scatters, fused optimizer updates and stateful random
ops where their variable lives. The plugin registers a refusing FPGA kernel
for each (so placement succeeds) and its graph pass runs them on the CPU
against host copies of their variables (docs/ops.md, "Variables and
training"). As users write it: no device scope, soft placement on.

Checks, in order:
1. the registry: every op that takes a variable and has a CPU kernel but no
   DEVICE_DEFAULT one has an FPGA kernel (ours);
2. an eager ResourceGather on an FPGA variable is our clear refusal;
3. an Embedding + Dense model under every Keras optimizer: predict, then fit,
   the embedding on FPGA:0, losses and predictions equal a CPU run's (the
   same model under tf.device('/CPU:0')) within LOSS_RTOL;
4. with TF 2.15's Keras 2: RandomFlip in fit (RngReadAndSkip on the
   generator's state) and a transformer block with an Embedding under SGD.

`tf_variable_ops.py tf_keras` (TF 2.16+): Keras 2 as `tf_keras`, beside
Keras 3, runs 1 to 3 with the legacy optimizers only.
"""
import re
import sys

import numpy as np
import tensorflow as tf

TF_KERAS = sys.argv[1:] == ["tf_keras"]
if TF_KERAS:
    import tf_keras as keras
else:
    import keras
from tensorflow.python.client import pywrap_tf_session as c_api
from tensorflow.core.framework import op_def_pb2, types_pb2
from tensorflow.python.framework import kernels

from tf_kernels_common import tf_variable

KERAS3 = keras.__version__.startswith("3")
CPU = "/device:CPU:0"
# The device's float math against TF's CPU kernels (docs/ops.md, tolerances).
LOSS_RTOL = 1e-6
VARIABLE_OP = re.compile(r"^(ResourceApply|ResourceSparseApply|ResourceScatter|ResourceGather"
                         r"|ResourceStridedSliceAssign|ResourceCountUpTo|RngReadAndSkip|RngSkip"
                         r"|Stateful(Random|Standard|Truncated|Uniform))")

# 1. The registry against our kernels.
ops = op_def_pb2.OpList()
ops.ParseFromString(c_api.TF_GetBuffer(c_api.TF_GetAllOpList()))
checked = 0
for op in ops.op:
    if not any(a.type == types_pb2.DT_RESOURCE for a in op.input_arg):
        continue
    devices = {k.device_type: k for k in kernels.get_registered_kernels_for_op(op.name).kernel}
    if "CPU" not in devices or not VARIABLE_OP.match(op.name):
        continue
    assert "FPGA" in devices, f"{op.name}: no FPGA kernel; add it to host-bridge/src/variable_ops.rs"
    checked += 1
assert checked >= 55, checked
print(f"registry: all {checked} variable ops without a DEVICE_DEFAULT kernel have an FPGA kernel")

# 2. Eagerly, our kernel refuses clearly and the variable is intact.
table = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32), (4, 3)))
assert table.device.endswith("FPGA:0"), table.device
try:
    tf.raw_ops.ResourceGather(resource=table.handle, indices=[1, 3], dtype=tf.float32)
    raise AssertionError("an eager ResourceGather on an FPGA variable ran")
except tf.errors.UnimplementedError as error:
    assert "FPGA variable op '" in str(error) and "tf.function" in str(error), error
assert np.array_equal(table.numpy()[[1, 3]], [[3, 4, 5], [9, 10, 11]])
print("eager ResourceGather: UnimplementedError from the FPGA kernel; the table is intact")


@tf.function
def gather_in_function(ids):
    return tf.raw_ops.ResourceGather(resource=table.handle, indices=ids, dtype=tf.float32)


assert np.array_equal(gather_in_function(tf.constant([3, 0])).numpy(), [[9, 10, 11], [0, 1, 2]])
print("ResourceGather inside a tf.function: the rows, from the FPGA table")

WRAPPERS = {"Optimizer", "LossScaleOptimizer", "MultiOptimizer"}
# Every optimizer Keras has (Keras 2 also has its legacy ones, which update
# with TF's fused ResourceApply*/ResourceSparseApply* ops).
OPTIMIZERS = {name: (lambda c=cls: c(0.01)) for name, cls in vars(keras.optimizers).items()
              if isinstance(cls, type) and issubclass(cls, keras.optimizers.Optimizer)
              and name not in WRAPPERS}
OPTIMIZERS["SGD with momentum"] = lambda: keras.optimizers.SGD(0.01, momentum=0.9)
if not KERAS3:
    legacy = keras.optimizers.legacy
    OPTIMIZERS.update({f"legacy {name}": (lambda c=cls: c(0.01)) for name, cls in vars(legacy).items()
                       if isinstance(cls, type) and issubclass(cls, legacy.Optimizer)
                       and name not in WRAPPERS})
    OPTIMIZERS["legacy SGD with momentum"] = lambda: legacy.SGD(0.01, momentum=0.9)
x = np.random.default_rng(0).integers(0, 100, (64, 10)).astype("int32")
y = np.random.default_rng(1).integers(0, 2, 64)


def train(name, device, embedding=True):
    keras.utils.set_random_seed(3)
    with tf.device(device):
        if embedding:
            head = [keras.Input((10,), dtype="int32"), keras.layers.Embedding(100, 8),
                    keras.layers.GlobalAveragePooling1D()]
        else:
            head = [keras.Input((10,))]
        model = keras.Sequential(head + [keras.layers.Dense(2)])
        model.compile(optimizer=OPTIMIZERS[name](), jit_compile=False,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        inputs = x if embedding else x.astype("float32") / 100
        before = model.predict(inputs, verbose=0)
        loss = model.fit(inputs, y, epochs=2, batch_size=16, verbose=0,
                         shuffle=False).history["loss"]
        after = model.predict(inputs, verbose=0)
    return before, np.array(loss), after, tf_variable(model.weights[0]).device


def close(a, b):
    return np.allclose(a, b, rtol=LOSS_RTOL, atol=1e-6)


def compare(name, embedding=True):
    want = train(name, CPU, embedding)
    got = train(name, None, embedding)
    assert got[3].endswith("FPGA:0"), f"{name}: the first variable is on {got[3]}"
    assert close(got[0], want[0]), f"{name}: predict"
    assert close(got[1], want[1]), f"{name}: losses {got[1]} vs the CPU's {want[1]}"
    assert close(got[2], want[2]), f"{name}: predict after fit"
    worst = float(np.max(np.abs(got[1] - want[1]) / np.abs(want[1])))
    model = "embedding + dense" if embedding else "dense"
    print(f"{model}, {name}: predict and fit on FPGA:0 equal the CPU "
          f"(losses {got[1].round(6).tolist()}, worst relative {worst:.1e})")


# 3. Every optimizer, as users write it (no device scope: None).
for name in OPTIMIZERS:
    if TF_KERAS and not name.startswith("legacy"):
        continue
    compare(name)
    if name.startswith("legacy"):
        # Keras 2's legacy optimizers colocate their sparse update's
        # deduplication (UnsortedSegmentSum of floats, an int32
        # StridedSlice) with the variable: both have FPGA kernels now.
        compare(name, embedding=False)


def transformer_block(device):
    keras.utils.set_random_seed(5)
    with tf.device(device):
        inputs = keras.Input((10,), dtype="int32")
        h = keras.layers.Embedding(100, 16)(inputs)
        a = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(h, h)
        h = keras.layers.LayerNormalization()(h + a)
        h = keras.layers.Dense(16, activation="gelu")(h)
        out = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(h))
        model = keras.Model(inputs, out)
        model.compile(optimizer=keras.optimizers.SGD(0.01), jit_compile=False,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return np.array(model.fit(x, y, epochs=2, batch_size=16, verbose=0,
                                  shuffle=False).history["loss"])


if TF_KERAS:
    print(f"tf_keras {keras.__version__}: the legacy optimizers passed")
    sys.exit(0)
got, want = transformer_block(None), transformer_block(CPU)
assert close(got, want), f"transformer block: {got} vs {want}"
print(f"transformer block with an Embedding, SGD: fit equals the CPU ({got.round(6).tolist()})")


def random_flip(device):
    keras.utils.set_random_seed(9)
    with tf.device(device):
        model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.RandomFlip(seed=1),
                                  keras.layers.Flatten(), keras.layers.Dense(2)])
        model.compile(optimizer="sgd", jit_compile=False,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        images = np.random.default_rng(4).standard_normal((32, 8, 8, 1)).astype("float32")
        loss = model.fit(images, y[:32], epochs=2, batch_size=16, verbose=0, shuffle=False)
        return np.array(loss.history["loss"])


got, want = random_flip(None), random_flip(CPU)
assert close(got, want), f"RandomFlip: {got} vs {want}"
print(f"RandomFlip in fit: trains, equal to the CPU ({got.round(6).tolist()})")
print(f"variable ops with FPGA variables: all passed (Keras {keras.__version__})")
