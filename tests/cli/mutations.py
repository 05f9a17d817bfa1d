#!/usr/bin/env python3
"""Every subcommand on mutated copies of the bundled files (issue 34; docs/hardening.md, "Mutations").

Copies of bundled inputs are mutated (seeded, so every run tries the same cases) and given to the
subcommands that read them:

  scenarios (small bundled ones)  check, run (analytic), and on a share of them collective, compare,
                                  sweep, search and emulate (one rank)
  a validation case               validate
  a search shard                  search merge
  a report                        compare
  a profile                       run and replay with simulation.profile
  Kineto traces (with shapes)     trace import-kineto, then trace summary, calibrate and replay
  a trainsim trace file           trace summary, trace dump, replay, calibrate
  an nccl-tests output            calibrate --nccl-tests
  a Chakra execution trace        replay --chakra (the hand-made two ranks, one of them mutated)
  import configurations           import (a config.json, a DeepSpeed config, a torchtitan TOML, a
                                  Megatron launch), then run on what it wrote

JSON files get structural mutations (a value replaced by an extreme number, another type, a
quantity with an extreme or non-finite magnitude; a member or element removed or duplicated) and
byte mutations (truncated, a byte changed or inserted); text and binary files byte mutations. The test
fails on a signal, exit 1 (a bug: input errors exit 2), a run over TIMEOUT_S, and, for a run that
exits 0, an output that output_check.py refuses (inf or nan, a negative duration, an MFU above 1).

    mutations.py TRAINSIM SOURCE_DIR [CASES_PER_FILE]
"""
import concurrent.futures
import copy
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import output_check  # noqa: E402
from null_keys import positions, strip_comments  # noqa: E402

TIMEOUT_S = 20
SEED = 34
CASES_PER_FILE = 10

# Scenarios whose analytic prediction takes well under a second (the mutation test runs hundreds).
SCENARIOS = ["gpt3-6.7b-a100-8.json", "llama3-8b-2of4-h100-16.json", "cnn/resnet50-a100-8.json",
             "cnn/cosmoflow-512-v100-512.json", "compression/gpt-1.3b-powersgd-25gbe-32.json",
             "network/switchml-gpt3-1.3b-a100-8.json", "offload/zero-offload-10b-v100-1.json",
             "offload/axonn-gpt-12b-v100-48.json", "pipeline/gpt3-2.7b-h100-16-ethernet-pp4.json",
             "resilience/llama3-405b-h100-16384-failures.json", "sanity/zero-sc20-13b-v100-128.json"]

EXTREME_VALUES = [0, -1, 1e308, -1e308, 1e-308, 5e-324, 2**63, 2**64, 0.5, 1e18, -0.0, "", "x" * 1000, True,
                  [], {}, None]
QUANTITY_TEXTS = ["1e308 Gb/s", "0 GB/s", "-1 s", "inf s", "nan ms", "1e-300 s", "1e300 B", "0 B", "100 years",
                  "1 ns", "1e20 TFLOP/s"]


def mutate_json(doc, rng):
    """A copy of doc with one structural mutation; (copy, description)."""
    spots = list(positions(doc))
    if not spots:
        return doc, "unchanged"
    pointer, _ = rng.choice(spots)
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    out = copy.deepcopy(doc)
    parent = out
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    key = int(parts[-1]) if isinstance(parent, list) else parts[-1]
    old = parent[key]
    kind = rng.random()
    if kind < 0.15:
        if isinstance(parent, list):
            parent.pop(key)
        else:
            del parent[key]
        return out, f"{pointer} removed"
    if kind < 0.25 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(old))
        return out, f"{pointer} duplicated"
    if isinstance(old, str) and any(c.isdigit() for c in old) and kind < 0.6:
        new = rng.choice(QUANTITY_TEXTS)
    elif isinstance(old, (int, float)) and not isinstance(old, bool) and kind < 0.6:
        new = rng.choice([old * 1e6, old * 1e-6, -old, old + 1, 0, 1e308, 2**63, 5e-324])
    else:
        new = rng.choice(EXTREME_VALUES)
    parent[key] = new
    return out, f"{pointer} = {json.dumps(new)[:40]}"


