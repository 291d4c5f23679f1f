"""The op sweep: every op the plugin registers for its device, over a grid of
shapes, attributes and dtypes, run with soft placement off and compared with
TF's own CPU kernel.

usage: op_sweep.py <ci | full> [markdown table path]

`TENSORPLUG_SWEEP_OPS=Einsum,BatchMatMulV2` sweeps only those ops (while
writing a kernel; the check for registered ops without a sweep is skipped).

The device type is `FPGA`, or `TENSORPLUG_SWEEP_DEVICE_TYPE` (the example
NPU's plugin: `NPU`, whose own op `LeakyRelu` has its sweep here too).

Prints a coverage table (op, cases, dtypes refused, worst |dev - cpu| /
tolerance, worst case) and exits 1 on a mismatch, on a result that does not
live on the device, or on a registered op that has no sweep here (add its
cases to SWEEPS). `ci` is a fixed subset of the grid; `full` all of it.
Tolerances are docs/ops.md's; "exact" ops must match bit for bit (NaN
matches NaN).
"""
import itertools
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context, execute
from tensorflow.core.framework import types_pb2
from tensorflow.python.framework import kernels, op_def_registry

from tf_kernels_common import EPS, TINY, gemm_tolerance

MODE = sys.argv[1]
assert MODE in ("ci", "full"), MODE
DEVICE_TYPE = os.environ.get("TENSORPLUG_SWEEP_DEVICE_TYPE", "FPGA")
ONLY = [op for op in os.environ.get("TENSORPLUG_SWEEP_OPS", "").split(",") if op]
DEV, CPU = f"/device:{DEVICE_TYPE}:0", "/device:CPU:0"
OTHER_DTYPES = [tf.float16, tf.float64, tf.int32]

tf.config.set_soft_device_placement(False)
rng = np.random.default_rng(11)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pick(items):
    """All of `items`, or every third one in `ci` mode (always the first)."""
    items = list(items)
    return items if MODE == "full" else items[::3]


def grid(*axes):
    """`pick` over all combinations of `axes`."""
    return pick(itertools.product(*axes))


def sum_tol(x, axes):
    c = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    scale = np.abs(x.astype(np.float64)).sum(axis=tuple(axes)) if axes else np.abs(x)
    return 2 * (c + 1) * EPS * scale + TINY


def softmax_tol(x, cpu):
    c = x.shape[-1]
    spread = np.abs(x - x.max(axis=-1, keepdims=True))
    return 2 * (c + 8 + spread) * EPS * np.abs(cpu) + TINY


SHAPES = [(), (1,), (7,), (3, 4), (2, 3, 5), (2, 1, 3, 4), (0, 3)]
BROADCAST = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (5, 1)), ((), (2, 3)),
             ((0, 3), (1, 3)), ((2, 1, 3, 1), (1, 4, 1, 5)), ((3, 1), (1, 4))]
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5], dtype=np.float32)


def matmul_cases():
    for (m, k, n), ta, tb in grid([(1, 1, 1), (3, 4, 5), (64, 33, 17), (0, 3, 4), (3, 0, 4)],
                                  (False, True), (False, True)):
        a = rand(*((k, m) if ta else (m, k)))
        b = rand(*((n, k) if tb else (k, n)))
        an, bn = (a.T if ta else a), (b.T if tb else b)
        yield (f"{m}x{k}x{n} ta={ta} tb={tb}",
               lambda x, y, ta=ta, tb=tb: tf.linalg.matmul(x, y, transpose_a=ta, transpose_b=tb),
               [a, b], lambda cpu, an=an, bn=bn, k=k: gemm_tolerance(an, bn, k))


def batch_matmul_cases(fn):
    def cases():
        for (sa, sb), ax, ay in grid([((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)),
                                      ((4, 2, 8, 16), (4, 2, 16, 8)), ((2, 0, 4), (2, 4, 3)),
                                      ((2, 3, 0), (2, 0, 3)), ((1, 1, 1), (1, 1, 1))],
                                     (False, True), (False, True)):
            a = rand(*sa[:-2], *(sa[-1:-3:-1] if ax else sa[-2:]))
            b = rand(*sb[:-2], *(sb[-1:-3:-1] if ay else sb[-2:]))
            an, bn = (np.swapaxes(a, -1, -2) if ax else a), (np.swapaxes(b, -1, -2) if ay else b)
            if fn is tf.raw_ops.BatchMatMul and sa[:-2] != sb[:-2]:
                continue
            yield (f"{sa}x{sb} adj_x={ax} adj_y={ay}",
                   lambda x, y, ax=ax, ay=ay: fn(x=x, y=y, adj_x=ax, adj_y=ay),
                   [a, b], lambda cpu, an=an, bn=bn: gemm_tolerance(an, bn, an.shape[-1]))
    return cases


def int8_batch_matmul_cases():
    """`BatchMatMulV3` of int8 into int32 (`tf.linalg.matmul(..., output_type=tf.int32)`):
    exact, over the batch shapes of `BatchMatMulV2` and the longest sum the
    device takes (1024 terms, of ±128·±128)."""
    ints = np.random.default_rng(13)
    for (sa, sb), ax, ay in grid([((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)),
                                  ((2, 0, 4), (2, 4, 3)), ((1, 2, 1024), (1, 1024, 2))],
                                 (False, True), (False, True)):
        a = ints.integers(-128, 128, (*sa[:-2], *(sa[-1:-3:-1] if ax else sa[-2:]))).astype(np.int8)
        b = ints.integers(-128, 128, (*sb[:-2], *(sb[-1:-3:-1] if ay else sb[-2:]))).astype(np.int8)
        if sa[-1] == 1024:
            a[...] = -128
            b[...] = -128
        yield (f"{sa}x{sb} adj_x={ax} adj_y={ay} int8",
               lambda x, y, ax=ax, ay=ay: tf.raw_ops.BatchMatMulV3(x=x, y=y, Tout=tf.int32,
                                                                   adj_x=ax, adj_y=ay),
               [a, b], None)


# The equations Keras' EinsumDense and MultiHeadAttention write, their
# gradients', and the general forms (ellipsis, broadcast, one operand).
EINSUMS = [("abc,cde->abde", (8, 16, 32), (32, 2, 4)), ("abcd,cde->abe", (8, 16, 2, 4), (2, 4, 32)),
           ("aecd,abcd->acbe", (2, 5, 3, 4), (2, 6, 3, 4)), ("acbe,aecd->abcd", (2, 3, 6, 5), (2, 5, 3, 4)),
           ("abde,cde->abc", (8, 16, 2, 4), (32, 2, 4)), ("abc,abde->cde", (8, 16, 32), (8, 16, 2, 4)),
           ("acbe,abcd->aecd", (2, 3, 6, 5), (2, 6, 3, 4)), ("abcd,aecd->acbe", (2, 6, 3, 4), (2, 5, 3, 4)),
           ("...ij,jk->...ik", (2, 3, 4, 5), (5, 6)), ("...ij,...jk->...ik", (1, 4, 5), (3, 5, 6)),
           ("ij,jk", (3, 4), (4, 2)), ("ab,cb->ac", (0, 3), (2, 3)), ("ij->ji", (3, 5), None)]


def einsum_cases():
    for eq, sa, sb in pick(EINSUMS):
        args = [rand(*sa)] + ([rand(*sb)] if sb else [])
        tol = None
        if sb is not None:
            lhs, _, out = eq.replace("...", "").partition("->")
            ta, tb = lhs.split(",")
            out = out or "".join(sorted(c for c in ta + tb if (ta + tb).count(c) == 1))
            k = int(np.prod([sa[ta.index(c) - len(ta)] for c in ta if c in tb and c not in out]))
            scale = np.einsum(eq, *[np.abs(x.astype(np.float64)) for x in args])
            tol = lambda cpu, scale=scale, k=k: 2 * (k + 2) * EPS * scale + TINY  # noqa: E731
        yield eq, lambda *xs, eq=eq: tf.einsum(eq, *xs), args, tol


def add_n_cases():
    for shape, n in grid(SHAPES, (1, 2, 3, 9, 12, 17, 26)):
        yield f"{n}x{shape}", lambda *xs: tf.math.add_n(list(xs)), [rand(*shape) for _ in range(n)], None
    yield "specials", lambda a, b, c: tf.math.add_n([a, b, c]), [SPECIAL, SPECIAL[::-1].copy(), SPECIAL], None


def indices(count, n, seed):
    return np.random.default_rng(seed).integers(0, n, count).astype(np.int32)


def gather_cases():
    for (shape, axis, ishape), seed in zip(pick([((50, 16), 0, (32, 8)), ((5, 7, 3), 1, (4,)),
                                                 ((6, 4), 1, (2, 3)), ((9,), 0, ()), ((4, 0), 0, (3,)),
                                                 ((8, 5), 0, (0,)), ((3, 4, 5), -1, (6,))]), range(100)):
        n = shape[axis]
        idx = indices(int(np.prod(ishape)), n, seed).reshape(ishape)
        if seed % 2:
            idx = idx.astype(np.int64)
        yield (f"{shape} axis={axis} indices {ishape} {idx.dtype}",
               lambda p, i, axis=axis: tf.gather(p, i, axis=axis), [rand(*shape), idx], None)
    yield "specials", lambda p, i: tf.gather(p, i), [SPECIAL, np.array([6, 0, 4, 4], np.int32)], None


