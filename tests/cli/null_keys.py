#!/usr/bin/env python3
"""`null` at every key of every bundled scenario (docs/hardening.md, "null"; issue 34).

For each scenarios/**/*.json and each value in it (object members and array elements, at any depth),
a copy with that value replaced by `null` goes through `trainsim check`. `null` is never a value in a
scenario, so every copy must be refused: exit 2, with a message on stderr naming the copy's file and
the JSON pointer of the null (or of a parent). Any other exit (0: accepted; 1: an internal error;
a signal; a run over 20 s) fails the test. A scenario whose model is a catalog name also gets
`--set model.KEY=null` for each key of the resolved model. The cases are generated from the bundled files, never
hand-listed, so a new scenario or key is covered on its own.

    null_keys.py TRAINSIM SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

# Keys under which null is documented to mean "absent" (docs/hardening.md): none in a scenario.
NULL_MEANS_ABSENT = set()


def strip_comments(text):
    """// and /* */ comments outside strings removed (scenarios are JSON with comments)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def escape(key):
    return str(key).replace("~", "~0").replace("/", "~1")


def positions(value, pointer=""):
    """(pointer, path) of every value below `value`."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        p = pointer + "/" + escape(key)
        yield p, key
        for sub, _ in positions(child, p):
            yield sub, None


def with_null(doc, pointer):
    copy = json.loads(json.dumps(doc))
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node = copy
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = None
    else:
        node[last] = None
    return copy


def main():
    trainsim, src = sys.argv[1], sys.argv[2]
    files = []
    for root, _, names in os.walk(os.path.join(src, "scenarios")):
        files += [os.path.join(root, n) for n in names if n.endswith(".json")]
    files.sort()
    failures, cases = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            with open(path, encoding="utf-8") as f:
                doc = json.loads(strip_comments(f.read()))
            rel = os.path.relpath(path, src)
            for pointer, _ in positions(doc):
                cases += 1
                case = os.path.join(tmp, "case.json")
                with open(case, "w", encoding="utf-8") as f:
                    json.dump(with_null(doc, pointer), f)
                try:
                    r = subprocess.run([trainsim, "check", case], capture_output=True, text=True, timeout=20)
                    code, err = r.returncode, r.stderr
                except subprocess.TimeoutExpired:
                    code, err = "timeout (20 s)", ""
                expected = 0 if pointer.rsplit("/", 1)[-1] in NULL_MEANS_ABSENT else 2
                # The message names the file and the null's pointer or one of its parents (a null
                # section is reported where it is).
                named = any(f"{case}: {pointer[:k]}" in err for k in range(len(pointer), 0, -1)
                            if k == len(pointer) or pointer[k] == "/")
                if code != expected or (expected == 2 and not named):
                    failures.append(f"{rel} {pointer}: exit {code} (expected {expected})"
                                    + ("" if named else ", the message does not name the pointer")
                                    + "".join(f"\n  stderr: {line}" for line in err.splitlines()[:4]))
            # A catalog model ("model": "gpt3-175b") has keys too, reachable with --set: null at each
            # key of the resolved model (what `check` prints) through --set model.KEY=null.
            if isinstance(doc.get("model"), str):
                r = subprocess.run([trainsim, "check", path], capture_output=True, text=True, timeout=20)
                resolved = json.loads(r.stdout) if r.returncode == 0 else {}
                for key in resolved.get("model", {}):
                    if key in ("name", "family"):
                        continue  # printed for the reader, not keys of a {"base": ...} override
                    cases += 1
                    try:
                        r = subprocess.run([trainsim, "check", path, "--set", f"model.{key}=null"],
                                           capture_output=True, text=True, timeout=20)
                        code, err = r.returncode, r.stderr
                    except subprocess.TimeoutExpired:
                        code, err = "timeout (20 s)", ""
                    if code != 2 or "/model" not in err:
                        failures.append(f"{rel} --set model.{key}=null: exit {code} (expected 2 naming /model)"
                                        + "".join(f"\n  stderr: {line}" for line in err.splitlines()[:4]))
    for f in failures:
        print("FAIL", f)
    print(f"null at every key: {cases} cases from {len(files)} scenarios, {len(failures)} failures")
    return 1 if failures or cases == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
