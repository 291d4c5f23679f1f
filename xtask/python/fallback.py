"""Which float ops of a function run on the CPU instead of {device_type}.

The wheel installs this as `{lib}_fallback`. The plugin's graph pass makes
the same report on stderr, once per node, for every graph that runs on a
{device_type} device (`TENSORPLUG_FALLBACK`; docs/graph-optimizer.md, "The
fallback report"); this asks for it in a notebook:

    import {lib}_fallback as fallback
    for op in fallback.report(model, x):   # any callable and its inputs
        print(op)                            # Erfc 'model/…/Erfc' (no kernel)

`report` runs the callable once, as a new `tf.function`, with the pass told
to append what it finds to a temporary file, and returns those lines. The
file also holds the device-program decisions (`program …`, `no program
…`, with TENSORPLUG_GRAPH_PROGRAMS on): their ops run on the device, so
`report` leaves them out; `programs` returns them.
"""
import os
import tempfile

import tensorflow as tf

DEVICE_TYPE = "{device_type}"
_FILE_VARS = ("TENSORPLUG_{device_type}_FALLBACK_FILE", "TENSORPLUG_FALLBACK_FILE")


PROGRAM_LINES = ("program ", "no program ")


def report(fn, *args, **kwargs):
    """The float ops of `fn(*args, **kwargs)` that run on the CPU, as
    `<op> '<node>' (<why>)` strings, in graph order (empty: none)."""
    return [line for line in _lines(fn, *args, **kwargs) if not line.startswith(PROGRAM_LINES)]


def programs(fn, *args, **kwargs):
    """What the graph pass made of `fn(*args, **kwargs)`'s device segments
    (TENSORPLUG_GRAPH_PROGRAMS on): `program <node>: <n> nodes`, or why a
    group stays op by op."""
    return [line for line in _lines(fn, *args, **kwargs) if line.startswith(PROGRAM_LINES)]


def _lines(fn, *args, **kwargs):
    saved = {var: os.environ.get(var) for var in _FILE_VARS}
    fd, path = tempfile.mkstemp(prefix="tensorplug-fallback-", suffix=".txt")
    os.close(fd)
    try:
        os.environ[_FILE_VARS[0]] = path
        tf.function(fn)(*args, **kwargs)
        with open(path) as found:
            lines = [line.rstrip("\n") for line in found if line.strip()]
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
        os.remove(path)
    return list(dict.fromkeys(lines))
