#!/usr/bin/env python3
"""Writes the trainsim scenario of one scripts/gpu/train_step.py run: the same GPT (family
transformer, GELU MLP, learned positions, tied embeddings), sequence, micro-batch and accumulation,
on one GPU, eager PyTorch (training.stack ddp), FlashAttention, bf16.

  scenario.py --layers 24 --hidden 2048 --heads 16 --seq 2048 --micro-batch 4 --gpu "NVIDIA H200" > s.json
"""
import argparse
import json

# torch.cuda.get_device_name() -> trainsim's catalog (trainsim describe gpus)
GPUS = {
    "NVIDIA H200": "H200-SXM-141GB",
    "NVIDIA H100 80GB HBM3": "H100-SXM5-80GB",
    "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB",
    "NVIDIA A100-SXM4-40GB": "A100-SXM4-40GB",
}


def scenario(layers, hidden, heads, vocab, seq, micro_batch, accum, gpu_name):
    if gpu_name not in GPUS:
        raise SystemExit(f"scenario.py: GPU {gpu_name!r} is not in the table ({', '.join(GPUS)})")
    return {
        "name": f"gpt-l{layers}-h{hidden}-s{seq}-mb{micro_batch}-1gpu",
        "cluster": {"gpu": GPUS[gpu_name], "nodes": 1, "gpus_per_node": 1,
                    "network": {"topology": "ideal", "nics_per_node": 1, "nic_bandwidth": "400 Gb/s"}},
        "model": {"family": "transformer", "layers": layers, "hidden": hidden, "heads": heads, "vocab": vocab,
                  "activation": "gelu", "learned_positions": True, "tied_embeddings": True},
        "training": {"sequence_length": seq, "global_batch": micro_batch * accum, "micro_batch": micro_batch,
                     "precision": "bf16", "attention": "flash", "stack": "ddp"},
        "parallelism": {"tensor": 1, "pipeline": 1, "data": 1, "recompute": "none", "zero_stage": 0},
    }


def add_model_args(ap):
    """The job's arguments, shared with train_step.py (which runs it)."""
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per step")


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap)
    ap.add_argument("--gpu", required=True, help="torch.cuda.get_device_name()")
    a = ap.parse_args()
    print(json.dumps(scenario(a.layers, a.hidden, a.heads, a.vocab, a.seq, a.micro_batch, a.accum, a.gpu), indent=2))


if __name__ == "__main__":
    main()
