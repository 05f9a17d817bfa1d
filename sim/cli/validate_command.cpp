#include "sim/cli/validate_command.hpp"

#include "sim/plan/progress.hpp"
#include "sim/plan/scenario_warnings.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fmt/format.h>
#include <string>

#include "calibrate/accuracy.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
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

// "slower" / "faster" / "exact": how the prediction compares with the measurement; "more memory" /
// "less memory" for peak_memory_gib.
std::string direction(const std::string& metric, double error) {
  if (error == 0) return "exact";
  if (metric == "peak_memory_gib") return error > 0 ? "more memory" : "less memory";
  return (error > 0) == lower_is_faster(metric) ? "slower" : "faster";
}

struct Figure {
  std::string metric;
  double predicted = 0;
  double measured = 0;
  double error = 0;  // predicted / measured - 1
};

enum class Outcome { COMPARED, INPUT_ERROR, INTERNAL_ERROR };

struct CaseResult {
  std::string name;
  std::string file;
  Outcome outcome = Outcome::COMPARED;
  std::vector<Figure> figures;               // COMPARED: the judged figure first
  std::vector<core::InputProblem> problems;  // INPUT_ERROR
  std::string internal;                      // INTERNAL_ERROR: the message
  std::vector<std::string> warnings;         // the scenario's (Scenario::warnings)

  const Figure& judged() const { return figures.front(); }
};

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

CaseResult run_case(const CasePath& path, const ValidateArgs& args, const CasePredictor& predictor, std::ostream& err) {
  CaseResult c;
  c.file = path.file;
  c.name = std::filesystem::path(path.file).stem().string();
  if (c.name.empty()) c.name = path.file;
  try {
    if (!path.problem.empty()) throw core::InputError(path.file, "", path.problem);
    const Scenario s = load_scenario(path.file, args.overrides);
    c.name = s.name;
    c.warnings = s.warnings;
    const std::vector<MeasuredFigure> measured = measured_figures(s);
    const core::Json report = predictor(s, args.backend);
    for (const MeasuredFigure& m : measured) {
      const double predicted = predicted_figure(report, m.metric);
      c.figures.push_back({m.metric, predicted, m.value, calibrate::signed_error(predicted, m.value)});
    }
  } catch (const core::InputError& e) {
    c.outcome = Outcome::INPUT_ERROR;
    c.figures.clear();
    c.problems = e.problems();
    for (const core::InputProblem& p : c.problems) err << "error: " << p.to_string() << "\n";
  } catch (const std::exception& e) {
    // InternalError, or anything else thrown from inside the simulation: a bug, never a silent pass.
    c.outcome = Outcome::INTERNAL_ERROR;
    c.figures.clear();
    c.internal = e.what();
    err << "trainsim: internal error in " << path.file << ": " << e.what() << "\n";
  }
  return c;
}

// One InputProblem as JSON.
core::Json problem_json(const core::InputProblem& p) {
  return {{"file", p.file}, {"pointer", p.pointer}, {"message", p.message}};
}

struct Totals {
  std::vector<double> errors;  // the judged figures' errors, in case order
  std::vector<std::string> names;
  size_t input_errors = 0;
  size_t internal_errors = 0;
  size_t outside = 0;
};

bool outside_tolerance(const ValidateArgs& args, const Figure& f) {
  return args.tolerance && std::abs(f.error) > *args.tolerance;
}

Totals totals_of(const std::vector<CaseResult>& results, const ValidateArgs& args) {
  Totals t;
  for (const CaseResult& c : results) {
    if (c.outcome == Outcome::INPUT_ERROR) ++t.input_errors;
    if (c.outcome == Outcome::INTERNAL_ERROR) ++t.internal_errors;
    if (c.outcome != Outcome::COMPARED) continue;
    t.errors.push_back(c.judged().error);
    t.names.push_back(c.name);
    if (outside_tolerance(args, c.judged())) ++t.outside;
  }
  return t;
}

core::Json figure_json(const Figure& f) {
  return {{"metric", f.metric},
          {"predicted", f.predicted},
          {"measured", f.measured},
          {"signed_error", f.error},
          {"prediction", direction(f.metric, f.error)}};
}

