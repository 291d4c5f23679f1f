"""Every FPGA kernel against TF's CPU kernel on random shapes and edge cases
(empty, 1x1, non-square, transposes, broadcasting, keep_dims), in one process.
Soft placement is off: an op without an FPGA kernel raises instead of falling
back, and every result is checked to live on the FPGA.

Tolerances (docs/ops.md): element-wise ops exact; GEMM 2(k+2)eps*sum|a*b|;
reduce-sum 2(c+1)eps*sum|x|; softmax relative 2(c+8+|x-max|)eps.
"""
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context, execute

from tf_kernels_common import EPS, TINY, check, gemm_tolerance

tf.config.set_soft_device_placement(False)
rng = np.random.default_rng(5)
FPGA, CPU = "/device:FPGA:0", "/device:CPU:0"
cases, worst = 0, {}


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def on(device, fn, *args):
    with tf.device(device):
        inputs = [tf.identity(tf.constant(a)) if isinstance(a, np.ndarray) else a for a in args]
        out = fn(*inputs)
    if device == FPGA:
        assert out.device.endswith("device:FPGA:0"), f"result on {out.device}"
    return out.numpy()


def compare(name, fn, *args, tolerance=None, group=None, reference=None):
    global cases
    ours = on(FPGA, fn, *args)
    cpu = reference if reference is not None else on(CPU, fn, *args)
    tol = tolerance(cpu) if callable(tolerance) else tolerance
    ratio = check(name, ours, cpu, tol)
    key = group or name.split("(")[0]
    worst[key] = max(worst.get(key, 0.0), ratio)
    cases += 1


def fused_matmul(a, b, bias, relu, ta=False, tb=False):
    ops = [b"BiasAdd", b"Relu"] if relu else [b"BiasAdd"]
    attrs = ("T", tf.float32.as_datatype_enum, "num_args", 1, "fused_ops", ops,
             "epsilon", 0.0001, "leakyrelu_alpha", 0.2, "transpose_a", ta, "transpose_b", tb)
    return execute.execute(b"_FusedMatMul", 1, [a, b, bias], attrs, context.context())[0]


# MatMul: square, non-square, 1x1, empty m/k/n, every transpose combination.
for m, k, n in [(1, 1, 1), (3, 4, 5), (7, 1, 9), (64, 33, 17), (0, 3, 4), (3, 0, 4), (3, 4, 0)]:
    for ta in (False, True):
        for tb in (False, True):
            a = rand(*((k, m) if ta else (m, k)))
            b = rand(*((n, k) if tb else (k, n)))
            an, bn = (a.T if ta else a), (b.T if tb else b)
            compare(f"MatMul({m}x{k}x{n}, ta={ta}, tb={tb})",
                    lambda x, y: tf.linalg.matmul(x, y, transpose_a=ta, transpose_b=tb),
                    a, b, tolerance=gemm_tolerance(an, bn, k))

# _FusedMatMul (what h-graph's optimizer emits): BiasAdd, BiasAdd+Relu, k = 0.
for m, k, n in [(5, 7, 3), (1, 1, 1), (16, 8, 32), (4, 0, 3)]:
    for relu in (False, True):
        for ta, tb in [(False, False), (True, True)]:
            a = rand(*((k, m) if ta else (m, k)))
            b = rand(*((n, k) if tb else (k, n)))
            bias = rand(n)
            an, bn = (a.T if ta else a), (b.T if tb else b)
            # TF's CPU _FusedMatMul crashes (SIGSEGV) on k = 0: NumPy is the reference.
            exact = np.broadcast_to(np.maximum(bias, 0) if relu else bias, (m, n)) if k == 0 else None
            compare(f"_FusedMatMul({m}x{k}x{n}, relu={relu}, ta={ta})",
                    lambda x, y, z: fused_matmul(x, y, z, relu, ta, tb), a, b, bias,
                    tolerance=gemm_tolerance(an, bn, k, bias), reference=exact)

# BiasAdd: rank 2..4, empty, 1x1, NCHW on rank 2.
for shape in [(4, 3), (2, 3, 5), (2, 2, 3, 4), (0, 3), (1, 1)]:
    compare(f"BiasAdd({shape})", tf.nn.bias_add, rand(*shape), rand(shape[-1]))
compare("BiasAdd(NCHW rank 2)", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
        rand(4, 3), rand(3))

# Broadcasting binary ops, including NaN/inf/-0 through Maximum.
patterns = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((4, 1, 3), (5, 1)),
            ((), (2, 3)), ((1,), (1,)), ((0, 3), (1, 3)), ((2, 1, 3, 1), (1, 4, 1, 5)),
            ((3, 1), (1, 4)), ((1, 1), (6, 7))]
binary = {"AddV2": tf.math.add, "Sub": tf.math.subtract, "Mul": tf.math.multiply,
          "Maximum": tf.math.maximum}
for name, fn in binary.items():
    for sa, sb in patterns:
        compare(f"{name}({sa} vs {sb})", fn, rand(*sa), rand(*sb))
