"""trainsim from Python: predict how a distributed training job runs, search its layouts, compare and
sweep configurations (docs/python.md).

The functions are those of the ``trainsim`` command line, over the same planner library (sim/plan), and
return what its ``--format json`` prints, as dicts::

    import trainsim
    report = trainsim.run("scenarios/gpt3-175b-a100-1024.json", backend="analytic")
    report["iteration_time_s"], report["mfu"], report["memory"]["fits"]

    # What-ifs: keyword arguments override scenario keys ("__" for ".", or **{"a.b": v}).
    trainsim.run("scenarios/gpt3-6.7b-a100-8.json", training__micro_batch=2)
    trainsim.run(scenario_dict, **{"parallelism.tensor": 4})

    best = trainsim.search("scenarios/gpt3-6.7b-a100-8.json", recheck=False)[0]
    rows = trainsim.sweep("scenarios/gpt3-6.7b-a100-8.json", {"training.micro_batch": [1, 2, 4]})
    rows.to_frame()   # a pandas DataFrame, when pandas is installed

A scenario is a path (str or os.PathLike) to a scenario file, or a dict holding the same document; a
dict is checked like a file, and messages name it "<NAME>" (its "name", else "<dict>") where they
would name the file. Bad input raises InputError (a ValueError) carrying the messages of the command
line; a valid scenario that cannot run raises ImpossibleScenario (an InputError); a bug in trainsim
raises InternalError (a RuntimeError); Ctrl-C raises KeyboardInterrupt. Scenario warnings (a profile
fitted on another GPU, ...) are issued as TrainsimWarning.
"""

import json
import os
import threading
import warnings
from collections.abc import Mapping

from . import _trainsim
from ._results import Results
from ._trainsim import ImpossibleScenario, InputError, InternalError

__all__ = [
    "run", "check", "search", "compare", "sweep", "validate", "Results", "InputError", "ImpossibleScenario",
    "InternalError", "TrainsimWarning",
]
__version__ = _trainsim.__version__


class TrainsimWarning(UserWarning):
    """What does not stop a prediction but makes it less certain (the command line's "warning:" lines)."""


def run(scenario, backend=None, *, strict_profile=False, **overrides):
    """Predicts one training iteration of `scenario`: ``trainsim run SCENARIO --format json``.

    scenario: a scenario file's path, or a dict holding the document.
    backend: "analytic" (closed forms, no contention: fast) or "simgrid" (flow-level network with
        contention); None: the scenario's simulation.backend (default "simgrid"). SimGrid runs in a
        child process of its own, so calling run() many times in one Python process is safe.
    strict_profile: refuse a profile fitted on another GPU (``--strict-profile``).
    overrides: scenario keys to set first, as ``--set`` does: ``training__micro_batch=2`` or
        ``**{"training.micro_batch": 2}``; values are Python values (numbers, strings, bools, lists,
        dicts), e.g. ``cluster__gpu={"base": "H100-SXM5-80GB", "hbm_bandwidth": "6.7 TB/s"}``.

    Returns the report (schema "trainsim.report/1", docs/architecture.md) as a dict.
    """
    text = _trainsim.run(_source(scenario), _overrides(overrides), backend or "", bool(strict_profile), _main_thread())
    report = json.loads(text)
    _warn(report.get("warnings", []))
    return report


def check(scenario, *, resolve_profile=False, **overrides):
    """The fully resolved scenario (every default filled in, quantities as unit strings), as a dict:
    ``trainsim check``. The GPU stays a name (or object) and only a profile the scenario gives is
    kept; resolve_profile=True also embeds the resolved profile (``--resolve-profile``). Raises
    InputError listing every problem of the scenario."""
    doc = json.loads(_trainsim.check(_source(scenario), _overrides(overrides), resolve_profile))
    _warn(doc["warnings"])
    return doc["scenario"]


