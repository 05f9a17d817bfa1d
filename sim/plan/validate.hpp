#pragma once
// Published runs predicted and compared with what was measured (`trainsim validate`).
//
// A validation case is a scenario with an "expect" block (scenario.hpp, Expectation) giving one or
// more measured figures: iteration_time_s, model_tflops_per_gpu, tokens_per_s, mfu,
// hardware_tflops_per_gpu, peak_memory_gib. Each is compared with the report field of the same name
// ("trainsim.report/1", report_json; peak_memory_gib with memory.peak_bytes_per_gpu / 2^30). The case
// is *judged* on one figure: iteration_time_s when given, else the first given of the others in that
// order; the others are compared beside it and count neither in the totals nor against the tolerance.
//
// Error of every figure: predicted / measured - 1. "+" means the prediction is the higher number:
// a slower iteration for iteration_time_s, a faster one for the throughputs, more memory for
// peak_memory_gib (direction() says which in words).
//
// Every case gets a result. A case that cannot be read or run (unknown key, impossible configuration,
// no measured figure, missing file) is an INPUT_ERROR case with every problem; a bug inside one case
// (core::InternalError or any other exception) is an INTERNAL_ERROR case. The other cases still run.
//
// Example:
//   plan::ValidateOptions o;
//   o.paths = {"validation/training"};   // files, or folders searched for *.json (each sorted)
//   o.backend = "analytic";
//   o.tolerance = 0.10;
//   const plan::ValidateResult r = plan::validate(o);
//   // r.cases[i].judged().error; r.totals.outside: the judged figures beyond 10%

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/plan/case_traits.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/scenario_warnings.hpp"

namespace trainsim::plan {

// The prediction a case is compared with: its report (report_json's fields), given the scenario
// and the backend override ("" = the scenario's own). Throws InputError or InternalError.
// `validate` uses predict_report (prediction.hpp); tests give one that throws, or fixed reports.
using CasePredictor = std::function<core::Json(const Scenario& scenario, const std::string& backend)>;

struct ValidateOptions {
  std::vector<std::string> paths{};    // files, or folders searched (recursively) for *.json
  std::optional<double> tolerance{};   // relative, e.g. 0.10: judged figures beyond it are counted
  std::vector<std::string> overrides{};  // "key.path=value", on every case (apply_override)
  std::string backend{};               // "" = each case's own simulation.backend
  bool quiet = false;                  // no progress bar, and no SimGrid progress lines on `log`
  CasePredictor predictor{};           // empty: predict_report
  // Where each case's problems go as they happen ("error: FILE: /pointer: message", "trainsim:
  // internal error in FILE: ...") and, unless quiet, a long SimGrid case's progress
  // (WatchSimulations); nullptr: nowhere. The result holds them too.
  std::ostream* log = nullptr;
};

// One measured figure and its prediction.
struct ComparedFigure {
  std::string metric;
  double predicted = 0;
  double measured = 0;
  double error = 0;  // predicted / measured - 1
};

enum class CaseOutcome { COMPARED, INPUT_ERROR, INTERNAL_ERROR };

struct ValidationCase {
  std::string name;  // the scenario's name, else the file's stem
  std::string file;
  CaseOutcome outcome = CaseOutcome::COMPARED;
  std::vector<ComparedFigure> figures;       // COMPARED: the judged figure first
  std::vector<core::InputProblem> problems;  // INPUT_ERROR
  std::string internal;                      // INTERNAL_ERROR: the message
  std::vector<std::string> warnings;         // the scenario's (Scenario::warnings)
  std::optional<CaseTraits> traits;          // what the case is like (error bands; set once it loaded)

  // REQUIRES: outcome == COMPARED.
  const ComparedFigure& judged() const { return figures.front(); }
};

struct ValidateTotals {
  std::vector<double> errors;      // the judged figures' errors, in case order
  std::vector<std::string> names;  // their cases' names
  size_t input_errors = 0;
  size_t internal_errors = 0;
  size_t outside = 0;              // judged figures outside the tolerance (0 without one)
};

struct ValidateResult {
  std::optional<double> tolerance;
  std::vector<ValidationCase> cases;  // in path order, each folder's files sorted
  ValidateTotals totals;
  ScenarioWarnings warnings;          // the cases' scenarios' warnings, by case name

  // Whether `f` (a judged figure) is outside the tolerance; false without one.
  bool outside_tolerance(const ComparedFigure& f) const;
};

// Runs every case (see the top of this file). Never throws for a case's problems: they are its
// result. Throws engine::Interrupted on Ctrl-C (a SimGrid child ended by SIGINT, or a StopOnInterrupt's
// flag between cases).
ValidateResult validate(const ValidateOptions& options);

// "slower" / "faster" / "exact": how a prediction with this signed error compares with the
// measurement; "more memory" / "less memory" for peak_memory_gib.
std::string direction(const std::string& metric, double error);

}  // namespace trainsim::plan
