// The compiled half of the Python module `trainsim` (trainsim/__init__.py is the API users call;
// docs/python.md). Each function takes a scenario as (name, JSON text or None) and returns its result
// as JSON text: Python's json module converts both ways, so a dict is read exactly as the file it
// could have been (the same parser, limits, checks and messages, with `name` where a file's path
// would be) and a report comes back with the numbers `trainsim run --format json` prints. The
// planner's errors become the module's exceptions (InputError, ImpossibleScenario, InternalError,
// KeyboardInterrupt for Ctrl-C).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/engine/backend.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/results_json.hpp"

namespace py = pybind11;
namespace core = trainsim::core;
namespace engine = trainsim::engine;
namespace plan = trainsim::plan;

namespace {

// A scenario (or, for compare, a report) as Python gives it: {name, text}. Without text, `name` is a
// file to read; with text (a dict as JSON), `name` ("<dict>") stands for the file in messages and
// relative paths in it are relative to the current directory.
using Source = std::pair<std::string, std::optional<std::string>>;

core::Json document_of(const Source& source) {
  return source.second ? core::parse_json_text(*source.second, source.first) : core::load_scenario_file(source.first);
}

std::string dump(const core::Json& j) { return j.dump(-1, ' ', false, core::Json::error_handler_t::replace); }

// The command line checks --backend with CLI11; the library takes the name as given. "" (None):
// the scenario's own, where `allow_default`.
void check_backend(const std::string& backend, bool allow_default) {
  if (backend == "analytic" || backend == "simgrid" || (allow_default && backend.empty())) return;
  throw core::InputError("backend", "",
                         fmt::format("expected \"analytic\" or \"simgrid\"{}, found \"{}\"",
                                     allow_default ? " (or None: the scenario's simulation.backend)" : "", backend));
}

// ScenarioWarnings as Python strings, one per distinct warning ("TEXT (in: LABEL, ...)").
std::vector<std::string> warning_lines(const plan::ScenarioWarnings& warnings, size_t runs) {
  std::ostringstream text;
  warnings.print(text, runs);
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text.str());
  const std::string prefix = "warning: ";
  while (std::getline(in, line)) lines.push_back(line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line);
  return lines;
}

// Runs `work` without the GIL, so that other Python threads run meanwhile. When `interruptible` (the
// caller is Python's main thread, which receives SIGINT) Ctrl-C is caught by a StopOnInterrupt for
// the call's length: the library's loops stop and the call raises KeyboardInterrupt; Python's own
// handler is back afterwards. A SimGrid child process ends on Ctrl-C by itself (predict_report).
template <class Work>
auto without_gil(bool interruptible, Work&& work) {
  py::gil_scoped_release release;
  std::optional<plan::StopOnInterrupt> stop;
  if (interruptible) stop.emplace(/*second_ends_process=*/false);
  auto result = work();
  if (plan::StopOnInterrupt::requested()) throw engine::Interrupted(engine::SimulationProgress{});
  return result;
}

std::string run(const Source& source, const std::vector<std::string>& overrides, const std::string& backend,
                bool strict_profile, bool interruptible) {
  check_backend(backend, /*allow_default=*/true);
  return without_gil(interruptible, [&] {
    core::Json doc = document_of(source);
    for (const std::string& o : overrides) plan::apply_override(doc, o);
    const plan::Scenario s = plan::read_scenario(doc, source.first);
    if (strict_profile && !s.profile_mismatch.empty()) {
      throw core::InputError(s.file, "/simulation/profile", s.profile_mismatch + " (strict_profile)");
    }
    // SimGrid in a child process: the library builds one SimGrid platform per process, and this
    // process may run many scenarios.
    return dump(plan::predict_report(s, backend));
  });
}

std::string check(const Source& source, const std::vector<std::string>& overrides, bool resolve_profile) {
  return without_gil(false, [&] {
    core::Json doc = document_of(source);
    for (const std::string& o : overrides) plan::apply_override(doc, o);
    const plan::Scenario s = plan::read_scenario(doc, source.first);
    const auto profile = resolve_profile ? plan::Scenario::ProfileOut::RESOLVED : plan::Scenario::ProfileOut::AS_GIVEN;
    return dump({{"scenario", s.to_json(profile)}, {"warnings", s.warnings}});
  });
}

