"""The Python module against the command line (docs/python.md): the same reports, rankings, rows and
error messages. Run by ctest (tests/python/CMakeLists.txt) with PYTHONPATH=<build>/python and
TRAINSIM_BIN (the CLI) and TRAINSIM_SOURCE_DIR in the environment; plain unittest, no pytest."""

import copy
import json
import os
import signal
import subprocess
import threading
import time
import unittest
import warnings

import trainsim

BIN = os.environ["TRAINSIM_BIN"]
SOURCE = os.environ["TRAINSIM_SOURCE_DIR"]
SMALL = os.path.join(SOURCE, "scenarios", "gpt3-6.7b-a100-8.json")  # TP2 PP2 DP2, 8 A100
BAD = os.path.join(SOURCE, "tests", "data", "bad")

# A scenario written as a dict: GPT-3 350M data-parallel on one node (as tests/data/validation/tiny-case.json).
TINY = {
    "name": "tiny",
    "cluster": {"gpu": "A100-SXM4-80GB", "nodes": 1, "gpus_per_node": 8,
                "network": {"topology": "ideal", "nics_per_node": 8, "nic_bandwidth": "200 Gb/s"}},
    "model": "gpt3-350m",
    "training": {"sequence_length": 2048, "global_batch": 64, "micro_batch": 4, "precision": "bf16"},
    "parallelism": {"tensor": 1, "pipeline": 1, "data": 8},
}


def cli(*args, expect_code=0):
    """The command line's stdout (and stderr), checking its exit code."""
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=600)
    if p.returncode != expect_code:
        raise AssertionError(f"trainsim {' '.join(args)}: exit {p.returncode}, stderr:\n{p.stderr}")
    return p.stdout, p.stderr


def cli_json(*args):
    return json.loads(cli(*args)[0])


def without_wall_time(report):
    """A report without what differs between two runs of the same prediction (the CPU time it took)."""
    r = copy.deepcopy(report)
    r["simulation"].pop("wall_s", None)
    return r


