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
NO_JIT = "No JIT device registered for "


def _no_jit_types():
    """Device types without XLA, shared by every tensorplug wheel's hook
    (whichever of them patches Keras)."""
    return sys.__dict__.setdefault("_tensorplug_no_jit_device_types", set())


def patch_trainer(module):
    types = _no_jit_types()
    trainer = module.Trainer
    if getattr(trainer._resolve_auto_jit_compile, "_tensorplug", False):
        return
    keras_decision = trainer._resolve_auto_jit_compile

    def _resolve_auto_jit_compile(self):
        if module.backend.backend() == "tensorflow":
            import tensorflow as tf

            others = {d.device_type for d in tf.config.list_physical_devices()} - {"CPU"}
            if others and others <= types:
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


PATCHES = {TRAINER: patch_trainer, TF_TRAINER: patch_tf_trainer}


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
