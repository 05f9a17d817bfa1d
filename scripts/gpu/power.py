#!/usr/bin/env python3
"""What one GPU draws by what it does: the figures behind sim/core/power.hpp's activity shares.

Phases, each for --seconds of wall clock after a warm-up, measured with the board's energy counter
(NVML, scripts/gpu/nvml.py) and sampled every 0.1 s for the instantaneous power and the SM clock:
  idle-no-context   before CUDA is initialized in this process
  idle-context      a CUDA context open, nothing running
  spin              one spinning kernel (torch.cuda._sleep): a GPU that waits on a peer in a NCCL kernel
  gemm              bf16 8192^3 matrix products back to back (tensor cores; achieved TFLOP/s)
  memory            bf16 element-wise add of 1 GiB tensors back to back (HBM-bound; achieved TB/s)
Prints one JSON line per phase.
"""
import argparse
import json
import statistics
import threading
import time

from nvml import Nvml


def sampled(g, seconds, work=None, sync=None):
    """Runs work() until `seconds` have passed; returns (joules, wall, power samples, clock samples, calls)."""
    samples, clocks, stop = [], [], threading.Event()

    def sampler():
        while not stop.is_set():
            samples.append(g.power_w())
            clocks.append(g.sm_clock_mhz())
            time.sleep(0.1)

    th = threading.Thread(target=sampler)
    e0, t0 = g.energy_j(), time.perf_counter()
    th.start()
    calls = 0
    while time.perf_counter() - t0 < seconds:
        if work is None:
            time.sleep(0.05)
            continue
        work()
        calls += 1
        if sync is not None and calls % 8 == 0:
            sync()
    if sync is not None:
        sync()
    wall = time.perf_counter() - t0
    joules = g.energy_j() - e0
    stop.set()
    th.join()
    return joules, wall, samples, clocks, calls


def report(name, g, res, **extra):
    joules, wall, samples, clocks, calls = res
    line = {"phase": name, "seconds": round(wall, 3), "energy_j": round(joules, 1),
            "avg_power_w": round(joules / wall, 1),
            "median_sampled_power_w": statistics.median(samples) if samples else None,
            "median_sm_clock_mhz": statistics.median(clocks) if clocks else None,
            "limit_w": g.limit_w(), "temperature_c": g.temperature_c(), "calls": calls}
    line.update(extra)
    print(json.dumps(line), flush=True)
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--extra", action="store_true", help="only the second round's phases: h2d, attention")
    a = ap.parse_args()
    g = Nvml(0)
    if a.extra:
        return extra_phases(g, a.seconds)
    report("idle-no-context", g, sampled(g, a.seconds / 2))

    import torch
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    report("idle-context", g, sampled(g, a.seconds / 2))

    sync = torch.cuda.synchronize
    cycles = int(1e8)  # ~50 ms at 1.98 GHz
    torch.cuda._sleep(cycles)
    report("spin", g, sampled(g, a.seconds / 2, lambda: torch.cuda._sleep(cycles), sync))

    n = 8192
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        x @ y
    sync()
    res = sampled(g, a.seconds, lambda: x @ y, sync)
    report("gemm", g, res, tflops=round(2 * n**3 * res[4] / res[1] / 1e12, 1), shape=[n, n, n])

    m = 2**29  # 1 GiB of bf16
    p = torch.randn(m, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(m, device="cuda", dtype=torch.bfloat16)
    r = torch.empty_like(p)
    for _ in range(5):
        torch.add(p, q, out=r)
    sync()
    res = sampled(g, a.seconds, lambda: torch.add(p, q, out=r), sync)
    report("memory", g, res, tb_per_s=round(3 * 2 * m * res[4] / res[1] / 1e12, 2), bytes_per_call=3 * 2 * m)


def extra_phases(g, seconds):
    """h2d: pinned host-to-device copies of 1 GiB (PCIe; a GPU fed by CPU offload);
    attention: FlashAttention forward (SDPA, causal, bf16, batch 8, 16 heads of 64, sequence 2048)."""
    import torch
    import torch.nn.functional as F
    sync = torch.cuda.synchronize
    src = torch.empty(2**30, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst.copy_(src, non_blocking=True)
    sync()
    res = sampled(g, seconds, lambda: dst.copy_(src, non_blocking=True), sync)
    report("h2d", g, res, gb_per_s=round(2**30 * res[4] / res[1] / 1e9, 1))
    b, h, s, d = 8, 16, 2048, 64
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for _ in range(5):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    sync()
    res = sampled(g, seconds, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), sync)
    flops = 4 * b * h * s * s * d / 2  # causal: half the score matrix
    report("attention", g, res, tflops=round(flops * res[4] / res[1] / 1e12, 1))


if __name__ == "__main__":
    main()
