// Mixed GPU types inside one job (core::Program::node_pool, network::ClusterConfig::pools): each
// program's compute is priced with its pool's GPU, on both backends, against iteration times
// computed by hand. SimGrid builds one platform per process: every TEST runs in its own process.
//
// Two pools of one node of one GPU each: pool 0 a GPU of twice the A100's bf16 peak ("fast"), pool 1
// an A100. With the unit profile (every efficiency 1, no overhead) a task of one A100-second of
// FLOPs (fixtures' compute(1.0)) takes 0.5 s on pool 0 and 1 s on pool 1. One NIC of 25 GB/s per node,
// no latency; or, where a pool gives its own network, its nodes' NICs (the slower side binds).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/engine/backend.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::Stream;
using core::TaskKind;
using testing::compute;

constexpr double NIC = 25e9;

network::ClusterConfig two_pools() {
  network::ClusterConfig c = testing::make_cluster(2, 1, 300e9, NIC, 0);
  core::GpuSpec fast = testing::gpu();
  fast.name = "fast";
  for (core::FlopsPerSecond& peak : fast.dense_peak) peak = peak * 2;
  network::NodePool p0;
  p0.name = "fast";
  p0.gpu = fast.name;
  p0.gpu_spec = fast;
  p0.first_rank = 0;
  p0.device = testing::unit_profile().device;
  network::NodePool p1 = p0;
  p1.name = "a100";
  p1.gpu = testing::gpu().name;
  p1.gpu_spec = testing::gpu();
  p1.first_rank = 1;
  c.gpu_spec = fast;
  c.pools = {p0, p1};
  return c;
}

SimulationOptions options() {
  SimulationOptions o;
  o.use_symmetry = false;
  o.algorithm = network::Algorithm::RING;
  o.node_symmetry = NodeSymmetry::OFF;
  return o;
}

// Data parallelism, 2 replicas, the batch split 3:2: the fast replica runs 3 micro-batches of 1
// A100-second each, the A100 replica 2; then both all-reduce 1 GB of gradients.
core::Workload data_parallel_split() {
  core::Workload w;
  w.layout = core::ParallelLayout({1, 1, 1, 2, 1});
  w.groups = {{"data", Axis::DATA, {}, {}}};
  for (int pool = 0; pool < 2; ++pool) {
    core::Program p;
    p.name = pool == 0 ? "fast replica" : "a100 replica";
    p.node_pool = static_cast<uint8_t>(pool);
    const int micro_batches = pool == 0 ? 3 : 2;
    for (int mb = 0; mb < micro_batches; ++mb) p.add(compute(1.0));
    const uint32_t last = static_cast<uint32_t>(p.tasks.size() - 1);
    p.add(testing::collective(core::CollectiveOp::ALL_REDUCE, 0, 1e9, Stream::DATA_COMM), {last});
    w.programs.push_back(std::move(p));
  }
  w.program_of_rank = {0, 1};
  w.validate();
  return w;
}

// Two pipeline stages, forward only, 3 micro-batches; the layers split 3:2: stage 0 (fast pool) runs
// 3 layer tasks of 1 A100-second per micro-batch, stage 1 (A100 pool) 2. Activations of 25 MB
// (1 ms on the NIC) go from stage 0 to stage 1 after each micro-batch.
core::Workload pipeline_split() {
  core::Workload w;
  w.layout = core::ParallelLayout({1, 1, 1, 1, 2});
  constexpr double ACTIVATIONS = 25e6;
  for (int stage = 0; stage < 2; ++stage) {
    core::Program p;
    p.name = fmt::format("stage {}", stage);
    p.node_pool = static_cast<uint8_t>(stage);
    const int layers = stage == 0 ? 3 : 2;
    for (int mb = 0; mb < 3; ++mb) {
      std::vector<uint32_t> input;
      if (stage == 1) {
        input.push_back(p.add(testing::p2p(TaskKind::RECV, Axis::PIPELINE, -1, ACTIVATIONS, Stream::PIPELINE_FORWARD)));
      }
      uint32_t last = 0;
      for (int l = 0; l < layers; ++l) last = l == 0 ? p.add(compute(1.0), input) : p.add(compute(1.0));
      if (stage == 0) p.add(testing::p2p(TaskKind::SEND, Axis::PIPELINE, 1, ACTIVATIONS, Stream::PIPELINE_FORWARD), {last});
    }
    w.programs.push_back(std::move(p));
  }
  w.program_of_rank = {0, 1};
  w.validate();
  return w;
}

class PoolOracle : public ::testing::TestWithParam<std::string> {
 protected:
  SimulationResult run(const core::Workload& w, const network::ClusterConfig& c) {
    auto backend = GetParam() == "simgrid" ? make_simgrid_backend() : make_analytic_backend();
    return backend->run(w, c, testing::unit_profile(), options());
  }
};

