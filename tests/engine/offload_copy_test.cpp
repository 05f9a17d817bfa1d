// Offload copies on the node's host links (sim/engine/host_model.hpp, network/topology.hpp): alone,
// a copy takes bytes / (min(GPU link, node link) x link efficiency) on both backends; eight GPUs
// copying at once through a node link narrower than their sum share it max-min fairly in SimGrid,
// and take bytes x 8 / (node link x efficiency), while the analytic backend keeps the uncontended
// time. SimGrid builds one platform per process: every TEST runs in its own process.

#include <gtest/gtest.h>

#include "sim/engine/backend.hpp"
#include "sim/engine/host_model.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::CopyDirection;

constexpr double BYTES = 4e9;

// One program, run by every rank of the data axis: a single device-to-host copy.
core::Workload copies(int ranks, CopyDirection d = CopyDirection::DEVICE_TO_HOST) {
  core::Program p;
  p.name = "copy";
  core::Task t;
  t.kind = core::TaskKind::COPY;
  t.stream = core::outbound(d) ? core::Stream::COPY_OUT : core::Stream::COPY;
  t.copy = d;
  t.bytes = BYTES;
  p.add(t);
  return testing::make_workload({1, 1, 1, ranks, 1}, {p}, std::vector<uint32_t>(static_cast<size_t>(ranks), 0));
}

// A node of `gpus` GPUs behind a host link of `link_gpus` GPUs' PCIe bandwidth.
network::ClusterConfig node(int gpus, double link_gpus) {
  network::ClusterConfig c = testing::make_cluster(1, gpus);
  c.host.link_bandwidth = c.gpu_spec.pcie_bandwidth * link_gpus;
  return c;
}

double alone(const network::ClusterConfig& c) {
  return BYTES / (c.gpu_spec.pcie_bandwidth.value() * c.host.link_efficiency);  // the GPU's own link is the bottleneck
}

SimulationOptions symmetric(bool on) {
  SimulationOptions o;
  o.use_symmetry = on;
  return o;
}

TEST(OffloadCopies, EightGpusThroughASharedHostLinkAreSlowerThanOne) {
  // A DGX-like node: 8 GPUs, the host link as wide as 2 GPUs' PCIe (two GPUs per x16 uplink, four
  // uplinks... folded into one link of 2 x PCIe here so the sharing is plain).
  const network::ClusterConfig c = node(8, 2);
  const double shared = 8 * BYTES / (2 * c.gpu_spec.pcie_bandwidth.value() * c.host.link_efficiency);
  for (bool symmetry : {true, false}) {
    SCOPED_TRACE(symmetry ? "symmetry" : "every rank");
    const SimulationResult eight = make_simgrid_backend()->run(copies(8), c, testing::unit_profile(), symmetric(symmetry));
    EXPECT_NEAR(eight.iteration_time.value(), shared, 1e-9 * shared);
    EXPECT_GT(eight.iteration_time.value(), 3.9 * alone(c));
    // The analytic backend gives the uncontended time.
    const SimulationResult analytic =
        make_analytic_backend()->run(copies(8), c, testing::unit_profile(), symmetric(symmetry));
    EXPECT_NEAR(analytic.iteration_time.value(), alone(c), 1e-12 * alone(c));
  }
}

TEST(OffloadCopies, OneGpuAloneTakesTheClosedForm) {
  const network::ClusterConfig c = node(8, 2);
  core::Workload w = copies(8);
  // Only rank 0 copies: the others run an empty program.
  w.programs.push_back(core::Program{});
  w.programs.back().name = "idle";
  for (size_t r = 1; r < 8; ++r) w.program_of_rank[r] = 1;
  w.symmetric_axes = {};
  const SimulationResult one = make_simgrid_backend()->run(w, c, testing::unit_profile(), symmetric(true));
  EXPECT_NEAR(one.iteration_time.value(), alone(c), 1e-9 * alone(c));
  EXPECT_NEAR(copy_time(core::Bytes(BYTES), CopyDirection::DEVICE_TO_HOST, c).value(), alone(c), 1e-12 * alone(c));
}

TEST(OffloadCopies, EightGpusWithAnUnsharedHostLinkTakeTheClosedForm) {
  const network::ClusterConfig c = node(8, 8);
  for (CopyDirection d : {CopyDirection::DEVICE_TO_HOST, CopyDirection::HOST_TO_DEVICE}) {
    const SimulationResult sim = make_simgrid_backend()->run(copies(8, d), c, testing::unit_profile(), symmetric(true));
    const SimulationResult exact = make_analytic_backend()->run(copies(8, d), c, testing::unit_profile(), symmetric(true));
    EXPECT_NEAR(sim.iteration_time.value(), alone(c), 1e-9 * alone(c));
    EXPECT_NEAR(exact.iteration_time.value(), alone(c), 1e-12 * alone(c));
    EXPECT_NEAR(sim.copy_time.value(), alone(c), 1e-9 * alone(c));
  }
}

TEST(OffloadCopies, NvmeCopiesCrossTheDrivesAndTheirBandwidthBinds) {
  network::ClusterConfig c = node(8, 8);
  c.nvme = network::NvmeSpec{core::BytesPerSecond(8e9), core::BytesPerSecond(4e9), std::nullopt};
  // Eight GPUs writing to NVMe share the drives' 4 GB/s; reading, their 8 GB/s.
  const double eff = c.host.link_efficiency;
  const SimulationResult write =
      make_simgrid_backend()->run(copies(8, CopyDirection::DEVICE_TO_NVME), c, testing::unit_profile(), symmetric(true));
  EXPECT_NEAR(write.iteration_time.value(), 8 * BYTES / (4e9 * eff), 1e-9 * 8 * BYTES / (4e9 * eff));
  const SimulationResult read =
      make_simgrid_backend()->run(copies(8, CopyDirection::NVME_TO_DEVICE), c, testing::unit_profile(), symmetric(true));
  EXPECT_NEAR(read.iteration_time.value(), 8 * BYTES / (8e9 * eff), 1e-9 * 8 * BYTES / (8e9 * eff));
  // Alone, the closed form: the drives' bandwidth is the bottleneck.
  EXPECT_NEAR(copy_time(core::Bytes(BYTES), CopyDirection::DEVICE_TO_NVME, c).value(), BYTES / (4e9 * eff), 1e-6);
  EXPECT_NEAR(copy_time(core::Bytes(BYTES), CopyDirection::NVME_TO_HOST, c).value(), BYTES / (8e9 * eff), 1e-6);
}

TEST(OffloadCopies, HostComputeTakesTheGpusShareOfTheNode) {
  network::ClusterConfig c = node(8, 8);
  c.host.memory_bandwidth = core::BytesPerSecond(400e9);
  c.host.memory_efficiency = 0.5;
  core::Task step;
  step.kind = core::TaskKind::COMPUTE;
  step.stream = core::Stream::HOST;
  step.op_class = core::OpClass::OPTIMIZER;
  step.bytes = 34e9;  // 1e9 parameters of Adam
  step.flops = 14e9;
  // Memory-bound: 34 GB over 400 GB/s x 0.5 / 8 GPUs = 1.36 s.
  EXPECT_NEAR(host_compute_time(step, c).value(), 1.36, 1e-12);
  // With 8 cores of 1 GFLOP/s, compute-bound: 14 GFLOP over 1 GFLOP/s = 14 s.
  c.host.cores = 8;
  c.host.core_flops = core::FlopsPerSecond(1e9);
  EXPECT_NEAR(host_compute_time(step, c).value(), 14.0, 1e-12);
}

}  // namespace
}  // namespace trainsim::engine