def search(scenario, *, gpus=None, gpu_types=None, objective="iteration_time", top=10, refine=30, recheck=True,
           max_gpus=None, min_mfu=None, fits=True, any_stack=False, max_micro_batch=0, offload=None,
           compression=None, jobs=None, yes=False, quiet=False, price=None, deadline=None, budget=None,
           memory_headroom=None, max_power=None, as_frame=False, **overrides):
    """Ranks every parallel layout of the scenario's model on its cluster: ``trainsim search``
    (docs/search.md; the options are its flags').

    gpus: GPU counts to search (an int or a list; default the scenario's). gpu_types: GPU catalog names.
    objective: "iteration_time", "tokens_per_s", "samples_per_s", "mfu", "time_to_train", "cost" or
        "tokens_per_dollar", "energy" or "co2" (docs/energy.md). top: layouts re-checked with SimGrid (recheck=False: none). refine: best
        first-pass estimates evaluated with the analytic backend. max_gpus, min_mfu (a fraction, 0.4),
        fits, max_micro_batch (0: the default), offload and compression (lists of choices tried for
        every layout): constraints and choices. any_stack: also rank layouts no training stack runs
        (``--any-stack``). jobs: evaluation threads (None: one per CPU).
    price: USD per GPU-hour by GPU type, {"H100": 2.5, "A100": 1.3} (``--price``). deadline (days),
        budget (USD), memory_headroom ("10%" or "4 GiB"), max_power (the site's MW, ``--max-power``): the
        planning constraints (docs/search.md).

    Returns Results: one dict per ranked layout, best first ({rank, layout, objective, estimate,
    analytic, simgrid}: the "ranked" rows of ``--format json``), with the rest of that document
    (space, rejected counts, ...) in .meta; as_frame=True returns results.to_frame() instead.
    Errors about options name the command line's flag ("--max-gpus").
    """
    gpu_counts = [] if gpus is None else [gpus] if isinstance(gpus, int) else [_integer(g, "gpus") for g in gpus]
    doc = json.loads(_trainsim.search(
        _source(scenario), _overrides(overrides), gpu_counts, _strings(gpu_types, "gpu_types"), str(objective),
        _integer(top, "top"), _integer(refine, "refine"), bool(recheck),
        None if max_gpus is None else _integer(max_gpus, "max_gpus"), None if min_mfu is None else float(min_mfu),
        bool(fits), bool(any_stack), _integer(max_micro_batch, "max_micro_batch"), _strings(offload, "offload"),
        _strings(compression, "compression"), _integer(jobs, "jobs") if jobs is not None else (os.cpu_count() or 1),
        bool(yes), bool(quiet), _prices(price), None if deadline is None else float(deadline),
        None if budget is None else float(budget), "" if memory_headroom is None else str(memory_headroom),
        None if max_power is None else float(max_power), _main_thread()))
    return _results("search", doc, "ranked", as_frame)


def compare(inputs, *, vary=None, backend="analytic", quiet=False, price=None, as_frame=False, **overrides):
    """Configurations side by side: ``trainsim compare``.

    inputs: a scenario or a report (a path, or a dict), or a list of them; exactly one scenario with
        `vary`. A report (a dict or file with "schema": "trainsim.report/1", e.g. what run() returned)
        is shown as it is.
    vary: {key: [values]}: one configuration per combination of the values (the first key changing
        slowest), e.g. ``{"parallelism.tensor": [2, 4, 8]}``; or strings "key=v1,v2" as ``--vary``.
    backend: "analytic" (default) or "simgrid" for the scenarios.
    price: USD per GPU-hour by GPU type, {"H100": 2.5, "A100": 1.3} (``--price``).
    overrides: scenario keys set on every scenario (see run()).

    Returns Results: one dict per figure ({metric, values: one per configuration, diff_pct: the
    difference from the reference in percent, differs}), with .meta["configurations"] (label, source,
    report or error of each) and .meta["reference"]; to_frame(): a metric x configuration table.
    """
    items = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    sources = [_source(item, index + 1 if len(items) > 1 else None) for index, item in enumerate(items)]
    doc = json.loads(_trainsim.compare(sources, _vary(vary), _overrides(overrides), str(backend), bool(quiet),
                                       _prices(price), _main_thread()))
    return _results("compare", doc, "rows", as_frame)


def sweep(scenario, ranges, *, backend="analytic", yes=False, quiet=False, price=None, as_frame=False, **overrides):
    """The scenario at every point of the cartesian product of ranges: ``trainsim sweep``
    (docs/sweep.md).

    ranges: {key: values}, each a list (or any iterable: range(1, 9)) or a string in the command
        line's syntax ("1:8:x2" geometric, "16:512:+16" arithmetic, "a,b,c"); the last key varies
        fastest. A string "key=1:8:x2" or a list of them works too.
    backend: "analytic" (default) or "simgrid" (each point in a child process).
    yes: allow more than 10,000 points.
    price: USD per GPU-hour by GPU type, {"H100": 2.5, "A100": 1.3} (``--price``).

    Returns Results: one dict per point ({values: {key: value}, world_size, iteration_time_s,
    tokens_per_s, samples_per_s, model_tflops_per_gpu, mfu, scaling_efficiency}, or {values, error}
    for a point that cannot run); to_frame() has one column per swept key.
    """
    doc = json.loads(_trainsim.sweep(_source(scenario), _overrides(overrides), _ranges(ranges), str(backend), bool(yes),
                                     bool(quiet), _prices(price), _main_thread()))
    return _results("sweep", doc, "points", as_frame)


