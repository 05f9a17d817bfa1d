#include "sim/engine/breakdown.hpp"

#include <algorithm>

namespace trainsim::engine {
namespace {

// Lanes of the sweep: compute, one per axis, copy, host.
constexpr int COMPUTE_LANE = 0;
constexpr int COPY_LANE = 1 + core::AXIS_COUNT;
constexpr int HOST_LANE = COPY_LANE + 1;
constexpr int LANE_COUNT = HOST_LANE + 1;

int lane_of(const ActivityInterval& i) {
  switch (i.activity) {
    case Activity::COMPUTE: return COMPUTE_LANE;
    case Activity::COMMUNICATION: return 1 + static_cast<int>(i.axis);
    case Activity::COPY: return COPY_LANE;
    case Activity::HOST: return HOST_LANE;
  }
  return COMPUTE_LANE;
}

// Exposed communication goes to the first busy axis in this order.
constexpr std::array<core::Axis, core::AXIS_COUNT> EXPOSURE_ORDER = {
    core::Axis::TENSOR, core::Axis::CONTEXT, core::Axis::EXPERT, core::Axis::PIPELINE, core::Axis::DATA};

struct Edge {
  double time;
  int delta;
  int lane;
};

}  // namespace

RankBreakdown break_down(const std::vector<ActivityInterval>& intervals, core::Seconds end) {
  RankBreakdown out;
  Breakdown& b = out.breakdown;
  std::vector<Edge> edges;
  edges.reserve(2 * intervals.size());
  for (const ActivityInterval& i : intervals) {
    if (!(i.end_s > i.start_s)) continue;
    const int lane = lane_of(i);
    edges.push_back({i.start_s, +1, lane});
    edges.push_back({i.end_s, -1, lane});
    if (i.activity == Activity::COMPUTE) {
      b.compute_by_phase[static_cast<size_t>(i.phase)] += core::Seconds(i.end_s - i.start_s);
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.time < y.time; });

  std::array<int, LANE_COUNT> busy{};
  // Attributes [from, to) given the lanes busy over it. Edges at one instant change `busy` between
  // zero-length segments, so their order within the instant does not matter.
  auto attribute = [&](double from, double to) {
    if (!(to > from)) return;
    const core::Seconds len(to - from);
    for (int a = 0; a < core::AXIS_COUNT; ++a) {
      if (busy[static_cast<size_t>(1 + a)] > 0) out.comm_time[static_cast<size_t>(a)] += len;
    }
    if (busy[COPY_LANE] > 0) out.copy_time += len;
    if (busy[HOST_LANE] > 0) out.host_time += len;
    if (busy[COMPUTE_LANE] > 0) {
      b.compute += len;
      return;
    }
    for (core::Axis a : EXPOSURE_ORDER) {
      if (busy[static_cast<size_t>(1 + static_cast<int>(a))] > 0) {
        b.exposed_comm[static_cast<size_t>(a)] += len;
        return;
      }
    }
    if (busy[COPY_LANE] > 0) {
      b.other += len;
      b.other_copy += len;
    } else if (busy[HOST_LANE] > 0) {
      b.other += len;
      b.other_host += len;
    } else {
      b.pipeline_bubble += len;
    }
  };
  double now = 0;
  for (const Edge& e : edges) {
    attribute(now, e.time);
    now = std::max(now, e.time);
    busy[static_cast<size_t>(e.lane)] += e.delta;
  }
  attribute(now, end.value());
  return out;
}

}  // namespace trainsim::engine
