#pragma once
// The interval sweep behind Breakdown: given what one rank was doing when, split [0, end) into
// compute, exposed communication per axis, offload-only time ("other": copies or CPU work) and
// bubble, exactly (the parts telescope, so they add up to `end` up to rounding).

#include <cstdint>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::engine {

enum class Activity : uint8_t { COMPUTE, COMMUNICATION, COPY, HOST };

// One busy interval of a rank: a compute task (phase), a communication task (axis), a copy or CPU
// work on the host (HOST-stream compute).
struct ActivityInterval {
  double start_s = 0;
  double end_s = 0;
  Activity activity = Activity::COMPUTE;
  core::Axis axis = core::Axis::DATA;       // COMMUNICATION
  core::Phase phase = core::Phase::FORWARD;  // COMPUTE
};

struct RankBreakdown {
  Breakdown breakdown;
  std::array<core::Seconds, core::AXIS_COUNT> comm_time{};  // union of the axis's busy intervals
  core::Seconds copy_time;  // union of the copy intervals
  core::Seconds host_time;  // union of the host intervals
};

// Intervals may overlap and come in any order; empty ones are ignored. Time before the first and
// after the last interval, up to `end`, is bubble. REQUIRES: every end_s <= end.
RankBreakdown break_down(const std::vector<ActivityInterval>& intervals, core::Seconds end);

}  // namespace trainsim::engine
