// The GPU path of the emulator without a GPU (sim/engine/gpu_emulation.hpp): call sizes, the spin
// kernel's calibration arithmetic, and the mapping of a plan onto streams, communicators and an
// issue order.

#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/engine/gpu_emulation.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::CollectiveOp;
using core::Stream;
using core::TaskKind;
using namespace testing;

TEST(GpuEmulation, CallSizesFollowTheIrsBufferConvention) {
  // all_gather: bytes is the receive buffer, n blocks of count floats; 4000 B over 4 ranks.
  const CallSize ag = collective_call_size(CollectiveOp::ALL_GATHER, 4000, 4);
  EXPECT_EQ(ag.count, 250u);
  EXPECT_EQ(ag.send, 250u);
  EXPECT_EQ(ag.recv, 1000u);
  const CallSize rs = collective_call_size(CollectiveOp::REDUCE_SCATTER, 4000, 4);
  EXPECT_EQ(rs.count, 250u);
  EXPECT_EQ(rs.send, 1000u);
  EXPECT_EQ(rs.recv, 250u);
  const CallSize a2a = collective_call_size(CollectiveOp::ALL_TO_ALL, 4001, 4);  // rounded up
  EXPECT_EQ(a2a.count, 251u);
  EXPECT_EQ(a2a.send, 1004u);
  const CallSize ar = collective_call_size(CollectiveOp::ALL_REDUCE, 10, 8);
  EXPECT_EQ(ar.count, 3u);
  EXPECT_EQ(p2p_call_size(7).count, 7u);
}

TEST(GpuEmulation, TheSpinCalibrationIsTheLineThroughTimedSpins) {
  // Spins on a 1.5 GHz clock with a 5 us launch: seconds = 5e-6 + cycles / 1.5e9, exactly.
  std::vector<TimedSpin> samples;
  for (uint64_t n : {100000, 200000, 400000, 800000}) samples.push_back({n, 5e-6 + static_cast<double>(n) / 1.5e9});
  const SpinCalibration c = fit_spin(samples);
  EXPECT_NEAR(c.cycles_per_second, 1.5e9, 1e-3);
  EXPECT_NEAR(c.overhead_s, 5e-6, 1e-15);
  // 1 ms of compute: (1e-3 - 5e-6) x 1.5e9 = 1,492,500 cycles; less than the launch: none.
  EXPECT_EQ(spin_cycles(c, 1e-3), 1492500u);
  EXPECT_EQ(spin_cycles(c, 4e-6), 0u);
  // Noise that puts the intercept below 0 is no negative overhead.
  const SpinCalibration n = fit_spin({{100, 0.5e-6}, {200, 1.5e-6}});
  EXPECT_EQ(n.overhead_s, 0);
  EXPECT_NEAR(n.cycles_per_second, 1e8, 1);
}

TEST(GpuEmulation, ACalibrationWithoutAClockIsAnInputError) {
  EXPECT_THROW(fit_spin({{1000, 1e-6}}), core::InputError);
  EXPECT_THROW(fit_spin({{1000, 1e-6}, {1000, 2e-6}}), core::InputError);  // one length
  EXPECT_THROW(fit_spin({{1000, 2e-6}, {2000, 1e-6}}), core::InputError);  // time falls with cycles
}

// TP2 x DP2 on one node (rank = t + 2 d): compute, a tensor all_gather after it, a data
// reduce_scatter that overlaps the compute on its own stream, a pipeline-less send/recv pair along
// data, and a memory task.
core::Workload overlapping() {
  core::Program p;
  const uint32_t c = p.add(compute(0.010));
  p.add(collective(CollectiveOp::ALL_GATHER, 0, 4000, Stream::TENSOR_COMM), {c});
  p.add(collective(CollectiveOp::REDUCE_SCATTER, 1, 8000, Stream::DATA_COMM));
  p.add(memory(64));
  p.add(p2p(TaskKind::SEND, Axis::DATA, 1, 100, Stream::PIPELINE_FORWARD));
  p.add(p2p(TaskKind::RECV, Axis::DATA, 1, 100, Stream::PIPELINE_BACKWARD));
  core::Workload w = make_workload({2, 1, 1, 2, 1}, {p}, {0, 0, 0, 0});
  w.groups.push_back({"tensor", Axis::TENSOR, {}, {}});
  w.groups.push_back({"data", Axis::DATA, {}, {}});
  w.validate();
  return w;
}

