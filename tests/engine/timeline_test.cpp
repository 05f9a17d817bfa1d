#include "sim/engine/timeline.hpp"

#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "sim/core/json_reader.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using namespace testing;

TEST(ChromeTrace, OneCompleteEventPerTaskOfTheChosenRanks) {
  const core::Workload w = hybrid_workload(2, 2, 2, 3);
  SimulationOptions options;
  options.timeline_ranks = {6, 1};
  const SimulationResult r = make_analytic_backend()->run(w, make_cluster(2, 4), unit_profile(), options);
  std::ostringstream out;
  write_chrome_trace(r, w, out);
  const core::Json trace = core::parse_json_text(out.str(), "trace.json");
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<int, size_t> events;
  std::map<int, std::string> process_names;
  size_t thread_names = 0;
  for (const core::Json& e : trace["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    if (e["ph"] == "X") {
      ++events[pid];
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e["args"].contains("micro_batch"));
      EXPECT_TRUE(e["args"].contains("bytes"));
    } else if (e["name"] == "process_name") {
      process_names[pid] = e["args"]["name"].get<std::string>();
    } else if (e["name"] == "thread_name") {
      ++thread_names;
    }
  }
  EXPECT_EQ(events[6], w.program_of(6).tasks.size());
  EXPECT_EQ(events[1], w.program_of(1).tasks.size());
  EXPECT_EQ(events.size(), 2u);
  EXPECT_EQ(process_names[6], "rank 6 (stage 1)");
  EXPECT_EQ(process_names[1], "rank 1 (stage 0)");
  EXPECT_GT(thread_names, 0u);

  // The first compute task of rank 1: a forward named by the workload's name table, in microseconds.
  const TimelineEvent* first = nullptr;
  for (const TimelineEvent& e : r.timeline) {
    if (e.rank == 1 && w.program_of(1).tasks[e.task].kind == core::TaskKind::COMPUTE) {
      first = &e;
      break;
    }
  }
  ASSERT_NE(first, nullptr);
  bool found = false;
  for (const core::Json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == 1 && e["args"]["task"] == first->task) {
      EXPECT_EQ(e["name"], "forward");
      EXPECT_EQ(e["cat"], "compute");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), first->start_s * 1e6);
      EXPECT_NEAR(e["dur"].get<double>(), 1e3, 1e-6) << "1 ms";
      found = true;
    }
  }
  EXPECT_TRUE(found);

  std::ostringstream again;
  write_chrome_trace(r, w, again);
  EXPECT_EQ(out.str(), again.str()) << "deterministic";
}

}  // namespace
}  // namespace trainsim::engine
