#include "sim/cli/validate_command.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <string>

#include "calibrate/accuracy.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/results_json.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

void write_csv(const ValidateResult& r, const ValidateArgs& args, std::ostream& out) {
  const std::vector<ValidationCase>& results = r.cases;
  out << "case,file,metric,judged,predicted,measured,signed_error,prediction,within_tolerance,status,message\n";
  for (const ValidationCase& c : results) {
    const std::string lead = csv_field(c.name) + "," + csv_field(c.file) + ",";
    if (c.outcome != CaseOutcome::COMPARED) {
      const bool input = c.outcome == CaseOutcome::INPUT_ERROR;
      const std::string message = input ? core::InputError(c.problems).what() : c.internal;
      out << lead << ",,,,,,," << (input ? "input_error" : "internal_error") << "," << csv_field(message) << "\n";
      continue;
    }
    for (size_t i = 0; i < c.figures.size(); ++i) {
      const ComparedFigure& f = c.figures[i];
      const std::string within = i == 0 && args.tolerance ? (r.outside_tolerance(f) ? "false" : "true") : "";
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

void write_table(const ValidateResult& r, const ValidateArgs& args, std::ostream& out) {
  const std::vector<ValidationCase>& results = r.cases;
  const ValidateTotals& t = r.totals;
  const std::string extra = "  (not judged)";
  size_t width = std::max<size_t>(4, extra.size());
  for (const ValidationCase& c : results) width = std::max(width, c.name.size());
  const size_t metric_width = std::string("hardware_tflops_per_gpu").size();
  out << "error = predicted / measured - 1 (\"+\": iteration_time_s predicted slower, throughputs predicted faster; "
         "the last column says which)\n";
  out << fmt::format("{:<{}}  {:<{}}  {:>12}  {:>12}  {:>8}  {}\n", "case", width, "metric", metric_width, "predicted",
                     "measured", "error", "prediction");
  for (const ValidationCase& c : results) {
    if (c.outcome == CaseOutcome::INPUT_ERROR) {
      out << fmt::format("{:<{}}  {:<{}}  input error: the case could not be read or run\n", c.name, width, "-",
                         metric_width);
      for (const core::InputProblem& p : c.problems) out << "    " << p.to_string() << "\n";
      continue;
    }
    if (c.outcome == CaseOutcome::INTERNAL_ERROR) {
      out << fmt::format("{:<{}}  {:<{}}  internal error (a bug in trainsim, please report it with the case)\n",
                         c.name, width, "-", metric_width);
      out << "    " << c.file << ": " << c.internal << "\n";
      continue;
    }
    for (size_t i = 0; i < c.figures.size(); ++i) {
      const ComparedFigure& f = c.figures[i];
      const bool bad = i == 0 && r.outside_tolerance(f);
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

// --write-bands: the compared cases' residuals, and the held-out coverage they give on stderr.
void write_bands(const ValidateResult& r, const ValidateArgs& args, std::ostream& err) {
  const BandSet set = band_set_from(r, args.backend);
  core::OutputFile f(args.write_bands, "--write-bands");
  f.stream() << band_set_json(set).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
  f.commit();
  const HeldOutCheck time = held_out_check(set, Residual::TIME), memory = held_out_check(set, Residual::MEMORY);
  err << fmt::format("wrote {}: {} cases; held-out coverage of the {:g}% band: time {}/{} ({:.1f}%), memory {}/{} ({:.1f}%)\n",
                     args.write_bands, set.cases.size(), 100 * set.coverage, time.inside, time.cases.size(),
                     100 * time.coverage(), memory.inside, memory.cases.size(), 100 * memory.coverage());
}

}  // namespace

int validate_command(const ValidateArgs& args, const CasePredictor& predictor, std::ostream& out, std::ostream& err) {
  const ValidateResult r = validate({args.paths, args.tolerance, args.overrides, args.backend, args.quiet, predictor, &err});
  r.warnings.print(err, r.cases.size());
  if (!args.write_bands.empty()) write_bands(r, args, err);
  switch (args.format) {
    case Format::JSON: out << validate_json(r).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: write_csv(r, args, out); break;
    case Format::TABLE: write_table(r, args, out); break;
  }
  if (r.totals.internal_errors > 0) return 1;
  if (r.totals.input_errors > 0) return 2;
  if (r.totals.outside > 0) return 3;
  return 0;
}

int validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  return validate_command(args, CasePredictor(predict_report), out, err);
}

}  // namespace trainsim::cli
