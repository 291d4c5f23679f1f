"""tensorplug ({lib}): Keras' jit_compile="auto" without XLA on {device_type} devices.

Keras 3 turns XLA on for `jit_compile="auto"` (the default of
`model.compile`) whenever TensorFlow lists a non-CPU device; XLA has no
{device_type} backend, so every default `compile()` would fail with "No JIT
device registered for {device_type}". This module, run at Python start by
`{lib}_keras.pth`, adjusts Keras when (and only when) Keras' trainer is
imported:

- "auto" means no XLA when every non-CPU device TensorFlow lists is a
  tensorplug device without XLA. Any other machine (none of them, or a GPU
  or TPU beside them) keeps Keras' own decision.
- With TENSORPLUG_AS_GPU (or TENSORPLUG_{device_type}_AS_GPU) on, the
  devices register as GPU, so GPU counts as one of them.
- An explicit `jit_compile=True` that reaches a {device_type} device fails
  with an error that says what to do.
- Keras computes a grouped 2-D convolution (`Conv2D(groups=...)`, as
  ConvNeXt's depthwise ones) through XLA, which TensorFlow's CPU kernels
  lack; on the same machines it is computed with TensorFlow ops instead: a
  depthwise convolution when each group is one channel (and no dilation),
  else one convolution per group.

Set TENSORPLUG_KERAS_AUTO_JIT=keras to leave Keras untouched. Installed by
the {lib} wheel; tensorplug's docs/wheel.md, "Keras and XLA".
"""
import importlib.machinery
import os
import sys

DEVICE_TYPE = "{device_type}"
SWITCH = "TENSORPLUG_KERAS_AUTO_JIT"
TRAINER = "keras.src.trainers.trainer"
TF_TRAINER = "keras.src.backend.tensorflow.trainer"
TF_NN = "keras.src.backend.tensorflow.nn"
NO_JIT = "No JIT device registered for "


def _no_jit_types():
    """Device types without XLA, shared by every tensorplug wheel's hook
    (whichever of them patches Keras)."""
    return sys.__dict__.setdefault("_tensorplug_no_jit_device_types", set())


def _only_no_jit_devices():
    """Whether every non-CPU device TensorFlow lists is one without XLA."""
    import tensorflow as tf

    others = {d.device_type for d in tf.config.list_physical_devices()} - {"CPU"}
    return bool(others) and others <= _no_jit_types()


def patch_trainer(module):
    trainer = module.Trainer
    if getattr(trainer._resolve_auto_jit_compile, "_tensorplug", False):
        return
    keras_decision = trainer._resolve_auto_jit_compile

    def _resolve_auto_jit_compile(self):
        if module.backend.backend() == "tensorflow" and _only_no_jit_devices():
            return False
        return keras_decision(self)

    _resolve_auto_jit_compile._tensorplug = True
    trainer._resolve_auto_jit_compile = _resolve_auto_jit_compile


def _explained(error):
    import tensorflow as tf

    text = str(error)
    if not isinstance(error, tf.errors.InvalidArgumentError) or NO_JIT not in text:
        return None
    device = text.split(NO_JIT, 1)[1].split()[0].strip(".,'\"")
    return tf.errors.InvalidArgumentError(
        None, None,
        f"jit_compile=True asks XLA to compile this model, and XLA has no {device} "
        f"backend (tensorplug). Compile with jit_compile=False, or leave jit_compile at "
        f"its default (\"auto\" runs without XLA on {device} machines). "
        f"TensorFlow said: {NO_JIT}{device}")


def patch_tf_trainer(module):
    trainer = module.TensorFlowTrainer
    for name in ("fit", "evaluate", "predict", "train_on_batch", "test_on_batch",
                 "predict_on_batch"):
        method = getattr(trainer, name, None)
        if method is None or getattr(method, "_tensorplug", False):
            continue

        def wrapper(self, *args, __method=method, **kwargs):
            try:
                return __method(self, *args, **kwargs)
            except Exception as error:
                clear = _explained(error)
                if clear is None:
                    raise
                raise clear from None

        wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
        wrapper._tensorplug = True
        setattr(trainer, name, wrapper)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _grouped_conv_2d(inputs, kernel, strides, padding, dilation_rate):
    """A grouped NHWC convolution with TensorFlow ops, no XLA."""
    import tensorflow as tf

    channels, per_group, out = inputs.shape[-1], kernel.shape[-2], kernel.shape[-1]
    groups = channels // per_group
    (sh, sw), (dh, dw) = _pair(strides), _pair(dilation_rate)
    # TF dilates a depthwise convolution through SpaceToBatchND, which our
    # devices lack: then one dilated Conv2D per group instead.
    depthwise = per_group == 1 and sh == sw and (dh, dw) == (1, 1)
    if depthwise:
        # [kh, kw, 1, C·m] is [kh, kw, C, m]: group c's outputs c·m … c·m+m-1.
        filters = tf.reshape(kernel, (kernel.shape[0], kernel.shape[1], channels, out // channels))
        return tf.nn.depthwise_conv2d(inputs, filters, (1, sh, sw, 1), padding.upper())
    pairs = zip(tf.split(inputs, groups, axis=-1), tf.split(kernel, groups, axis=-1))
    # `conv2d`, not `convolution`, which dilates through SpaceToBatchND.
    return tf.concat([tf.nn.conv2d(x, k, (sh, sw), padding.upper(), dilations=(dh, dw))
                      for x, k in pairs], axis=-1)


def patch_nn(module):
    keras_conv = module.conv
    if getattr(keras_conv, "_tensorplug", False):
        return

    def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
        last = module.backend.standardize_data_format(data_format) == "channels_last"
        if (last and len(inputs.shape) == 4 and inputs.shape[-1] is not None
                and inputs.shape[-1] != kernel.shape[-2] and _only_no_jit_devices()):
            return _grouped_conv_2d(inputs, kernel, strides, padding, dilation_rate)
        return keras_conv(inputs, kernel, strides, padding, data_format, dilation_rate)

    conv.__name__, conv.__doc__ = keras_conv.__name__, keras_conv.__doc__
    conv._tensorplug = True
    module.conv = conv


PATCHES = {TRAINER: patch_trainer, TF_TRAINER: patch_tf_trainer, TF_NN: patch_nn}


def _apply(name, module):
    try:
        PATCHES[name](module)
    except Exception as error:  # never break `import keras`
        print(f"tensorplug: cannot adjust Keras for {DEVICE_TYPE} ({error}); "
              f"pass jit_compile=False to model.compile", file=sys.stderr)


class _PatchOnImport:
    """Patches each module of PATCHES right after it is first executed."""

    def __init__(self, names):
        self.waiting = set(names)

    def find_spec(self, name, path=None, target=None):
        if name not in self.waiting:
            return None
        self.waiting.discard(name)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_and_patch(module):
            execute(module)
            _apply(name, module)

        spec.loader.exec_module = exec_and_patch
        return spec


def _as_gpu():
    for var in (f"TENSORPLUG_{DEVICE_TYPE}_AS_GPU", "TENSORPLUG_AS_GPU"):
        value = os.environ.get(var, "").strip().lower()
        if value:
            return value in ("1", "on", "true", "yes")
    return False


def install():
    if os.environ.get(SWITCH, "").strip().lower() == "keras":
        return
    _no_jit_types().add("GPU" if _as_gpu() else DEVICE_TYPE)
    waiting = []
    for name in PATCHES:
        if name in sys.modules:
            _apply(name, sys.modules[name])
        else:
            waiting.append(name)
    if waiting:
        sys.meta_path.insert(0, _PatchOnImport(waiting))


install()