special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], dtype=np.float32)
compare("Maximum(specials)", tf.math.maximum, special, special[::-1].copy())

# Relu and Softmax.
for shape in [(), (0,), (1,), (17,), (3, 4, 5)]:
    compare(f"Relu({shape})", tf.nn.relu, rand(*shape))
compare("Relu(specials)", tf.nn.relu, special)


def softmax_tolerance(x):
    c = x.shape[-1]
    spread = np.abs(x - x.max(axis=-1, keepdims=True))
    return lambda cpu: 2 * (c + 8 + spread) * EPS * np.abs(cpu) + TINY


for shape in [(1, 1), (3, 5), (2, 3, 7), (0, 4), (4,), (2, 1000)]:
    x = rand(*shape) * 4
    compare(f"Softmax({shape})", tf.nn.softmax, x, tolerance=softmax_tolerance(x))


# Sum: trailing axes (keep_dims or not), all axes, leading axes, no axes,
# empty inputs, int64 indices.
def sum_tolerance(x, axes):
    c = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    scale = np.abs(x.astype(np.float64)).sum(axis=tuple(axes), keepdims=False) if axes else np.abs(x)
    return lambda cpu: (2 * (c + 1) * EPS * scale + TINY).reshape(cpu.shape)


for shape, axes, keep in [((3, 5), [-1], False), ((3, 5), [1], True), ((2, 3, 4), [1, 2], False),
                          ((2, 3, 4), [0, 1, 2], False), ((2, 3, 4), [0, 1, 2], True),
                          ((6, 7), [0], False), ((2, 3, 4), [0, 1], True), ((1, 1), [0, 1], False),
                          ((3, 0), [1], False), ((0, 3), [1], True), ((3, 4), [], False),
                          ((2, 1, 4), [1], False), ((2, 1, 4), [0, 2], False)]:
    x = rand(*shape)
    compare(f"Sum({shape}, {axes}, keep={keep})",
            lambda t: tf.math.reduce_sum(t, axis=axes, keepdims=keep), x,
            tolerance=sum_tolerance(x, axes), group="Sum")
x = rand(4, 6)
compare("Sum(int64 axes)",
        lambda t: tf.raw_ops.Sum(input=t, axis=tf.constant([-1], tf.int64), keep_dims=False), x,
        tolerance=sum_tolerance(x, [1]), group="Sum")

# BiasAddGrad (the bias gradient of Dense/BiasAdd): every axis but the last.
for shape in [(4, 3), (64, 10), (2, 3, 5), (2, 2, 3, 4), (0, 3), (1, 1), (3, 0)]:
    x = rand(*shape)
    axes = list(range(len(shape) - 1))
    compare(f"BiasAddGrad({shape})", lambda t: tf.raw_ops.BiasAddGrad(out_backprop=t), x,
            tolerance=sum_tolerance(x, axes), group="BiasAddGrad")
compare("BiasAddGrad(NCHW rank 2)",
        lambda t: tf.raw_ops.BiasAddGrad(out_backprop=t, data_format="NCHW"), x := rand(5, 3),
        tolerance=sum_tolerance(x, [0]), group="BiasAddGrad")

# Neg and Square: exact, including NaN, inf and -0.
for shape in [(), (0,), (1,), (17,), (3, 4, 5)]:
    compare(f"Neg({shape})", tf.math.negative, rand(*shape))
    compare(f"Square({shape})", tf.math.square, rand(*shape))
compare("Neg(specials)", tf.math.negative, special)
compare("Square(specials)", tf.math.square, special)

# Errors name the op and the cause.
errors = 0
try:
    on(FPGA, lambda t: tf.math.reduce_sum(t, axis=[0, 2]), rand(2, 3, 4))
    raise AssertionError("Sum over axes that are not one block should be unimplemented")
except tf.errors.UnimplementedError as e:
    assert "FPGA Sum" in e.message and "one contiguous block" in e.message, e.message
    errors += 1
try:
    on(FPGA, tf.linalg.matmul, rand(2, 3), rand(2, 3))
    raise AssertionError("mismatched MatMul should fail")
except tf.errors.InvalidArgumentError as e:
    assert "FPGA MatMul" in e.message or "Matrix size-incompatible" in e.message, e.message
    errors += 1

try:
    on(FPGA, lambda t: tf.broadcast_to(t, [4, 3]), rand(2, 3))
    raise AssertionError("BroadcastTo of [2, 3] to [4, 3] should fail")
except tf.errors.InvalidArgumentError as e:
    assert "FPGA BroadcastTo" in e.message and "Unable to broadcast" in e.message, e.message
    errors += 1

try:
    on(FPGA, lambda t: tf.tile(t, [2, 2, 2, 2]), rand(2, 2, 2, 2))
    raise AssertionError("a Tile needing a rank-8 view should be unimplemented")
except tf.errors.UnimplementedError as e:
    assert "FPGA Tile" in e.message and "rank-8 view" in e.message, e.message
    errors += 1

print("worst |fpga - cpu| / tolerance: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items())))
print(f"{cases} kernel cases match the CPU, {errors} error cases named the op")