TEST(GpuEmulation, StreamsCommunicatorsAndBuffersOfARank) {
  const core::Workload w = overlapping();
  const EmulationPlan plan = plan_emulation(w, 1, make_cluster(1, 4), unit_profile().device, {}, "s.json");
  // Predicted starts: compute 0, all_gather 10 ms, reduce_scatter 0, memory 0, send 0, recv 0.
  const GpuEmulationPlan g = plan_gpu_emulation(plan, {0, 0.010, 0, 0, 0, 0});
  EXPECT_EQ(g.streams, (std::vector<Stream>{Stream::COMPUTE, Stream::TENSOR_COMM, Stream::DATA_COMM,
                                            Stream::PIPELINE_FORWARD, Stream::PIPELINE_BACKWARD}));
  // Communicators: tensor {0, 1} (rank 1 is NCCL rank 1), data {1, 3}, then the channels in
  // (sender, receiver, tag) order: 1 -> 3 before 3 -> 1.
  ASSERT_EQ(g.comms.size(), 4u);
  EXPECT_EQ(g.comms[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.comms[0].index, 1);
  EXPECT_EQ(g.comms[1].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(g.comms[1].index, 0);
  EXPECT_EQ(g.comms[2].ranks, (std::vector<int>{1, 3}));  // the send's channel: rank 1 sends
  EXPECT_EQ(g.comms[2].index, 0);
  EXPECT_EQ(g.comms[2].group, -1);
  EXPECT_EQ(g.comms[3].ranks, (std::vector<int>{3, 1}));  // the receive's: rank 3 sends
  EXPECT_EQ(g.comms[3].index, 1);
  // Buffers per stream: the all_gather receives 4000 B, the reduce_scatter sends 8000 B.
  EXPECT_EQ(g.recv_bytes[1], 4000u);
  EXPECT_EQ(g.send_bytes[1], 2000u);
  EXPECT_EQ(g.send_bytes[2], 8000u);
  EXPECT_EQ(g.recv_bytes[2], 4000u);
  EXPECT_EQ(g.send_bytes[3], 100u);
  EXPECT_TRUE(g.predicted_order);
  ASSERT_EQ(g.ops.size(), 6u);
  // Issue order: by predicted start, then by communicator key (lowest rank, group kind or -1 for a
  // channel, highest rank, tag; none first), then program order: the compute and the memory task,
  // the send (1, -1, 3, 0), the reduce_scatter (1, 1, 3, 0), the receive (3, -1, 1, 0), and the
  // all_gather at 10 ms.
  std::vector<uint32_t> order;
  for (const GpuOp& op : g.ops) order.push_back(op.task);
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 3, 4, 2, 5, 1}));
  EXPECT_EQ(g.ops.back().kind, GpuOpKind::COLLECTIVE);
  EXPECT_EQ(g.ops.back().waits, (std::vector<uint32_t>{0}));  // the compute, on another stream
  EXPECT_EQ(g.ops.back().size.count, 500u);                   // 4000 B over 2 ranks, float32
  EXPECT_EQ(g.ops[0].kind, GpuOpKind::SPIN);  // the compute
  EXPECT_EQ(g.ops[1].kind, GpuOpKind::NONE);  // the memory task
  EXPECT_EQ(g.ops[2].kind, GpuOpKind::SEND);
  EXPECT_EQ(g.ops[2].peer, 1);
  EXPECT_EQ(g.ops[4].kind, GpuOpKind::RECV);
  EXPECT_EQ(g.ops[4].peer, 0);
}

TEST(GpuEmulation, APredictedOrderThatBreaksADependencyFallsBackToProgramOrder) {
  const core::Workload w = overlapping();
  const EmulationPlan plan = plan_emulation(w, 0, make_cluster(1, 4), unit_profile().device, {}, "s.json");
  // The all_gather predicted before the compute it depends on: not a valid issue order.
  const GpuEmulationPlan g = plan_gpu_emulation(plan, {0.010, 0, 0, 0, 0, 0});
  EXPECT_FALSE(g.predicted_order);
  for (size_t k = 0; k < g.ops.size(); ++k) EXPECT_EQ(g.ops[k].task, k);
}

TEST(GpuEmulation, CallsOfTwoCommunicatorsAtOneInstantAreIssuedInTheSameOrderEverywhere) {
  // Ranks 0 and 2 share the data group and differ in their tensor group; both start their tensor and
  // data calls at 0: every member must issue the calls of two communicators in one order, by the
  // communicators' lowest rank (tensor {0, 1} before data {0, 2} on rank 0; data {0, 2} before
  // tensor {2, 3} on rank 2).
  core::Program p;
  p.add(collective(CollectiveOp::ALL_REDUCE, 1, 400, Stream::DATA_COMM));
  p.add(collective(CollectiveOp::ALL_REDUCE, 0, 400, Stream::TENSOR_COMM));
  core::Workload w = make_workload({2, 1, 1, 2, 1}, {p}, {0, 0, 0, 0});
  w.groups.push_back({"tensor", Axis::TENSOR, {}, {}});
  w.groups.push_back({"data", Axis::DATA, {}, {}});
  const network::ClusterConfig cluster = make_cluster(1, 4);
  const GpuEmulationPlan g0 = plan_gpu_emulation(plan_emulation(w, 0, cluster, unit_profile().device, {}, "s"), {0, 0});
  const GpuEmulationPlan g2 = plan_gpu_emulation(plan_emulation(w, 2, cluster, unit_profile().device, {}, "s"), {0, 0});
  EXPECT_EQ(g0.ops[0].task, 1u);  // tensor {0, 1}: lowest rank 0, group kind 0
  EXPECT_EQ(g0.ops[1].task, 0u);  // data {0, 2}: lowest rank 0, group kind 1
  EXPECT_EQ(g2.ops[0].task, 0u);  // data {0, 2}
  EXPECT_EQ(g2.ops[1].task, 1u);  // tensor {2, 3}
}

}  // namespace
}  // namespace trainsim::engine