def mutate_bytes(data, rng):
    if not data:
        return data, "empty"
    kind = rng.random()
    at = rng.randrange(len(data))
    if kind < 0.4:
        return data[:at], f"truncated at {at}"
    if kind < 0.7:
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:], f"byte {at} changed"
    return data[:at] + bytes([rng.randrange(256)]) + data[at:], f"byte inserted at {at}"


def mutations(path, rng, count, structural):
    """(bytes, description) of `count` mutated copies of the file at `path`."""
    with open(path, "rb") as f:
        data = f.read()
    doc = None
    if structural:
        doc = json.loads(strip_comments(data.decode("utf-8")))
    for _ in range(count):
        if doc is not None and rng.random() < 0.75:
            m, what = mutate_json(doc, rng)
            yield json.dumps(m).encode(), what
        else:
            yield mutate_bytes(data, rng)


class Runner:
    def __init__(self, trainsim):
        self.trainsim = trainsim
        self.failures = []
        self.runs = 0
        self.outcomes = {}

    def run(self, args, kind, case):
        """Runs trainsim ARGS on a mutated case; records a failure. Returns the exit code."""
        self.runs += 1
        shown = " ".join(a if len(a) < 80 else a[:77] + "..." for a in args)
        try:
            r = subprocess.run([self.trainsim] + args, capture_output=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.failures.append(f"{case}: {shown}: over {TIMEOUT_S} s")
            return None
        code = r.returncode
        self.outcomes[code] = self.outcomes.get(code, 0) + 1
        err = r.stderr.decode("utf-8", "replace")
        if code < 0 or code == 1 or code not in (0, 2, 3) or "internal error" in err:
            self.failures.append(f"{case}: {shown}: exit {code}" +
                                 "".join(f"\n  stderr: {l}" for l in err.splitlines()[:3]))
        elif code == 0 and kind is not None:
            self.failures += [f"{case}: {p}" for p in
                              output_check.check_output(r.stdout.decode("utf-8", "replace"), kind, shown)]
        return code


def make_inputs(trainsim, src, tmp):
    """The trainsim-written files to mutate: a shard, a report, a profile, imported Kineto traces."""
    small = os.path.join(src, "scenarios", "gpt3-6.7b-a100-8.json")
    made = {}
    shard = os.path.join(tmp, "shard.json")
    subprocess.run([trainsim, "search", small, "--shard", "0/1", "--no-recheck", "-q", "--out", shard], check=True,
                   capture_output=True, timeout=120)
    made["shard"] = shard
    out = os.path.join(tmp, "report")
    subprocess.run([trainsim, "run", small, "--backend", "analytic", "--out", out], check=True, capture_output=True,
                   timeout=120)
    made["report"] = os.path.join(out, "report.json")
    traces = os.path.join(tmp, "traces")
    subprocess.run([trainsim, "trace", "import-kineto", os.path.join(src, "tests", "data", "traces", "kineto_rank0.json"),
                    os.path.join(src, "tests", "data", "traces", "kineto_rank1.json"), "--out", traces], check=True,
                   capture_output=True, timeout=120)
    made["traces"] = traces
    shapes = os.path.join(tmp, "shapes")
    subprocess.run([trainsim, "trace", "import-kineto",
                    os.path.join(src, "tests", "data", "traces", "kineto-shapes", "rank0.pt.trace.json"), "--out", shapes],
                   check=True, capture_output=True, timeout=120)
    profile = os.path.join(tmp, "profile.json")
    subprocess.run([trainsim, "calibrate", shapes, "-o", profile], check=True, capture_output=True, timeout=120)
    made["profile"] = profile
    return made


def jobs_for(runner, src, tmp, made, per_file):
    rng = random.Random(SEED)
    jobs = []
    counter = [0]

    def write(data, name):
        counter[0] += 1
        folder = os.path.join(tmp, f"case{counter[0]}")
        os.makedirs(folder)
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    small = os.path.join(src, "scenarios", "gpt3-6.7b-a100-8.json")
    for n, name in enumerate(SCENARIOS):
        for i, (data, what) in enumerate(mutations(os.path.join(src, "scenarios", name), rng, per_file, True)):
            case = f"{name} [{what}]"
            path = write(data, "scenario.json")
            cmds = [(["check", path], "json"), (["run", path, "--backend", "analytic", "--format", "json"], "json")]
            # The slower readers of a scenario on a share of the cases, in turn.
            extra = (n * per_file + i) % 6
            if extra == 0:
                cmds.append((["collective", "--scenario", path, "--gpus", "8", "--fidelity", "analytic", "--sizes",
                              "1M:64M", "--factor", "8", "--format", "json"], "json"))
            elif extra == 1:
                cmds.append((["compare", path, "--vary", "training.micro_batch=1,2", "--format", "json", "-q"], "json"))
            elif extra == 2:
                cmds.append((["sweep", path, "--set-range", "cluster.nodes=1,2", "--set", "parallelism.data=auto",
                              "--format", "csv", "-q"], "csv"))
            elif extra == 3:
                cmds.append((["search", path, "--no-recheck", "--top", "2", "--refine", "2", "--max-micro-batch", "2",
                              "--gpus", "8", "--format", "json", "-q"], "json"))
            elif extra == 4 and name.startswith("offload/zero-offload"):
                # Its table echoes the (mutated) scenario name: exit status only.
                cmds.append((["emulate", path, "--scale-compute", "1e-4", "--scale-bytes", "1e-4", "--iterations", "1"],
                             None))
            jobs.append((case, cmds))

    case_file = os.path.join(src, "validation", "gpu-h200", "eager-gpt-16m-h200-1gpu-s256-mb2.json")
    for data, what in mutations(case_file, rng, per_file, True):
        path = write(data, "case.json")
        jobs.append((f"validation case [{what}]", [(["validate", path, "--backend", "analytic", "--format", "json",
                                                     "-q"], "json")]))
    for data, what in mutations(made["shard"], rng, per_file, True):
        path = write(data, "shard.json")
        jobs.append((f"search shard [{what}]", [(["search", "merge", path, "--no-recheck", "--format", "json", "-q"],
                                                 "json")]))
    for data, what in mutations(made["report"], rng, per_file, True):
        path = write(data, "report.json")
        jobs.append((f"report [{what}]", [(["compare", path, made["report"], "--format", "json"], "json")]))
    for data, what in mutations(made["profile"], rng, per_file, True):
        path = write(data, "profile.json")
        jobs.append((f"profile [{what}]", [
            (["run", small, "--backend", "analytic", "--format", "json", "--set", f"simulation.profile={path}"], "json"),
            (["replay", made["traces"], "--backend", "analytic", "--format", "json", "--set",
              f"simulation.profile={path}", "--set", "cluster.gpu=A100-SXM4-80GB"], "json")]))
    kineto = [os.path.join(src, "tests", "data", "traces", "kineto_rank0.json"),
              os.path.join(src, "tests", "data", "traces", "kineto-shapes", "rank0.pt.trace.json")]
    for k in kineto:
        for data, what in mutations(k, rng, per_file, True):
            path = write(data, "rank0.json")
            out = os.path.join(os.path.dirname(path), "imported")
            jobs.append((f"{os.path.basename(k)} [{what}]", [
                (["trace", "import-kineto", path, "--out", out], None),
                (["trace", "summary", out, "--format", "json"], "json"),
                (["calibrate", out, "-o", os.path.join(out, "profile.json"), "--format", "json"], "json"),
                (["replay", out, "--backend", "analytic", "--format", "json", "--set", "cluster.gpu=H100-SXM5-80GB"],
                 "json")]))
    trace = glob.glob(os.path.join(src, "tests", "data", "traces", "h200-eager", "*.trace"))[0]
    for data, what in mutations(trace, rng, per_file, False):
        path = write(data, "rank00000.trace")
        jobs.append((f"trace file [{what}]", [
            (["trace", "summary", path, "--format", "json"], "json"), (["trace", "dump", path], "jsonl"),
            (["replay", path, "--backend", "analytic", "--format", "json"], "json"),
            (["calibrate", path, "-o", path + ".profile.json", "--format", "json"], "json")]))
    # Configurations for `trainsim import` (docs/import.md); what imports is then run.
    imports = os.path.join(src, "tests", "data", "import")
    for flag, name, structural in [("--hf", "hf/mixtral-8x7b.json", True), ("--deepspeed", "deepspeed/zero3.json", True),
                                   ("--torchtitan", "torchtitan/llama3_8b.toml", False),
                                   ("--megatron", "megatron/llama3-70b-pretrain.sh", False)]:
        for data, what in mutations(os.path.join(imports, name), rng, per_file, structural):
            path = write(data, os.path.basename(name))
            scenario = os.path.join(os.path.dirname(path), "imported.json")
            # A DeepSpeed config holds no model: the config.json of Llama 3 8B gives it.
            model = ["--hf", os.path.join(imports, "hf", "llama3-8b.json")] if flag == "--deepspeed" else []
            jobs.append((f"{name} [{what}]", [
                (["import", flag, path, *model, "--gpu", "H100-SXM5-80GB", "--nodes", "8", "--set",
                  "training.global_batch=512", "-q", "-o", scenario], None),
                (["run", scenario, "--backend", "analytic", "--format", "json"], "json")]))
    nccl = glob.glob(os.path.join(src, "tests", "data", "nccl-tests", "*.txt"))[0]
    for data, what in mutations(nccl, rng, per_file, False):
        path = write(data, "all_reduce_perf.txt")
        jobs.append((f"nccl-tests output [{what}]", [
            (["calibrate", "--nccl-tests", path, "-o", path + ".json", "--format", "json"], "json")]))
    # Chakra execution traces (docs/chakra.md): one rank's file mutated beside the other's intact.
    chakra = os.path.join(src, "tests", "data", "chakra")
    for rank in (0, 1):
        for data, what in mutations(os.path.join(chakra, f"handmade.{rank}.et"), rng, per_file, False):
            path = write(data, f"handmade.{rank}.et")
            shutil.copy(os.path.join(chakra, f"handmade.{1 - rank}.et"), os.path.dirname(path))
            jobs.append((f"handmade.{rank}.et [{what}]", [
                (["replay", "--chakra", os.path.dirname(path), "--backend", "analytic", "--format", "json", "--set",
                  "cluster.gpu=H100-SXM5-80GB"], "json")]))
    return jobs


def main():
    trainsim, src = sys.argv[1], sys.argv[2]
    per_file = int(sys.argv[3]) if len(sys.argv) > 3 else CASES_PER_FILE
    broken = output_check.self_check()
    if broken:
        print("\n".join(f"FAIL {b}" for b in broken))
        return 1
    tmp = tempfile.mkdtemp(prefix="trainsim-mutations-")
    try:
        runner = Runner(trainsim)
        jobs = jobs_for(runner, src, tmp, make_inputs(trainsim, src, tmp), per_file)

        def run_case(job):
            case, cmds = job
            for args, kind in cmds:
                runner.run(args, kind, case)

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(run_case, jobs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in runner.failures:
        print("FAIL", f)
    outcomes = ", ".join(f"exit {c}: {n}" for c, n in sorted(runner.outcomes.items()))
    print(f"mutations: {len(jobs)} mutated files, {runner.runs} runs ({outcomes}); {len(runner.failures)} failures")
    # A test that ran nothing, or whose runs all failed to start, checks nothing.
    return 1 if runner.failures or runner.outcomes.get(0, 0) == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