def segment_sum_cases():
    for (shape, ids_shape, segments), seed in zip(pick([((64, 16), (64,), 50), ((5, 3), (5,), 4),
                                                        ((2, 3, 4), (2, 3), 7), ((0, 4), (0,), 3),
                                                        ((6,), (6,), 1), ((4, 2), (4,), 2)]), range(100)):
        ids = indices(int(np.prod(ids_shape)), max(segments, 1), seed).reshape(ids_shape)
        ids = ids.astype(np.int64) if seed % 2 else ids
        if ids.size:
            ids.flat[0] = -1  # dropped
        yield (f"{shape} into {segments} {ids.dtype}",
               lambda d, i, n=segments: tf.math.unsorted_segment_sum(d, i, n), [rand(*shape), ids], None)


def extrema_cases(fn, exact=True):
    def cases():
        for (shape, axes), keep in grid([((3, 4), [1]), ((2, 3, 5), [1]), ((2, 3, 5), [0, 2]), ((4, 6), [0]),
                                         ((2, 1, 3, 4), [-1, 1]), ((3, 0), [1]), ((0, 3), [1]), ((5,), [0]),
                                         ((2, 3, 4), [0, 1, 2])], (False, True)):
            x = rand(*shape)
            tol = None if exact else (lambda cpu: 2 * (x.size + 1) * EPS * np.abs(cpu) + TINY)
            yield (f"{shape} axes={axes} keep_dims={keep}",
                   lambda t, a=axes, k=keep: fn(t, tf.constant(a, tf.int32), keepdims=k), [x], tol)
        yield ("specials", lambda t: fn(tf.reshape(t, [1, 7]), tf.constant([1], tf.int32)),
               [SPECIAL], None if exact else (lambda cpu: np.abs(cpu) * 0 + TINY))
        for row in ([-0.0, 0.0], [0.0, -0.0], [np.nan, 1.0], [1.0, np.nan]):
            yield (f"{row}", lambda t: fn(t, tf.constant([0], tf.int32)),
                   [np.array(row, np.float32)], None)
    return cases


CAST_VALUES = {
    # No subnormals: TF's CPU kernels treat them as 0 (docs/device-numerics.md).
    tf.float32: np.array([np.nan, np.inf, -np.inf, -3e9, 3e9, 2.7, -2.7, -0.0, 0.5, 2147483520.0,
                          -9.3e18, 1.2e-38, 16777217.0], np.float32),
    tf.int32: np.array([0, 1, -1, 16777217, -16777219, 2**31 - 1, -2**31], np.int32),
    tf.int64: np.array([0, 1, -1, 16777217, 2**40 + 7, -(2**35) - 3, 2**63 - 1, -2**63], np.int64),
    tf.bool: np.array([True, False, False, True]),
    tf.int8: np.array([0, 1, -1, 127, -128, 64], np.int8),
}
# The half types: every value of the float list that TF's CPU keeps, and
# ties, overflow and subnormal edges of the conversion (to nearest even).
HALF_EDGES = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-9, 65519.0, 65520.0, 2.0**-25, 3 * 2.0**-26, -1.5,
                       2.0**-14, 1e-5, 3.4e38, -0.0, np.nan, np.inf], np.float32)
CAST_VALUES[tf.float32] = np.concatenate([CAST_VALUES[tf.float32], HALF_EDGES])
CAST_VALUES[tf.bfloat16] = tf.cast(HALF_EDGES, tf.bfloat16).numpy()
CAST_VALUES[tf.float16] = HALF_EDGES.astype(np.float16)


def cast_cases():
    pairs = [(tf.float32, t) for t in (tf.int32, tf.int64, tf.bool, tf.bfloat16, tf.float16)] + \
            [(t, tf.float32) for t in (tf.int32, tf.int64, tf.bool, tf.bfloat16, tf.float16, tf.int8)] + \
            [(tf.int32, tf.int64), (tf.int64, tf.int32)]
    for src, dst in pairs:
        yield f"{src.name} to {dst.name}", lambda x, dst=dst: tf.cast(x, dst), [CAST_VALUES[src]], None
    for shape in pick([(3, 4), (2, 0), ()]):
        x = (rand(*shape) * 100).astype(np.float32)
        yield f"{shape} float32 to int32", lambda x: tf.cast(x, tf.int32), [x], None


def compare_cases(fn):
    def cases():
        for sa, sb in pick(BROADCAST):
            a = np.round(rand(*sa))  # ties occur
            b = np.round(rand(*sb))
            yield f"{sa} vs {sb}", fn, [a, b], None
        yield "specials", fn, [SPECIAL, SPECIAL[::-1].copy()], None
    return cases


def logical_cases(fn):
    """Bool in host memory (`kernels/ops/logical.rs`), exact."""
    def cases():
        for sa, sb in pick(BROADCAST):
            a = np.random.default_rng(len(sa)).random(sa) > 0.5
            b = np.random.default_rng(len(sb) + 7).random(sb) > 0.5
            yield f"{sa} vs {sb}", fn, [np.asarray(a), np.asarray(b)], None
        yield "all pairs", fn, [np.array([False, False, True, True]), np.array([False, True, False, True])], None
    return cases


def select_cases(v2):
    op = tf.raw_ops.SelectV2 if v2 else tf.raw_ops.Select
    shapes = ([((3, 4), (3, 4), (3, 4)), ((), (2, 3), (2, 3)), ((4,), (4, 2, 3), (4, 2, 3)), ((0,), (0, 2), (0, 2))]
              if not v2 else
              [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (3, 4)), ((), (2, 3), ()), ((2, 1, 3), (4, 1), (1,))])
    for sc, st, se in pick(shapes):
        cond = np.random.default_rng(len(sc) + 3).random(sc) > 0.5 if sc else np.array(True)
        yield (f"cond {sc} then {st} else {se}", lambda c, t, e: op(condition=c, t=t, e=e) if v2 else op(condition=c, x=t, y=e),
               [np.asarray(cond), rand(*st), rand(*se)], None)
    yield ("specials", lambda c, t, e: op(condition=c, t=t, e=e) if v2 else op(condition=c, x=t, y=e),
           [np.array([True, False] * 3 + [True]), SPECIAL, SPECIAL[::-1].copy()], None)


def arg_cases(fn):
    def cases():
        for (shape, axis), out in grid([((3, 7), 1), ((3, 7), 0), ((2, 3, 5), 1), ((2, 3, 5), -1), ((9,), 0),
                                        ((4, 1), 1), ((0, 3), 1)], (tf.int64, tf.int32)):
            x = np.round(rand(*shape) * 2)  # ties occur
            yield (f"{shape} axis={axis} {out.name}",
                   lambda t, a=axis, o=out: fn(t, a, output_type=o), [x], None)
        rows = np.array([[1, np.nan, 3], [np.nan, 1, 2], [2, 2, 1], [-np.inf] * 3, [np.nan] * 3,
                         [np.finfo(np.float32).min, np.finfo(np.float32).max, np.inf]], np.float32)
        yield "specials", lambda t: fn(t, 1), [rows], None
    return cases


def random_uniform_cases():
    """Keras' dropout masks: the key and counter of a seed (made on the CPU,
    as tf.random.stateless_uniform makes them), then the op."""
    for shape, seed, alg in pick([((5,), (1, 2), 1), ((3, 1001), (7, -3), 3), ((2, 4, 3), (2**40, 5), 1),
                                  ((0, 3), (1, 1), 1), ((), (9, 9), 3)]):
        with tf.device(CPU):
            key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=tf.constant(seed, tf.int64))
        yield (f"{shape} seed {seed} alg {alg}",
               lambda k, c, shape=shape, alg=alg: tf.raw_ops.StatelessRandomUniformV2(
                   shape=tf.constant(shape, tf.int32, [len(shape)]), key=k, counter=c,
                   alg=tf.constant(alg, tf.int32)),
               [key.numpy(), counter.numpy()], None)


def fused_matmul(a, b, bias, ops):
    attrs = ("T", a.dtype.as_datatype_enum, "num_args", 1, "fused_ops", ops, "epsilon", 0.0001,
             "leakyrelu_alpha", 0.2, "transpose_a", False, "transpose_b", False)
    return execute.execute(b"_FusedMatMul", 1, [a, b, bias], attrs, context.context())[0]


def fused_matmul_cases():
    for (m, k, n), relu in grid([(5, 7, 3), (1, 1, 1), (16, 8, 32)], (False, True)):
        a, b, bias = rand(m, k), rand(k, n), rand(n)
        ops = [b"BiasAdd", b"Relu"] if relu else [b"BiasAdd"]
        fn = lambda x, y, z, ops=ops: fused_matmul(x, y, z, ops)  # noqa: E731
        yield (f"{m}x{k}x{n} relu={relu}", fn, [a, b, bias],
               lambda cpu, a=a, b=b, k=k, bias=bias: gemm_tolerance(a, b, k, bias))


