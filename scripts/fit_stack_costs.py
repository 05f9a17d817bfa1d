#!/usr/bin/env python3
"""Fit the composer stack's constants on published llm-foundry runs (issue 27; docs/validation.md,
"The llm-foundry benchmark table").

Four constants are fitted jointly, by a grid search that predicts every fit case with the analytic
backend (`trainsim validate --set profile.device...`) and keeps the point with the smallest mean
|error| on the fit cases:
  - the eager GEMM efficiency (absolute; sim/core/stack.cpp EAGER_GEMM_A100 = it / Megatron's),
  - the FlashAttention efficiency of Composer's attention kernel (absolute; COMPOSER_FLASH = it /
    (Megatron's FlashAttention efficiency x the eager GEMM factor)),
  - FlashAttention's head-size term (sim/core/device.cpp FLASH_HEAD_DIM_OVERHEAD),
  - Composer's host time per optimizer step (COMPOSER_STEP_S).
It then prints the held-out folders' figures with the binary's own constants (write the chosen point
into sim/core/stack.cpp and device.cpp, rebuild, and they are the chosen point's).

Usage: scripts/fit_stack_costs.py [--trainsim BIN] [--fit DIR ...] [--held-out DIR ...] [--gpu A100|H100]
Defaults: build/sim/cli/trainsim, fit on validation/training-llmfoundry, held out
validation/training-fsdp-dev and validation/training-torchtitan, A100 rows only.
"""
import argparse
import glob
import itertools
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def validate(trainsim, files, sets):
    cmd = [trainsim, "validate", *files, "--backend", "analytic", "--format", "json", "-q"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if out.returncode not in (0, 3):
        sys.exit(f"validate failed ({out.returncode}): {out.stderr}")
    return {c["case"]: c["signed_error"] for c in json.loads(out.stdout)["cases"] if "signed_error" in c}


def summary(errors):
    a = [abs(v) for v in errors.values()]
    return statistics.median(a), statistics.mean(a), max(a)


def cases(folders, gpu):
    files = []
    for d in folders:
        files += sorted(f for f in glob.glob(os.path.join(REPO, d, "*.json")) if gpu.lower() in os.path.basename(f).lower())
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trainsim", default=os.path.join(REPO, "build/sim/cli/trainsim"))
    ap.add_argument("--fit", nargs="+", default=["validation/training-llmfoundry"])
    ap.add_argument("--held-out", nargs="*", default=["validation/training-fsdp-dev", "validation/training-torchtitan"])
    ap.add_argument("--gpu", default="a100", help="only cases whose file name holds this (a100, h100)")
    ap.add_argument("--gemm", type=float, nargs="+", default=[0.69, 0.70, 0.71, 0.72, 0.73])
    ap.add_argument("--flash", type=float, nargs="+", default=[0.32, 0.335, 0.35])
    ap.add_argument("--head", type=float, nargs="+", default=[8, 12, 16, 20])
    ap.add_argument("--step-ms", type=float, nargs="+", default=[35, 50, 75, 100])
    args = ap.parse_args()

    fit = cases(args.fit, args.gpu)
    if not fit:
        sys.exit("no fit cases")
    grid = list(itertools.product(args.gemm, args.flash, args.head, args.step_ms))

    def point(p):
        gemm, flash, head, step = p
        sets = [f"profile.device.ops.gemm.max_efficiency={gemm}", f"profile.device.ops.flash_attention.max_efficiency={flash}",
                f"profile.device.flash_head_dim_overhead={head}", f"profile.device.step_host_latency={step} ms"]
        return p, sets, summary(validate(args.trainsim, fit, sets))

    print(f"{len(fit)} fit cases, {len(grid)} grid points")
    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        results = list(ex.map(point, grid))
    results.sort(key=lambda r: r[2][1])
    print("best by mean |error| on the fit cases (gemm, flash, head term, step ms): median / mean / max")
    for p, _, (med, mean, mx) in results[:8]:
        print(f"  {p}: {100 * med:.1f}% / {100 * mean:.1f}% / {100 * mx:.1f}%")
    best = results[0][0]

    megatron = json.loads(subprocess.run([args.trainsim, "describe", "profile", "--gpu",
                                          "A100-SXM4-80GB" if args.gpu == "a100" else "H100-SXM5-80GB"],
                                         capture_output=True, text=True, check=True).stdout)["device"]["ops"]
    gemm_factor = best[0] / megatron["gemm"]["max_efficiency"]
    flash_factor = best[1] / (megatron["flash_attention"]["max_efficiency"] * gemm_factor)
    print(f"chosen: eager GEMM factor {gemm_factor:.3f} (absolute {best[0]}), composer FlashAttention factor "
          f"{flash_factor:.2f} (absolute {best[1]}), head term {best[2]:g}, step {best[3]:g} ms")
    for d in args.held_out:
        held = cases([d], args.gpu)
        if not held:
            continue
        # The binary's own constants (the chosen point, once written into stack.cpp / device.cpp): an
        # absolute --set would give every stack Composer's attention kernel.
        shipped = summary(validate(args.trainsim, held, []))
        print(f"held out {d} ({len(held)}), this binary's constants: median {100 * shipped[0]:.1f}%, "
              f"max {100 * shipped[2]:.1f}%")


if __name__ == "__main__":
    main()
