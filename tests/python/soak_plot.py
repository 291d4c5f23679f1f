"""Plots the soak samples `cargo xtask soak` collected and checks them.

soak_plot.py <dir>: every `<dir>/*.csv` (a `seconds` column, then
`rss_kib`, `fds`, `threads` and maybe `device_bytes`) becomes one row of
panels in `<dir>/soak.png`. For each, growth from the sample at a tenth of
the run (the warm-up) to the last must be under 1 MiB of RSS and none of
descriptors, threads and device memory; the verdicts are printed as a
table, and the exit code is 1 if any grew.
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
print("| soak | samples | seconds | RSS growth (KiB) | fds | threads | device bytes |")
print("|---|---|---|---|---|---|---|")
for row, path in enumerate(paths):
    name = os.path.splitext(os.path.basename(path))[0]
    with open(path) as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
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
        cells.append(f"{growth:+.0f}")
        if growth > limits[key]:
            bad.append(f"{name}: {key} grew {growth:+.0f} after warm-up")
    print(f"| {name} | {len(rows)} | {rows[-1]['seconds']:.0f} | " + " | ".join(cells) + " |")
fig.tight_layout()
out = os.path.join(directory, "soak.png")
fig.savefig(out, dpi=80)
print(f"plot: {out}")
if bad:
    print("GREW: " + "; ".join(bad))
    sys.exit(1)
