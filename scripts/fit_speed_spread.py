#!/usr/bin/env python3
"""Fits cluster.gpu_speed_spread (sigma) on published MFU-vs-scale series.

A series is a set of validation cases that differ only in their GPU count (one model, one software,
one cluster): the case name with its "<N>gpu" token removed. Within a series the level of the
prediction (how fast the stack's kernels are) is not what sigma is about; the trend is. So each case's
residual r = ln(predicted time / measured time) (a throughput or MFU figure inverted) is taken
relative to its series' mean, and sigma is chosen on a grid to minimize the sum of squares of those
within-series residuals. The script prints, for each sigma, every case's residual and within-series
residual, how much the residual changes from the smallest to the largest GPU count of each series
(-: the run slowed down with scale more than the prediction did), and the sum of squares.
Predictions are real ones (`--set cluster.gpu_speed_spread=S`; analytic backend unless `--backend
simgrid`, which sees the fabric's contention).

  scripts/fit_speed_spread.py build/sim/cli/trainsim validation/training-scale
  scripts/fit_speed_spread.py build/sim/cli/trainsim validation/training-scale --grid 0,0.01,0.05

docs/validation.md ("Variability at scale") has the figures this gave. Only the standard library.
"""

import argparse
import json
import math
import re
import subprocess
import sys

TIME_FIGURES = {"iteration_time_s"}


def validate(trainsim, paths, sigma, backend):
    cmd = [trainsim, "validate", *paths, "--backend", backend, "--format", "json", "--quiet",
           "--set", f"cluster.gpu_speed_spread={sigma}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout)["cases"]


def series_of(name):
    m = re.search(r"-(\d+)gpu", name)
    if not m:
        return None, None
    return name[: m.start()] + name[m.end():], int(m.group(1))


def residuals(cases):
    """{series: [(gpus, name, r, predicted, measured, metric)]}, r = ln(time ratio)."""
    out = {}
    for c in cases:
        if "signed_error" not in c:
            sys.exit(f"{c['case']}: {c.get('error', 'not compared')}")
        key, gpus = series_of(c["case"])
        if key is None:
            continue
        ratio = c["predicted"] / c["measured"]
        r = math.log(ratio) if c["metric"] in TIME_FIGURES else -math.log(ratio)
        out.setdefault(key, []).append((gpus, c["case"], r, c["predicted"], c["measured"], c["metric"]))
    for rows in out.values():
        rows.sort()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trainsim")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--grid", default="0,0.0025,0.005,0.01,0.02,0.03,0.04,0.05,0.06,0.08",
                    help="comma-separated sigma values")
    ap.add_argument("--backend", default="analytic", help="analytic (default) or simgrid")
    args = ap.parse_args()
    grid = [float(s) for s in args.grid.split(",")]
    best = None
    for sigma in grid:
        series = residuals(validate(args.trainsim, args.paths, sigma, args.backend))
        ss = 0.0
        print(f"sigma {sigma:g}")
        for key, rows in sorted(series.items()):
            mean = sum(r for _, _, r, *_ in rows) / len(rows)
            for gpus, name, r, pred, meas, metric in rows:
                ss += (r - mean) ** 2
                print(f"  {name:48s} {metric:16s} pred {pred:9.4g} meas {meas:9.4g} "
                      f"level {100 * (math.exp(r) - 1):+6.1f}%  within series {100 * (r - mean):+6.2f}%")
            lo, hi = rows[0], rows[-1]
            print(f"  {key}: residual change {lo[0]} -> {hi[0]} GPUs: {100 * (hi[2] - lo[2]):+.2f}% (time)")
        print(f"  sum of squares of within-series residuals: {ss * 1e4:.3f} (%^2)")
        if best is None or ss < best[1]:
            best = (sigma, ss)
    print(f"best sigma on the grid: {best[0]:g} (sum of squares {best[1] * 1e4:.3f} %^2)")


if __name__ == "__main__":
    main()