def validate(paths, *, tolerance=None, backend=None, quiet=False, as_frame=False, **overrides):
    """Published runs predicted and compared with what was measured: ``trainsim validate``
    (docs/validation.md).

    paths: validation case files, or folders searched for *.json (a path or a list).
    tolerance: a fraction (0.10 = 10%; the command line's --tolerance is in percent): each case's
        within_tolerance says whether its judged figure is within it.
    backend: None (each case's own), "analytic" or "simgrid".

    Returns Results: one dict per case ({case, file, metric, predicted, measured, signed_error, ...},
    or {case, file, error, error_kind, problems} for a case that could not be read or run), with
    .meta["summary"]. A case's problems are its result, not an exception.
    """
    path_list = [os.fspath(p) for p in paths] if isinstance(paths, (list, tuple)) else [os.fspath(paths)]
    doc = json.loads(_trainsim.validate(path_list, None if tolerance is None else float(tolerance),
                                        _overrides(overrides), backend or "", bool(quiet), _main_thread()))
    return _results("validate", doc, "cases", as_frame)


# --- conversions between Python values and the library's JSON ---------------------------------------

def _input_error(file, message, pointer=""):
    """An InputError raised by this module itself, shaped like the library's."""
    text = ": ".join(part for part in (file, pointer, message) if part)
    error = InputError(text)
    error.problems = [{"file": file, "pointer": pointer, "message": message}]
    return error


def _jsonable(value):
    """json.dumps' fallback: NumPy scalars and arrays (a notebook's usual values), paths."""
    if hasattr(value, "tolist"):  # numpy.ndarray and numpy scalars (numpy.int64(4).tolist() == 4)
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _json_text(value, where):
    try:
        return json.dumps(value, allow_nan=False, default=_jsonable)
    except (TypeError, ValueError) as e:
        raise _input_error(where, f"cannot be written as JSON: {e}") from None


def _source(scenario, index=None):
    """(name, JSON text or None): a path, or a dict's document and the name its messages give it: its
    "name", or a report's "scenario" (compare's inputs)."""
    if isinstance(scenario, Mapping):
        name = scenario.get("scenario" if "schema" in scenario else "name")
        label = name if isinstance(name, str) and name else f"dict {index}" if index else "dict"
        name = "<" + label.replace("/", "_") + ">"
        return (name, _json_text(dict(scenario), name))
    if isinstance(scenario, (str, os.PathLike)):
        return (os.fspath(scenario), None)
    raise TypeError(f"a scenario is a path or a dict, not {type(scenario).__name__}")


def _value_text(value, where):
    """A value as the command line's --set / --vary text: a string as it is when it reads back as
    that string, otherwise JSON (so 4 stays a number and "4" a string)."""
    if isinstance(value, str) and value and not any(c in value for c in ',[]{}"'):
        try:
            json.loads(value)
        except ValueError:
            return value
    return _json_text(value, where)


def _key(name):
    key = name.replace("__", ".")
    if not key or "=" in key:
        raise _input_error("--set", f"expected a scenario key such as training.micro_batch, found \"{name}\"")
    return key


def _overrides(overrides):
    return [f"{_key(name)}={_value_text(value, '--set')}" for name, value in overrides.items()]


def _values(values, where):
    if isinstance(values, (str, bytes, Mapping)):
        raise TypeError(f"{where}: expected a list of values, found {type(values).__name__}")
    return list(values)


def _vary(vary):
    if vary is None:
        return []
    if isinstance(vary, str):
        return [vary]
    if isinstance(vary, Mapping):
        return [f"{_key(key)}=" + ",".join(_value_text(v, "--vary") for v in _values(values, f"vary[{key!r}]"))
                for key, values in vary.items()]
    return [str(v) for v in vary]


def _ranges(ranges):
    if isinstance(ranges, str):
        ranges = [ranges]
    if isinstance(ranges, Mapping):
        out = []
        for key, values in ranges.items():
            if isinstance(values, str):
                out.append((_key(key), "spec", values))
            else:
                out.append((_key(key), "values", _json_text(_values(values, f"ranges[{key!r}]"), "--set-range")))
        return out
    out = []
    for text in ranges:
        key, eq, spec = str(text).partition("=")
        if not eq:
            raise _input_error("--set-range", f"expected KEY=RANGE, found \"{text}\"")
        out.append((key, "spec", spec))
    return out


def _integer(value, where):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{where}: expected an integer, found {value!r}")
    return value.__index__()


def _strings(values, where):
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    return [str(v) for v in _values(values, where)]


def _prices(price):
    """{"H100": 2.5} (or "H100=2.5" strings, as --price) as the command line's NAME=USD entries."""
    if price is None:
        return []
    if isinstance(price, dict):
        return [f"{name}={float(usd)!r}" for name, usd in price.items()]
    return _strings(price, "price")


def _main_thread():
    """Ctrl-C (SIGINT) reaches Python's main thread only: calls from there stop on it."""
    return threading.current_thread() is threading.main_thread()


def _warn(lines):
    for line in lines:
        warnings.warn(line, TrainsimWarning, stacklevel=3)


def _results(kind, doc, rows_key, as_frame):
    _warn(doc.pop("warnings", []))
    rows = doc.pop(rows_key)
    results = Results(kind, rows, doc)
    return results.to_frame() if as_frame else results
