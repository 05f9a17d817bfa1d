#pragma once
// The traced iterations: the spans of the iteration markers (ProfilerStep#N: torch.profiler's, or an
// NVTX range of that name under `trainsim trace --nvtx`) that each rank's trace holds.
//  - A rank's window of iteration N is the union of its markers numbered N (host and GPU ones).
//  - The iterations of a run are the numbers every rank has; an iteration's measured time is its
//    longest window over the ranks (the job waits for its slowest rank).
// replay (replay_workload.hpp) replays one of them; calibrate compares the fitted profile's prediction
// with each of them (sim/plan/calibration_run.hpp).
//
// Example:
//   for (const MeasuredIteration& it : measured_iterations(TraceSet::load({"traces/"}))) ... it.time

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "calibrate/trace_set.hpp"
#include "sim/core/units.hpp"

namespace trainsim::calibrate {

struct MarkWindow {
  uint64_t start = 0;
  uint64_t end = 0;
};

// Per traced rank, in TraceSet::ranks() order: iteration number -> its window.
std::vector<std::map<int64_t, MarkWindow>> iteration_marks(const TraceSet& traces);

// The iteration numbers that every rank in `marks` has (empty when none, or no rank).
std::set<int64_t> common_iterations(const std::vector<std::map<int64_t, MarkWindow>>& marks);

struct MeasuredIteration {
  int64_t number = 0;
  core::Seconds time;  // the longest window over the ranks
};

// The run's iterations, ascending by number; empty when the traces hold no iteration markers.
// Throws core::InputError naming the first trace when ranks have markers but none in common.
std::vector<MeasuredIteration> measured_iterations(const TraceSet& traces);

}  // namespace trainsim::calibrate