void write_json(const std::vector<CaseResult>& results, const Totals& t, const ValidateArgs& args, std::ostream& out) {
  core::Json j;
  j["schema"] = "trainsim.validation/1";
  j["signed_error"] = "predicted / measured - 1 (+: iteration_time_s predicted slower, throughputs predicted faster)";
  core::Json cases = core::Json::array();
  for (const CaseResult& c : results) {
    core::Json row{{"case", c.name}, {"file", c.file}};
    if (c.outcome == Outcome::COMPARED) {
      const Figure& f = c.judged();
      row["metric"] = f.metric;
      row["predicted"] = f.predicted;
      row["measured"] = f.measured;
      row["signed_error"] = f.error;
      row["prediction"] = direction(f.metric, f.error);
      if (f.metric == "iteration_time_s") {
        row["predicted_s"] = f.predicted;
        row["measured_s"] = f.measured;
      }
      if (args.tolerance) row["within_tolerance"] = !outside_tolerance(args, f);
      core::Json others = core::Json::array();
      for (size_t i = 1; i < c.figures.size(); ++i) others.push_back(figure_json(c.figures[i]));
      row["not_judged"] = others;
    } else if (c.outcome == Outcome::INPUT_ERROR) {
      row["error"] = core::InputError(c.problems).what();
      row["error_kind"] = "input";
      core::Json problems = core::Json::array();
      for (const core::InputProblem& p : c.problems) problems.push_back(problem_json(p));
      row["problems"] = problems;
    } else {
      row["error"] = c.internal;
      row["error_kind"] = "internal";
    }
    cases.push_back(row);
  }
  j["cases"] = cases;
  if (!t.errors.empty()) {
    const calibrate::ErrorSummary s = calibrate::summarize(t.errors);
    j["summary"] = {{"cases", s.cases},          {"median_abs_error", s.median_abs}, {"mean_abs_error", s.mean_abs},
                    {"max_abs_error", s.max_abs}, {"worst", t.names[s.worst]},         {"failed", t.input_errors + t.internal_errors},
                    {"input_errors", t.input_errors}, {"internal_errors", t.internal_errors}};
    if (args.tolerance) j["summary"]["outside_tolerance"] = t.outside;
  } else {
    j["summary"] = {{"cases", 0}, {"failed", t.input_errors + t.internal_errors},
                    {"input_errors", t.input_errors}, {"internal_errors", t.internal_errors}};
  }
  if (args.tolerance) j["tolerance"] = *args.tolerance;
  out << j.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
}

void write_csv(const std::vector<CaseResult>& results, const ValidateArgs& args, std::ostream& out) {
  out << "case,file,metric,judged,predicted,measured,signed_error,prediction,within_tolerance,status,message\n";
  for (const CaseResult& c : results) {
    const std::string lead = csv_field(c.name) + "," + csv_field(c.file) + ",";
    if (c.outcome != Outcome::COMPARED) {
      const bool input = c.outcome == Outcome::INPUT_ERROR;
      const std::string message = input ? core::InputError(c.problems).what() : c.internal;
      out << lead << ",,,,,,," << (input ? "input_error" : "internal_error") << "," << csv_field(message) << "\n";
      continue;
    }
    for (size_t i = 0; i < c.figures.size(); ++i) {
      const Figure& f = c.figures[i];
      const std::string within = i == 0 && args.tolerance ? (outside_tolerance(args, f) ? "false" : "true") : "";
      out << lead << fmt::format("{},{},{:.17g},{:.17g},{:.17g},{},{},ok,\n", f.metric, i == 0 ? "true" : "false",
                                 f.predicted, f.measured, f.error, direction(f.metric, f.error), within);
    }
  }
}

// Digits that suit each figure's magnitude: seconds to the millisecond, TFLOP/s to 0.1, tokens/s whole.
std::string figure_text(const std::string& metric, double v) {
  if (metric == "tokens_per_s") return fmt::format("{:.0f}", v);
  if (metric == "mfu") return fmt::format("{:.4f}", v);
  if (metric == "iteration_time_s") return fmt::format("{:.3f}", v);
  return fmt::format("{:.1f}", v);
}

