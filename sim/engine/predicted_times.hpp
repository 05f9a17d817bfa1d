#pragma once
// The simulator's timeline of some ranks of a job, in the form the emulator needs it
// (sim/engine/emulation_plan.hpp): when each task becomes ready, starts and ends. Under scale
// reduction an absent rank that no present rank stands in for "arrives" at a call when the
// prediction says it does; the GPU path issues its work in predicted start order.
//
// Example:
//   SimulationOptions o; o.timeline_ranks = {0, 16};
//   PredictedTimes t(workload, make_analytic_backend()->run(workload, cluster, profile, o));
//   double arrive = t.ready(16, task);

#include <cstdint>
#include <map>
#include <vector>

#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::engine {

class PredictedTimes {
 public:
  PredictedTimes() = default;
  // REQUIRES: `result` came from running `workload` with options.timeline_ranks set.
  PredictedTimes(const core::Workload& workload, const SimulationResult& result);

  bool has(int rank) const { return by_rank_.count(rank) != 0; }
  // Seconds from the iteration's start. ready: the task heads its stream, its stream predecessor
  // and its dependencies have ended (workload.hpp); a communication task's start is its call's start
  // (its last member's ready time). REQUIRES: has(rank), task in the rank's program.
  double ready(int rank, uint32_t task) const;
  double start(int rank, uint32_t task) const;
  double end(int rank, uint32_t task) const;
  // The end of the rank's last task outside the STORAGE stream: its iteration (executor.hpp).
  double last_end(int rank) const;

 private:
  struct Times {
    std::vector<double> ready;
    std::vector<double> start;
    std::vector<double> end;
    double last_end = 0;
  };
  const Times& of(int rank) const;
  std::map<int, Times> by_rank_;
};

}  // namespace trainsim::engine