def bias_add_cases():
    for shape in pick([(4, 3), (2, 3, 5), (2, 2, 3, 4), (0, 3), (1, 1)]):
        yield str(shape), tf.nn.bias_add, [rand(*shape), rand(shape[-1])], None
    yield "NCHW rank 2", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"), \
        [rand(4, 3), rand(3)], None


def bias_add_grad_cases():
    for shape in pick([(4, 3), (64, 10), (2, 3, 5), (2, 2, 3, 4), (0, 3), (3, 0)]):
        x = rand(*shape)
        axes = list(range(len(shape) - 1))
        yield (str(shape), lambda t: tf.raw_ops.BiasAddGrad(out_backprop=t), [x],
               lambda cpu, x=x, axes=axes: sum_tol(x, axes))


def binary_cases(fn, tol=None, pairs=BROADCAST):
    """`tol(a, b, cpu)` bounds |dev - cpu| (None: bit for bit)."""
    def bound(a, b):
        return None if tol is None else (lambda cpu: tol(a, b, cpu))

    def cases():
        for sa, sb in pick(pairs):
            a, b = rand(*sa), rand(*sb)
            yield f"{sa} vs {sb}", fn, [a, b], bound(a, b)
        a, b = SPECIAL, SPECIAL[::-1].copy()
        yield "specials", fn, [a, b], bound(a, b)
    return cases


REL4 = lambda x, cpu: 4 * EPS * np.abs(cpu) + TINY  # noqa: E731


def grad_cases(fn):
    """A gradient op's cases: operands of one shape, and the specials
    against each other (a zero gradient at an infinite or NaN output)."""
    def cases():
        yield from binary_cases(fn, lambda a, b, cpu: 4 * EPS * np.abs(cpu) + TINY,
                                pairs=[(s, s) for s in SHAPES])()
        for shift in range(len(SPECIAL)):
            yield (f"specials shifted {shift}", fn,
                   [SPECIAL, np.roll(SPECIAL, shift)], lambda cpu: 4 * EPS * np.abs(cpu) + TINY)
    return cases


def pow_tol(a, b, cpu):
    """A few ulp of `powf`, relative to |b·ln|a|| (the exponent of exp)."""
    with np.errstate(all="ignore"):
        scale = 1 + np.abs(b.astype(np.float64) * np.log(np.abs(a.astype(np.float64))))
        tol = 4 * EPS * np.abs(cpu) * np.nan_to_num(scale, nan=1.0, posinf=1.0)
    return tol + TINY


def log_softmax_tol(x, cpu):
    c = x.shape[-1]
    spread = np.abs(x - x.max(axis=-1, keepdims=True))
    return 2 * (c + 8 + spread + np.abs(cpu)) * EPS + TINY


def log_softmax_cases():
    for shape in pick([(1, 1), (3, 5), (2, 3, 7), (0, 4), (4,), (2, 1000)]):
        x = rand(*shape) * 4
        yield str(shape), tf.nn.log_softmax, [x], lambda cpu, x=x: log_softmax_tol(x, cpu)


def sparse_xent_cases():
    """Both outputs (loss, then backprop), int32 and int64 labels."""
    for (batch, classes), dtype, output in grid([(4, 3), (64, 10), (1, 1), (0, 5), (3, 1000)],
                                                (np.int32, np.int64), (0, 1)):
        x = rand(batch, classes) * 4
        labels = rng.integers(0, classes, batch).astype(dtype)
        fn = lambda t, y, i=output: tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(  # noqa: E731
            features=t, labels=y)[i]
        yield (f"{batch}x{classes} {np.dtype(dtype).name} {('loss', 'backprop')[output]}",
               fn, [x, labels], lambda cpu, x=x: sparse_xent_tol(x, cpu))


CONVS = [((1, 5, 5, 3), (3, 3, 3, 4), 1, "VALID", 1), ((2, 6, 6, 2), (3, 3, 2, 5), 1, "SAME", 1),
         ((1, 7, 8, 3), (3, 3, 3, 2), 2, "SAME", 1), ((1, 9, 9, 2), (3, 3, 2, 2), 1, "SAME", 2),
         ((2, 4, 4, 8), (1, 1, 8, 16), 1, "VALID", 1), ((1, 8, 8, 3), (3, 3, 3, 8), 2, "VALID", 1),
         ((1, 6, 6, 2), (3, 3, 2, 3), 1, [[0, 0], [1, 2], [2, 1], [0, 0]], 1),
         ((0, 4, 4, 2), (2, 2, 2, 3), 1, "VALID", 1), ((1, 48, 48, 3), (3, 3, 3, 16), 2, "SAME", 1)]


def conv_cases(depthwise):
    """Against TF's CPU kernel, within the dot-product bound of the taps."""
    for x_shape, f_shape, stride, padding, dilation in pick(CONVS):
        if x_shape[0] == 0:
            continue  # TF's CPU (oneDNN) Conv2D returns the input's shape for an empty batch
        x, f = rand(*x_shape), rand(*f_shape)
        cpu_fn = None
        if depthwise:  # the raw op: tf.nn.depthwise_conv2d dilates with SpaceToBatchND
            explicit = [] if isinstance(padding, str) else sum(padding, [])
            fn = lambda t, u, s=stride, p=padding, d=dilation, e=explicit: (  # noqa: E731
                tf.raw_ops.DepthwiseConv2dNative(
                    input=t, filter=u, strides=[1, s, s, 1], padding=p if not e else "EXPLICIT",
                    explicit_paddings=e, dilations=[1, d, d, 1]))
            if dilation > 1:  # TF's CPU kernel has no dilations: its SpaceToBatchND route
                cpu_fn = lambda t, u, p=padding, d=dilation: tf.nn.depthwise_conv2d(  # noqa: E731
                    t, u, [1, 1, 1, 1], p, dilations=[d, d])
            terms = f_shape[0] * f_shape[1]
        else:
            fn = lambda t, u, s=stride, p=padding, d=dilation: tf.nn.conv2d(  # noqa: E731
                t, u, s, p, dilations=d)
            terms = f_shape[0] * f_shape[1] * f_shape[2]
        with tf.device(CPU):
            scale = (cpu_fn or fn)(np.abs(x), np.abs(f)).numpy()
        yield (f"{x_shape} * {f_shape} s={stride} {padding} d={dilation}", fn, [x, f],
               lambda cpu, scale=scale, terms=terms: 2 * (terms + 2) * EPS * scale + TINY,
               *([cpu_fn] if cpu_fn else []))


def fused_conv2d_cases():
    """`_FusedConv2D` (what the graph pass writes) with each activation, against
    TF's CPU `_FusedConv2D`, within the Conv2D bound plus the bias."""
    for (x_shape, f_shape, stride, padding, dilation), ops in grid(CONVS, ACTIVATIONS):
        if x_shape[0] == 0 or not isinstance(padding, str):
            continue  # oneDNN's empty-batch quirk; the pass never fuses EXPLICIT padding
        x, f, bias = rand(*x_shape), rand(*f_shape), rand(f_shape[3])
        attrs = ("T", tf.float32.as_datatype_enum, "TArgs", [tf.float32.as_datatype_enum],
                 "num_args", 1, "num_host_args", 0, "strides", [1, stride, stride, 1], "padding", padding,
                 "dilations", [1, dilation, dilation, 1], "fused_ops", ops, "epsilon", 0.0001,
                 "leakyrelu_alpha", 0.2)
        fn = lambda t, u, b, a=attrs: execute.execute(  # noqa: E731
            b"_FusedConv2D", 1, [t, u, b], a, context.context())[0]
        with tf.device(CPU):
            scale = tf.nn.conv2d(np.abs(x), np.abs(f), stride, padding, dilations=dilation).numpy()
        terms = f_shape[0] * f_shape[1] * f_shape[2]
        yield (f"{x_shape} * {f_shape} s={stride} {padding} d={dilation} {[o.decode() for o in ops]}",
               fn, [x, f, bias],
               lambda cpu, s=scale + np.abs(bias), t=terms: 2 * (t + 2) * EPS * s + TINY)


ACTIVATIONS = [[b"BiasAdd"], [b"BiasAdd", b"Relu"], [b"BiasAdd", b"Relu6"]]