class RunTest(unittest.TestCase):
    def test_analytic_report_is_the_cli_report(self):
        mine = trainsim.run(SMALL, backend="analytic")
        theirs = cli_json("run", SMALL, "--backend", "analytic", "--format", "json")
        self.assertEqual(mine["schema"], "trainsim.report/1")
        self.assertEqual(mine["iteration_time_s"], theirs["iteration_time_s"])  # exactly: the same double
        self.assertEqual(without_wall_time(mine), without_wall_time(theirs))

    def test_simgrid_runs_repeatedly_in_one_process(self):
        # SimGrid builds one platform per process: each run forks a child, so a second call (and one
        # on another cluster) works and gives the command line's figure.
        theirs = cli_json("run", SMALL, "--backend", "simgrid", "--format", "json")["iteration_time_s"]
        first = trainsim.run(SMALL, backend="simgrid")
        second = trainsim.run(SMALL, backend="simgrid")
        other = trainsim.run(TINY, backend="simgrid")
        self.assertEqual(first["simulation"]["backend"], "simgrid")
        self.assertEqual(first["iteration_time_s"], theirs)
        self.assertEqual(second["iteration_time_s"], theirs)
        self.assertEqual(other["world_size"], 8)
        self.assertNotEqual(other["iteration_time_s"], theirs)

    def test_check_is_the_command_lines_with_and_without_the_resolved_profile(self):
        # Issue 33: check() writes a scenario (no built-in profile), resolve_profile=True embeds it,
        # each as `trainsim check` does.
        plain = trainsim.check(SMALL)
        self.assertNotIn("profile", plain)
        self.assertEqual(plain, cli_json("check", SMALL))
        resolved = trainsim.check(SMALL, resolve_profile=True)
        self.assertEqual(resolved["profile"]["fitted_on"]["gpu"], "A100-SXM4-80GB")
        self.assertEqual(resolved, cli_json("check", SMALL, "--resolve-profile"))

    def test_dict_scenario_is_read_like_its_file(self):
        # The resolved scenario (`trainsim check`) reads back: as a dict it predicts what the file does.
        resolved = trainsim.check(SMALL)
        self.assertEqual(resolved["parallelism"]["tensor"], 2)
        from_file = trainsim.run(SMALL, backend="analytic")
        from_dict = trainsim.run(resolved, backend="analytic")
        self.assertEqual(from_dict["iteration_time_s"], from_file["iteration_time_s"])
        tiny = trainsim.run(TINY, backend="analytic")
        self.assertEqual(tiny["scenario"], "tiny")
        self.assertEqual(tiny["world_size"], 8)
        self.assertGreater(tiny["iteration_time_s"], 0)
        unnamed = dict(TINY)
        del unnamed["name"]
        self.assertEqual(trainsim.run(unnamed, backend="analytic")["scenario"], "<dict>")

    def test_overrides_are_the_cli_set(self):
        theirs = cli_json("run", SMALL, "--backend", "analytic", "--format", "json", "--set", "training.micro_batch=2",
                          "--set", "parallelism.pipeline_schedule=gpipe")
        dunder = trainsim.run(SMALL, "analytic", training__micro_batch=2, parallelism__pipeline_schedule="gpipe")
        dotted = trainsim.run(SMALL, "analytic", **{"training.micro_batch": 2, "parallelism.pipeline_schedule": "gpipe"})
        self.assertEqual(dunder["iteration_time_s"], theirs["iteration_time_s"])
        self.assertEqual(dotted["iteration_time_s"], theirs["iteration_time_s"])
        base = trainsim.run(SMALL, "analytic")
        self.assertNotEqual(dunder["iteration_time_s"], base["iteration_time_s"])
        # An object value, and a catalog GPU turned into {"base": ...} by a nested key, as --set does.
        faster = trainsim.run(SMALL, "analytic", cluster__gpu__hbm_bandwidth="4 TB/s")
        self.assertLess(faster["iteration_time_s"], base["iteration_time_s"])
        described = trainsim.run(SMALL, "analytic", cluster__gpu={"base": "A100-SXM4-80GB", "hbm_bandwidth": "4 TB/s"})
        self.assertEqual(described["iteration_time_s"], faster["iteration_time_s"])
        # The dict passed in is not changed.
        before = copy.deepcopy(TINY)
        trainsim.run(TINY, "analytic", training__micro_batch=8)
        self.assertEqual(TINY, before)


