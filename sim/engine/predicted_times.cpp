#include "sim/engine/predicted_times.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::engine {

PredictedTimes::PredictedTimes(const core::Workload& workload, const SimulationResult& result) {
  for (const TimelineEvent& e : result.timeline) {
    Times& t = by_rank_[e.rank];
    const size_t n = workload.program_of(e.rank).tasks.size();
    if (t.start.empty()) {
      t.start.assign(n, 0);
      t.end.assign(n, 0);
    }
    TRAINSIM_CHECK(e.task < n, "timeline task inside its program");
    t.start[e.task] = e.start_s;
    t.end[e.task] = e.end_s;
  }
  for (auto& [rank, t] : by_rank_) {
    const core::Program& program = workload.program_of(rank);
    t.ready.assign(program.tasks.size(), 0);
    std::array<double, core::STREAM_COUNT> stream_end{};
    for (size_t i = 0; i < program.tasks.size(); ++i) {
      const core::Task& task = program.tasks[i];
      double ready = stream_end[static_cast<size_t>(task.stream)];
      for (const uint32_t* d = program.deps_of(task); d != program.deps_of(task) + task.dep_count; ++d) {
        ready = std::max(ready, t.end[*d]);
      }
      t.ready[i] = ready;
      stream_end[static_cast<size_t>(task.stream)] = t.end[i];
      if (task.stream != core::Stream::STORAGE) t.last_end = std::max(t.last_end, t.end[i]);
    }
  }
}

const PredictedTimes::Times& PredictedTimes::of(int rank) const {
  const auto it = by_rank_.find(rank);
  TRAINSIM_CHECK(it != by_rank_.end(), fmt::format("rank {} has no predicted timeline", rank));
  return it->second;
}

double PredictedTimes::ready(int rank, uint32_t task) const { return of(rank).ready.at(task); }
double PredictedTimes::start(int rank, uint32_t task) const { return of(rank).start.at(task); }
double PredictedTimes::end(int rank, uint32_t task) const { return of(rank).end.at(task); }
double PredictedTimes::last_end(int rank) const { return of(rank).last_end; }

}  // namespace trainsim::engine
