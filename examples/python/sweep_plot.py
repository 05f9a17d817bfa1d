# %% [markdown]
# # GPT-3 175B on 128 to 1,024 A100s: a sweep and a plot from Python
#
# A notebook in the "percent" format (Jupyter through jupytext, VS Code and Spyder open the `# %%`
# cells), and a script that the test suite runs (`python.example_sweep_plot`):
#
#     PYTHONPATH=build/python python3 examples/python/sweep_plot.py --out scaling.png
#
# It sweeps the cluster size with the data-parallel degree following it, at two micro-batch sizes,
# prints the scaling curve, and plots throughput and MFU against the GPU count with matplotlib (the
# plot is skipped, with a message, when matplotlib is not installed). docs/python.md explains the API.

# %%
import argparse
import os
import sys

import trainsim

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--out", default="sweep_plot.png", help="where to write the plot (PNG)")
parser.add_argument("--scenario", default="scenarios/gpt3-175b-a100-1024.json")
args, _ = parser.parse_known_args()  # a notebook kernel passes arguments of its own

# %% [markdown]
# The sweep: 16 to 128 nodes of 8 GPUs (`"16:128:x2"`, the command line's range syntax, would do
# too), micro-batches of 1 and 2 (the last key varies fastest). `parallelism__data="auto"` overrides
# `parallelism.data` at every point so that the data-parallel degree fills the cluster. The analytic
# backend prices each point in closed form, in milliseconds.

# %%
points = trainsim.sweep(args.scenario, {"cluster.nodes": [16, 32, 64, 128], "training.micro_batch": [1, 2]},
                        parallelism__data="auto", quiet=True)
ran = [p for p in points if "error" not in p]
if not ran:
    sys.exit("no point of the sweep could run: " + "; ".join(p["error"] for p in points))

# %% [markdown]
# The points as a table: a pandas DataFrame when pandas is installed, else the dicts themselves.

# %%
try:
    import pandas  # noqa: F401

    frame = points.to_frame()
    print(frame[["cluster.nodes", "training.micro_batch", "world_size", "iteration_time_s", "tokens_per_s", "mfu",
                 "scaling_efficiency"]].to_string(index=False))
except ImportError:
    print(f"{'nodes':>5} {'mb':>3} {'gpus':>5} {'iteration_s':>12} {'tokens/s':>10} {'MFU':>6} {'efficiency':>10}")
    for p in points:
        v = p["values"]
        if "error" in p:
            print(f"{v['cluster.nodes']:>5} {v['training.micro_batch']:>3}  cannot run: {p['error']}")
            continue
        print(f"{v['cluster.nodes']:>5} {v['training.micro_batch']:>3} {p['world_size']:>5} "
              f"{p['iteration_time_s']:>12.4f} {p['tokens_per_s']:>10.0f} {100 * p['mfu']:>5.1f}% "
              f"{100 * p['scaling_efficiency']:>9.1f}%")

# %% [markdown]
# The plot: tokens/s against GPUs, one line per micro-batch, with the ideal linear scaling from the
# first point; MFU below.

# %%
try:
    import matplotlib

    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")  # a script writes the file; a notebook shows the figure inline
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed (Debian: apt-get install python3-matplotlib): no plot", file=sys.stderr)
    sys.exit(0)

fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 6), gridspec_kw={"height_ratios": [2, 1]})
for mb in sorted({p["values"]["training.micro_batch"] for p in ran}):
    curve = [p for p in ran if p["values"]["training.micro_batch"] == mb]
    gpus = [p["world_size"] for p in curve]
    top.plot(gpus, [p["tokens_per_s"] for p in curve], marker="o", label=f"micro-batch {mb}")
    bottom.plot(gpus, [100 * p["mfu"] for p in curve], marker="o", label=f"micro-batch {mb}")
first = ran[0]
gpus = sorted({p["world_size"] for p in ran})
top.plot(gpus, [first["tokens_per_s"] * g / first["world_size"] for g in gpus], linestyle="--", color="grey",
         label="ideal (from the first point)")
top.set_yscale("log")  # log-log: ideal scaling is a straight line
top.set_ylabel("tokens/s")
top.set_title(f"{points.meta['scenario']}: analytic backend")
top.legend()
bottom.set_xscale("log", base=2)
bottom.set_xlabel("GPUs")
bottom.set_ylabel("MFU (%)")
fig.tight_layout()
out = os.path.abspath(args.out)
fig.savefig(out, dpi=100)
print(f"wrote {out}")