class ErrorTest(unittest.TestCase):
    def test_bad_field_names_file_and_pointer(self):
        bad = copy.deepcopy(TINY)
        bad["training"]["micro_bach"] = 2
        with self.assertRaises(trainsim.InputError) as caught:
            trainsim.run(bad, backend="analytic")
        e = caught.exception
        self.assertIsInstance(e, ValueError)
        self.assertNotIsInstance(e, trainsim.ImpossibleScenario)
        self.assertIn("<tiny>: /training/micro_bach: unknown key", str(e))
        self.assertIn("micro_batch", str(e))  # "did you mean"
        self.assertEqual(e.problems[0]["file"], "<tiny>")
        self.assertEqual(e.problems[0]["pointer"], "/training/micro_bach")
        # The same problem in a file: the message `trainsim run` prints, with the file's path.
        with self.assertRaises(trainsim.InputError) as from_file:
            trainsim.run(SMALL, "analytic", training__micro_bach=2)
        _, stderr = cli("run", SMALL, "--backend", "analytic", "--set", "training.micro_bach=2", expect_code=2)
        self.assertEqual("error: " + str(from_file.exception) + "\n", stderr)

    def test_impossible_scenario(self):
        with self.assertRaises(trainsim.ImpossibleScenario) as caught:
            trainsim.run(SMALL, "analytic", parallelism__tensor=3)
        self.assertIsInstance(caught.exception, trainsim.InputError)
        self.assertIn("/parallelism/tensor", str(caught.exception))

    def test_bad_options(self):
        with self.assertRaisesRegex(trainsim.InputError, 'backend: expected "analytic" or "simgrid"'):
            trainsim.run(SMALL, backend="ns3")
        with self.assertRaisesRegex(trainsim.InputError, r"nope\.json"):
            trainsim.run(os.path.join(SOURCE, "nope.json"))
        with self.assertRaisesRegex(trainsim.InputError, "--set"):
            trainsim.run(SMALL, "analytic", **{"training.micro_batch.x": 1})
        with self.assertRaisesRegex(trainsim.InputError, "cannot be written as JSON"):
            trainsim.run(TINY, "analytic", training__micro_batch=float("nan"))
        with self.assertRaises(TypeError):
            trainsim.run(42)
        with self.assertRaisesRegex(trainsim.InputError, "--objective"):
            trainsim.search(SMALL, objective="speed")

    def test_exception_classes(self):
        self.assertTrue(issubclass(trainsim.InputError, ValueError))
        self.assertTrue(issubclass(trainsim.ImpossibleScenario, trainsim.InputError))
        self.assertTrue(issubclass(trainsim.InternalError, RuntimeError))
        self.assertEqual(trainsim.InputError.__module__, "trainsim")

    def test_bad_input_corpus_as_dicts(self):
        # tests/data/bad: each scenario's expected messages ({file}: the file) must come out of check()
        # for the file and, given as a dict, with "<NAME>" in place of the file. Relative paths in a
        # dict are relative to the current directory: run from the corpus' folder, as the files are.
        compared = 0
        here = os.getcwd()
        os.chdir(BAD)
        try:
            for name in sorted(os.listdir(".")):
                if not name.endswith(".json") or not os.path.exists(name[:-5] + ".expected"):
                    continue
                with open(name[:-5] + ".expected") as f:
                    expected = [line for line in f.read().splitlines() if line]
                try:
                    with open(name) as f:
                        doc = json.load(f)
                    json.dumps(doc, allow_nan=False)
                except ValueError:
                    continue  # not JSON that Python reads back (syntax errors, NaN): the file parser's cases
                if not isinstance(doc, dict):
                    continue
                label = doc.get("name")
                display = "<" + label.replace("/", "_") + ">" if isinstance(label, str) and label else "<dict>"
                for scenario, file in ((name, name), (doc, display)):
                    with self.subTest(case=name, given="dict" if scenario is doc else "file"):
                        with self.assertRaises(trainsim.InputError) as caught:
                            trainsim.check(scenario)
                        for line in expected:
                            self.assertIn(line.replace("{file}", file), str(caught.exception))
                compared += 1
        finally:
            os.chdir(here)
        self.assertGreater(compared, 100)


