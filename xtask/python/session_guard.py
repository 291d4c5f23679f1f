"""tensorplug ({lib}): TF1 callables that would fetch into {device_type} memory fail clearly.

`Session._make_callable_from_options` with `CallableOptions.fetch_devices`
naming a {device_type} device makes TensorFlow return the fetched tensor in
device memory (`_Retval` on the device). Python then reads that memory as
host memory, and the process dies with SIGSEGV: a {device_type}'s memory
is not host memory (PCIe, a link to an MCU). This module, run at Python
start by `{lib}_session.pth`, wraps that method when TensorFlow's session
module is first imported: such options raise `UnimplementedError`, saying
to fetch on the CPU. Any other options are untouched. Installed by the
{lib} wheel; tensorplug's docs/wheel.md, "TF1 callables".
"""
import importlib.machinery
import sys

DEVICE_TYPE = "{device_type}"
SESSION = "tensorflow.python.client.session"


def _on_device(name):
    """Whether device name `name` is one of this plugin's devices (also
    when they register as GPU, TENSORPLUG_AS_GPU)."""
    kind = name.rsplit("/device:", 1)[-1].split(":", 1)[0].upper() if "/device:" in name else ""
    return kind == DEVICE_TYPE or (kind == "GPU" and _as_gpu())


def _as_gpu():
    import os

    for var in (f"TENSORPLUG_{DEVICE_TYPE}_AS_GPU", "TENSORPLUG_AS_GPU"):
        value = os.environ.get(var, "").strip().lower()
        if value:
            return value in ("1", "on", "true", "yes")
    return False


def patch_session(module):
    session = module.BaseSession
    make = session._make_callable_from_options
    if getattr(make, "_tensorplug", False):
        return

    def _make_callable_from_options(self, callable_options):
        fetched = [t for t, d in callable_options.fetch_devices.items() if _on_device(d)]
        if fetched:
            from tensorflow.python.framework import errors

            raise errors.UnimplementedError(
                None, None,
                f"CallableOptions.fetch_devices puts {', '.join(sorted(fetched))} in "
                f"{DEVICE_TYPE} memory, which Python cannot read (tensorplug): leave "
                f"fetch_devices unset for them, and TensorFlow copies them to the CPU")
        return make(self, callable_options)

    _make_callable_from_options._tensorplug = True
    _make_callable_from_options.__doc__ = make.__doc__
    session._make_callable_from_options = _make_callable_from_options


class _PatchOnImport:
    """Patches TensorFlow's session module right after it is first executed."""

    def find_spec(self, name, path=None, target=None):
        if name != SESSION:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute = spec.loader.exec_module

        def exec_and_patch(module):
            execute(module)
            try:
                patch_session(module)
            except Exception as error:  # never break `import tensorflow`
                print(f"tensorplug: cannot guard TF1 callables for {DEVICE_TYPE} ({error})",
                      file=sys.stderr)

        spec.loader.exec_module = exec_and_patch
        return spec


try:
    if SESSION in sys.modules:
        patch_session(sys.modules[SESSION])
    else:
        sys.meta_path.insert(0, _PatchOnImport())
except Exception as error:  # never break start-up
    print(f"tensorplug: cannot guard TF1 callables for {DEVICE_TYPE} ({error})", file=sys.stderr)
