// The emulator's trace (sim/cli/emulate_command.hpp write_emulation_trace) without MPI: which records
// a measured and a modelled call become, and what `trace summary` (calibrate/trace_summary.hpp)
// makes of them.

#include <gtest/gtest.h>

#include <filesystem>

#include "calibrate/trace_summary.hpp"
#include "sim/cli/emulate_command.hpp"
#include "sim/core/device.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::cli {
namespace {

using core::Axis;
using core::Stream;

// Prices every collective at 2 ms and every message at 1 ms.
class FixedModel final : public engine::CommunicationModel {
 public:
  core::Seconds collective_time(core::CollectiveOp, core::Bytes, const network::GroupPlacement&) override {
    return core::Seconds(2e-3);
  }
  core::Seconds p2p_time(core::Bytes, bool) override { return core::Seconds(1e-3); }
};

TEST(EmulateTrace, MeasuredCallsAreRecordsModelledOnesMarkersAndSummaryCountsThem) {
  // TP2 x DP2 on 2 nodes of 2 (rank = t + 2 d), node 0 = ranks 0 and 1: the tensor all_gather runs
  // for real on both, the data all_gather has one present member of 2 and is modelled.
  core::Workload w;
  w.layout = core::ParallelLayout({2, 1, 1, 2, 1});
  core::Program p;
  core::Task ag;
  ag.kind = core::TaskKind::COLLECTIVE;
  ag.collective = core::CollectiveOp::ALL_GATHER;
  ag.stream = Stream::TENSOR_COMM;
  ag.bytes = 4000;
  ag.group = 0;
  p.add(ag);
  ag.group = 1;
  ag.stream = Stream::DATA_COMM;
  p.add(ag);
  w.programs = {p};
  w.program_of_rank = {0, 0, 0, 0};
  w.groups = {{"tensor", Axis::TENSOR, {}, {}}, {"data", Axis::DATA, {}, {}}};
  w.symmetric_axes = {true, true, true, true, false};
  network::ClusterConfig cluster;
  cluster.gpu_spec = *core::find_gpu("A100-SXM4-80GB");
  cluster.nodes = 2;
  cluster.gpus_per_node = 2;
  const engine::EmulationSubset node0 = engine::EmulationSubset::parse("node:0", w.layout, cluster);
  const engine::PredictedTimes none;
  FixedModel model;
  const engine::Reduction reduction{node0, none, model};
  const engine::EmulationPlan plan =
      engine::plan_emulation(w, 1, cluster, core::Profile().device, {}, "s.json", &reduction);
  ASSERT_FALSE(plan.tasks[0].modelled);
  ASSERT_TRUE(plan.tasks[1].modelled);

  // The all_gather from 1,000 to 3,000 ns, the modelled one from 2,000 to 4,000 ns (overlapping).
  const std::vector<EmulatedSpan> spans = {{1000, 3000}, {2000, 4000}};
  const std::string dir = (std::filesystem::temp_directory_path() / "trainsim_emulate_trace_test").string();
  const std::string path = write_emulation_trace(dir, w, plan, spans, "test", 1, trace::TIMING_HOST_COMPLETION);
  const core::TraceFile t = core::read_trace_file(path);
  EXPECT_EQ(t.header.rank(), 1);
  EXPECT_EQ(t.header.world_size(), 4);
  ASSERT_EQ(t.records.size(), 3u);
  EXPECT_EQ(t.records[0].marker().iteration(), 1);  // the iteration: first start to last end
  EXPECT_EQ(t.records[0].marker().start_ns(), 1000u);
  EXPECT_EQ(t.records[0].marker().end_ns(), 4000u);
  const trace::Collective& c = t.records[1].collective();
  EXPECT_EQ(c.comm_size(), 2);
  EXPECT_EQ(c.rank(), 1);
  EXPECT_EQ(c.bytes(), 4000u);
  EXPECT_EQ(c.timing(), trace::TIMING_HOST_COMPLETION);
  EXPECT_EQ(t.records[2].marker().domain(), "trainsim.emulate.modelled");
  EXPECT_EQ(t.records[2].marker().iteration(), -1);
  EXPECT_EQ(t.records[2].marker().name(), "all_gather data 4000 B (modelled)");

  // trace summary: the window is the iteration (3 us), communication the measured collective alone
  // (2 us; the modelled call is no measurement), idle the rest (1 us).
  const calibrate::RankSummary s = calibrate::summarize_trace(t, 10);
  EXPECT_EQ(s.iterations, 1u);
  EXPECT_NEAR(s.window.value(), 3e-6, 1e-15);
  EXPECT_NEAR(s.busy[static_cast<size_t>(calibrate::TimeCategory::COMMUNICATION)].value(), 2e-6, 1e-15);
  EXPECT_NEAR(s.busy[static_cast<size_t>(calibrate::TimeCategory::IDLE)].value(), 1e-6, 1e-15);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].count, 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::cli