class SearchTest(unittest.TestCase):
    def test_ranked_dicts_match_the_cli(self):
        found = trainsim.search(SMALL, recheck=False, refine=8, top=3, jobs=1, quiet=True)
        theirs = cli_json("search", SMALL, "--no-recheck", "--refine", "8", "--top", "3", "--jobs", "1", "--quiet",
                          "--format", "json")
        self.assertIsInstance(found, list)
        self.assertEqual(found.meta["schema"], "trainsim.search/1")
        self.assertEqual(found.meta["space"], theirs["space"])
        self.assertEqual(len(found), len(theirs["ranked"]))
        self.assertEqual([r["layout"] for r in found], [r["layout"] for r in theirs["ranked"]])
        self.assertEqual([r["rank"] for r in found], list(range(1, len(found) + 1)))
        times = [r["analytic"]["iteration_time_s"] for r in found if "analytic" in r]
        self.assertGreaterEqual(len(times), 2)
        self.assertEqual(times, sorted(times))  # objective iteration_time: best (fastest) first
        self.assertEqual(found[0]["objective"], found[0]["analytic"]["iteration_time_s"])

    def test_dict_scenario_and_gpus(self):
        found = trainsim.search(TINY, gpus=4, recheck=False, refine=4, jobs=1, quiet=True)
        self.assertTrue(found)
        self.assertEqual({r["layout"]["gpus"] for r in found}, {4})
        self.assertEqual(found.meta["scenario"], "<tiny>")
        both = trainsim.search(TINY, gpus=[4, 8], recheck=False, refine=4, jobs=1, quiet=True)
        self.assertGreater(both.meta["space"]["candidates"], found.meta["space"]["candidates"])
        with self.assertRaisesRegex(trainsim.InputError, "--gpus"):
            trainsim.search(TINY, gpus=[0])

    def test_prices_and_deadline_match_the_cli(self):
        tiny = copy.deepcopy(TINY)
        tiny["training"]["tokens"] = 1e9
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"trainsim_python_planning_{os.getpid()}.json")
        with open(path, "w") as f:
            json.dump(tiny, f)
        try:
            options = dict(gpu_types=["A100-SXM4-80GB", "H100-SXM5-80GB"], objective="cost", recheck=False, refine=6,
                           jobs=1, quiet=True)
            found = trainsim.search(path, price={"H100": 4.0, "A100": 1.5}, deadline=30, **options)
            theirs = cli_json("search", path, "--gpu", "A100-SXM4-80GB,H100-SXM5-80GB", "--objective", "cost",
                              "--no-recheck", "--refine", "6", "--jobs", "1", "--quiet", "--price", "H100=4,A100=1.5",
                              "--deadline", "30", "--format", "json")
            self.assertEqual([r["layout"] for r in found], [r["layout"] for r in theirs["ranked"]])
            self.assertEqual([r["objective"] for r in found], [r["objective"] for r in theirs["ranked"]])
            self.assertEqual(found.meta["space"], theirs["space"])
            with self.assertRaisesRegex(trainsim.InputError, "--price"):
                trainsim.search(path, price={"B200": 4.0}, **options)
            with self.assertRaisesRegex(trainsim.InputError, "--memory-headroom"):
                trainsim.search(path, memory_headroom="120%", **options)
            energy = dict(objective="energy", recheck=False, refine=6, jobs=1, quiet=True)
            found = trainsim.search(path, max_power=0.03, **energy)
            theirs = cli_json("search", path, "--objective", "energy", "--no-recheck", "--refine", "6", "--jobs", "1",
                              "--quiet", "--max-power", "0.03", "--format", "json")
            self.assertEqual([r["objective"] for r in found], [r["objective"] for r in theirs["ranked"]])
            with self.assertRaisesRegex(trainsim.InputError, "--max-power"):
                trainsim.search(path, max_power=1e-6, **energy)  # 1 W: no layout fits
        finally:
            os.remove(path)


