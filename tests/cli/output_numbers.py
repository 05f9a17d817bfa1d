#!/usr/bin/env python3
"""Every subcommand's output on the bundled files holds only numbers that are predictions (issue 34,
"Done when"; docs/hardening.md, "Numbers in the output").

Runs every subcommand on the bundled scenarios (scenarios/), the validation cases (validation/) and
the bundled traces and nccl-tests outputs (tests/data/), in each output format, with the files they
write (--out, --timeline, --html, --plot, -o, shards), and checks each output of every command that
exits 0 with output_check.py: no inf or nan, no negative duration, no MFU or HFU outside [0, 1].
A command may exit 0, 2 or 3 (some bundled scenarios are too large for a command's budget, some
sweep points cannot run); exit 1, a signal or a run over its time limit fails the test, and so does a
subcommand none of whose runs exited 0 (the test would check nothing for it).

    output_numbers.py TRAINSIM SOURCE_DIR
"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import output_check  # noqa: E402

TIMEOUT_S = 120
# The SimGrid backend (with the timeline and the HTML report) on the files of at most this many
# GPUs, the analytic backend on every file: SimGrid takes seconds to minutes on the larger ones.
SIMGRID_MAX_GPUS = 32
# Under that size but 42 s under SimGrid on 2 cores (its NVMe and PCIe offload copies are flows).
SIMGRID_SLOW = {"zero-infinity-gpt3-175b-dgx2.json"}
# `search` on the bundled scenarios of at most this many GPUs: its first pass enumerates every
# layout of every GPU count up to the cluster's (20-100 s on the scenarios of 992 GPUs and more).
SEARCH_MAX_GPUS = 128


class Runner:
    def __init__(self, trainsim, tmp):
        self.trainsim = trainsim
        self.tmp = tmp
        self.failures = []
        self.checked = {}  # subcommand -> outputs checked
        self.runs = 0
        self.counter = 0
        self.times = []

    def path(self, name):
        self.counter += 1
        return os.path.join(self.tmp, f"{self.counter}-{name}")

    def run(self, args, stdout_kind, files=(), label=None):
        """Runs trainsim ARGS; checks stdout as `stdout_kind` and each (path, kind) of `files`.
        Returns the exit code (None: timed out)."""
        self.runs += 1
        command = label or args[0]
        shown = " ".join(args)
        start = time.monotonic()
        try:
            r = subprocess.run([self.trainsim] + args, capture_output=True, text=True, timeout=TIMEOUT_S)
            self.times.append((time.monotonic() - start, shown))
        except subprocess.TimeoutExpired:
            self.failures.append(f"{shown}: over {TIMEOUT_S} s")
            return None
        if r.returncode not in (0, 2, 3):
            self.failures.append(f"{shown}: exit {r.returncode}" +
                                 "".join(f"\n  stderr: {l}" for l in r.stderr.splitlines()[:4]))
            return r.returncode
        if r.returncode != 0:
            return r.returncode
        outputs = [(r.stdout, stdout_kind, f"{shown} (stdout)")]
        for path, kind in files:
            if os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    outputs.append((f.read(), kind, f"{shown} ({os.path.basename(path)})"))
        for text, kind, where in outputs:
            self.failures += output_check.check_output(text, kind, where)
            self.checked[command] = self.checked.get(command, 0) + 1
        return 0


def scenario_files(src):
    files = sorted(glob.glob(os.path.join(src, "scenarios", "**", "*.json"), recursive=True))
    for folder in sorted(glob.glob(os.path.join(src, "validation", "*", ""))):
        if os.path.basename(folder.rstrip("/")) != "collectives":
            files += sorted(glob.glob(os.path.join(folder, "*.json")))
    return files


def resolved(trainsim, path):
    r = subprocess.run([trainsim, "check", path], capture_output=True, text=True, timeout=TIMEOUT_S)
    return json.loads(r.stdout) if r.returncode == 0 else None


def scenario_jobs(run, trainsim, path, bundled):
    """The jobs of one scenario or validation case (functions of no argument); `bundled`: a file
    under scenarios/."""
    doc = resolved(trainsim, path)
    jobs = [lambda: run.run(["check", path], "json")]
    if doc is None:
        return jobs
    gpus = doc["cluster"]["nodes"] * doc["cluster"]["gpus_per_node"]
    out = run.path("out")
    jobs.append(lambda: run.run(["run", path, "--backend", "analytic", "--format", "csv", "--out", out], "csv",
                                [(os.path.join(out, "report.json"), "json"), (os.path.join(out, "report.txt"), "text"),
                                 (os.path.join(out, "scenario.resolved.json"), "json")]))
    training = doc.get("training", {})
    if "checkpoint" in training and "tokens" in training:
        jobs.append(lambda: run.run(["run", path, "--backend", "analytic", "--format", "json",
                                     "--simulate-failures", "20"], "json"))
    if gpus <= SIMGRID_MAX_GPUS and os.path.basename(path) not in SIMGRID_SLOW:
        timeline, html = run.path("timeline.json"), run.path("report.html")
        jobs.append(lambda: run.run(["run", path, "--backend", "simgrid", "--format", "json", "--timeline", timeline,
                                     "--html", html], "json", [(timeline, "json"), (html, "text")]))
    if bundled:
        # A collective over the scenario's cluster (its first 8 GPUs at most), a comparison, a short
        # sweep and a search: on the bundled scenarios (the validation cases add no new kind of file).
        jobs.append(lambda: run.run(["collective", "--scenario", path, "--gpus", str(min(gpus, 8)), "--fidelity",
                                     "analytic", "--sizes", "1M:1G", "--factor", "32", "--format", "json"], "json"))
        jobs.append(lambda: run.run(["compare", path, "--vary", "training.micro_batch=1,2", "--format", "json", "-q"],
                                    "json"))
        jobs.append(lambda: run.run(["sweep", path, "--set-range", "cluster.nodes=1,2", "--set", "parallelism.data=auto",
                                     "--format", "csv", "-q"], "csv"))
    if bundled and gpus <= SEARCH_MAX_GPUS:
        jobs.append(lambda: run.run(["search", path, "--gpus", str(gpus), "--no-recheck", "--top", "3", "--refine", "3",
                                     "--max-micro-batch", "4", "--format", "json", "-q"], "json"))
    return jobs


def other_jobs(run, src):
    jobs = []
    for what in ("gpus", "models"):
        for fmt in ("table", "json", "csv"):
            jobs.append(lambda what=what, fmt=fmt: run.run(["describe", what, "--format", fmt], fmt if fmt != "table" else "text"))
    gpus = json.loads(subprocess.run([run.trainsim, "describe", "gpus", "--format", "json"], capture_output=True,
                                     text=True, timeout=TIMEOUT_S).stdout)
    for g in gpus:
        for stack in ("megatron", "torchtitan", "composer", "deepspeed", "fsdp", "ddp"):
            jobs.append(lambda g=g["name"], stack=stack: run.run(["describe", "profile", "--gpu", g, "--stack", stack,
                                                                  "--format", "json"], "json"))
    jobs.append(lambda: run.run(["describe", "profile", "--compile", "--stack", "torchtitan"], "text"))

    cases = [os.path.join(src, "validation", d) for d in ("training", "training-fsdp-dev", "gpu-h200")]
    cases.append(os.path.join(src, "tests", "data", "validation"))
    # Every case once (10 s); the other formats on the short cases.
    jobs.append(lambda: run.run(["validate"] + cases + ["--backend", "analytic", "--format", "json", "-q"], "json"))
    for fmt in ("table", "csv"):
        jobs.append(lambda fmt=fmt: run.run(["validate"] + cases[2:] + ["--backend", "analytic", "--format", fmt, "-q"],
                                            fmt if fmt != "table" else "text"))

    for op in ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all"):
        for fidelity in ("analytic", "flow", "step"):
            jobs.append(lambda op=op, fidelity=fidelity: run.run(
                ["collective", "--op", op, "--gpus", "16", "--fidelity", fidelity, "--sizes", "1K:1G", "--factor", "16",
                 "--format", "json"], "json"))
    jobs.append(lambda: run.run(["collective", "--gpus", "8", "--gpu", "A100-SXM4-80GB", "--compare",
                                 os.path.join(src, "validation", "collectives", "nccl-tests.json"), "--sizes", "1M:1G",
                                 "--format", "table"], "text"))
    jobs.append(lambda: run.run(["collective", "--gpus", "64", "--format", "csv", "--sizes", "1M:64M"], "csv"))
    return jobs


def trace_jobs(run, src):
    """Kineto imports, then every reader of traces on what they wrote, then nccl-tests outputs."""
    data = os.path.join(src, "tests", "data")
    folders = [os.path.join(data, "traces", "h200-eager")]
    imports = [[os.path.join(data, "traces", "kineto_rank0.json"), os.path.join(data, "traces", "kineto_rank1.json")],
               [os.path.join(data, "traces", "kineto-shapes", "rank0.pt.trace.json")]]
    for files in imports:
        folder = run.path("kineto")
        if run.run(["trace", "import-kineto"] + files + ["--out", folder], "text", label="trace") == 0:
            folders.append(folder)
    jobs = []
    for folder in folders:
        for fmt in ("table", "json", "csv"):
            kind = fmt if fmt != "table" else "text"
            jobs.append(lambda folder=folder, fmt=fmt, kind=kind: run.run(
                ["trace", "summary", folder, "--format", fmt], kind, label="trace"))
            profile = run.path("profile.json")
            jobs.append(lambda folder=folder, fmt=fmt, kind=kind, profile=profile: run.run(
                ["calibrate", folder, "-o", profile, "--format", fmt], kind, [(profile, "json")]))
            for backend, scale in (("analytic", "1"), ("simgrid", "1"), ("simgrid", "4")):
                jobs.append(lambda folder=folder, fmt=fmt, kind=kind, backend=backend, scale=scale: run.run(
                    ["replay", folder, "--backend", backend, "--scale-data", scale, "--format", fmt], kind))
        for trace in sorted(glob.glob(os.path.join(folder, "*.trace"))):
            jobs.append(lambda trace=trace: run.run(["trace", "dump", trace], "jsonl", label="trace"))
    # Chakra execution traces (docs/chakra.md): the hand-made two ranks, then an export read back.
    handmade = os.path.join(data, "chakra", "handmade")
    exported = run.path("chakra")
    scenario = os.path.join(data, "chakra", "gpt-16-pp.json")
    for fmt in ("table", "json", "csv"):
        kind = fmt if fmt != "table" else "text"
        for backend in ("analytic", "simgrid"):
            jobs.append(lambda fmt=fmt, kind=kind, backend=backend: run.run(
                ["replay", "--chakra", handmade, "--set", "cluster.gpu=H100-SXM5-80GB", "--backend", backend,
                 "--format", fmt], kind))
        jobs.append(lambda fmt=fmt, kind=kind, out=exported + fmt: (
            run.run(["export", "--to", "chakra", scenario, "-o", out], "text", label="export"),
            run.run(["replay", "--chakra", out, "--scenario", scenario, "--backend", "analytic", "--format", fmt], kind)))
    for txt in sorted(glob.glob(os.path.join(data, "nccl-tests", "*.txt"))):
        for fmt in ("table", "json", "csv"):
            profile = run.path("net.json")
            jobs.append(lambda txt=txt, fmt=fmt, profile=profile: run.run(
                ["calibrate", "--nccl-tests", txt, "-o", profile, "--format", fmt], fmt if fmt != "table" else "text",
                [(profile, "json")]))
    return jobs


def search_files_jobs(run, src):
    """search's shards and merge, a plot, compare of written reports, emulate on one rank."""
    small = os.path.join(src, "scenarios", "gpt3-6.7b-a100-8.json")
    shards = [run.path(f"shard{i}.json") for i in range(2)]
    for i, shard in enumerate(shards):
        run.run(["search", small, "--shard", f"{i}/2", "--out", shard, "-q"], "text", [(shard, "json")])
    jobs = [lambda: run.run(["search", "merge"] + shards + ["--format", fmt], fmt if fmt != "table" else "text")
            for fmt in ("table", "json", "csv")]
    plot = run.path("search.svg")
    jobs.append(lambda: run.run(["search", small, "--top", "3", "--format", "csv", "-q", "--plot", plot], "csv",
                                [(plot, "text")]))
    reports = []
    for name in ("gpt3-6.7b-a100-8.json", "llama3-8b-2of4-h100-16.json"):
        out = run.path("report")
        if run.run(["run", os.path.join(src, "scenarios", name), "--backend", "analytic", "--out", out], "text") == 0:
            reports.append(os.path.join(out, "report.json"))
    for fmt in ("table", "json", "csv"):
        jobs.append(lambda fmt=fmt: run.run(["compare"] + reports + ["--format", fmt], fmt if fmt != "table" else "text"))
    plot2 = run.path("sweep.svg")
    jobs.append(lambda: run.run(["sweep", small, "--set-range", "training.micro_batch=1:4:x2", "--format", "json", "-q",
                                 "--plot", plot2], "json", [(plot2, "text")]))
    for case in ("scenarios/offload/zero-offload-10b-v100-1.json", "validation/gpu-h200/eager-gpt-16m-h200-1gpu-s256-mb2.json"):
        jobs.append(lambda case=case: run.run(["emulate", os.path.join(src, case), "--scale-compute", "0.001",
                                               "--iterations", "1"], "text"))
    jobs.append(lambda: run.run(["version"], "text"))
    return jobs


