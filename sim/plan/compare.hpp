#pragma once
// Several configurations side by side (`trainsim compare`): reports read back, or scenarios
// predicted, or one scenario varied over values; one row per report figure with each
// configuration's difference from a reference.
//
// Inputs (CompareOptions):
//   inputs     reports ("schema": "trainsim.report/1", written by `run --format json` or --out) or
//              scenarios, each predicted with `backend`; `overrides` apply to every scenario (an
//              error with a report: its figures are fixed)
//   vary       "key.path=V1,V2,..." (vary_assignments): exactly one scenario input, one configuration
//              per combination of the values (several: their cartesian product, the first changing
//              slowest), each value applied like an override
// Result (CompareResult):
//   configurations  one per input or combination, labelled by its file name (the path when two
//                   inputs share a name) or its varied values ("tensor=4 micro_batch=2": the last
//                   key component unless two varied keys share it; an object value by its label or
//                   name, value_labels: "gpu=H100 fast HBM"); one that cannot run
//                   (ImpossibleScenario: divisibility, world size, parallelism.data "auto") keeps
//                   its problems instead of a report, and the others still run
//   reference       the first configuration that ran
//   rows            one per figure of report_figures() that some configuration has: its value in
//                   each, the difference from the reference in percent, and whether it differs by
//                   more than HIGHLIGHT_PCT (a label or "fits": when not equal)
// Bad input throws InputError: an unreadable file, a malformed vary or override, an unknown key, a
// value of the wrong type, a file that is neither a scenario nor a report, a report whose figures are
// out of range (check_report).
//
// Example:
//   plan::CompareOptions o;
//   o.inputs = {"scenarios/gpt3-6.7b-a100-8.json"};
//   o.vary = {"parallelism.tensor=2,4"};
//   const plan::CompareResult r = plan::compare(o);
//   // r.configurations[1].label == "tensor=4"; r.rows[k].diff_pct[1]: its difference from "tensor=2"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/plan/prices.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/scenario_warnings.hpp"

namespace trainsim::plan {

// Rows where a configuration differs from the reference by more than this (percent) are marked.
inline constexpr double HIGHLIGHT_PCT = 1.0;
// The most configurations one comparison holds: beyond this a side-by-side table is unreadable.
inline constexpr size_t MAX_CONFIGURATIONS = 256;

struct CompareOptions {
  std::vector<std::string> inputs{};     // reports or scenarios; exactly one scenario with `vary`
  std::vector<std::string> vary{};       // "key.path=v1,v2,..."
  std::vector<std::string> overrides{};  // "key.path=value", on every scenario (apply_override)
  std::string backend = "analytic";      // for scenarios: analytic | simgrid (a child process each)
  bool quiet = false;                    // no progress bar (drawn on a terminal only: progress.hpp)
  // --price: each scenario's cluster.price_per_gpu_hour from its GPU's entry (apply_prices), after the
  // overrides; a name that prices none of the configurations' GPUs is an InputError.
  PriceList prices{};
  // --bands FILE: a bands file (validate --write-bands) whose cases join the built-in ones for each
  // configuration's error bands and envelope (band_set_with); empty: the built-in ones. Reports read
  // back keep the bands they were written with.
  std::string bands{};
  // Empty, or one per input: an entry that is not null is that input's document already in memory (a
  // scenario or a report: the Python module's dicts), read instead of the file, which then only
  // names it (its label, whole rather than a file's stem; messages) and anchors relative paths
  // (simulation.profile).
  std::vector<core::Json> documents{};
};

struct Configuration {
  std::string label;
  std::string source;                        // the file it came from
  std::string kind;                          // "report" | "scenario"
  std::vector<std::string> overrides;        // the vary assignments that made it (overrides not repeated)
  // --vary training.stack: the scenario's keys left to that stack's defaults (compare.cpp
  // drop_stack_owned_keys), e.g. "parallelism.zero_impl"; empty otherwise.
  std::vector<std::string> stack_defaults;
  core::Json report;                         // null when it cannot run
  std::vector<core::InputProblem> problems;  // why it cannot run

  bool ok() const { return !report.is_null(); }
  std::string error() const { return core::InputError(problems).what(); }
};

struct CompareRow {
  const ReportFigure* figure = nullptr;
  std::vector<const core::Json*> values;        // per configuration (into its report); nullptr: absent or failed
  std::vector<std::optional<double>> diff_pct;  // vs the reference; nullopt: not a number or no reference
  std::vector<bool> differs;                    // per configuration, vs the reference
  bool any_differs = false;
};

// Whether a row is noise in a table (JSON and CSV keep it): exposed communication on an axis that
// no configuration uses (every value absent or 0).
bool is_unused_axis(const CompareRow& row);

struct CompareResult {
  std::vector<Configuration> configurations;
  std::optional<size_t> reference;  // the first configuration that ran; nullopt when none did
  std::vector<CompareRow> rows;     // point into `configurations`' reports: keep the result in place
  ScenarioWarnings warnings;        // the configurations' reports' "warnings", by label

  CompareResult() = default;
  CompareResult(const CompareResult&) = delete;
  CompareResult& operator=(const CompareResult&) = delete;
  CompareResult(CompareResult&&) = default;
  CompareResult& operator=(CompareResult&&) = default;
};

// Runs the comparison (see the top of this file). Throws InputError for bad input, and
// engine::Interrupted on Ctrl-C (a SimGrid child ended by SIGINT, or StopOnInterrupt's flag between
// configurations).
CompareResult compare(const CompareOptions& options);

// "key.path=v1,v2,..." -> the assignments "key.path=v1", "key.path=v2", ... Values are separated by
// commas outside brackets, braces and quotes ("stage_layers=[4,4],[2,6]"). Throws InputError (file
// "--vary") when there is no "=", the key is empty or a value is empty.
std::vector<std::string> vary_assignments(const std::string& vary);

// Splits a list of values on the commas outside [], {} and "..." (JSON values keep theirs):
// "4,{\"a\": 1, \"b\": 2}" -> "4", "{\"a\": 1, \"b\": 2}".
std::vector<std::string> split_values(const std::string& text);

// Varied values as column headers or table cells, one per value: a string as itself; an object
// (a GPU or model) by its "label", else its "name", else its "base" with " (custom)"; any other JSON
// as written. Equal labels of different values get " #K" (K: the value's position from 1), so that
// the columns stay apart.
std::vector<std::string> value_labels(const std::vector<core::Json>& values);

// Whether a JSON document is a report (it has a "schema") rather than a scenario.
bool is_report(const core::Json& doc);
// A report read back from `path` checked like user input: its schema, the iteration time, no null,
// and every figure compare shows of the right type and range (a negative time, an MFU of 750%).
// Throws InputError naming the file and pointer.
void check_report(const core::Json& doc, const std::string& path);

}  // namespace trainsim::plan