def window_grad_cases(geometries, by_input, forward_shape, backprop_input, backprop_filter,
                      dilated_forward):
    """The backprop ops of a convolution (dy, filter) or (x, dy) over
    `geometries`, within the dot-product bound of each element's terms.
    `forward_shape(x_shape, f_shape, stride, padding, dilation, attrs)` is
    the forward output's shape; TF's CPU kernels have no dilations, so
    dilated cases compare with the gradient of `dilated_forward(x, f, d, p)`."""
    for x_shape, f_shape, stride, padding, dilation in pick(geometries):
        explicit = [] if isinstance(padding, str) else sum(padding, [])
        attrs = dict(strides=[1, stride, stride, 1], padding="EXPLICIT" if explicit else padding,
                     explicit_paddings=explicit, dilations=[1, dilation, dilation, 1])
        y_shape = forward_shape(x_shape, f_shape, stride, padding, dilation, attrs)
        dy = rand(*y_shape)
        if by_input:
            fn = lambda g, u, xs=x_shape, a=attrs: backprop_input(  # noqa: E731
                input_sizes=list(xs), filter=u, out_backprop=g, **a)
            args, terms = [dy, rand(*f_shape)], f_shape[0] * f_shape[1] * f_shape[3]
        else:
            fn = lambda t, g, fs=f_shape, a=attrs: backprop_filter(  # noqa: E731
                input=t, filter_sizes=list(fs), out_backprop=g, **a)
            args, terms = [rand(*x_shape), dy], y_shape[0] * y_shape[1] * y_shape[2]
        forward = lambda x, f, d=dilation, p=padding: dilated_forward(x, f, d, p)  # noqa: E731
        cpu_fn = tape_gradient(forward, by_input, x_shape, f_shape) if dilation > 1 else None
        yield gradient_case(f"{x_shape} * {f_shape} s={stride} {padding} d={dilation}", fn, args,
                            terms, cpu_fn)


def conv_forward_shape(x_shape, f_shape, stride, padding, dilation, _attrs):
    # TF's CPU conv2d returns an empty batch's input shape unchanged (the
    # oneDNN quirk of conv_cases), so the spatial dims come from a batch of 1.
    probe = (max(x_shape[0], 1), *x_shape[1:])
    with tf.device(CPU):
        y_shape = tf.nn.conv2d(rand(*probe), rand(*f_shape), stride, padding, dilations=dilation).shape
    return (x_shape[0], *y_shape[1:])


def conv_grad_cases(by_input):
    """Conv2DBackpropInput (dy, filter) or Conv2DBackpropFilter (x, dy) over CONVS' geometries."""
    return window_grad_cases(CONVS, by_input, conv_forward_shape, tf.raw_ops.Conv2DBackpropInput,
                             tf.raw_ops.Conv2DBackpropFilter, tf.nn.atrous_conv2d)


def tape_gradient(forward, by_input, x_shape, f_shape):
    """The CPU's answer where TF's gradient kernels lack an attribute: the
    gradient of `forward(x, f)` by GradientTape, for dy `a` (input) or `b`."""
    def cpu_fn(a, b):
        x, f = (tf.zeros(x_shape), b) if by_input else (a, tf.zeros(f_shape))
        with tf.GradientTape() as tape:
            tape.watch(x if by_input else f)
            y = forward(x, f)
        return tape.gradient(y, x if by_input else f, output_gradients=a if by_input else b)
    return cpu_fn


def gradient_case(label, fn, args, terms, cpu_fn):
    """A convolution gradient's case, within the dot-product bound of `terms`."""
    with tf.device(CPU):
        scale = (cpu_fn or fn)(*[np.abs(a) for a in args]).numpy()
    return (label, fn, args, lambda cpu: 2 * (terms + 2) * EPS * scale + TINY,
            *([cpu_fn] if cpu_fn else []))


DEPTHWISE_GRADS = [((1, 5, 5, 3), (3, 3, 3, 2), 1, "VALID", 1), ((2, 6, 6, 4), (3, 3, 4, 1), 2, "SAME", 1),
                   ((1, 7, 7, 2), (3, 3, 2, 2), 1, "SAME", 2), ((1, 8, 8, 8), (3, 3, 8, 1), 2, "SAME", 1),
                   ((1, 6, 6, 2), (3, 3, 2, 1), 1, [[0, 0], [1, 2], [2, 1], [0, 0]], 1),
                   ((2, 4, 4, 6), (1, 1, 6, 2), 1, "VALID", 1)]


def depthwise_forward_shape(x_shape, f_shape, _stride, padding, dilation, attrs):
    with tf.device(CPU):
        if dilation == 1:
            return tf.raw_ops.DepthwiseConv2dNative(input=tf.zeros(x_shape), filter=tf.zeros(f_shape),
                                                    **attrs).shape
        return tf.nn.depthwise_conv2d(tf.zeros(x_shape), tf.zeros(f_shape), [1, 1, 1, 1], padding,
                                      dilations=[dilation, dilation]).shape


def depthwise_grad_cases(by_input):
    """DepthwiseConv2dNativeBackpropInput/Filter over DEPTHWISE_GRADS."""
    return window_grad_cases(
        DEPTHWISE_GRADS, by_input, depthwise_forward_shape,
        tf.raw_ops.DepthwiseConv2dNativeBackpropInput, tf.raw_ops.DepthwiseConv2dNativeBackpropFilter,
        lambda x, f, d, p: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], p, dilations=[d, d]))


def max_pool_grad_cases():
    """Exact: each gradient goes to the first largest tap (small integers
    make ties), and overlapping windows add in TF's order."""
    for x_shape, size, stride, padding in pick(POOLS):
        x = np.round(rand(*x_shape) * 2)
        with tf.device(CPU):
            y_shape = tf.nn.max_pool2d(x, size, stride, padding).shape
        fn = lambda t, g, k=size, s=stride, p=padding: tf.raw_ops.MaxPoolGrad(  # noqa: E731
            orig_input=t, orig_output=tf.nn.max_pool2d(t, k, s, p), grad=g,
            ksize=[1, k, k, 1], strides=[1, s, s, 1], padding=p)
        yield f"{x_shape} k={size} s={stride} {padding}", fn, [x, rand(*y_shape)], None