class CompareSweepValidateTest(unittest.TestCase):
    def test_compare_rows_match_the_cli(self):
        rows = trainsim.compare(SMALL, vary={"parallelism.tensor": [2, 4]}, quiet=True)
        theirs = cli_json("compare", SMALL, "--vary", "parallelism.tensor=2,4", "--quiet", "--format", "json")
        self.assertEqual([c["label"] for c in rows.meta["configurations"]], ["tensor=2", "tensor=4"])
        self.assertEqual(rows.meta["reference"], 0)
        self.assertEqual([r["metric"] for r in rows], [r["metric"] for r in theirs["rows"]])
        self.assertEqual([r["values"] for r in rows], [r["values"] for r in theirs["rows"]])
        self.assertEqual([r["diff_pct"] for r in rows], [r["diff_pct"] for r in theirs["rows"]])
        time_row = next(r for r in rows if r["metric"] == "iteration_time_s")
        self.assertEqual(len(time_row["values"]), 2)

    def test_compare_dicts_and_reports(self):
        report = trainsim.run(SMALL, "analytic")
        rows = trainsim.compare([TINY, report, SMALL], quiet=True)
        labels = [c["label"] for c in rows.meta["configurations"]]
        self.assertEqual(labels, ["<tiny>", "<gpt3-6.7b-a100-8>", "gpt3-6.7b-a100-8"])
        self.assertEqual([c["kind"] for c in rows.meta["configurations"]], ["scenario", "report", "scenario"])
        time_row = next(r for r in rows if r["metric"] == "iteration_time_s")
        self.assertEqual(time_row["values"][1], time_row["values"][2])  # the report, and its scenario again

    def test_sweep_points(self):
        points = trainsim.sweep(SMALL, {"training.micro_batch": [1, 2, 4]}, quiet=True)
        theirs = cli_json("sweep", SMALL, "--set-range", "training.micro_batch=1:4:x2", "--quiet", "--format", "json")
        self.assertEqual(points.meta["keys"], ["training.micro_batch"])
        self.assertEqual([p["values"] for p in points], [p["values"] for p in theirs["points"]])
        self.assertEqual([p["iteration_time_s"] for p in points], [p["iteration_time_s"] for p in theirs["points"]])
        self.assertEqual(points[0]["scaling_efficiency"], 1.0)
        # The command line's syntax, two keys (the last fastest), a string value with ':' and a point
        # that cannot run (its error, not an exception).
        grid = trainsim.sweep(SMALL, {"training.micro_batch": "1:2:x2", "parallelism.tensor": [2, 3]}, quiet=True)
        self.assertEqual([(p["values"]["training.micro_batch"], p["values"]["parallelism.tensor"]) for p in grid],
                         [(1, 2), (1, 3), (2, 2), (2, 3)])
        self.assertIn("error", grid[1])
        self.assertIn("iteration_time_s", grid[2])
        methods = trainsim.sweep(os.path.join(SOURCE, "scenarios", "llama3-8b-2of4-h100-16.json"),
                                 {"optimizations.pruning.method": ["none", "2:4"]}, quiet=True)
        self.assertEqual([p["values"]["optimizations.pruning.method"] for p in methods], ["none", "2:4"])
        self.assertTrue(all("iteration_time_s" in p for p in methods))
        with self.assertRaisesRegex(trainsim.InputError, "--set-range"):
            trainsim.sweep(SMALL, {"parallelism.tensr": [1, 2]})

    def test_validate_cases(self):
        cases = trainsim.validate(os.path.join(SOURCE, "tests", "data", "validate-command"), backend="analytic",
                                  tolerance=0.5, quiet=True)
        self.assertEqual([c["case"] for c in cases][:2], ["time-case", "throughput-case"])
        self.assertIn("signed_error", cases[0])
        self.assertEqual(cases[0]["within_tolerance"], abs(cases[0]["signed_error"]) <= 0.5)
        self.assertEqual(cases.meta["summary"]["input_errors"], sum(1 for c in cases if c.get("error_kind") == "input"))
        self.assertGreater(cases.meta["summary"]["input_errors"], 0)

    def test_frames(self):
        rows = trainsim.sweep(SMALL, {"training.micro_batch": [1, 2]}, quiet=True)
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, "pandas"):
                rows.to_frame()
            return
        frame = rows.to_frame()
        self.assertEqual(list(frame["training.micro_batch"]), [1, 2])
        self.assertEqual(list(frame["iteration_time_s"]), [p["iteration_time_s"] for p in rows])
        found = trainsim.search(SMALL, recheck=False, refine=4, jobs=1, quiet=True, as_frame=True)
        self.assertIn("tensor", found.columns)
        self.assertIn("analytic.iteration_time_s", found.columns)
        table = trainsim.compare(SMALL, vary={"parallelism.tensor": [2, 4]}, quiet=True).to_frame()
        self.assertEqual(list(table.columns), ["tensor=2", "tensor=4"])
        self.assertIn("iteration_time_s", table.index)


class WarningsAndInterruptTest(unittest.TestCase):
    def test_scenario_warnings_are_python_warnings(self):
        described = copy.deepcopy(TINY)
        described["cluster"]["gpu"] = {"name": "X100", "hbm_capacity": "80 GiB", "hbm_bandwidth": "2 TB/s",
                                       "nvlink_bandwidth": "300 GB/s", "pcie_bandwidth": "32 GB/s", "sm_count": 108,
                                       "dense_peak": {"bf16": "300 TFLOP/s"}}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = trainsim.run(described, "analytic")
        self.assertIn('describes "X100" without a "base"', report["warnings"][0])
        self.assertEqual([str(w.message) for w in caught if w.category is trainsim.TrainsimWarning], report["warnings"])

    def test_ctrl_c_stops_a_sweep_and_python_gets_its_handler_back(self):
        # 2,000 points would take minutes; SIGINT after 0.5 s stops it between points.
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                trainsim.sweep(SMALL, {"simulation.max_tasks": "1000000:1001999:+1"}, quiet=True)
        finally:
            timer.cancel()
        self.assertLess(time.monotonic() - start, 8)  # uninterrupted: 16 s here
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
        self.assertEqual(trainsim.run(TINY, "analytic")["world_size"], 8)  # and the module still works


if __name__ == "__main__":
    unittest.main()
