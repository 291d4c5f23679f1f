"""Shared helpers of the tf_kernels_* scenarios: tolerances (docs/ops.md) and
placement-log capture."""
import os
import re
import sys
import tempfile

import numpy as np

EPS = float(np.finfo(np.float32).eps)
TINY = float(np.finfo(np.float32).tiny)


def gemm_tolerance(a, b, k, bias=None):
    """2·(k+2)·ε·(Σ|a·b| + |bias|) per element (docs/device-numerics.md)."""
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    if bias is not None:
        scale = scale + np.abs(bias.astype(np.float64))
    return 2 * (k + 2) * EPS * scale + TINY


def check(name, ours, want, tolerance=None):
    """Asserts `ours` matches `want` (exactly when no tolerance); returns the
    worst |ours - want| / tolerance (0 for exact checks)."""
    ours, want = np.asarray(ours), np.asarray(want)
    assert ours.shape == want.shape, f"{name}: shape {ours.shape} != {want.shape}"
    assert ours.dtype == np.float32, f"{name}: dtype {ours.dtype}"
    if tolerance is None:
        same = (ours == want) | (np.isnan(ours) & np.isnan(want))
        assert same.all(), f"{name}: not exact, max diff {np.nanmax(np.abs(ours - want))}"
        return 0.0
    diff = np.abs(ours.astype(np.float64) - want.astype(np.float64))
    ratio = float((diff / tolerance).max()) if diff.size else 0.0
    assert ratio <= 1.0, f"{name}: |ours - cpu| / tolerance = {ratio}"
    return ratio


class StderrCapture:
    """Captures fd 2 (where TF's C++ logging goes) into a file."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()
        return False


PLACED = re.compile(r"placer\.cc:\d+\] (\S+): \((\w+)\): (\S+)")
EXECUTED = re.compile(r"Executing op (\w+) in device (\S+)")


def tf_variable(v):
    """The tf.Variable behind a Keras variable: Keras 3 wraps it (`.value`);
    Keras 2's (TF 2.15) is one, whose `value` is a method."""
    return v if callable(getattr(v, "value", None)) else v.value


def placements(log_text):
    """(node, op type, device) for every graph node and eager op in the log."""
    out = [(m.group(1), m.group(2), m.group(3)) for m in PLACED.finditer(log_text)]
    out += [(m.group(1), m.group(1), m.group(2)) for m in EXECUTED.finditer(log_text)]
    return out
