"""Plots the soak samples `cargo xtask soak` collected and checks them.

soak_plot.py <dir>: every `<dir>/*.csv` (a `seconds` column, then
`rss_kib`, `fds`, `threads` and maybe `device_bytes`) becomes one row of
panels in `<dir>/soak.png`. For each, growth from the sample at a tenth of
the run (the warm-up) to the last must be under 1 MiB of RSS and none of
descriptors, threads and device memory; the verdicts are printed as a
table, and the exit code is 1 if any grew.

TF and Keras themselves grow while `fit` loops (a run on the CPU, no device
of ours involved: about 10 KiB an epoch here). So a `fit_*` soak's RSS
bound is 1 MiB plus what the `fit_cpu` control grew per epoch, times its
own epochs.
"""
import csv
import glob
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

directory = sys.argv[1]
paths = sorted(glob.glob(os.path.join(directory, "*.csv")))
if not paths:
    sys.exit(f"no samples in {directory}")
columns = ["rss_kib", "fds", "threads", "device_bytes"]
limits = {"rss_kib": 1024, "fds": 0, "threads": 0, "device_bytes": 0}
fig, axes = plt.subplots(len(paths), len(columns), figsize=(16, 3.2 * len(paths)),
                         squeeze=False)
bad = []


def load(path):
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def growth_per_epoch(rows):
    warm = rows[len(rows) // 10]
    epochs = rows[-1]["epochs"] - warm["epochs"]
    return (rows[-1]["rss_kib"] - warm["rss_kib"]) / epochs if epochs > 0 else 0.0


control = os.path.join(directory, "fit_cpu.csv")
cpu_per_epoch = max(growth_per_epoch(load(control)), 0.0) if os.path.exists(control) else 0.0
print(f"TF's own growth (fit_cpu): {cpu_per_epoch:.1f} KiB per epoch")
print("| soak | samples | seconds | RSS growth (KiB) | fds | threads | device bytes |")
print("|---|---|---|---|---|---|---|")
for row, path in enumerate(paths):
    name = os.path.splitext(os.path.basename(path))[0]
    rows = load(path)
    if len(rows) < 2:
        bad.append(f"{name}: only {len(rows)} samples")
        continue
    warm = rows[len(rows) // 10]
    cells = []
    for col, key in enumerate(columns):
        ax = axes[row][col]
        if key not in rows[0]:
            ax.axis("off")
            cells.append("-")
            continue
        ax.plot([r["seconds"] for r in rows], [r[key] for r in rows])
        ax.axvline(warm["seconds"], color="grey", linestyle=":")
        ax.set_title(f"{name}: {key}")
        ax.set_xlabel("seconds")
        growth = rows[-1][key] - warm[key]
        limit = limits[key]
        if key == "rss_kib" and name.startswith("fit_") and name != "fit_cpu":
            limit += cpu_per_epoch * (rows[-1]["epochs"] - warm["epochs"])
        cells.append(f"{growth:+.0f} (bound {limit:.0f})" if key == "rss_kib" else f"{growth:+.0f}")
        if growth > limit and name != "fit_cpu":
            bad.append(f"{name}: {key} grew {growth:+.0f} after warm-up")
    print(f"| {name} | {len(rows)} | {rows[-1]['seconds']:.0f} | " + " | ".join(cells) + " |")
fig.tight_layout()
out = os.path.join(directory, "soak.png")
fig.savefig(out, dpi=80)
print(f"plot: {out}")
if bad:
    print("GREW: " + "; ".join(bad))
    sys.exit(1)
