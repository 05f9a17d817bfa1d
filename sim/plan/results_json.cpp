#include "sim/plan/results_json.hpp"

#include "calibrate/accuracy.hpp"
#include "sim/plan/ranking_accuracy.hpp"
#include "sim/plan/report_figures.hpp"

namespace trainsim::plan {
namespace {

core::Json problem_json(const core::InputProblem& p) {
  return {{"file", p.file}, {"pointer", p.pointer}, {"message", p.message}};
}

core::Json figure_json(const ComparedFigure& f) {
  return {{"metric", f.metric},
          {"predicted", f.predicted},
          {"measured", f.measured},
          {"signed_error", f.error},
          {"prediction", direction(f.metric, f.error)}};
}

// A ranked layout's objective band: {relative, low, high}; {} without a finite band.
core::Json objective_band_json(const RankedEntry& a) {
  if (!a.band.finite()) return core::Json::object();
  return {{"relative", a.band.relative}, {"low", a.band.low(a.value)}, {"high", a.band.high(a.value)}};
}

}  // namespace

core::Json search_json(const Search& s, const SearchResult& r) {
  core::Json j;
  j["schema"] = "trainsim.search/1";
  j["scenario"] = s.options().scenario;
  j["objective"] = to_string(s.options().objective);
  j["interrupted"] = r.interrupted;
  core::Json rejected = core::Json::object();
  for (const auto& [reason, n] : rejection_reasons(r.rejected)) rejected[reason] = n;
  j["space"] = {{"candidates", r.candidates}, {"valid", r.valid}, {"rejected", rejected}};
  j["simgrid_runs"] = r.simgrid_runs;
  j["merged"] = r.merged;
  if (!r.recheck_refused.empty()) j["recheck_refused"] = r.recheck_refused;
  const RankingAccuracy accuracy = search_accuracy(s, r, r.ranked.size(), s.band_set());
  core::Json ranked = core::Json::array();
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const Evaluated& e = r.ranked[i];
    const RankedEntry& a = accuracy.entries[i];
    core::Json c;
    c["rank"] = i + 1;
    c["layout"] = e.layout.to_json();
    c["objective"] = s.objective_of(e);
    c["estimate"] = {{"iteration_time_s", e.estimate.iteration_time_s}, {"peak_bytes_per_gpu", e.estimate.peak_memory_bytes}};
    if (e.analytic) c["analytic"] = e.analytic->to_json();
    if (e.simgrid) c["simgrid"] = e.simgrid->to_json();
    if (!e.equivalent.empty()) {
      c["equivalent"] = core::Json::array();
      for (const Layout& l : e.equivalent) c["equivalent"].push_back(l.to_json());
    }
    c["band"] = objective_band_json(a);
    c["envelope"] = {{"inside", a.envelope.inside()}, {"summary", a.envelope.summary()}};
    ranked.push_back(c);
  }
  j["ranked"] = ranked;
  j["accuracy"] = accuracy.to_json();
  return j;
}

core::Json compare_json(const CompareResult& result) {
  const std::vector<Configuration>& cs = result.configurations;
  core::Json j;
  j["schema"] = "trainsim.compare/1";
  j["reference"] = result.reference ? core::Json(*result.reference) : core::Json(nullptr);
  j["highlight_pct"] = HIGHLIGHT_PCT;
  core::Json configs = core::Json::array();
  for (const Configuration& c : cs) {
    core::Json cj;
    cj["label"] = c.label;
    cj["source"] = c.source;
    cj["kind"] = c.kind;
    if (!c.overrides.empty()) cj["vary"] = c.overrides;
    if (!c.stack_defaults.empty()) cj["stack_defaults"] = c.stack_defaults;
    if (c.ok()) {
      cj["report"] = c.report;
    } else {
      cj["error"] = c.error();
      core::Json problems = core::Json::array();
      for (const core::InputProblem& p : c.problems) problems.push_back(problem_json(p));
      cj["problems"] = problems;
    }
    configs.push_back(cj);
  }
  j["configurations"] = configs;
  core::Json rj = core::Json::array();
  for (const CompareRow& r : result.rows) {
    core::Json values = core::Json::array(), diffs = core::Json::array();
    for (size_t i = 0; i < cs.size(); ++i) {
      values.push_back(r.values[i] ? *r.values[i] : core::Json(nullptr));
      diffs.push_back(r.diff_pct[i] ? core::Json(*r.diff_pct[i]) : core::Json(nullptr));
    }
    rj.push_back({{"metric", r.figure->name}, {"values", values}, {"diff_pct", diffs}, {"differs", r.any_differs}});
  }
  j["rows"] = rj;
  j["accuracy"] = compare_accuracy(result).to_json();
  return j;
}

core::Json sweep_json(const SweepResult& r) {
  core::Json keys = core::Json::array();
  for (const SweepRange& range : r.ranges) keys.push_back(range.key);
  core::Json rows = core::Json::array();
  for (const SweepPoint& p : r.points) {
    core::Json values;
    for (size_t k = 0; k < r.ranges.size(); ++k) values[r.ranges[k].key] = p.values[k];
    core::Json row{{"values", values}};
    if (p.report) {
      row["world_size"] = p.gpus();
      for (const char* f : {"iteration_time_s", "tokens_per_s", "samples_per_s", "model_tflops_per_gpu", "mfu"}) {
        row[f] = p.figure(f);
      }
      row["scaling_efficiency"] = p.efficiency;
      for (const ReportFigure* f : planning_figures()) {
        if (const core::Json* v = figure_value(*p.report, *f)) row[f->name] = *v;
      }
    } else {
      row["error"] = p.error;
    }
    rows.push_back(row);
  }
  return {{"schema", "trainsim.sweep/1"}, {"scenario", r.name}, {"backend", r.backend}, {"keys", keys}, {"points", rows}};
}

core::Json validate_json(const ValidateResult& r) {
  const ValidateTotals& t = r.totals;
  core::Json j;
  j["schema"] = "trainsim.validation/1";
  j["signed_error"] = "predicted / measured - 1 (+: iteration_time_s predicted slower, throughputs predicted faster)";
  core::Json cases = core::Json::array();
  for (const ValidationCase& c : r.cases) {
    core::Json row{{"case", c.name}, {"file", c.file}};
    if (c.outcome == CaseOutcome::COMPARED) {
      const ComparedFigure& f = c.judged();
      row["metric"] = f.metric;
      row["predicted"] = f.predicted;
      row["measured"] = f.measured;
      row["signed_error"] = f.error;
      row["prediction"] = direction(f.metric, f.error);
      if (f.metric == "iteration_time_s") {
        row["predicted_s"] = f.predicted;
        row["measured_s"] = f.measured;
      }
      if (r.tolerance) row["within_tolerance"] = !r.outside_tolerance(f);
      core::Json others = core::Json::array();
      for (size_t i = 1; i < c.figures.size(); ++i) others.push_back(figure_json(c.figures[i]));
      row["not_judged"] = others;
    } else if (c.outcome == CaseOutcome::INPUT_ERROR) {
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
    if (r.tolerance) j["summary"]["outside_tolerance"] = t.outside;
  } else {
    j["summary"] = {{"cases", 0}, {"failed", t.input_errors + t.internal_errors},
                    {"input_errors", t.input_errors}, {"internal_errors", t.internal_errors}};
  }
  if (r.tolerance) j["tolerance"] = *r.tolerance;
  return j;
}

}  // namespace trainsim::plan