TEST_P(PoolOracle, DataParallelReplicasOnTwoGpuTypes) {
  // Fast replica: 3 x 0.5 = 1.5 s of compute; A100 replica: 2 x 1 = 2 s. The all-reduce starts when
  // the A100 replica arrives (2 s) and takes 2(n-1)/n x 1 GB / 25 GB/s = 0.04 s on a 2-rank ring.
  const SimulationResult r = run(data_parallel_split(), two_pools());
  EXPECT_NEAR(r.iteration_time.value(), 2.04, 1e-6);
  // The fast replica computes 1.5 s and waits 0.5 s for the slow one (bubble, not communication).
  EXPECT_NEAR(r.breakdown.compute.value(), r.critical_rank == 0 ? 1.5 : 2.0, 1e-9);
}

TEST_P(PoolOracle, PipelineStagesOnTwoGpuTypes) {
  // Stage 0 forwards a micro-batch in 3 x 0.5 = 1.5 s, stage 1 in 2 x 1 = 2 s (the slower one binds):
  // micro-batch 0 reaches stage 1 at 1.5 + 0.001 s, and stage 1 then runs 3 micro-batches back to
  // back (each next one has arrived by 3.001 and 4.501 s): 1.501 + 3 x 2 = 7.501 s.
  const SimulationResult r = run(pipeline_split(), two_pools());
  EXPECT_NEAR(r.iteration_time.value(), 7.501, 1e-6);
  EXPECT_EQ(r.critical_rank, 1);
  EXPECT_NEAR(r.breakdown.compute.value(), 6.0, 1e-9);
}

TEST_P(PoolOracle, WithoutPoolsEveryProgramRunsOnTheClusterGpu) {
  // The same pipeline on A100s alone: stage 0 takes 3 s per micro-batch, stage 1 2 s: the first
  // stage binds, 3 x 3 + 0.001 + 2 = 11.001 s.
  network::ClusterConfig c = testing::make_cluster(2, 1, 300e9, NIC, 0);
  const SimulationResult r = run(pipeline_split(), c);
  EXPECT_NEAR(r.iteration_time.value(), 11.001, 1e-6);
}

// Pool 1 (the A100 node) with its own network: 2 NICs of 2.5 GB/s, 5 GB/s for its one GPU, against
// the cluster's (the fabric's) one NIC of 25 GB/s per node. Every transfer between the pools crosses
// the A100 node's NICs: it runs at 5 GB/s.
network::ClusterConfig two_pools_slow_nics() {
  network::ClusterConfig c = two_pools();
  c.pools[1].own_network = true;
  c.pools[1].nics_per_node = 2;
  c.pools[1].nic_bandwidth = core::BytesPerSecond(2.5e9);
  return c;
}

TEST_P(PoolOracle, DataParallelAllReduceCrossesTheSlowPoolsNics) {
  // As DataParallelReplicasOnTwoGpuTypes, the all-reduce at 5 GB/s: 2(n-1)/n x 1 GB / 5 GB/s = 0.2 s
  // after the A100 replica's 2 s of compute.
  const SimulationResult r = run(data_parallel_split(), two_pools_slow_nics());
  EXPECT_NEAR(r.iteration_time.value(), 2.2, 1e-6);
}

TEST_P(PoolOracle, PipelineTransfersRunAtTheSlowerSide) {
  // As PipelineStagesOnTwoGpuTypes, each 25 MB activation at 5 GB/s: 5 ms. 1.5 + 0.005 + 3 x 2 s.
  const SimulationResult r = run(pipeline_split(), two_pools_slow_nics());
  EXPECT_NEAR(r.iteration_time.value(), 7.505, 1e-6);
  EXPECT_EQ(r.critical_rank, 1);
}

TEST_P(PoolOracle, PoolsFasterThanTheClusterNetworkUseTheirOwnNics) {
  // A cluster network of one 5 GB/s NIC per node, both pools' nodes with 2 NICs of 10 GB/s (20 GB/s
  // per GPU, below the GPU's PCIe link, which the SimGrid platform also crosses): the pools' NICs
  // decide (the fabric is built for the fastest), 1 GB / 20 GB/s = 0.05 s after the 2 s of compute.
  network::ClusterConfig c = two_pools();
  c.network.nic_bandwidth = core::BytesPerSecond(5e9);
  for (network::NodePool& p : c.pools) {
    p.own_network = true;
    p.nics_per_node = 2;
    p.nic_bandwidth = core::BytesPerSecond(10e9);
  }
  const SimulationResult r = run(data_parallel_split(), c);
  EXPECT_NEAR(r.iteration_time.value(), 2.05, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Backends, PoolOracle, ::testing::Values("analytic", "simgrid"));

}  // namespace
}  // namespace trainsim::engine
