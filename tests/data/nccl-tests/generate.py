#!/usr/bin/env python3
"""Writes all_reduce_perf_8xA100.txt: what `mpirun -np 8 all_reduce_perf -b 8 -e 8G -f 2 -g 1` prints on
one 8 x A100-SXM4-80GB NVSwitch node, in nccl-tests' exact stdout format (src/util.cu, 2.17), with
times made from a known model so that tests/calibrate can check what calibrate recovers:

    t(S) = 2(n-1) * a + 2(n-1)/n * S / (B * e(S)),   n = 8, B = 300 GB/s (NVLink3 per direction),
    a = 1.8 us per ring step (1 us nominal hop + 0.8 us step latency),
    e(S) interpolated linearly in log(S) between EFFICIENCY's points, flat beyond them,

times a deterministic slowdown of 0 to 0.6 % per row (out-of-place and in-place differ). No real
output is copied. Run it from this folder to regenerate the fixture."""

import math

N = 8
B = 300e9
A = 1.8e-6
EFFICIENCY = [(256 << 10, 0.20), (4 << 20, 0.40), (64 << 20, 0.57), (1 << 30, 0.72), (16 << 30, 0.78)]
HOST = "dgx-a100-07"
BUS = ["07", "0f", "47", "4e", "87", "90", "b7", "bd"]


def efficiency(size):
    if size <= EFFICIENCY[0][0]:
        return EFFICIENCY[0][1]
    if size >= EFFICIENCY[-1][0]:
        return EFFICIENCY[-1][1]
    for (s0, e0), (s1, e1) in zip(EFFICIENCY, EFFICIENCY[1:]):
        if s0 <= size <= s1:
            return e0 + math.log(size / s0) / math.log(s1 / s0) * (e1 - e0)


def model_us(size):
    return (2 * (N - 1) * A + 2 * (N - 1) / N * size / (B * efficiency(size))) * 1e6


def float_str(value, width):  # nccl-tests' getFloatStr
    power, val = 0, 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return "%*.2f" % (width, value)
    if power < width - 1:
        return "%*.1f" % (width, value)
    if power < width + 1:
        return "%*.0f" % (width, value)
    return "%*.1e" % (width, value)


def body(size, us):
    algbw = size / (us * 1e-6) / 1e9
    busbw = algbw * 2 * (N - 1) / N
    return "  %7s  %6s  %6s  %6g" % (float_str(us, 7), float_str(algbw, 6), float_str(busbw, 6), 0), busbw


lines = [
    "# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602",
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0 unalign: 0",
    "#",
    "# Using devices",
]
for rank in range(N):
    lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%s:%02x] %s"
                 % (rank, 0, 51234 + rank, HOST, rank, 0, BUS[rank], 0, "NVIDIA A100-SXM4-80GB"))
lines += [
    "#",
    "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s"
    % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", ""),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s"
    % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ""),
]
total = 0
for i in range(31):
    size = 8 << i
    t = model_us(size)
    out_of_place, busbw = body(size, t * (1 + 0.003 * (1 + math.sin(1.7 * i))))
    in_place, _ = body(size, t * (1 + 0.003 * (1 + math.cos(2.3 * i))))
    total += busbw
    lines.append("%12li  %12li  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1) + out_of_place + in_place)
lines += [
    "# %-20s : %d %s" % ("Out of bounds values", 0, "OK"),
    "# %-20s : %g %s" % ("Avg bus bandwidth", total / 31, ""),
    "#",
    "# Collective test concluded: all_reduce_perf",
    "",
]
with open("all_reduce_perf_8xA100.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
