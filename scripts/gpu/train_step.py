#!/usr/bin/env python3
"""A real PyTorch training step of a GPT (eager PyTorch, bf16 autocast, FlashAttention through SDPA,
fused AdamW, gradients all-reduced with NCCL), timed step by step: the program that
scripts/gpu/device_check.sh runs plain, under `trainsim trace` and under torch.profiler, to measure
the tracer's overhead and to compare trainsim's prediction (scripts/gpu/scenario.py writes the same
job as a scenario) with the measured step.

The model is what trainsim's `family: transformer` describes with `activation: gelu`,
`learned_positions: true`, `tied_embeddings: true`: pre-LayerNorm blocks, QKV and output
projections, a 4h GELU MLP, a final LayerNorm and the tied output layer. One rank (torch.distributed
with NCCL, world size from torchrun's variables or 1): gradients are all-reduced in buckets of
25 MB, as DDP does, so that the trace holds NCCL collectives.

Prints one JSON line: the configuration, every step's time (CUDA-synchronized wall clock, after the
warm-up steps), their median, the peak of torch's allocator, and the GPU energy per timed step
(NVML's counter, scripts/gpu/nvml.py; null where NVML is missing).
"""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop

from nvml import try_open  # scripts/gpu/nvml.py: the board's energy counter
from scenario import add_model_args  # scripts/gpu/scenario.py: the same job's arguments


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq, recompute="none"):
        super().__init__()
        self.recompute = recompute
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for blk in self.blocks:
            # full recomputation, every block its own unit (llm-foundry's activation_checkpointing,
            # torchtitan's mode "full", Megatron's --recompute-granularity full --recompute-method
            # uniform --recompute-num-layers 1): each block keeps only its input and re-runs its
            # forward when its backward begins. "full": non-reentrant, as torchtitan and FSDP's
            # checkpoint_wrapper run it, which stops the re-run once the last tensor the backward needs
            # is saved again (PyTorch >= 2.1); "full-no-early-stop": the same without that;
            # "full-reentrant": the reentrant variant, which always re-runs the whole block
            if self.recompute == "none":
                x = blk(x)
            elif self.recompute == "full-reentrant":
                x = checkpoint(blk, x, use_reentrant=True)
            else:
                with set_checkpoint_early_stop(self.recompute == "full"):
                    x = checkpoint(blk, x, use_reentrant=False)
        return F.linear(self.ln(x), self.tok.weight)  # tied output layer


def buckets(params, limit_bytes=25 * 2**20):
    out, cur, size = [], [], 0
    for p in reversed(params):  # DDP's order: last layers' gradients first
        cur.append(p)
        size += p.numel() * p.element_size()
        if size >= limit_bytes:
            out.append(cur)
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