def main():
    trainsim, src = sys.argv[1], sys.argv[2]
    broken = output_check.self_check()
    if broken:
        print("\n".join(f"FAIL {b}" for b in broken))
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        run = Runner(trainsim, tmp)
        jobs = []
        files = scenario_files(src)
        for path in files:
            jobs += scenario_jobs(run, trainsim, path, path.startswith(os.path.join(src, "scenarios")))
        jobs += other_jobs(run, src) + trace_jobs(run, src) + search_files_jobs(run, src)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda job: job(), jobs))
    expected = ["check", "run", "describe", "validate", "collective", "trace", "calibrate", "replay", "compare",
                "search", "sweep", "emulate", "version"]
    for command in expected:
        if run.checked.get(command, 0) == 0:
            run.failures.append(f"{command}: no run exited 0, so none of its outputs was checked")
    if os.environ.get("OUTPUT_NUMBERS_TIMES"):
        for t, shown in sorted(run.times, reverse=True)[:40]:
            print(f"{t:7.2f} s  {shown}")
    for f in run.failures:
        print("FAIL", f)
    print(f"outputs: {sum(run.checked.values())} checked from {run.runs} runs on {len(files)} scenario and "
          f"validation files ({', '.join(f'{c} {n}' for c, n in sorted(run.checked.items()))}); "
          f"{len(run.failures)} failures")
    return 1 if run.failures else 0


if __name__ == "__main__":
    sys.exit(main())