void write_table(const std::vector<CaseResult>& results, const Totals& t, const ValidateArgs& args, std::ostream& out) {
  const std::string extra = "  (not judged)";
  size_t width = std::max<size_t>(4, extra.size());
  for (const CaseResult& c : results) width = std::max(width, c.name.size());
  const size_t metric_width = std::string("hardware_tflops_per_gpu").size();
  out << "error = predicted / measured - 1 (\"+\": iteration_time_s predicted slower, throughputs predicted faster; "
         "the last column says which)\n";
  out << fmt::format("{:<{}}  {:<{}}  {:>12}  {:>12}  {:>8}  {}\n", "case", width, "metric", metric_width, "predicted",
                     "measured", "error", "prediction");
  for (const CaseResult& c : results) {
    if (c.outcome == Outcome::INPUT_ERROR) {
      out << fmt::format("{:<{}}  {:<{}}  input error: the case could not be read or run\n", c.name, width, "-",
                         metric_width);
      for (const core::InputProblem& p : c.problems) out << "    " << p.to_string() << "\n";
      continue;
    }
    if (c.outcome == Outcome::INTERNAL_ERROR) {
      out << fmt::format("{:<{}}  {:<{}}  internal error (a bug in trainsim, please report it with the case)\n",
                         c.name, width, "-", metric_width);
      out << "    " << c.file << ": " << c.internal << "\n";
      continue;
    }
    for (size_t i = 0; i < c.figures.size(); ++i) {
      const Figure& f = c.figures[i];
      const bool bad = i == 0 && outside_tolerance(args, f);
      out << fmt::format("{:<{}}  {:<{}}  {:>12}  {:>12}  {:>+7.1f}%  {}{}\n", i == 0 ? c.name : extra, width, f.metric,
                         metric_width, figure_text(f.metric, f.predicted), figure_text(f.metric, f.measured),
                         100 * f.error, direction(f.metric, f.error), bad ? "  outside tolerance" : "");
    }
  }
  if (!t.errors.empty()) {
    const calibrate::ErrorSummary s = calibrate::summarize(t.errors);
    out << fmt::format("{} cases: median |error| {:.1f}%, mean {:.1f}%, max {:.1f}% ({})", s.cases, 100 * s.median_abs,
                       100 * s.mean_abs, 100 * s.max_abs, t.names[s.worst]);
    if (args.tolerance) out << fmt::format("; {} outside tolerance {:.1f}%", t.outside, 100 * *args.tolerance);
    out << "\n";
  } else {
    out << "0 cases compared\n";
  }
  if (t.input_errors > 0) out << fmt::format("{} case(s) could not be read or run (input errors)\n", t.input_errors);
  if (t.internal_errors > 0) {
    out << fmt::format("{} case(s) hit an internal error (a bug in trainsim)\n", t.internal_errors);
  }
}

}  // namespace

int validate_command(const ValidateArgs& args, const CasePredictor& predictor, std::ostream& out, std::ostream& err) {
  std::vector<CaseResult> results;
  const std::vector<CasePath> cases = collect_cases(args.paths);
  Progress bar("validate", cases.size(), !args.quiet);
  for (const CasePath& path : cases) {
    // A long SimGrid case says where it is on stderr (its forked child prints), unless --quiet.
    std::optional<WatchSimulations> watch;
    if (!args.quiet) watch.emplace(err, std::filesystem::path(path.file).filename().string());
    results.push_back(run_case(path, args, predictor, err));
    bar.advance();
  }
  bar.finish();
  ScenarioWarnings warnings;
  for (const CaseResult& c : results) warnings.add(c.warnings, c.name);
  warnings.print(err, results.size());
  const Totals t = totals_of(results, args);
  switch (args.format) {
    case Format::JSON: write_json(results, t, args, out); break;
    case Format::CSV: write_csv(results, args, out); break;
    case Format::TABLE: write_table(results, t, args, out); break;
  }
  if (t.internal_errors > 0) return 1;
  if (t.input_errors > 0) return 2;
  if (t.outside > 0) return 3;
  return 0;
}

int validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  return validate_command(args, predict_report, out, err);
}

}  // namespace trainsim::cli