def avg_pool_grad_cases():
    """Within the bound of a sum of `dy / taps` over the windows that hold each element."""
    for x_shape, size, stride, padding in pick(POOLS):
        with tf.device(CPU):
            y_shape = tf.nn.avg_pool2d(rand(*x_shape), size, stride, padding).shape
        fn = lambda g, xs=x_shape, k=size, s=stride, p=padding: tf.raw_ops.AvgPoolGrad(  # noqa: E731
            orig_input_shape=list(xs), grad=g, ksize=[1, k, k, 1], strides=[1, s, s, 1], padding=p)
        dy = rand(*y_shape)
        with tf.device(CPU):
            scale = fn(np.abs(dy)).numpy()
        terms = -(-size // stride) ** 2
        yield (f"{x_shape} k={size} s={stride} {padding}", fn, [dy],
               lambda cpu, scale=scale, t=terms: 2 * (t + 2) * EPS * scale + TINY)


POOLS = [((1, 6, 6, 3), 2, 2, "VALID"), ((2, 5, 5, 2), 3, 1, "SAME"), ((1, 7, 7, 4), 3, 2, "SAME"),
         ((1, 4, 6, 1), 2, 1, "VALID"), ((0, 4, 4, 2), 2, 2, "VALID")]


def pool_cases(fn_of, exact):
    def cases():
        for x_shape, size, stride, padding in pick(POOLS):
            x = rand(*x_shape)
            fn = lambda t, k=size, s=stride, p=padding: fn_of(t, k, s, p)  # noqa: E731
            if exact:
                tol = None
            else:
                with tf.device(CPU):
                    scale = fn(np.abs(x)).numpy()
                tol = lambda cpu, scale=scale, k=size: 2 * (k * k + 2) * EPS * scale + TINY  # noqa: E731
            yield f"{x_shape} k={size} s={stride} {padding}", fn, [x], tol
        if exact:  # NaN and -inf never win; an all-NaN window is -FLT_MAX
            specials = np.concatenate([SPECIAL, [np.nan, np.nan]]).astype(np.float32)
            yield "specials", lambda t: fn_of(t, 2, 1, "VALID"), [specials.reshape(1, 3, 3, 1)], None
    return cases


def mean_cases():
    for shape, axes, keep in pick([((2, 5, 5, 3), [1, 2], False), ((2, 5, 5, 3), [1, 2], True),
                                   ((4, 6), [-1], False), ((4, 6), [0], True), ((2, 3, 4), [1], False),
                                   ((3, 0), [1], False)]):
        x = rand(*shape)
        count = int(np.prod([shape[a] for a in axes]))
        yield (f"{shape} axes={axes} keep={keep}",
               lambda t, a=axes, k=keep: tf.math.reduce_mean(t, axis=a, keepdims=k), [x],
               lambda cpu, x=x, a=axes, c=count: (sum_tol(x, [i % x.ndim for i in a]) / max(c, 1)
                                                  ).reshape(cpu.shape) + 2 * EPS * np.abs(cpu))


def batch_norm_cases():
    """`FusedBatchNormV3` for inference: y = (x - mean) * rsqrt(var + eps) * scale + offset."""
    for shape, eps, fmt in pick([((2, 5, 5, 3), 1e-3, "NHWC"), ((1, 4, 4, 8), 1e-5, "NHWC"),
                                 ((3, 1, 1, 16), 1e-3, "NHWC"), ((1, 2, 3, 3, 4), 1e-3, "NDHWC"),
                                 ((0, 3, 3, 2), 1e-3, "NHWC"), ((4, 2, 2, 5), 0.5, "NHWC")]):
        c = shape[-1]
        x, scale, offset, mean = rand(*shape), rand(c), rand(c), rand(c)
        var = np.abs(rand(c)) + np.float32(0.01)
        fn = lambda t, s, o, m, v, e=eps, f=fmt: tf.raw_ops.FusedBatchNormV3(  # noqa: E731
            x=t, scale=s, offset=o, mean=m, variance=v, epsilon=e, is_training=False,
            data_format=f)[0]
        span = np.abs(x - mean) * np.abs(scale) / np.sqrt(var + eps) + np.abs(offset)
        yield (f"{shape} eps={eps} {fmt}", fn, [x, scale, offset, mean, var],
               lambda cpu, span=span: 8 * EPS * span + TINY)


def pad_cases():
    for shape, pads in pick([((1, 4, 4, 3), [[0, 0], [1, 1], [1, 1], [0, 0]]),
                             ((2, 5, 6, 2), [[0, 0], [0, 1], [0, 1], [0, 0]]),
                             ((3, 4), [[1, 2], [0, 0]]), ((3, 4), [[0, 0], [2, 1]]), ((), []),
                             ((2, 3), [[0, 0], [0, 0]]), ((0, 3), [[1, 1], [1, 0]]),
                             ((2, 1, 3), [[1, 0], [2, 2], [0, 3]])]):
        yield (f"{shape} {pads}", lambda t, p=pads: tf.pad(t, tf.constant(p, tf.int32, [len(p), 2])),
               [rand(*shape)], None)
    yield "specials", lambda t: tf.pad(t, [[2, 1]]), [SPECIAL], None


def slice_cases():
    for shape, begin, size in pick([((4, 5), [1, 1], [2, 3]), ((2, 3, 4), [0, 1, 0], [-1, 2, -1]),
                                    ((1, 6, 6, 3), [0, 1, 1, 0], [1, 4, 4, 3]), ((5,), [2], [0]),
                                    ((), [], []), ((3, 4), [0, 0], [3, 4]), ((0, 3), [0, 1], [0, 2])]):
        yield (f"{shape} begin={begin} size={size}",
               lambda t, b=begin, s=size: tf.slice(t, tf.constant(b, tf.int32, [len(b)]),
                                                   tf.constant(s, tf.int32, [len(s)])),
               [rand(*shape)], None)
    yield "specials", lambda t: tf.slice(t, [1], [5]), [SPECIAL], None


def transpose_cases():
    for shape, perm in pick([((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((1, 4, 4, 3), [0, 3, 1, 2]),
                             ((2, 3, 4, 5), [3, 2, 1, 0]), ((2, 1, 3, 1, 2), [4, 0, 2, 1, 3]),
                             ((0, 3), [1, 0]), ((5,), [0]), ((2, 3, 2, 3, 2, 3), [0, 1, 3, 2, 4, 5]),
                             ((64, 48), [1, 0])]):
        yield (f"{shape} perm={perm}",
               lambda t, p=perm: tf.transpose(t, tf.constant(p, tf.int32, [len(p)])),
               [rand(*shape)], None)
    yield "specials", lambda t: tf.transpose(tf.reshape(t, [1, 7])), [SPECIAL], None


def strided_slice_cases():
    """Python indexing, which writes StridedSlice with TF's masks."""
    for shape, label, fn in pick([
            ((4, 5), "[1:3, ::2]", lambda t: t[1:3, ::2]),
            ((6,), "[::-1]", lambda t: t[::-1]),
            ((2, 3, 4), "[..., 0]", lambda t: t[..., 0]),
            ((3, 2), "[:, None]", lambda t: t[:, None]),
            ((5,), "[-2:]", lambda t: t[-2:]),
            ((3, 4, 5), "[1, :, ::-2]", lambda t: t[1, :, ::-2]),
            ((2, 6, 6, 3), "[:, 1:-1, 1:-1]", lambda t: t[:, 1:-1, 1:-1]),
            ((4, 5), "[3:1]", lambda t: t[3:1]),
            ((2, 3, 4, 5), "[..., 1:3, None, ::3]", lambda t: t[..., 1:3, None, ::3]),
            ((0, 3), "[:, 1:]", lambda t: t[:, 1:])]):
        yield f"{shape}{label}", fn, [rand(*shape)], None
    yield "specials[::-2]", lambda t: t[::-2], [SPECIAL], None
    # int32 (shape arithmetic): in host memory, as TF's GPU kernel.
    yield "int32 [1:3, ::2]", lambda t: t[1:3, ::2], [np.arange(20, dtype=np.int32).reshape(4, 5)], None


def strided_slice_grad_cases():
    """The gradient of Python indexing: `dy` put back where the slice read."""
    for shape, label, fn in pick([
            ((4, 5), "[1:3, ::2]", lambda t: t[1:3, ::2]),
            ((6,), "[::-1]", lambda t: t[::-1]),
            ((2, 3, 4), "[..., 0]", lambda t: t[..., 0]),
            ((3, 4, 5), "[1, :, ::-2]", lambda t: t[1, :, ::-2]),
            ((2, 6, 6, 3), "[:, 1:-1, 1:-1]", lambda t: t[:, 1:-1, 1:-1]),
            ((4, 5), "[3:1]", lambda t: t[3:1]),
            ((2, 3, 4, 5), "[..., 1:3, None, ::3]", lambda t: t[..., 1:3, None, ::3])]):
        x = rand(*shape)
        dy = rand(*fn(x).shape)

        def grad(t, d, fn=fn):
            with tf.GradientTape() as tape:
                tape.watch(t)
                y = fn(t)
            return tape.gradient(y, t, output_gradients=d)
        yield f"{shape}{label}", grad, [x, dy], None


def fill_cases():
    for dims in pick([(3, 4), (), (0, 2), (2, 3, 5), (7,)]):
        yield (f"{dims}", lambda v, d=dims: tf.fill(tf.constant(d, tf.int32, [len(d)]), v),
               [np.float32(rng.standard_normal())], None)
    for v in SPECIAL:
        yield f"value {v}", lambda v: tf.fill(tf.constant([3], tf.int32), v), [np.float32(v)], None


def concat_cases():
    for shapes, axis in pick([([(2, 3), (2, 4)], 1), ([(2, 3), (1, 3), (0, 3)], 0),
                              ([(1, 4, 4, 3), (1, 4, 4, 5)], -1), ([(2, 2, 2)] * 3, 1),
                              ([(2, 0, 3), (2, 2, 3)], -2), ([(5,), (1,)], 0)]):
        yield (f"{shapes} axis={axis}",
               lambda *ts, a=axis: tf.raw_ops.ConcatV2(values=list(ts), axis=a),
               [rand(*s) for s in shapes], None)
    yield "specials", lambda t, u: tf.raw_ops.ConcatV2(values=[t, u], axis=0), [SPECIAL, SPECIAL], None


def split_cases():
    """One piece of each split (the last; the middle one too), exact."""
    for shape, axis, n in pick([((6, 4), 0, 3), ((2, 6, 3), 1, 2), ((4, 8), -1, 4),
                                ((0, 4), 1, 2), ((3,), 0, 3)]):
        for k in sorted({n - 1, n // 2}):
            yield (f"{shape} axis={axis} n={n} piece {k}",
                   lambda t, a=axis, n=n, k=k: tf.split(t, n, axis=a)[k], [rand(*shape)], None)
    # Inner-axis pieces go through a device transpose: signed zeros and NaN kept.
    yield ("specials axis=1", lambda t: tf.split(tf.reshape(t, (-1, 2)), 2, axis=1)[1],
           [SPECIAL[: SPECIAL.size // 2 * 2]], None)


def split_v_cases():
    for shape, sizes, axis in pick([((7, 3), [2, -1, 1], 0), ((2, 9), [4, 5], 1),
                                    ((2, 3, 5), [0, 3, 2], -1), ((4,), [4], 0)]):
        for k in range(len(sizes)):
            yield (f"{shape} sizes={sizes} axis={axis} piece {k}",
                   lambda t, s=sizes, a=axis, k=k: tf.split(t, s, axis=a)[k], [rand(*shape)], None)


def unpack_cases():
    for shape, axis in pick([((3, 4), 0), ((2, 3, 4), 1), ((2, 3), -1), ((1, 5, 2), 0)]):
        last = shape[axis] - 1
        yield (f"{shape} axis={axis} piece {last}",
               lambda t, a=axis, k=last: tf.unstack(t, axis=a)[k], [rand(*shape)], None)


def pack_cases():
    for shape, n, axis in pick([((3, 4), 2, 0), ((2, 3), 3, 1), ((2, 3), 2, -1), ((4,), 3, 0),
                                ((0, 2), 2, 1)]):
        yield (f"{n} x {shape} axis={axis}", lambda *ts, a=axis: tf.stack(list(ts), axis=a),
               [rand(*shape) for _ in range(n)], None)
    yield "specials", lambda t, u: tf.stack([t, u]), [SPECIAL, SPECIAL[::-1].copy()], None


def reverse_cases():
    for shape, axes in pick([((3, 4), [0]), ((2, 3, 4), [1]), ((2, 3, 4), [-1, 0]), ((5,), [0]),
                             ((2, 3), []), ((0, 3), [1])]):
        yield (f"{shape} axis={axes}", lambda t, a=axes: tf.reverse(t, a), [rand(*shape)], None)
    yield "specials", lambda t: tf.reverse(t, [0]), [SPECIAL], None


def cumsum_cases():
    for (shape, axis), (exclusive, reverse) in grid(
            [((5,), 0), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((2, 0, 3), 1), ((300, 7), 0)],
            [(False, False), (True, False), (False, True), (True, True)]):
        yield (f"{shape} axis={axis} exclusive={exclusive} reverse={reverse}",
               lambda t, a=axis, e=exclusive, r=reverse: tf.math.cumsum(t, axis=a, exclusive=e, reverse=r),
               [rand(*shape) * 1000], None)
    yield "specials", lambda t: tf.math.cumsum(t), [SPECIAL], None


def like_cases(op):
    def cases():
        for shape in pick([(2, 3), (4,), (), (0, 5)]):
            yield str(shape), lambda t: op(x=t), [rand(*shape)], None
    return cases


def xent_cases():
    """Both outputs of the dense-label loss; labels are probabilities."""
    for (batch, classes), output in grid([(4, 3), (64, 10), (1, 1), (0, 5), (3, 1000)], (0, 1)):
        x = rand(batch, classes) * 4
        y = rng.random((batch, classes)).astype(np.float32)
        y /= np.maximum(y.sum(axis=-1, keepdims=True), 1e-30)
        fn = lambda t, u, i=output: tf.raw_ops.SoftmaxCrossEntropyWithLogits(  # noqa: E731
            features=t, labels=u)[i]
        yield (f"{batch}x{classes} {('loss', 'backprop')[output]}", fn, [x, y],
               lambda cpu, x=x: sparse_xent_tol(x, cpu))


def sparse_xent_tol(x, cpu):
    """The loss as log_softmax's (each row's worst), the backprop as softmax's
    plus one rounding of `- 1`."""
    c = x.shape[-1]
    spread = np.abs(x - x.max(axis=-1, keepdims=True))
    if cpu.ndim == 1:
        return 2 * (c + 8 + spread.max(axis=-1, initial=0) + np.abs(cpu)) * EPS + TINY
    return 2 * (c + 8 + spread) * EPS * (np.abs(cpu) + 1) + TINY


def unary_cases(fn, tol=None):
    """`tol(x, cpu)` bounds |dev - cpu| (None: bit for bit)."""
    def cases():
        for x in [*(rand(*shape) for shape in pick(SHAPES)), SPECIAL]:
            label = "specials" if x is SPECIAL else str(x.shape)
            yield label, fn, [x], None if tol is None else (lambda cpu, x=x: tol(x, cpu))
    return cases


def softmax_cases():
    for shape in pick([(1, 1), (3, 5), (2, 3, 7), (0, 4), (4,), (2, 1000)]):
        x = rand(*shape) * 4
        yield str(shape), tf.nn.softmax, [x], lambda cpu, x=x: softmax_tol(x, cpu)


def sum_cases():
    for (shape, axes), keep in grid([((3, 5), [-1]), ((2, 3, 4), [1, 2]), ((2, 3, 4), [0, 1, 2]),
                                     ((6, 7), [0]), ((2, 3, 4), [0, 1]), ((3, 0), [1]),
                                     ((3, 4), []), ((2, 1, 4), [0, 2])], (False, True)):
        x = rand(*shape)
        pos = [a % len(shape) for a in axes]
        yield (f"{shape} axes={axes} keep={keep}",
               lambda t, axes=axes, keep=keep: tf.math.reduce_sum(t, axis=axes, keepdims=keep),
               [x], lambda cpu, x=x, pos=pos: sum_tol(x, pos).reshape(cpu.shape))


def broadcast_to_cases():
    for shape, target in pick([((3,), (2, 3)), ((1,), (4, 5)), ((), (2, 2)), ((2, 1), (2, 3)),
                               ((1, 3), (0, 3)), ((3, 4), (3, 4)), ((2, 1, 3), (4, 2, 5, 3))]):
        yield (f"{shape} to {target}",
               lambda t, target=target: tf.broadcast_to(t, tf.constant(target, tf.int64)),
               [rand(*shape)], None)
    yield "specials", lambda t: tf.broadcast_to(t, [3, 7]), [SPECIAL], None


def tile_cases():
    for shape, multiples in pick([((3,), [2]), ((2, 3), [2, 1]), ((2, 3), [1, 3]), ((2, 3), [2, 3]),
                                  ((1, 3), [4, 1]), ((2, 3, 4), [2, 2, 2]), ((), []),
                                  ((0, 3), [2, 2]), ((2, 3), [0, 1]), ((2, 1, 3), [1, 5, 1])]):
        yield (f"{shape} x {multiples}",
               lambda t, m=multiples: tf.tile(t, tf.constant(m, tf.int32)), [rand(*shape)], None)
    yield "specials", lambda t: tf.tile(t, [3]), [SPECIAL], None


SWEEPS = {
    "MatMul": matmul_cases,
    "_FusedMatMul": fused_matmul_cases,
    "BatchMatMul": batch_matmul_cases(tf.raw_ops.BatchMatMul),
    "BatchMatMulV2": batch_matmul_cases(tf.raw_ops.BatchMatMulV2),
    "BatchMatMulV3": int8_batch_matmul_cases,
    "Einsum": einsum_cases,
    "AddN": add_n_cases,
    "GatherV2": gather_cases,
    "UnsortedSegmentSum": segment_sum_cases,
    "Max": extrema_cases(tf.math.reduce_max),
    "Min": extrema_cases(tf.math.reduce_min),
    "Prod": extrema_cases(tf.math.reduce_prod, exact=False),
    "Cast": cast_cases,
    "StatelessRandomUniformV2": random_uniform_cases,
    # Stateful (Keras 2's dropout): two calls of one kernel, so the second
    # shows the generator's advance.
    "RandomUniform": lambda: iter(
        (f"{shape} seeds {seeds} twice",
         lambda s, shape=shape, seeds=seeds: tf.concat([tf.reshape(tf.raw_ops.RandomUniform(
             shape=s, dtype=tf.float32, seed=seeds[0], seed2=seeds[1]), [-1]) for _ in range(2)], 0),
         [np.array(shape, np.int32)], None)
        for shape, seeds in pick([((5,), (1, 2)), ((3, 101), (7, 3)), ((2, 4, 3), (87654321, 5)),
                                  ((0,), (1, 1))])),
    "ArgMax": arg_cases(tf.math.argmax),
    "ArgMin": arg_cases(tf.math.argmin),
    "Bitcast": lambda: iter([
        ("float32 to int32", lambda t: tf.bitcast(t, tf.int32), [SPECIAL], None),
        ("int32 to float32", lambda t: tf.bitcast(t, tf.float32),
         [np.array([0, -1, 0x7f800000, 0x80000000 - 2**32, 12345], np.int32)], None)]),
    "Equal": compare_cases(tf.math.equal),
    "NotEqual": compare_cases(tf.math.not_equal),
    "Less": compare_cases(tf.math.less),
    "LessEqual": compare_cases(tf.math.less_equal),
    "Greater": compare_cases(tf.math.greater),
    "GreaterEqual": compare_cases(tf.math.greater_equal),
    "LogicalAnd": logical_cases(tf.math.logical_and),
    "LogicalOr": logical_cases(tf.math.logical_or),
    "LogicalNot": lambda: iter([
        (f"{shape}", tf.math.logical_not, [np.random.default_rng(3).random(shape) > 0.5], None)
        for shape in pick([(5,), (3, 4), (), (0, 2)])]),
    "IsFinite": lambda: iter([
        (f"{shape}", tf.math.is_finite, [rand(*shape)], None) for shape in pick(SHAPES)] +
        [("specials", tf.math.is_finite, [SPECIAL], None)]),
    "Select": lambda: select_cases(False),
    "SelectV2": lambda: select_cases(True),
    "BiasAdd": bias_add_cases,
    "BiasAddGrad": bias_add_grad_cases,
    "AddV2": binary_cases(tf.math.add),
    "Add": binary_cases(lambda a, b: tf.raw_ops.Add(x=a, y=b)),
    "Sub": binary_cases(tf.math.subtract),
    "Mul": binary_cases(tf.math.multiply),
    "Maximum": binary_cases(tf.math.maximum),
    "SquaredDifference": binary_cases(tf.math.squared_difference),
    "Relu": unary_cases(tf.nn.relu),
    # The example NPU's own op (examples/device-npu/src/leaky_relu.rs).
    "LeakyRelu": lambda: itertools.chain(*(
        ((f"alpha={alpha} {label}", lambda x, alpha=alpha: tf.nn.leaky_relu(x, alpha), args, tol)
         for label, _, args, tol in unary_cases(tf.nn.relu)())
        for alpha in (0.2, 0.01, -1.5))),
    "Neg": unary_cases(tf.math.negative),
    "Square": unary_cases(tf.math.square),
    "Softmax": softmax_cases,
    "Sum": sum_cases,
    "BroadcastTo": broadcast_to_cases,
    "Tile": tile_cases,
    "RealDiv": binary_cases(tf.math.truediv),
    "Div": binary_cases(lambda a, b: tf.raw_ops.Div(x=a, y=b)),
    "DivNoNan": binary_cases(tf.math.divide_no_nan),
    "Pow": binary_cases(tf.math.pow, pow_tol),
    "ReluGrad": binary_cases(lambda g, f: tf.raw_ops.ReluGrad(gradients=g, features=f),
                             pairs=[(s, s) for s in SHAPES]),
    "Sqrt": unary_cases(tf.math.sqrt),
    "Rsqrt": unary_cases(tf.math.rsqrt, lambda x, cpu: 4 * EPS * np.abs(cpu) + TINY),
    "Exp": unary_cases(tf.math.exp, lambda x, cpu: 4 * EPS * np.abs(cpu) + TINY),
    "Log": unary_cases(tf.math.log, lambda x, cpu: 4 * EPS * np.abs(cpu) + TINY),
    "Erf": unary_cases(tf.math.erf, lambda x, cpu: 4 * EPS * np.abs(cpu) + TINY),
    "Erfc": unary_cases(tf.math.erfc, lambda x, cpu: 8 * EPS * np.abs(cpu) + TINY),
    "Abs": unary_cases(tf.math.abs),
    "Softplus": unary_cases(tf.math.softplus, lambda x, cpu: 4 * EPS * np.abs(cpu) + TINY),
    "Minimum": binary_cases(tf.math.minimum),
    "SigmoidGrad": binary_cases(lambda y, dy: tf.raw_ops.SigmoidGrad(y=y, dy=dy),
                                lambda a, b, cpu: 4 * EPS * np.abs(cpu) + TINY,
                                pairs=[(s, s) for s in SHAPES]),
    "TanhGrad": binary_cases(lambda y, dy: tf.raw_ops.TanhGrad(y=y, dy=dy),
                             lambda a, b, cpu: 4 * EPS * np.abs(cpu) + TINY,
                             pairs=[(s, s) for s in SHAPES]),
    "RsqrtGrad": grad_cases(lambda y, dy: tf.raw_ops.RsqrtGrad(y=y, dy=dy)),
    # TF's CPU kernels vectorize these with approximations (a reciprocal
    # too): within a few ulp, not bit for bit.
    "Log1p": unary_cases(tf.math.log1p, REL4),
    "Reciprocal": unary_cases(tf.math.reciprocal, REL4),
    "Inv": unary_cases(lambda x: tf.raw_ops.Inv(x=x), REL4),
    "Expm1": unary_cases(tf.math.expm1, REL4),
    # exp(x) − 1: a few ulp of exp, absolute near 0.
    "Elu": unary_cases(tf.nn.elu, lambda x, cpu: 4 * EPS * (np.abs(cpu) + 1)),
    "Selu": unary_cases(tf.nn.selu, lambda x, cpu: 8 * EPS * (np.abs(cpu) + 1)),
    "Sign": unary_cases(tf.math.sign),
    "Floor": unary_cases(tf.math.floor),
    "Ceil": unary_cases(tf.math.ceil),
    "Round": unary_cases(tf.math.round),
    "Rint": unary_cases(tf.math.rint),
    "Softsign": unary_cases(tf.nn.softsign),
    # Keras' LeakyReLU (0.3), TF's default (0.2), a tiny, a negative and a steep slope.
    "LeakyRelu": lambda: (
        (f"alpha={a} {label}", fn, args, None)
        for a in (0.3, 0.2, 0.01, -1.5, 2.0)
        for label, fn, args, _ in unary_cases(lambda x, a=a: tf.raw_ops.LeakyRelu(features=x, alpha=a))()),
    "EluGrad": grad_cases(lambda g, y: tf.raw_ops.EluGrad(gradients=g, outputs=y)),
    "SeluGrad": grad_cases(lambda g, y: tf.raw_ops.SeluGrad(gradients=g, outputs=y)),
    "SoftplusGrad": grad_cases(lambda g, x: tf.raw_ops.SoftplusGrad(gradients=g, features=x)),
    "SoftsignGrad": grad_cases(lambda g, x: tf.raw_ops.SoftsignGrad(gradients=g, features=x)),
    # A select and a multiply: bit for bit, for Keras' slope and a negative one.
    "LeakyReluGrad": lambda: (
        (f"alpha={a} {label}", fn, args, None)
        for a in (0.3, -1.5)
        for label, fn, args, _ in grad_cases(
            lambda g, x, a=a: tf.raw_ops.LeakyReluGrad(gradients=g, features=x, alpha=a))()),
    "ReciprocalGrad": grad_cases(lambda y, dy: tf.raw_ops.ReciprocalGrad(y=y, dy=dy)),
    "InvGrad": grad_cases(lambda y, dy: tf.raw_ops.InvGrad(y=y, dy=dy)),
    "SqrtGrad": grad_cases(lambda y, dy: tf.raw_ops.SqrtGrad(y=y, dy=dy)),
    "MulNoNan": binary_cases(tf.math.multiply_no_nan),
    "Xdivy": binary_cases(tf.math.xdivy),
    "Xlogy": binary_cases(tf.math.xlogy, lambda a, b, cpu: 4 * EPS * np.abs(cpu) + TINY),
    "FloorDiv": binary_cases(tf.math.floordiv),
    "FloorMod": binary_cases(tf.math.floormod),
    "LogSoftmax": log_softmax_cases,
    "SparseSoftmaxCrossEntropyWithLogits": sparse_xent_cases,
    "SoftmaxCrossEntropyWithLogits": xent_cases,
    "Relu6": unary_cases(tf.nn.relu6),
    "Sigmoid": unary_cases(tf.math.sigmoid, lambda x, cpu: 8 * EPS * np.abs(cpu) + TINY),
    "Tanh": unary_cases(tf.math.tanh, lambda x, cpu: 8 * EPS * np.abs(cpu) + TINY),
    "Mean": mean_cases,
    "Pad": pad_cases,
    "Slice": slice_cases,
    "ConcatV2": concat_cases,
    "Split": split_cases,
    "SplitV": split_v_cases,
    "Unpack": unpack_cases,
    "Pack": pack_cases,
    "ReverseV2": reverse_cases,
    "Cumsum": cumsum_cases,
    "ZerosLike": like_cases(tf.raw_ops.ZerosLike),
    "OnesLike": like_cases(tf.raw_ops.OnesLike),
    "Transpose": transpose_cases,
    "StridedSlice": strided_slice_cases,
    "StridedSliceGrad": strided_slice_grad_cases,
    "Fill": fill_cases,
    "Conv2D": lambda: conv_cases(False),
    "DepthwiseConv2dNative": lambda: conv_cases(True),
    "MaxPool": pool_cases(lambda t, k, s, p: tf.nn.max_pool2d(t, k, s, p), True),
    "AvgPool": pool_cases(lambda t, k, s, p: tf.nn.avg_pool2d(t, k, s, p), False),
    "_FusedConv2D": fused_conv2d_cases,
    "Conv2DBackpropInput": lambda: conv_grad_cases(True),
    "Conv2DBackpropFilter": lambda: conv_grad_cases(False),
    "MaxPoolGrad": max_pool_grad_cases,
    "AvgPoolGrad": avg_pool_grad_cases,
    "FusedBatchNormV3": batch_norm_cases,
    "DepthwiseConv2dNativeBackpropInput": lambda: depthwise_grad_cases(True),
    "DepthwiseConv2dNativeBackpropFilter": lambda: depthwise_grad_cases(False),
}
# Input shapes for the "refused" check (each non-f32 dtype must raise, not
# run, on the device: the kernels are float32 only today); default (2, 2).
PROBE_SHAPES = {"BroadcastTo": [(2,)], "Tile": [(2,)], "_FusedMatMul": [(2, 2), (2, 2), (2,)], "BiasAdd": [(2, 2), (2,)],
                "MatMul": [(2, 2), (2, 2)], "BatchMatMul": [(2, 2), (2, 2)], "BatchMatMulV2": [(2, 2), (2, 2)],
                "BatchMatMulV3": [(2, 2), (2, 2)],
                "Einsum": [(2, 2, 2), (2, 2, 2)], "AddN": [(2, 2), (2, 2)],
                "Max": [(2, 2)], "Min": [(2, 2)], "Prod": [(2, 2)],
                "GatherV2": [(2, 2), (2,)], "Select": [(2, 2), (2, 2), (2, 2)],
                "SelectV2": [(2, 2), (2, 2), (2, 2)], "Cast": [(7,)],
                "LogicalAnd": [(2, 2), (2, 2)], "LogicalOr": [(2, 2), (2, 2)], "Bitcast": [(7,)],
                "StatelessRandomUniformV2": [(1,), (2,)], "RandomUniform": [(1,)], "UnsortedSegmentSum": [(2, 2), (2,)],
                "SparseSoftmaxCrossEntropyWithLogits": [(2, 2), (2,)],
                "SoftmaxCrossEntropyWithLogits": [(2, 2), (2, 2)],
                "Conv2D": [(1, 3, 3, 1), (1, 1, 1, 1)], "DepthwiseConv2dNative": [(1, 3, 3, 1), (1, 1, 1, 1)],
                "MaxPool": [(1, 2, 2, 1)], "AvgPool": [(1, 2, 2, 1)], "Pad": [(1, 4, 4, 3)],
                # The gradients' first cases: a float64 or int dy of the right shape.
                "Conv2DBackpropInput": [(1, 3, 3, 4), (3, 3, 3, 4)],
                "Conv2DBackpropFilter": [(1, 5, 5, 3), (1, 3, 3, 4)],
                "MaxPoolGrad": [(1, 6, 6, 3), (1, 3, 3, 3)], "AvgPoolGrad": [(1, 3, 3, 3)],
                "Slice": [(4, 5)], "ConcatV2": [(2, 3), (2, 4)], "Transpose": [(2, 3)],
                "Split": [(6, 4)], "SplitV": [(7, 3)], "Unpack": [(3, 4)], "Pack": [(3, 4), (3, 4)],
                "ReverseV2": [(3, 4)],
                "StridedSlice": [(4, 5)], "StridedSliceGrad": [(4, 5), (2, 3)], "Fill": [()],
                "FusedBatchNormV3": [(1, 2, 2, 2), (2,), (2,), (2,), (2,)],
                "DepthwiseConv2dNativeBackpropInput": [(1, 3, 3, 6), (3, 3, 3, 2)],
                "DepthwiseConv2dNativeBackpropFilter": [(1, 5, 5, 3), (1, 3, 3, 6)],
                "_FusedConv2D": [(1, 5, 5, 3), (3, 3, 3, 4), (4,)],
                **{op: [(2, 2), (2, 2)] for op in ("AddV2", "Add", "Sub", "Mul", "Maximum", "RealDiv",
                                                  "Div", "DivNoNan", "Pow", "ReluGrad",
                                                  "SquaredDifference", "Minimum", "SigmoidGrad",
                                                  "TanhGrad", "RsqrtGrad", "EluGrad", "SeluGrad",
                                                  "SoftplusGrad", "SoftsignGrad", "ReciprocalGrad",
                                                  "LeakyReluGrad",
                                                  "InvGrad", "SqrtGrad", "MulNoNan", "Xdivy", "Xlogy",
                                                  "FloorDiv", "FloorMod", "Equal", "NotEqual",
                                                  "Less", "LessEqual", "Greater", "GreaterEqual")}}


def run_on(device, fn, args):
    with tf.device(device):
        inputs = [tf.identity(tf.constant(a)) for a in args]
        out = fn(*inputs)
    return out


def ours_for(op, dtype):
    """Whether one of the plugin's kernels is registered for `op` on `dtype`."""
    for k in kernels.get_registered_kernels_for_op(op).kernel:
        if k.device_type != DEVICE_TYPE:
            continue
        allowed = [t for c in k.constraint for t in c.allowed_values.list.type]
        if dtype.as_datatype_enum in allowed:
            return True
    return False


def probe_dtypes(op, fn):
    """What the device does with each non-f32 dtype of `op` (soft placement
    off): `refused` (TF raises), `ours` (a tensorplug kernel for that type,
    e.g. int32 fills), or `TF's` (TF's own DEVICE_DEFAULT kernel ran it,
    e.g. int32 arithmetic in host memory)."""
    refused, tf_default, ours = [], [], []
    for dtype in OTHER_DTYPES:
        args = [np.ones(shape, dtype.as_numpy_dtype) for shape in PROBE_SHAPES.get(op, [(2, 2)])]
        try:
            out = run_on(DEV, fn, args)
            if out is None or not out.device.endswith(f"{DEVICE_TYPE}:0"):
                refused.append(dtype.name)
            else:
                (ours if ours_for(op, dtype) else tf_default).append(dtype.name)
        except tf.errors.OpError:
            refused.append(dtype.name)
    shown = f"refused: {', '.join(refused)}" if refused else ""
    if ours:
        shown += f"; {', '.join(ours)}: ours"
    if tf_default:
        shown += f"; {', '.join(tf_default)}: TF's own kernel"
    return shown


def takes_a_variable(op):
    """The ops TF runs beside a variable (host-bridge/src/variable_ops.rs):
    registered for every dtype to be placed with an FPGA variable, rewritten
    in graphs, refused eagerly (docs/ops.md); tests/tests/tf_variables.rs."""
    op_def = op_def_registry.get(op)
    return op_def is not None and any(a.type == types_pb2.DT_RESOURCE for a in op_def.input_arg)


def main():
    registered = sorted({k.op for k in kernels.get_all_registered_kernels().kernel
                         if k.device_type == DEVICE_TYPE})
    beside = [op for op in registered if takes_a_variable(op)]
    # The plugin's own int8 ops have no CPU kernel to compare with: they are
    # checked bit for bit against TFLite (tests/tests/int8_vs_tflite.rs).
    int8 = [op for op in registered if op.startswith(f"_Tensorplug{DEVICE_TYPE}")]
    missing = [op for op in registered if op not in SWEEPS and op not in beside + int8]
    rows, failures, total = [], [], 0
    if beside:
        rows.append((f"{len(beside)} ops on a variable: `{beside[0]}` … `{beside[-1]}`", 0, "-",
                     "-", "host-bridge/src/variable_ops.rs; tests/tests/tf_variables.rs"))
    if int8:
        rows.append((f"{len(int8)} int8 ops: `{int8[0]}` … `{int8[-1]}`", 0, "-", "-",
                     "no CPU kernel; bit-exact with TFLite: tests/tests/int8_vs_tflite.rs"))
    for op in registered:
        if op not in SWEEPS or (ONLY and op not in ONLY):
            continue
        worst, worst_case, count, first_fn, bounded = 0.0, "", 0, None, False
        # A case is (label, fn, args, tolerance[, the CPU's fn where TF's CPU kernel lacks the attribute]).
        for label, fn, args, tolerance, *cpu_fn in SWEEPS[op]():
            first_fn = first_fn or fn
            bounded = bounded or tolerance is not None
            count += 1
            where = f"{op}({label})"
            try:
                result = run_on(DEV, fn, args)
                placed = result.device
                ours = result.numpy()  # device errors surface here (asynchronous kernels)
                cpu = run_on(CPU, (cpu_fn or [fn])[0], args).numpy()
            except Exception as error:  # noqa: BLE001 - every failure is reported
                failures.append(f"{where}: {type(error).__name__}: {str(error)[:200]}")
                continue
            if not placed.endswith(f"{DEVICE_TYPE}:0"):
                failures.append(f"{where}: ran on {placed}")
                continue
            if ours.shape != cpu.shape:
                failures.append(f"{where}: shape {ours.shape} != {cpu.shape}")
                continue
            same = (ours == cpu) | (np.isnan(ours) & np.isnan(cpu))
            if tolerance is None:
                ratio = 0.0 if same.all() else float("inf")
            else:
                # Equal values (infinities, NaN) pass; NaN on one side only fails.
                with np.errstate(invalid="ignore"):
                    diff = np.abs(ours.astype(np.float64) - cpu.astype(np.float64))
                diff = np.nan_to_num(np.where(same, 0.0, diff), nan=np.inf)
                ratio = float((diff / tolerance(cpu)).max()) if diff.size else 0.0
            if ratio > 1.0:
                failures.append(f"{where}: |dev - cpu| / tolerance = {ratio:.3g}")
            if ratio >= worst:
                worst, worst_case = ratio, label
        total += count
        shown = f"{worst:.3g}" if bounded else ("exact" if worst == 0 else "not exact")
        rows.append((op, count, probe_dtypes(op, first_fn), shown, worst_case if worst else "-"))
    table = ["| op | cases | other dtypes on the device | worst \\|dev − cpu\\| / tolerance | worst case |",
             "|---|---|---|---|---|"]
    table += [f"| {op if ' ' in op else f'`{op}`'} | {n} | {refused} | {worst} | {case} |"
              for op, n, refused, worst, case in rows]
    print("\n".join(table))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("\n".join(table) + "\n")
    for op in [] if ONLY else missing:
        failures.append(f"{op}: registered for {DEVICE_TYPE} but has no sweep in op_sweep.py")
    for failure in failures:
        print(f"MISMATCH {failure}", file=sys.stderr)
    swept = len([r for r in rows if r[1]])
    print(f"op sweep ({MODE}): {swept} ops, {total} cases, {len(failures)} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
