#include "sim/plan/time_to_train.hpp"

#include <algorithm>
#include <cmath>

#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"

namespace trainsim::plan {

core::Json TimeToTrain::to_json() const {
  core::Json j;
  j["tokens"] = tokens;
  j["iterations"] = iterations;
  j["days"] = days;
  j["gpu_hours"] = gpu_hours;
  if (cost) j["cost"] = *cost;
  if (with_failures) {
    core::Json w;
    w["days"] = with_failures->days;
    w["gpu_hours"] = with_failures->gpu_hours;
    if (with_failures->cost) w["cost"] = *with_failures->cost;
    w["failures"] = with_failures->failures;
    w["goodput"] = with_failures->goodput;
    j["with_failures"] = w;
  }
  if (simulated_failures) {
    const SimulatedRuns& r = *simulated_failures;
    constexpr double DAY = 86400.0;
    j["simulated_failures"] = {{"runs", r.runs},
                               {"seed", r.seed},
                               {"days", {{"mean", r.mean_s / DAY}, {"min", r.min_s / DAY}, {"p5", r.p5_s / DAY},
                                         {"p50", r.p50_s / DAY}, {"p95", r.p95_s / DAY}, {"max", r.max_s / DAY}}},
                               {"failures_mean", r.failures_mean}};
  }
  return j;
}

void add_failures(TimeToTrain& t, const ResilienceFigures& f, int gpus, std::optional<double> price_per_gpu_hour,
                  const std::optional<SimulatedRuns>& simulated) {
  TRAINSIM_CHECK(f.goodput > 0 && gpus > 0, "add_failures: a run that never ends");
  TimeToTrain::WithFailures w;
  const double seconds = t.days * 86400.0 / f.goodput;
  w.days = seconds / 86400.0;
  w.gpu_hours = seconds / 3600.0 * gpus;
  if (price_per_gpu_hour) w.cost = w.gpu_hours * *price_per_gpu_hour;
  w.failures = seconds / f.job_mtbf_s;
  w.goodput = f.goodput;
  t.with_failures = w;
  t.simulated_failures = simulated;
}

TimeToTrain time_to_train(double tokens, int64_t tokens_per_iteration, double iteration_time_s, int gpus,
                          std::optional<double> price_per_gpu_hour, const std::vector<EarlyPhase>& early) {
  TRAINSIM_CHECK(tokens > 0 && tokens <= 1e18, "training.tokens out of range (TrainingConfig::from_json)");
  TRAINSIM_CHECK(tokens_per_iteration > 0 && iteration_time_s > 0 && gpus > 0, "time_to_train: empty iteration");
  TRAINSIM_CHECK(!price_per_gpu_hour || *price_per_gpu_hour > 0, "price_per_gpu_hour <= 0 (ClusterConfig::from_json)");
  for (const EarlyPhase& e : early) {
    TRAINSIM_CHECK(e.iterations >= 0 && (e.iterations == 0 || e.iteration_time_s > 0),
                   "time_to_train: an early phase without an iteration time");
  }
  TimeToTrain t;
  t.tokens = tokens;
  // Both operands are exact in a double (< 2^53), so an exact quotient is an exact integer and ceil
  // adds an iteration only for a real remainder.
  t.iterations = static_cast<int64_t>(std::ceil(tokens / static_cast<double>(tokens_per_iteration)));
  // Segments between the phases' ends: each at the longest time of the phases still running then.
  std::vector<int64_t> ends{0};
  for (const EarlyPhase& e : early) ends.push_back(std::min(e.iterations, t.iterations));
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  double seconds = 0;
  for (size_t k = 0; k + 1 < ends.size(); ++k) {
    double time = iteration_time_s;
    for (const EarlyPhase& e : early) {
      if (e.iterations > ends[k]) time = std::max(time, e.iteration_time_s);
    }
    seconds += static_cast<double>(ends[k + 1] - ends[k]) * time;
  }
  seconds += static_cast<double>(t.iterations - ends.back()) * iteration_time_s;
  t.days = seconds / 86400.0;
  t.gpu_hours = seconds / 3600.0 * gpus;
  if (price_per_gpu_hour) t.cost = t.gpu_hours * *price_per_gpu_hour;
  return t;
}

std::optional<TimeToTrain> time_to_train(const Scenario& s, double iteration_time_s,
                                         std::optional<double> dense_iteration_time_s,
                                         std::optional<double> uncompressed_iteration_time_s) {
  if (!s.training.tokens) return std::nullopt;
  std::vector<EarlyPhase> early;
  if (dense_iteration_time_s && s.pruning.enabled()) early.push_back({s.pruning.start_iteration, *dense_iteration_time_s});
  if (uncompressed_iteration_time_s && s.compression.enabled()) {
    early.push_back({s.compression.warmup_steps, *uncompressed_iteration_time_s});
  }
  return time_to_train(*s.training.tokens, s.training.global_batch * s.training.sequence_length, iteration_time_s,
                       s.cluster.world_size(), s.cluster.price_per_gpu_hour, early);
}

}  // namespace trainsim::plan
