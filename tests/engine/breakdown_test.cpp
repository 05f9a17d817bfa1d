// The interval sweep behind Breakdown, on intervals whose split is obvious by hand.

#include "sim/engine/breakdown.hpp"

#include <gtest/gtest.h>

namespace trainsim::engine {
namespace {

using core::Axis;

ActivityInterval comm(double start, double end, Axis axis) {
  return {start, end, Activity::COMMUNICATION, axis, core::Phase::FORWARD};
}

ActivityInterval work(double start, double end, core::Phase phase = core::Phase::FORWARD) {
  return {start, end, Activity::COMPUTE, Axis::DATA, phase};
}

TEST(BreakDown, SplitsIdleTimeByWhatIsInFlight) {
  // 0-2 compute; 1-4 data all-reduce (2-4 exposed... except 3-4 where tensor is also busy);
  // 3-5 tensor; 5-6 nothing; 6-7 copy only; 7-8 compute (backward); 8-10 nothing.
  const std::vector<ActivityInterval> intervals = {
      work(0, 2),         comm(1, 4, Axis::DATA), comm(3, 5, Axis::TENSOR),
      {6, 7, Activity::COPY, Axis::DATA, core::Phase::FORWARD}, work(7, 8, core::Phase::BACKWARD),
      comm(9, 9, Axis::PIPELINE)};
  const RankBreakdown r = break_down(intervals, core::Seconds(10));
  const Breakdown& b = r.breakdown;
  EXPECT_DOUBLE_EQ(b.compute.value(), 3);
  EXPECT_DOUBLE_EQ(b.compute_by_phase[static_cast<size_t>(core::Phase::FORWARD)].value(), 2);
  EXPECT_DOUBLE_EQ(b.compute_by_phase[static_cast<size_t>(core::Phase::BACKWARD)].value(), 1);
  EXPECT_DOUBLE_EQ(b.exposed_comm[static_cast<size_t>(Axis::DATA)].value(), 1) << "2-3";
  EXPECT_DOUBLE_EQ(b.exposed_comm[static_cast<size_t>(Axis::TENSOR)].value(), 2) << "3-5: tensor comes first";
  EXPECT_DOUBLE_EQ(b.other.value(), 1);
  EXPECT_DOUBLE_EQ(b.pipeline_bubble.value(), 3) << "5-6 and 8-10";
  EXPECT_DOUBLE_EQ(r.comm_time[static_cast<size_t>(Axis::DATA)].value(), 3);
  EXPECT_DOUBLE_EQ(r.comm_time[static_cast<size_t>(Axis::TENSOR)].value(), 2);
  EXPECT_DOUBLE_EQ(r.comm_time[static_cast<size_t>(Axis::PIPELINE)].value(), 0) << "empty intervals are ignored";
}

TEST(BreakDown, OverlappingIntervalsOfOneAxisCountOnce) {
  const RankBreakdown r = break_down({comm(0, 2, Axis::PIPELINE), comm(1, 3, Axis::PIPELINE)}, core::Seconds(3));
  EXPECT_DOUBLE_EQ(r.comm_time[static_cast<size_t>(Axis::PIPELINE)].value(), 3);
  EXPECT_DOUBLE_EQ(r.breakdown.exposed_comm[static_cast<size_t>(Axis::PIPELINE)].value(), 3);
}

TEST(BreakDown, PartsAddUpToTheEndTime) {
  std::vector<ActivityInterval> intervals;
  for (int i = 0; i < 1000; ++i) {
    const double t = i * 1.37e-4;
    intervals.push_back(work(t, t + 0.9e-4));
    intervals.push_back(comm(t + 0.5e-4, t + 1.2e-4, static_cast<Axis>(i % core::AXIS_COUNT)));
  }
  const double end = 1000 * 1.37e-4 + 1e-3;
  const Breakdown b = break_down(intervals, core::Seconds(end)).breakdown;
  EXPECT_NEAR((b.compute + b.exposed_comm_total() + b.pipeline_bubble + b.other).value(), end, 1e-12 * end);
}

}  // namespace
}  // namespace trainsim::engine
