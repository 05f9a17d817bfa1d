"""What no output of trainsim may hold (docs/hardening.md, "Numbers in the output"; issue 34).

Shared by output_numbers.py (every subcommand on the bundled files) and mutations.py (every
subcommand on mutated copies of them). An output is a file's text or a command's standard output;
its kind is JSON (one document), JSON lines (`trace dump`), CSV (a header row, then rows) or text
(tables, report.txt, HTML). The checks:

- text (tables, report.txt, HTML, SVG): no `inf`, `-inf` or `nan` as a word of its own ("zero-infinity"
  or "Infiniband" are not numbers);
- JSON: every number finite (NaN and Infinity tokens included; a string value is text, not checked);
  `null` only where a document of the schema writes it on purpose (NULL_ALLOWED);
- CSV: every field that reads as a number finite;
- JSON and CSV: a duration is >= 0; an MFU, HFU or goodput is in [0, 1].

A duration is a value whose key (or CSV column) is a time by its unit, the key's last `_` part:
`_s`, `_us`, `_ms`, `_ns`, `_h`, `_hours` (`gpu_hours` too), `_days`, or a key that is exactly `days`,
`hours` or `seconds`; `_s_per_...` (`amortized_s_per_iteration`) is a duration per something.
`..._per_s` is a rate, not a duration. Every number inside an object or array whose key is a
duration (`breakdown_s`, `communication_s`, `optimal_interval_s`, `stall_breakdown_s`,
`time_s`) is one. A Chrome trace event's `ts` and `dur` (`run --timeline`) are durations since the
iteration's start. Signed errors (`error`, `signed_error`, `diff_pct`) are not durations.
"""
import csv
import json
import math
import re

DURATION_UNITS = {"s", "us", "ms", "ns", "h", "hours", "days", "seconds"}
FRACTIONS = {"mfu", "hfu", "min_mfu", "goodput"}

# JSON pointers (regular expressions over "/a/0/b") where a document of the schema writes null on
# purpose: compare's figure that a column's report lacks (a configuration that cannot run, a report
# without time_to_train), its difference where there is none (not a number, no reference) and its
# reference column when every configuration failed; a search shard's options whose flags were not
# given.
NULL_ALLOWED = {
    "trainsim.compare/1": re.compile(r"^(/rows/\d+/(values|diff_pct)/\d+|/reference)$"),
    "trainsim.search-shard/1": re.compile(r"^/options/(max_gpus|min_mfu)$"),
}

# A number written as text: "inf", "-inf", "nan" as a word of its own ("$inf" too; not "Infiniband",
# "Infinity Fabric" or "zero-infinity"). JSON's Infinity and NaN tokens are caught by parsing.
NON_FINITE_WORD = re.compile(r"(?<![A-Za-z0-9_.\-])-?(inf|nan)(?![A-Za-z0-9_])", re.IGNORECASE)


def is_duration_key(key):
    key = str(key)
    if "_s_per_" in key:
        return True
    parts = key.split("_")
    if len(parts) == 1:
        return key in ("days", "hours", "seconds")
    return parts[-1] in DURATION_UNITS and parts[-2] != "per"


def is_fraction(key):
    return str(key) in FRACTIONS


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_json_value(doc, where, problems):
    """Walks `doc`; appends one message per problem to `problems`."""
    schema = doc.get("schema") if isinstance(doc, dict) else None
    null_allowed = NULL_ALLOWED.get(schema)

    def walk(value, pointer, key, duration, in_trace_events):
        if isinstance(value, dict):
            for k, child in value.items():
                event_time = in_trace_events and k in ("ts", "dur")
                walk(child, f"{pointer}/{k}", k, duration or is_duration_key(k) or event_time,
                     in_trace_events or k == "traceEvents")
        elif isinstance(value, list):
            for i, child in enumerate(value):
                walk(child, f"{pointer}/{i}", key, duration, in_trace_events)
        elif value is None:
            if null_allowed is None or not null_allowed.match(pointer):
                problems.append(f"{where}: {pointer} is null (a number that was not finite?)")
        elif _number(value):
            if not math.isfinite(value):
                problems.append(f"{where}: {pointer} is {value}")
            elif duration and value < 0:
                problems.append(f"{where}: {pointer} is a negative duration ({value})")
            elif is_fraction(key) and not 0 <= value <= 1:
                problems.append(f"{where}: {pointer} = {value} is not a fraction in [0, 1]")

    walk(doc, "", None, False, False)


