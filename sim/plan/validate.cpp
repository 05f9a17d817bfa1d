#include "sim/plan/validate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "calibrate/accuracy.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/progress.hpp"

namespace trainsim::plan {
namespace {

// A path named on the command line, or found in a named folder; `problem` is set when it names
// nothing to run (it becomes an error row like any unreadable case).
struct CasePath {
  std::string file;
  std::string problem;
};

// Files named on the command line, plus every *.json under named folders, each folder sorted.
std::vector<CasePath> collect_cases(const std::vector<std::string>& paths) {
  std::vector<CasePath> cases;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
      }
      if (ec) {
        cases.push_back({p, fmt::format("cannot list the folder: {}", ec.message())});
        continue;
      }
      if (found.empty()) cases.push_back({p, "no *.json validation case in this folder"});
      std::sort(found.begin(), found.end());
      for (const std::string& f : found) cases.push_back({f, ""});
    } else {
      cases.push_back({p, ""});  // a missing file is reported by load_scenario, like an unreadable one
    }
  }
  return cases;
}

// Only the iteration time is lower when faster; every other timed figure is a throughput.
bool lower_is_faster(const std::string& metric) { return metric == "iteration_time_s"; }

// The measured figures of a loaded case, or an InputError saying that it has none to compare.
std::vector<MeasuredFigure> measured_figures(const Scenario& s) {
  const std::vector<MeasuredFigure> figures = s.expect ? s.expect->figures() : std::vector<MeasuredFigure>{};
  if (figures.empty()) {
    throw core::InputError(s.file, "/expect",
                           s.expect ? "gives no measured figure: a validation case needs at least one of "
                                      "iteration_time_s, model_tflops_per_gpu, tokens_per_s, mfu, hardware_tflops_per_gpu, peak_memory_gib"
                                    : "missing: a validation case is a scenario with an \"expect\" block of measured "
                                      "figures (iteration_time_s, model_tflops_per_gpu, tokens_per_s, mfu, "
                                      "hardware_tflops_per_gpu, peak_memory_gib)");
  }
  return figures;
}

// The report's figure of this name. The report is ours: a missing or non-positive figure is a bug.
double predicted_figure(const core::Json& report, const std::string& metric) {
  if (metric == "peak_memory_gib") {
    const core::Json& m = report.at("memory");
    TRAINSIM_CHECK(m.contains("peak_bytes_per_gpu") && m["peak_bytes_per_gpu"].is_number(), "the report has no peak memory");
    const double gib = m["peak_bytes_per_gpu"].get<double>() / (1024.0 * 1024.0 * 1024.0);
    TRAINSIM_CHECK(std::isfinite(gib) && gib > 0, fmt::format("the report's peak memory is {} GiB", gib));
    return gib;
  }
  TRAINSIM_CHECK(report.contains(metric) && report[metric].is_number(),
                 fmt::format("the report has no number \"{}\"", metric));
  const double v = report[metric].get<double>();
  TRAINSIM_CHECK(std::isfinite(v) && v > 0, fmt::format("the report's {} is {}, not a positive number", metric, v));
  return v;
}

ValidationCase run_case(const CasePath& path, const ValidateOptions& args, const CasePredictor& predictor) {
  ValidationCase c;
  c.file = path.file;
  c.name = std::filesystem::path(path.file).stem().string();
  if (c.name.empty()) c.name = path.file;
  try {
    if (!path.problem.empty()) throw core::InputError(path.file, "", path.problem);
    const Scenario s = load_scenario(path.file, args.overrides);
    c.name = s.name;
    c.warnings = s.warnings;
    c.traits = traits_of(s);
    const std::vector<MeasuredFigure> measured = measured_figures(s);
    const core::Json report = predictor(s, args.backend);
    for (const MeasuredFigure& m : measured) {
      const double predicted = predicted_figure(report, m.metric);
      c.figures.push_back({m.metric, predicted, m.value, calibrate::signed_error(predicted, m.value)});
    }
  } catch (const core::InputError& e) {
    c.outcome = CaseOutcome::INPUT_ERROR;
    c.figures.clear();
    c.problems = e.problems();
    if (args.log != nullptr) {
      for (const core::InputProblem& p : c.problems) *args.log << "error: " << p.to_string() << "\n";
    }
  } catch (const engine::Interrupted&) {
    throw;  // Ctrl-C (a SimGrid child ended by SIGINT): the validation stops, not only this case
  } catch (const std::exception& e) {
    // InternalError, or anything else thrown from inside the simulation: a bug, never a silent pass.
    c.outcome = CaseOutcome::INTERNAL_ERROR;
    c.figures.clear();
    c.internal = e.what();
    if (args.log != nullptr) *args.log << "trainsim: internal error in " << path.file << ": " << e.what() << "\n";
  }
  return c;
}

}  // namespace

std::string direction(const std::string& metric, double error) {
  if (error == 0) return "exact";
  if (metric == "peak_memory_gib") return error > 0 ? "more memory" : "less memory";
  return (error > 0) == lower_is_faster(metric) ? "slower" : "faster";
}

bool ValidateResult::outside_tolerance(const ComparedFigure& f) const {
  return tolerance && std::abs(f.error) > *tolerance;
}

ValidateResult validate(const ValidateOptions& options) {
  ValidateResult r;
  r.tolerance = options.tolerance;
  const CasePredictor predictor = options.predictor ? options.predictor : CasePredictor(predict_report);
  const std::vector<CasePath> cases = collect_cases(options.paths);
  Progress bar("validate", cases.size(), !options.quiet);
  for (const CasePath& path : cases) {
    // Ctrl-C under a StopOnInterrupt (the Python module) stops between cases.
    if (StopOnInterrupt::requested()) throw engine::Interrupted(engine::SimulationProgress{});
    // A long SimGrid case says where it is on the log (its forked child prints), unless quiet.
    std::optional<WatchSimulations> watch;
    if (!options.quiet && options.log != nullptr) watch.emplace(*options.log, std::filesystem::path(path.file).filename().string());
    r.cases.push_back(run_case(path, options, predictor));
    bar.advance();
  }
  bar.finish();
  for (const ValidationCase& c : r.cases) r.warnings.add(c.warnings, c.name);
  ValidateTotals& t = r.totals;
  for (const ValidationCase& c : r.cases) {
    if (c.outcome == CaseOutcome::INPUT_ERROR) ++t.input_errors;
    if (c.outcome == CaseOutcome::INTERNAL_ERROR) ++t.internal_errors;
    if (c.outcome != CaseOutcome::COMPARED) continue;
    t.errors.push_back(c.judged().error);
    t.names.push_back(c.name);
    if (r.outside_tolerance(c.judged())) ++t.outside;
  }
  return r;
}

}  // namespace trainsim::plan