def shard(model, version):
    """The model sharded as the stacks do: every Block its own FSDP unit, then the root."""
    if version == 1:
        from torch.distributed.fsdp import (BackwardPrefetch, FullyShardedDataParallel, MixedPrecision,
                                            ShardingStrategy)
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        return FullyShardedDataParallel(
            model, auto_wrap_policy=ModuleWrapPolicy({Block}), sharding_strategy=ShardingStrategy.FULL_SHARD,
            mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                                           buffer_dtype=torch.float32),
            backward_prefetch=BackwardPrefetch.BACKWARD_PRE, limit_all_gathers=True, use_orig_params=True,
            device_id=torch.cuda.current_device())
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for blk in model.blocks:
        fully_shard(blk, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    return model


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--profile-dir", default="", help="torch.profiler (Kineto) trace of the timed steps")
    ap.add_argument("--nvtx", action="store_true", help="NVTX range ProfilerStep#N around each step")
    ap.add_argument("--ddp", action="store_true",
                    help="torch DistributedDataParallel instead of the hand-written bucketed all-reduce")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (default mode)")
    ap.add_argument("--fsdp", type=int, choices=(1, 2), default=0,
                    help="shard with FSDP1 (FullyShardedDataParallel, FULL_SHARD, BACKWARD_PRE, "
                         "limit_all_gathers, as llm-foundry configures it) or FSDP2 (fully_shard per block, "
                         "reshard_after_forward, as torchtitan does); bf16 parameters, fp32 gradient reduce")
    ap.add_argument("--memory-phases", action="store_true",
                    help="also report torch's allocated memory at each phase of the last step: at its start "
                         "(parameters and optimizer states), the peak of the forward (with the loss), what the "
                         "forward leaves for the backward, the peaks of the backward and of the gradient "
                         "reduction with the optimizer step")
    ap.add_argument("--recompute", choices=("none", "full", "full-no-early-stop", "full-reentrant"), default="none",
                    help="every block checkpointed: full (non-reentrant, early stop), without early stop, or reentrant")
    args = ap.parse_args()

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(0)

    model = GPT(args.layers, args.hidden, args.heads, args.vocab, args.seq, args.recompute).cuda()
    if args.fsdp:
        model = shard(model, args.fsdp)
    params = [p for p in model.parameters() if p.requires_grad]
    if args.ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    if args.compile:
        model = torch.compile(model)
    n_params = sum(p.numel() for p in params)
    # FSDP's flat (FSDP1) or DTensor (FSDP2) parameters take the foreach AdamW, as Composer and
    # torchtitan's defaults run it on sharded parameters
    opt = torch.optim.AdamW(params, lr=1e-4, fused=not args.fsdp, foreach=bool(args.fsdp))
    groups = buckets(params)
    world = dist.get_world_size()

    # CUDA events around each phase of a step (forward with the loss, backward, the rest: gradient
    # reduction and the optimizer), read after the step's synchronize
    phases = {"forward": [], "backward": [], "optimizer": []}
    memory = {}  # --memory-phases: GiB at the phase boundaries of the last step (allocator counters, no sync)

    def mark_memory(name, peak=False):
        if args.memory_phases:
            memory[name] = (torch.cuda.max_memory_allocated() if peak else torch.cuda.memory_allocated()) / 2**30
            memory["peak"] = max(memory.get("peak", 0.0), torch.cuda.max_memory_allocated() / 2**30)
            torch.cuda.reset_peak_memory_stats()

    def step():
        marks = []
        mark_memory("step_start")
        for _ in range(args.accum):
            ids = torch.randint(0, args.vocab, (args.micro_batch, args.seq), device="cuda")
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            ev[0].record()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, args.vocab), ids.view(-1))
            ev[1].record()
            mark_memory("forward_peak", peak=True)
            mark_memory("after_forward")
            (loss / args.accum).backward()
            ev[2].record()
            mark_memory("backward_peak", peak=True)
            marks.append(ev)
        end = torch.cuda.Event(enable_timing=True)
        for g in ([] if args.ddp or args.fsdp else groups):  # DDP-like bucketed all-reduce of the fp32 gradients
            flat = torch.cat([p.grad.view(-1) for p in g])
            dist.all_reduce(flat)
            flat /= world
            off = 0
            for p in g:
                p.grad.copy_(flat[off:off + p.numel()].view_as(p.grad))
                off += p.numel()
        opt.step()
        mark_memory("optimizer_peak", peak=True)
        opt.zero_grad(set_to_none=True)
        end.record()
        return marks, end

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()

    prof = None
    if args.profile_dir:
        from torch.profiler import ProfilerActivity, profile, tensorboard_trace_handler
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                       on_trace_ready=tensorboard_trace_handler(args.profile_dir))
        prof.start()
    gpu_meter = try_open(local)
    energy0 = gpu_meter.energy_j() if gpu_meter else None
    times = []
    for i in range(args.steps):
        if args.nvtx:
            torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        t = time.perf_counter()
        marks, end = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
        phases["forward"].append(sum(a.elapsed_time(b) for a, b, _ in marks) / 1e3)
        phases["backward"].append(sum(b.elapsed_time(c) for _, b, c in marks) / 1e3)
        phases["optimizer"].append(marks[-1][2].elapsed_time(end) / 1e3)
        if args.nvtx:
            torch.cuda.nvtx.range_pop()
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
    energy = (gpu_meter.energy_j() - energy0) if gpu_meter else None

    print(json.dumps({
        "layers": args.layers, "hidden": args.hidden, "heads": args.heads, "vocab": args.vocab,
        "seq": args.seq, "micro_batch": args.micro_batch, "accum": args.accum, "world": world,
        "ddp": args.ddp, "compile": args.compile, "fsdp": args.fsdp, "recompute": args.recompute,
        "params": n_params, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "step_s": times, "median_s": statistics.median(times),
        "phase_median_s": {k: statistics.median(v) for k, v in phases.items()},
        "tokens_per_s": args.micro_batch * args.accum * args.seq * world / statistics.median(times),
        "peak_allocated_gib": memory["peak"] if args.memory_phases else torch.cuda.max_memory_allocated() / 2**30,
        "memory_phases_gib": memory or None,
        "peak_reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
        "energy_j_per_step": energy / args.steps if energy is not None else None,
        "avg_power_w": energy / sum(times) if energy is not None else None,
    }), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