def check_text(text, where, problems):
    for n, line in enumerate(text.splitlines(), 1):
        m = NON_FINITE_WORD.search(line)
        if m:
            problems.append(f"{where}:{n}: \"{m.group(0)}\" in: {line.strip()[:160]}")


def _parse_json(text, where, problems):
    try:
        # Python reads NaN and Infinity too (a writer other than nlohmann's could print them).
        return json.loads(text)
    except ValueError as e:
        problems.append(f"{where}: not JSON ({e})")
        return None


def check_output(text, kind, where):
    """The problems in one output; kind: json, jsonl, csv or text."""
    problems = []
    if kind == "text":
        check_text(text, where, problems)
    elif kind == "json":
        doc = _parse_json(text, where, problems)
        if doc is not None:
            check_json_value(doc, where, problems)
    elif kind == "jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                doc = _parse_json(line, f"{where}:{n}", problems)
                if doc is not None:
                    check_json_value(doc, f"{where}:{n}", problems)
    elif kind == "csv":
        check_csv(text, where, problems)
    return problems


def check_csv(text, where, problems):
    """The rows of a header + rows table; `run`, `search`, `compare`, `sweep`, `validate`,
    `collective`, `calibrate`, `replay`, `describe` and `trace summary` write one."""
    rows = list(csv.reader(l for l in text.splitlines() if l.strip() and not l.startswith("#")))
    if not rows:
        return
    header = rows[0]
    for n, row in enumerate(rows[1:], 2):
        for column, field in zip(header, row):
            try:
                value = float(field)
            except ValueError:
                continue
            if not math.isfinite(value):
                problems.append(f"{where}: row {n}, {column} = {field}")
            elif is_duration_key(column) and value < 0:
                problems.append(f"{where}: row {n}, {column} = {field} is a negative duration")
            elif is_fraction(column) and not 0 <= value <= 1:
                problems.append(f"{where}: row {n}, {column} = {field} is not a fraction in [0, 1]")


def kind_of_path(path):
    if path.endswith(".json"):
        return "json"
    if path.endswith(".csv"):
        return "csv"
    return "text"


def self_check():
    """The checks find what they are for (a checker that finds nothing would pass every output):
    the problems found in known outputs, [] when the checker works."""
    cases = [
        ('{"iteration_time_s": -0.5}', "json", 1),
        ('{"breakdown_s": {"compute": -1e-17}}', "json", 1),
        ('{"checkpoint": {"amortized_s_per_iteration": -2}}', "json", 1),
        ('{"traceEvents": [{"ts": -3, "dur": 1}]}', "json", 1),
        ('{"mfu": 1.2, "hfu": -0.1}', "json", 2),
        ('{"tokens_per_s": -1, "error": -0.5, "iteration_time_s": NaN}', "json", 1),
        ('{"x": Infinity}', "json", 1),
        ('{"x": null}', "json", 1),
        ('{"schema": "trainsim.compare/1", "rows": [{"values": [1, null], "diff_pct": [0, null]}]}', "json", 0),
        ("time_to_train_cost_usd,mfu,step_s,name\ninf,1.5,-2,inf s\n", "csv", 3),
        ('{"scenario": "inf s", "x": 1}', "json", 0),
        ('gpu,source\nMI300X,"a, b: Infinity Fabric"\n', "csv", 0),
        ("iteration time  inf s\ncost   $inf\nzero-infinity  Infiniband  nan%\n", "text", 3),
        ('{"a": 1}\n{"dur_s": -1}\n', "jsonl", 1),
    ]
    wrong = []
    for text, kind, expected in cases:
        found = check_output(text, kind, "self-check")
        if len(found) != expected:
            wrong.append(f"output_check.py finds {len(found)} problems in {text!r} ({kind}), expected {expected}: {found}")
    return wrong
