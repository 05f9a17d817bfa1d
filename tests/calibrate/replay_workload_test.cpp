#include "calibrate/replay_workload.hpp"

#include <gtest/gtest.h>

#include "calibrate/kineto_import.hpp"
#include "tests/calibrate/synthetic_trace.hpp"

namespace trainsim::calibrate {
namespace {

using core::Axis;
using core::TaskKind;

const std::string DATA = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/";

TraceSet kineto_fixture() {
  std::vector<core::TraceFile> files;
  for (const char* name : {"kineto_rank0.json", "kineto_rank1.json"}) {
    KinetoImport t = import_kineto_file(DATA + name);
    files.push_back({name, t.header, std::move(t.records), 0, ""});
  }
  return TraceSet(std::move(files));
}

// The fixture, by hand: ProfilerStep#1 is [100, 500) us and #2 [500, 900) us on both ranks; the
// middle of {1, 2} is step 1. In it, per rank: a 20 us host-to-device copy at 105, GEMMs at 130
// (100 us) and 240 (60 us), an elementwise kernel, flash attention at 325 (50 us), and a world
// all_reduce from 380 (the NCCL kernel, not replayed as a kernel).
TEST(ReplayWorkload, KinetoFixture) {
  const ReplayWorkload r = build_replay_workload(kineto_fixture(), {});
  EXPECT_EQ(r.traced_ranks, 2);
  EXPECT_EQ(r.iteration, 1);
  EXPECT_NEAR(r.measured.value(), 400e-6, 1e-12);
  EXPECT_EQ(r.gpus_per_node, 2);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.workload.layout.size(Axis::DATA), 2);
  EXPECT_EQ(r.workload.layout.world_size(), 2);
  ASSERT_EQ(r.workload.groups.size(), 1u);
  EXPECT_EQ(r.workload.groups[0].axis, Axis::DATA);
  EXPECT_EQ(r.compute_tasks, 2u * 4u);
  EXPECT_EQ(r.collective_tasks, 2u);
  EXPECT_EQ(r.copy_tasks, 2u);

  const core::Program& p = r.workload.program_of(0);
  ASSERT_EQ(p.tasks.size(), 6u);
  EXPECT_EQ(p.tasks[0].kind, TaskKind::COPY);
  EXPECT_EQ(p.tasks[0].bytes, 4194304.0);
  EXPECT_EQ(p.tasks[1].kind, TaskKind::COMPUTE);
  EXPECT_EQ(p.tasks[1].op_class, core::OpClass::GEMM);
  // The GEMM started at 130 us, after the copy ended at 125: it waits for the copy, and the 5 us
  // after it are host time folded into the GEMM's 100 us.
  EXPECT_NEAR(p.tasks[1].seconds, 105e-6, 1e-12);
  ASSERT_EQ(p.tasks[1].dep_count, 1u);
  EXPECT_EQ(p.deps_of(p.tasks[1])[0], 0u);
  // The second GEMM starts 10 us after the first ended: launch overhead folded into it.
  EXPECT_NEAR(p.tasks[2].seconds, 70e-6, 1e-12);
  EXPECT_EQ(p.tasks[4].op_class, core::OpClass::ATTENTION);
  const core::Task& all_reduce = p.tasks[5];
  EXPECT_EQ(all_reduce.kind, TaskKind::COLLECTIVE);
  EXPECT_EQ(all_reduce.stream, core::Stream::DATA_COMM);
  EXPECT_EQ(all_reduce.collective, core::CollectiveOp::ALL_REDUCE);
  ASSERT_EQ(all_reduce.dep_count, 1u);
  EXPECT_EQ(p.deps_of(all_reduce)[0], 4u);  // the attention kernel that ended before it started
}

TEST(ReplayWorkload, ScaleDataGrowsTheDataParallelGroups) {
  const ReplayWorkload r = build_replay_workload(kineto_fixture(), ReplayOptions{4});
  EXPECT_EQ(r.workload.layout.world_size(), 8);
  EXPECT_EQ(r.nodes, 4);
  EXPECT_EQ(r.workload.groups[0].size(r.workload.layout), 8);
  EXPECT_EQ(r.workload.program_of_rank, (std::vector<uint32_t>{0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(ReplayWorkload, SyntheticRunLayoutAndIteration) {
  const testing::SyntheticRun run = testing::make_synthetic_run({});
  const ReplayWorkload r = build_replay_workload(TraceSet(run.ranks), {});
  EXPECT_EQ(r.iteration, 1);
  EXPECT_NEAR(r.measured.value(), run.iteration_s, 1e-12);
  EXPECT_EQ(r.gpus_per_node, 8);
  EXPECT_EQ(r.nodes, 2);
  // Node groups of 8 consecutive ranks (tensor), pairs 8 apart (data).
  EXPECT_EQ(r.workload.layout.size(Axis::TENSOR), 8);
  EXPECT_EQ(r.workload.layout.size(Axis::DATA), 2);
  ASSERT_EQ(r.workload.groups.size(), 2u);
  EXPECT_EQ(r.collective_tasks, 16u * 16u);
}

TEST(ReplayWorkload, MissingRankIsAnInputError) {
  std::vector<core::TraceFile> files = testing::make_synthetic_run({}).ranks;
  files.pop_back();
  try {
    build_replay_workload(TraceSet(std::move(files)), {});
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 15 has no trace"), std::string::npos) << e.what();
  }
}

TEST(ReplayWorkload, UnevenCommunicatorIsAnInputError) {
  std::vector<core::TraceFile> files = testing::make_synthetic_run({}).ranks;
  for (trace::Record& r : files[0].records) {
    if (r.has_collective()) {
      r.mutable_collective()->clear_group_ranks();
      for (int rank : {0, 1, 3}) r.mutable_collective()->add_group_ranks(rank);
      break;
    }
  }
  EXPECT_THROW(build_replay_workload(TraceSet(std::move(files)), {}), core::InputError);
}

}  // namespace
}  // namespace trainsim::calibrate