std::string search(const Source& source, const std::vector<std::string>& overrides, const std::vector<int>& gpus,
                   const std::vector<std::string>& gpu_types, const std::string& objective, int top, int refine,
                   bool recheck, std::optional<int> max_gpus, std::optional<double> min_mfu, bool fits,
                   bool any_stack, int max_micro_batch, const std::vector<std::string>& offload,
                   const std::vector<std::string>& compression, int jobs, bool yes, bool quiet,
                   const std::vector<std::string>& prices, std::optional<double> deadline_days,
                   std::optional<double> budget_usd, const std::string& memory_headroom,
                   std::optional<double> max_power_mw, bool interruptible) {
  plan::SearchOptions o;
  o.scenario = source.first;
  o.overrides = overrides;
  for (int g : gpus) {
    if (g < 1 || g > plan::MAX_SEARCH_GPUS) {
      throw core::InputError("--gpus", "", fmt::format("expected a positive GPU count, found {}", g));
    }
  }
  o.gpus = gpus;
  o.gpu_types = gpu_types;
  const auto named = plan::objective_names().find(objective);
  if (named == plan::objective_names().end()) {
    std::string names;
    for (const auto& [name, value] : plan::objective_names()) names += (names.empty() ? "" : ", ") + name;
    throw core::InputError("--objective", "", fmt::format("expected one of {}, found \"{}\"", names, objective));
  }
  o.objective = named->second;
  o.top = top;
  o.refine = refine;
  o.recheck = recheck;
  o.max_gpus = max_gpus;
  o.min_mfu = min_mfu;
  o.fits = fits;
  o.any_stack = any_stack;
  o.max_micro_batch = max_micro_batch;
  o.offload = offload;
  o.compression = compression;
  o.jobs = jobs;
  o.yes = yes;
  o.quiet = quiet;
  o.prices = plan::parse_prices(prices, "--price");
  o.deadline_days = deadline_days;
  o.budget_usd = budget_usd;
  if (max_power_mw) {
    if (!(*max_power_mw > 0)) {
      throw core::InputError("--max-power", "", fmt::format("expected a positive site power, found \"{}\"", *max_power_mw));
    }
    o.max_power_w = *max_power_mw * 1e6;
  }
  if (!memory_headroom.empty()) o.headroom = plan::MemoryHeadroom::parse(memory_headroom, "--memory-headroom");
  return without_gil(interruptible, [&] {
    if (source.second) o.document = document_of(source);
    const plan::Search search(o);
    const plan::SearchResult result = search.run();
    core::Json j = plan::search_json(search, result);
    j["warnings"] = search.warnings();
    return dump(j);
  });
}

std::string compare(const std::vector<Source>& inputs, const std::vector<std::string>& vary,
                    const std::vector<std::string>& overrides, const std::string& backend, bool quiet,
                    const std::vector<std::string>& prices, bool interruptible) {
  check_backend(backend, /*allow_default=*/false);
  plan::CompareOptions o{.inputs = {},
                         .vary = vary,
                         .overrides = overrides,
                         .backend = backend,
                         .quiet = quiet,
                         .prices = plan::parse_prices(prices, "--price")};
  return without_gil(interruptible, [&] {
    for (const Source& s : inputs) {
      o.inputs.push_back(s.first);
      o.documents.push_back(s.second ? document_of(s) : core::Json());
    }
    const plan::CompareResult result = plan::compare(o);
    core::Json j = plan::compare_json(result);
    j["warnings"] = warning_lines(result.warnings, result.configurations.size());
    return dump(j);
  });
}

// A range: {key, "values", a Python list as JSON text} or {key, "spec", the command line's syntax:
// "START:END:xFACTOR", "START:END:+STEP" or "V1,V2,..."}.
using RangeSpec = std::tuple<std::string, std::string, std::string>;

std::string sweep(const Source& source, const std::vector<std::string>& overrides, const std::vector<RangeSpec>& ranges,
                  const std::string& backend, bool yes, bool quiet, const std::vector<std::string>& prices,
                  bool interruptible) {
  check_backend(backend, /*allow_default=*/false);
  plan::SweepOptions o{.scenario = source.first,
                       .overrides = overrides,
                       .backend = backend,
                       .yes = yes,
                       .quiet = quiet,
                       .prices = plan::parse_prices(prices, "--price")};
  return without_gil(interruptible, [&] {
    // All of them parsed here, in the order given (the last varies fastest).
    for (const auto& [key, kind, text] : ranges) {
      if (kind == "spec") {
        o.parsed_ranges.push_back(plan::parse_sweep_range(key + "=" + text));
      } else {
        plan::SweepRange r;
        r.key = key;
        for (const core::Json& v : core::parse_json_text(text, "ranges")) r.values.push_back(v);
        o.parsed_ranges.push_back(std::move(r));
      }
    }
    if (source.second) o.document = document_of(source);
    const plan::SweepResult result = plan::sweep(o);
    core::Json j = plan::sweep_json(result);
    j["warnings"] = warning_lines(result.warnings, result.points.size());
    return dump(j);
  });
}

