// The traced iterations (calibrate/iteration_marks.hpp) of the synthetic run: every rank marks
// ProfilerStep#0..2, each iteration_s long.

#include <gtest/gtest.h>

#include <algorithm>

#include "calibrate/iteration_marks.hpp"
#include "sim/core/error.hpp"
#include "tests/calibrate/synthetic_trace.hpp"

namespace trainsim::calibrate {
namespace {

std::vector<trace::Marker*> markers_of(core::TraceFile& f, int64_t number) {
  std::vector<trace::Marker*> out;
  for (trace::Record& r : f.records) {
    if (r.has_marker() && r.marker().iteration() == number) out.push_back(r.mutable_marker());
  }
  return out;
}

TEST(IterationMarks, EveryCommonIterationTakesItsSlowestRank) {
  testing::SyntheticRun run = testing::make_synthetic_run({});
  // Rank 5's iteration 1 ends 3 ms later: the job waited for it.
  for (trace::Marker* m : markers_of(run.ranks[5], 1)) m->set_end_ns(m->end_ns() + 3'000'000);
  // Rank 9 did not mark iteration 2: only 0 and 1 are common.
  auto& records = run.ranks[9].records;
  records.erase(std::remove_if(records.begin(), records.end(),
                               [](const trace::Record& r) { return r.has_marker() && r.marker().iteration() == 2; }),
                records.end());
  const std::vector<MeasuredIteration> its = measured_iterations(TraceSet(run.ranks));
  ASSERT_EQ(its.size(), 2u);
  EXPECT_EQ(its[0].number, 0);
  EXPECT_NEAR(its[0].time.value(), run.iteration_s, 1e-9);
  EXPECT_EQ(its[1].number, 1);
  EXPECT_NEAR(its[1].time.value(), run.iteration_s + 3e-3, 1e-9);
}

TEST(IterationMarks, NoMarkersNoIterationsAndDisjointNumbersAreAnInputError) {
  testing::SyntheticRun run = testing::make_synthetic_run({});
  std::vector<core::TraceFile> bare = run.ranks;
  for (core::TraceFile& f : bare) {
    f.records.erase(std::remove_if(f.records.begin(), f.records.end(), [](const trace::Record& r) { return r.has_marker(); }),
                    f.records.end());
  }
  EXPECT_TRUE(measured_iterations(TraceSet(bare)).empty());
  // Rank 0 numbers its iterations 10, 11, 12: no number is on every rank.
  for (trace::Record& r : run.ranks[0].records) {
    if (r.has_marker()) r.mutable_marker()->set_iteration(r.marker().iteration() + 10);
  }
  EXPECT_THROW(measured_iterations(TraceSet(run.ranks)), core::InputError);
}

}  // namespace
}  // namespace trainsim::calibrate
