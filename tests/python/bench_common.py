"""Shared by the tests/python/bench_*.py scripts `cargo xtask bench` runs:
the figure-file writer (docs/benchmarks.md) and interleaved medians."""
import json
import os
import statistics
import sys
import time


def figure_dir():
    """`<target>/tensorplug-bench`, `<target>` from TENSORPLUG_BENCH_TARGET."""
    target = os.environ.get("TENSORPLUG_BENCH_TARGET")
    if not target:
        sys.exit("TENSORPLUG_BENCH_TARGET is not set (cargo xtask bench sets it)")
    path = os.path.join(target, "tensorplug-bench")
    os.makedirs(path, exist_ok=True)
    return path


def write_figure(figure_id, figure, value, baseline, unit, goal):
    record = {"figure": figure, "value": value, "baseline": baseline,
              "unit": unit, "goal": goal}
    with open(os.path.join(figure_dir(), f"{figure_id}.json"), "w") as f:
        json.dump(record, f)
    print(f"{figure_id}: {json.dumps(record)}")


def interleaved_medians(subjects, reps, timed):
    """Runs `timed(subject)` for each subject in turn, `reps` rounds, so a
    shared machine's slow spells hit every subject alike; returns the median
    seconds per subject."""
    samples = {name: [] for name in subjects}
    for _ in range(reps):
        for name in subjects:
            samples[name].append(timed(name))
    return {name: statistics.median(values) for name, values in samples.items()}


def clock():
    return time.perf_counter()
