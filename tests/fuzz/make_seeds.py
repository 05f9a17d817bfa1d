#!/usr/bin/env python3
"""Seeds of the fuzz targets whose inputs trainsim writes or a scenario holds (scripts/fuzz.sh).

    make_seeds.py TARGET TRAINSIM SOURCE_DIR OUT_DIR

shard: `search --shard 0/1 --no-recheck` of small bundled scenarios (one shard: merged alone);
report: `run --backend analytic --format json` of the bundled scenarios of at most 64 GPUs;
layer_graph: the resolved "model" of the layer-graph scenarios and of the bad corpus's layer-graph cases;
resilience: the reliability, storage, price, checkpoint and tokens of the resilience scenarios and of
the bad corpus cases that set them, as merge patches.
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from null_keys import strip_comments  # noqa: E402


def run(trainsim, args):
    r = subprocess.run([trainsim] + args, capture_output=True, text=True, timeout=300)
    return r.stdout if r.returncode == 0 else None


def scenarios(src):
    return sorted(glob.glob(os.path.join(src, "scenarios", "**", "*.json"), recursive=True))


def bad_cases(src):
    for path in sorted(glob.glob(os.path.join(src, "tests", "data", "bad", "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                yield path, json.loads(strip_comments(f.read()))
        except ValueError:
            continue  # the corpus's cases that are bad as JSON


def seeds(target, trainsim, src):
    if target == "shard":
        for name in ("gpt3-6.7b-a100-8.json", "cnn/resnet50-a100-8.json", "llama3-8b-2of4-h100-16.json",
                     "compression/gpt-1.3b-powersgd-25gbe-32.json", "offload/zero-offload-10b-v100-1.json"):
            yield name, run(trainsim, ["search", os.path.join(src, "scenarios", name), "--shard", "0/1", "--no-recheck",
                                       "-q"])
    elif target == "report":
        for path in scenarios(src):
            resolved = run(trainsim, ["check", path])
            if resolved and json.loads(resolved)["cluster"]["nodes"] * json.loads(resolved)["cluster"]["gpus_per_node"] <= 64:
                yield path, run(trainsim, ["run", path, "--backend", "analytic", "--format", "json"])
    elif target == "layer_graph":
        for path in glob.glob(os.path.join(src, "scenarios", "cnn", "*.json")):
            resolved = run(trainsim, ["check", path])
            if resolved:
                yield path, json.dumps(json.loads(resolved)["model"])
        for path, doc in bad_cases(src):
            if isinstance(doc.get("model"), dict) and doc["model"].get("family") == "layer_graph":
                yield path, json.dumps(doc["model"])
    elif target == "resilience":
        docs = []
        for path in glob.glob(os.path.join(src, "scenarios", "resilience", "*.json")):
            with open(path, encoding="utf-8") as f:
                docs.append((path, json.loads(strip_comments(f.read()))))
        docs += list(bad_cases(src))
        for path, doc in docs:
            cluster = {k: v for k, v in doc.get("cluster", {}).items()
                       if k in ("reliability", "storage", "price_per_gpu_hour")} if isinstance(doc.get("cluster"), dict) else {}
            training = {k: v for k, v in doc.get("training", {}).items()
                        if k in ("checkpoint", "tokens")} if isinstance(doc.get("training"), dict) else {}
            if cluster or training:
                yield path, json.dumps({"cluster": cluster, "training": training})
    else:
        raise SystemExit(f"make_seeds.py: unknown target {target}")


def main():
    target, trainsim, src, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    n = 0
    for origin, text in seeds(target, trainsim, src):
        if text:
            n += 1
            name = os.path.relpath(origin, src).replace(os.sep, "-") if os.path.isabs(origin) else origin.replace("/", "-")
            with open(os.path.join(out, f"seed-{target}-{name}"), "w", encoding="utf-8") as f:
                f.write(text)
    print(f"fuzz: {n} {target} seeds", file=sys.stderr)
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
