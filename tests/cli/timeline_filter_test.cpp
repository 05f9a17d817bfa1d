// run --timeline-window / --timeline-micro-batches: engine::TimelineFilter applied by the writer.
#include <gtest/gtest.h>
#include <sstream>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/engine/timeline.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

struct Traced {
  Scenario scenario;
  Prediction prediction;
};

Traced traced() {
  Scenario s = load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json");
  Prediction p = predict(s, "analytic", {0, 1});
  return {std::move(s), std::move(p)};
}

std::vector<core::Json> slices(const Traced& t, const engine::TimelineFilter& f) {
  std::ostringstream out;
  engine::write_chrome_trace(t.prediction.result, t.prediction.built.workload, out, f);
  std::vector<core::Json> xs;
  const core::Json doc = core::Json::parse(out.str());
  for (const core::Json& e : doc["traceEvents"]) {
    if (e["ph"] == "X") xs.push_back(e);
  }
  return xs;
}

TEST(TimelineFilter, DefaultKeepsEverything) {
  const Traced t = traced();
  std::ostringstream a, b;
  engine::write_chrome_trace(t.prediction.result, t.prediction.built.workload, a);
  engine::write_chrome_trace(t.prediction.result, t.prediction.built.workload, b, engine::TimelineFilter{});
  EXPECT_EQ(a.str(), b.str());
  EXPECT_EQ(slices(t, {}).size(), t.prediction.result.timeline.size());
}

TEST(TimelineFilter, MicroBatchesKeepOptimizerAndDataParallelTasks) {
  const Traced t = traced();
  ASSERT_GE(t.prediction.built.micro_batches, 4);
  engine::TimelineFilter f;
  f.micro_batches = {0, 1};
  const std::vector<core::Json> kept = slices(t, f);
  const size_t all = slices(t, {}).size();
  EXPECT_LT(kept.size(), all / 2);
  bool optimizer = false;
  for (const core::Json& e : kept) {
    const int mb = e["args"]["micro_batch"];
    const bool step_task = e["args"]["phase"] == "optimizer" || e["tid"] == static_cast<int>(core::Stream::DATA_COMM);
    optimizer |= e["args"]["phase"] == "optimizer";
    EXPECT_TRUE(mb <= 1 || step_task) << e.dump();
  }
  EXPECT_TRUE(optimizer);
}

TEST(TimelineFilter, WindowKeepsOverlappingTasks) {
  const Traced t = traced();
  const double iteration_s = t.prediction.iteration_time_s();
  engine::TimelineFilter f;
  f.start_s = 0.25 * iteration_s;
  f.end_s = 0.5 * iteration_s;
  const std::vector<core::Json> kept = slices(t, f);
  EXPECT_GT(kept.size(), 0u);
  EXPECT_LT(kept.size(), slices(t, {}).size());
  for (const core::Json& e : kept) {
    const double start = e["ts"].get<double>() / 1e6, end = start + e["dur"].get<double>() / 1e6;
    EXPECT_GE(end, f.start_s * (1 - 1e-9));
    EXPECT_LE(start, f.end_s * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace trainsim::cli
