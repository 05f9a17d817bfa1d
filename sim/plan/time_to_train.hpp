#pragma once
// Time-to-train and cost: how long, how many GPU-hours and how many dollars a whole training run
// takes at the predicted iteration time. One function so that every command (run, compare, search,
// sweep) computes them the same way.
//
// Inputs (scenario keys, docs/scenario.md):
//   training.tokens             total tokens to train, e.g. 15e12; optional, no default
//   cluster.price_per_gpu_hour  USD per GPU-hour; optional, no default
// Outputs (the report's "time_to_train" object; absent without training.tokens):
//   tokens      training.tokens, as given
//   iterations  ceil(tokens / (global_batch x sequence_length)): the last, partial batch is a whole
//               iteration
//   days        iterations x iteration_time_s / 86,400
//   gpu_hours   iterations x iteration_time_s / 3,600 x GPUs
//   cost        gpu_hours x price_per_gpu_hour (USD); absent without a price
// With training.checkpoint (sim/plan/resilience.hpp) the report adds, beside them:
//   with_failures       {days, gpu_hours, cost (with a price), failures, goodput}: the expected wall
//                       time Ts / goodput (Daly's model: checkpoint stalls, failures, the work they
//                       roll back and the restarts), Ts being `days` above; failures = that time /
//                       the job's MTBF
//   simulated_failures  `run --simulate-failures N`: {runs, seed, days {mean, min, p5, p50, p95, max},
//                       failures_mean} of N simulated runs
// The figures above them assume the steady-state iteration time throughout: no failures, restarts,
// checkpoint stalls or warm-up; except for two early phases that run slower, each predicted by its
// own simulation: with optimizations.pruning.start_iteration = n > 0 the first min(n, iterations)
// iterations run at the dense iteration time (the run is dense until pruning starts), and with
// optimizations.gradient_compression.warmup_steps = w > 0 the first w at the uncompressed one. An
// iteration in both phases takes the slower of the two (a lower bound of its time: it is dense and
// uncompressed at once).
//
// Example:
//   // 15e12 tokens, global batch 1536 x 2048 tokens, 9.6 s per iteration on 1024 GPUs at $2/GPU-h
//   TimeToTrain t = time_to_train(15e12, 1536 * 2048, 9.6, 1024, 2.0);
//   // t.iterations == 4768372, t.days == 529.82, t.gpu_hours == 1.302e7, *t.cost == 2.604e7

#include <cstdint>
#include <optional>
#include <vector>

#include "sim/plan/resilience.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

struct Scenario;

struct TimeToTrain {
  double tokens = 0;
  int64_t iterations = 0;
  double days = 0;
  double gpu_hours = 0;
  std::optional<double> cost;  // USD; only with a price
  // With failures (add_failures): the expected days, GPU-hours, cost, failures, and the goodput used.
  struct WithFailures {
    double days = 0, gpu_hours = 0, failures = 0, goodput = 0;
    std::optional<double> cost;
  };
  std::optional<WithFailures> with_failures;
  std::optional<SimulatedRuns> simulated_failures;

  // {"tokens", "iterations", "days", "gpu_hours", "cost" (only with a price)}
  core::Json to_json() const;
};

// The first `iterations` iterations of a run take `iteration_time_s` instead of the steady state's.
struct EarlyPhase {
  int64_t iterations = 0;
  double iteration_time_s = 0;
};

// Adds with_failures (and simulated_failures when given) from a prediction's resilience figures.
// REQUIRES: f.goodput > 0 (a run that ends).
void add_failures(TimeToTrain& t, const ResilienceFigures& f, int gpus, std::optional<double> price_per_gpu_hour,
                  const std::optional<SimulatedRuns>& simulated);

// REQUIRES: tokens > 0 (at most 1e18), tokens_per_iteration > 0, iteration_time_s > 0, gpus > 0,
// price_per_gpu_hour > 0 when given (the scenario readers check the keys; a violation is a bug),
// every early phase's iterations >= 0 and time > 0. An iteration in several early phases (at most
// all iterations count) takes the longest of their times.
TimeToTrain time_to_train(double tokens, int64_t tokens_per_iteration, double iteration_time_s, int gpus,
                          std::optional<double> price_per_gpu_hour, const std::vector<EarlyPhase>& early = {});

// The same from a scenario's training.tokens, global batch, sequence length, GPUs and price; nullopt
// when the scenario has no training.tokens. With a dense iteration time, the iterations before
// optimizations.pruning.start_iteration take it; with an uncompressed one, those before
// gradient_compression.warmup_steps; without them every iteration is the steady-state one
// (`search` ranks so; docs/search.md).
std::optional<TimeToTrain> time_to_train(const Scenario& scenario, double iteration_time_s,
                                         std::optional<double> dense_iteration_time_s = std::nullopt,
                                         std::optional<double> uncompressed_iteration_time_s = std::nullopt);

}  // namespace trainsim::plan
