#include "sim/plan/calibration_run.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "calibrate/accuracy.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

std::vector<double> CalibrationRun::residuals() const {
  std::vector<double> r;
  r.reserve(measured_s.size());
  for (double m : measured_s) r.push_back(std::log(predicted_s / m));
  return r;
}

double CalibrationRun::median_residual() const { return calibrate::median(residuals()); }

double CalibrationRun::median_measured_s() const { return calibrate::median(measured_s); }

core::Json CalibrationRun::to_json() const {
  return {{"name", name},
          {"scenario", scenario},
          {"traces", traces},
          {"traits", traits.to_json()},
          {"backend", "analytic"},
          {"predicted_iteration_s", predicted_s},
          {"measured_iteration_s", measured_s},
          {"residuals", residuals()},
          {"job", job}};
}

CalibrationRun CalibrationRun::from_json(core::ObjectReader& r) {
  CalibrationRun run;
  run.name = r.required_string("name").value_or("");
  run.scenario = r.string("scenario", "");
  run.traces = r.string_array("traces");
  if (std::optional<core::ObjectReader> t = r.object("traits")) {
    run.traits = CaseTraits::from_json(*t);
    t->finish();
  } else {
    r.problem("traits", "missing: the traced job's traits (stack, generation, mix, gpus, mechanisms)");
  }
  const std::string backend = r.string("backend", "analytic");
  if (backend != "analytic") r.problem("backend", fmt::format("expected \"analytic\", found \"{}\"", backend));
  if (!r.has("predicted_iteration_s")) r.problem("predicted_iteration_s", "missing: the predicted iteration time in seconds");
  run.predicted_s = r.number("predicted_iteration_s", 1, 1e-12, 1e12);
  const core::Json* measured = r.raw("measured_iteration_s");
  if (measured == nullptr || !measured->is_array() || measured->empty()) {
    r.problem("measured_iteration_s", fmt::format("expected a non-empty array of iteration times in seconds, found {}",
                                                  measured == nullptr ? std::string("nothing") : core::describe_json(*measured)));
  } else {
    for (size_t i = 0; i < measured->size(); ++i) {
      const core::Json& m = (*measured)[i];
      if (!m.is_number() || !(m.get<double>() > 0) || !std::isfinite(m.get<double>())) {
        r.diagnostics().add(r.file(), core::append_pointer(r.pointer_of("measured_iteration_s"), i),
                            fmt::format("expected a positive time in seconds, found {}", core::describe_json(m)));
        continue;
      }
      run.measured_s.push_back(m.get<double>());
    }
  }
  if (const core::Json* j = r.raw("job"); j != nullptr && j->is_object()) run.job = *j;
  r.finish({"residuals", "job"});
  return run;
}

CalibrationRun make_calibration_run(const Scenario& job, const std::string& scenario_file,
                                    const std::vector<std::string>& traces, const std::vector<double>& measured_s) {
  CalibrationRun run;
  run.name = job.name;
  run.scenario = scenario_file;
  run.traces = traces;
  run.traits = traits_of(job);
  run.predicted_s = predict(job, "analytic").iteration_time_s();
  run.measured_s = measured_s;
  run.job = job_of(job);
  return run;
}

core::Json job_of(const Scenario& s) {
  const core::Json all = s.to_json(Scenario::ProfileOut::AS_GIVEN);
  core::Json j = core::Json::object();
  for (const char* key : {"cluster", "model", "training", "parallelism", "optimizations"}) {
    if (all.contains(key)) j[key] = all[key];
  }
  return j;
}

std::optional<Band> calibrated_time_band(const CalibrationRun& run, const Scenario& target, double coverage) {
  const bool near = run.job.is_null() ? in_similarity_group(run.traits, traits_of(target), 1) : run.job == job_of(target);
  if (!near) return std::nullopt;
  Band b;
  b.relative = conformal_quantile(run.residuals(), coverage);
  if (!b.finite()) return std::nullopt;
  b.level = 0;
  b.group = run.job.is_null() ? fmt::format("the calibrated run {} ({} measured iterations; {})", run.name,
                                             run.measured_s.size(), similarity_group_text(run.traits, 1))
                              : fmt::format("the calibrated run {} of this job ({} measured iterations)", run.name,
                                            run.measured_s.size());
  for (size_t i = 0; i < run.measured_s.size(); ++i) b.cases.push_back(fmt::format("{} iteration {}", run.name, i + 1));
  return b;
}

BandCase as_band_case(const CalibrationRun& run) {
  BandCase c;
  c.name = fmt::format("calibrated run {}", run.name);
  c.file = run.scenario;
  c.traits = run.traits;
  c.time_residual = run.median_residual();
  c.time_figure = "iteration_time_s";
  return c;
}

}  // namespace trainsim::plan