std::string validate(const std::vector<std::string>& paths, std::optional<double> tolerance,
                     const std::vector<std::string>& overrides, const std::string& backend, bool quiet,
                     bool interruptible) {
  check_backend(backend, /*allow_default=*/true);
  plan::ValidateOptions o;
  o.paths = paths;
  o.tolerance = tolerance;
  o.overrides = overrides;
  o.backend = backend;
  o.quiet = quiet;
  return without_gil(interruptible, [&] {
    const plan::ValidateResult result = plan::validate(o);
    core::Json j = plan::validate_json(result);
    j["warnings"] = warning_lines(result.warnings, result.cases.size());
    return dump(j);
  });
}

// The module's exception classes. They live as long as the process (the module is never unloaded),
// so they are created once and never released.
PyObject* input_error = nullptr;
PyObject* impossible_scenario = nullptr;
PyObject* internal_error = nullptr;

// Raises `type` (InputError or ImpossibleScenario) with the message `trainsim` prints and the
// problems as a list of {file, pointer, message} dicts.
void raise_input_error(PyObject* type, const core::InputError& e) {
  py::list problems;
  for (const core::InputProblem& p : e.problems()) {
    py::dict d;
    d["file"] = p.file;
    d["pointer"] = p.pointer;
    d["message"] = p.message;
    problems.append(d);
  }
  py::object error = py::reinterpret_borrow<py::object>(type)(py::str(e.what()));
  error.attr("problems") = problems;
  PyErr_SetObject(type, error.ptr());
}

}  // namespace

PYBIND11_MODULE(_trainsim, m) {
  m.doc() = "trainsim's planner library (sim/plan) for the Python module trainsim; call it through trainsim.";
  m.attr("__version__") = TRAINSIM_VERSION;
  input_error = PyErr_NewExceptionWithDoc(
      "trainsim.InputError",
      "Bad input: a malformed scenario, an unknown key, a value out of range, a bad option. str() is the message "
      "`trainsim` prints (FILE: /json/pointer: what was expected, what was found); .problems lists each as a dict "
      "{file, pointer, message}.",
      PyExc_ValueError, nullptr);
  impossible_scenario = PyErr_NewExceptionWithDoc(
      "trainsim.ImpossibleScenario",
      "A well-formed scenario whose combination cannot run (a degree that does not divide, a world size that does "
      "not match the cluster, a precision the GPU lacks). An InputError.",
      input_error, nullptr);
  internal_error = PyErr_NewExceptionWithDoc(
      "trainsim.InternalError", "A bug in trainsim (a failed internal check, with its source location): please report it.",
      PyExc_RuntimeError, nullptr);
  m.add_object("InputError", py::handle(input_error));
  m.add_object("ImpossibleScenario", py::handle(impossible_scenario));
  m.add_object("InternalError", py::handle(internal_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const plan::ImpossibleScenario& e) {
      raise_input_error(impossible_scenario, e);
    } catch (const core::InputError& e) {
      raise_input_error(input_error, e);
    } catch (const core::InternalError& e) {
      PyErr_SetString(internal_error, e.what());
    } catch (const engine::Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });

  m.def("run", &run, py::arg("source"), py::arg("overrides"), py::arg("backend"), py::arg("strict_profile"),
        py::arg("interruptible"));
  m.def("check", &check, py::arg("source"), py::arg("overrides"), py::arg("resolve_profile") = false);
  m.def("search", &search, py::arg("source"), py::arg("overrides"), py::arg("gpus"), py::arg("gpu_types"),
        py::arg("objective"), py::arg("top"), py::arg("refine"), py::arg("recheck"), py::arg("max_gpus"),
        py::arg("min_mfu"), py::arg("fits"), py::arg("any_stack"), py::arg("max_micro_batch"), py::arg("offload"),
        py::arg("compression"), py::arg("jobs"), py::arg("yes"), py::arg("quiet"), py::arg("prices"), py::arg("deadline_days"),
        py::arg("budget_usd"), py::arg("memory_headroom"), py::arg("max_power_mw"), py::arg("interruptible"));
  m.def("compare", &compare, py::arg("inputs"), py::arg("vary"), py::arg("overrides"), py::arg("backend"),
        py::arg("quiet"), py::arg("prices"), py::arg("interruptible"));
  m.def("sweep", &sweep, py::arg("source"), py::arg("overrides"), py::arg("ranges"), py::arg("backend"), py::arg("yes"),
        py::arg("quiet"), py::arg("prices"), py::arg("interruptible"));
  m.def("validate", &validate, py::arg("paths"), py::arg("tolerance"), py::arg("overrides"), py::arg("backend"),
        py::arg("quiet"), py::arg("interruptible"));
}
