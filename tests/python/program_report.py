"""Device programs seen from a test: the largest program the fallback
report lists, and a function called through programs against the same
function op by op."""
import os

import tensorflow as tf


def largest_program(report):
    """The most nodes of a program in the fallback report at `report` (0
    for none)."""
    with open(report) as f:
        nodes = [int(line.rsplit(": ", 1)[1].split()[0]) for line in f
                 if line.startswith("program ") and line.rstrip().endswith(" nodes")]
    return max(nodes, default=0)


def equal_op_by_op(call, x, calls=3):
    """Calls `tf.function(call)` on `x` `calls` times with programs on, then
    once through a second function made with programs off; asserts every
    output is the same bytes as op by op's, which it returns. Leaves
    programs on. Run it under the device scope."""
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "on"
    programs = tf.function(call)
    got = [programs(x).numpy() for _ in range(calls)]
    # The pass reads the switch when TF optimizes a function, at its first call.
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "off"
    want = tf.function(call)(x).numpy()
    os.environ["TENSORPLUG_GRAPH_PROGRAMS"] = "on"
    assert all(g.tobytes() == want.tobytes() for g in got), (got, want)
    return want
