#pragma once
// A calibrated profile's check on the run it was fitted on, and the error band it gives.
//
// `trainsim calibrate TRACES -o P --scenario JOB`, with JOB a full scenario of the traced job (model,
// training, parallelism) and traces that mark their iterations (ProfilerStep#N: `trainsim trace
// --nvtx` of a loop that names its steps, or torch.profiler), predicts JOB with the fitted profile P
// (analytic backend) and records in P's "calibration_run" every measured iteration beside that
// prediction. A later prediction that uses P (simulation.profile) gets:
//   - the traced job itself (the same cluster, model, training, parallelism and optimizations:
//     `job`): the time band of the run's own residuals r_i = ln(predicted / measured_i),
//     split-conformal over them as bands.hpp does over cases (at least 4 iterations at 80%). Since
//     the stack fit (stack_fit.hpp) makes the prediction the median measured iteration, the band is
//     the run's jitter: how well the profile reproduces this job, not how it carries to others.
//     Runs recorded before `job` existed (kernel fit only) gave it to the traced job's whole level-1
//     group of bands.hpp (same stack, GPU generation and parallelism mix, GPU count within
//     SIMILAR_SCALE), and still do.
//   - elsewhere: the validation cases' band, with the run added as one more case (its median
//     residual; merge_band_sets), as a user's own validation case would be.
//
// Example:
//   const CalibrationRun run = make_calibration_run(load_scenario("job.json", {"simulation.profile=p.json"}),
//                                                   "job.json", {"traces/"}, {0.0191, 0.0190, ...});
//   profile_json["calibration_run"] = run.to_json();

#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/case_traits.hpp"

namespace trainsim::plan {

struct Scenario;

struct CalibrationRun {
  std::string name;                 // the traced job's scenario name
  std::string scenario;             // its scenario file, as given to calibrate
  std::vector<std::string> traces;  // the trace paths, as given
  CaseTraits traits;                // traits_of the job
  double predicted_s = 0;           // the iteration time predicted with the fitted profile (analytic)
  std::vector<double> measured_s;   // each traced iteration's time, in the traces' order of numbers
  core::Json job;                   // job_of the traced job; null in runs recorded before it

  // ln(predicted_s / measured_i) for each iteration.
  std::vector<double> residuals() const;
  // The median of residuals() (the mean of the middle two for an even count). REQUIRES: measured_s non-empty.
  double median_residual() const;
  // The median measured iteration time. REQUIRES: measured_s non-empty.
  double median_measured_s() const;
  // {name, scenario, traces, traits, backend "analytic", predicted_iteration_s, measured_iteration_s,
  //  residuals (informative, not read back)}.
  core::Json to_json() const;
  // Reads to_json() back; problems (a missing or non-positive time, bad traits) go to the reader's
  // Diagnostics.
  static CalibrationRun from_json(core::ObjectReader& r);
};

// What makes two scenarios the same job for the run's band: their cluster, model, training,
// parallelism and optimizations as given (Scenario::to_json AS_GIVEN), less the simulation settings.
core::Json job_of(const Scenario& s);

// The run of `job` (loaded with the fitted profile as its simulation.profile) against the measured
// iterations. REQUIRES: measured_s non-empty, each > 0.
CalibrationRun make_calibration_run(const Scenario& job, const std::string& scenario_file,
                                    const std::vector<std::string>& traces, const std::vector<double>& measured_s);

// The time band the run gives `target` (see the top of this file): nullopt when `target` is not the
// traced job (or, for a run without `job`, not in its level-1 group) or the run has too few
// iterations for `coverage`.
std::optional<Band> calibrated_time_band(const CalibrationRun& run, const Scenario& target, double coverage);

// The run as one case of a bands file: its median residual as the time residual.
BandCase as_band_case(const CalibrationRun& run);

}  // namespace trainsim::plan
