#!/usr/bin/env python3
"""The kernels of a transformer layer timed one by one on a lent GPU: what a GEMM reaches by shape
(the forward, data-gradient and weight-gradient GEMMs of each linear layer, as nn.Linear's autograd
runs them, at several hidden sizes; and the inner dimension K alone at a fixed output), and what
FlashAttention's backward costs against its forward by head size. The questions are the stack
fit's open ones (docs/validation.md): does a GEMM's efficiency depend on its inner dimension (the
size trend), and is a layer's backward slower than twice its forward (what full recomputation adds).

Prints one JSON line per measurement: {"kind": ..., shape, "median_s", "tflops"}. Times are CUDA
events around each call, median of --reps after --warmup, on bf16 tensors.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def emit(kind, flops, t, **shape):
    print(json.dumps({"kind": kind, **shape, "median_s": t, "tflops": flops / t / 1e12}), flush=True)


def linear_gemms(tokens, hidden, warmup, reps):
    """nn.Linear's three GEMMs for each of a GPT layer's linear layers (x: tokens x in, W: out x in):
    forward x·Wᵀ (m=tokens, n=out, k=in), data gradient g·W (m=tokens, n=in, k=out), weight
    gradient gᵀ·x (m=out, n=in, k=tokens)."""
    for name, fin, fout in (("qkv", hidden, 3 * hidden), ("proj", hidden, hidden),
                            ("fc1", hidden, 4 * hidden), ("fc2", 4 * hidden, hidden)):
        x = torch.randn(tokens, fin, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(fout, fin, device="cuda", dtype=torch.bfloat16)
        g = torch.randn(tokens, fout, device="cuda", dtype=torch.bfloat16)
        flops = 2.0 * tokens * fin * fout
        for kind, fn, (m, n, k) in (("fwd", lambda: x @ w.t(), (tokens, fout, fin)),
                                    ("dgrad", lambda: g @ w, (tokens, fin, fout)),
                                    ("wgrad", lambda: g.t() @ x, (fout, fin, tokens))):
            emit("linear", flops, timed(fn, warmup, reps), layer=name, gemm=kind, hidden=hidden,
                 tokens=tokens, m=m, n=n, k=k)
        del x, w, g


def k_sweep(mn, ks, warmup, reps):
    for k in ks:
        a = torch.randn(mn, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, mn, device="cuda", dtype=torch.bfloat16)
        emit("k_sweep", 2.0 * mn * mn * k, timed(lambda: a @ b, warmup, reps), m=mn, n=mn, k=k)


def attention(batch, seq, hidden, head_dims, warmup, reps):
    """SDPA (FlashAttention) causal forward, and forward + backward, at a fixed hidden size."""
    for d in head_dims:
        heads = hidden // d
        q, k, v = (torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        out_grad = torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16)
        # causal: half of the 4·b·h·s²·d forward FLOPs of QKᵀ and PV are computed
        fwd_flops = 4.0 * batch * heads * seq * seq * d / 2

        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def fwd_bwd():
            q.grad = k.grad = v.grad = None
            fwd().backward(out_grad)

        t_f = timed(fwd, warmup, reps)
        t_fb = timed(fwd_bwd, warmup, reps)
        emit("sdpa_fwd", fwd_flops, t_f, batch=batch, seq=seq, heads=heads, head_dim=d)
        emit("sdpa_fwd_bwd", 3.5 * fwd_flops, t_fb, batch=batch, seq=seq, heads=heads, head_dim=d,
             bwd_over_fwd=(t_fb - t_f) / t_f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--hidden", type=int, nargs="+", default=[768, 1024, 2048, 4096, 7168, 8192])
    ap.add_argument("--k", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    print(json.dumps({"kind": "device", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "cuda": torch.version.cuda}), flush=True)
    for h in a.hidden:
        linear_gemms(a.tokens, h, a.warmup, a.reps)
    for mn in (4096, 8192):
        k_sweep(mn, a.k, a.warmup, a.reps)
    attention(8, 2048, 2048, (64, 128), a.warmup, a.reps)
    attention(2, 4096, 4096, (64, 128), a.warmup, a.reps)


if __name__ == "__main__":
    main()
