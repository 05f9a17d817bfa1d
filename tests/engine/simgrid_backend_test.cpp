// The SimGrid backend held to the analytic backend where no link is shared (the closed forms are
// exact there), to hand-computed slowdowns where links are shared, and to the execution semantics'
// error cases. SimGrid builds one platform per process: every TEST runs in its own process
// (gtest_discover_tests) and uses clusters of one structure.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "network/collective_cost.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/collective_simulation.hpp"
#include "sim/engine/simgrid_backend.hpp"
#include "tests/engine/fixtures.hpp"

namespace trainsim::engine {
namespace {

using core::Axis;
using core::CollectiveOp;
using core::Stream;
using core::TaskKind;
using testing::compute;

SimulationOptions ring_options(Fidelity fidelity) {
  SimulationOptions o;
  o.use_symmetry = false;
  // Flow counts below are the symmetry's: replays (ReplayedCallsAloneChangeNothing) would lower
  // them by how many calls ran alone, which differs between a full and a mirrored run.
  o.replay_calls_alone = false;
  o.algorithm = network::Algorithm::RING;
  o.fidelity = fidelity;
  // Flow counts below are those of the mirror images; full_and_mirrored also runs them folded.
  o.node_symmetry = NodeSymmetry::OFF;
  return o;
}

// Every field the report takes from a result, SimGrid against analytic, within `tolerance` of the
// iteration time (memory and events exactly).
void expect_same_result(const SimulationResult& sim, const SimulationResult& exact, double tolerance) {
  const double t = exact.iteration_time.value();
  EXPECT_NEAR(sim.iteration_time.value(), t, tolerance * t);
  EXPECT_NEAR(sim.breakdown.compute.value(), exact.breakdown.compute.value(), tolerance * t);
  EXPECT_NEAR(sim.breakdown.pipeline_bubble.value(), exact.breakdown.pipeline_bubble.value(), tolerance * t);
  EXPECT_NEAR(sim.breakdown.exposed_comm_total().value(), exact.breakdown.exposed_comm_total().value(), tolerance * t);
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    EXPECT_NEAR(sim.comm_time[a].value(), exact.comm_time[a].value(), tolerance * t) << "axis " << a;
  }
  EXPECT_EQ(sim.peak_memory_by_program, exact.peak_memory_by_program);
  EXPECT_EQ(sim.peak_dynamic_by_program, exact.peak_dynamic_by_program);
  EXPECT_EQ(sim.events, exact.events);
  EXPECT_EQ(sim.simulated_ranks, exact.simulated_ranks);
}

SimulationResult run_both(const core::Workload& w, const network::ClusterConfig& cluster, const core::Profile& profile,
                          const SimulationOptions& options, double tolerance) {
  const SimulationResult exact = make_analytic_backend()->run(w, cluster, profile, options);
  const SimulationResult sim = make_simgrid_backend()->run(w, cluster, profile, options);
  expect_same_result(sim, exact, tolerance);
  return sim;
}

// Compute only, across streams, with memory: no network at all, so the results are identical.
TEST(SimgridBackend, ComputeOnlyEqualsAnalytic) {
  core::Program prog;
  prog.name = "compute";
  prog.static_memory = core::Bytes(1e9);
  const uint32_t a = prog.add(testing::memory(4e6));
  const uint32_t f = prog.add(compute(2e-3), {a});
  core::Task copy;
  copy.kind = TaskKind::COPY;
  copy.stream = Stream::COPY;
  copy.bytes = 1e8;
  const uint32_t c = prog.add(copy, {f});
  const uint32_t b = prog.add(compute(3e-3, core::Phase::BACKWARD));
  prog.add(testing::memory(-4e6), {b, c});
  const core::Workload w = testing::make_workload({1, 1, 1, 2, 1}, {prog}, {0, 0});
  SimulationOptions options;
  options.timeline_ranks = {1};
  // The two GPUs' copies must not share the node's host link (the default has two GPUs behind one
  // PCIe uplink): give the node room for both.
  network::ClusterConfig cluster = testing::make_cluster(1, 2);
  cluster.host.link_bandwidth = cluster.gpu_spec.pcie_bandwidth * 2;
  const SimulationResult exact = make_analytic_backend()->run(w, cluster, testing::unit_profile(), options);
  const SimulationResult sim = make_simgrid_backend()->run(w, cluster, testing::unit_profile(), options);
  expect_same_result(sim, exact, 1e-12);
  EXPECT_EQ(sim.simulated_ranks, 2);
  ASSERT_EQ(sim.timeline.size(), exact.timeline.size());
  for (size_t i = 0; i < sim.timeline.size(); ++i) {
    EXPECT_DOUBLE_EQ(sim.timeline[i].start_s, exact.timeline[i].start_s);
    EXPECT_DOUBLE_EQ(sim.timeline[i].end_s, exact.timeline[i].end_s);
  }
}

// Tensor-parallel all-reduces inside one 8-GPU NVSwitch node (hybrid_workload, TP8): every GPU has
// its own NVLink port, so each ring is exact, at both SimGrid fidelities and the analytic one.
TEST(SimgridBackend, TensorAllReduceInOneNodeMatchesAnalytic) {
  const core::Workload w = testing::hybrid_workload(8, 1, 1, 4);
  const network::ClusterConfig cluster = testing::make_cluster(1, 8, 300e9, 25e9, 1e-6);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW, Fidelity::ANALYTIC}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const SimulationResult r = run_both(w, cluster, core::Profile{}, ring_options(f), 0.01);
    EXPECT_GT(r.comm_time[static_cast<size_t>(Axis::TENSOR)].value(), 0.0);
  }
}

// Hybrid sharding on 2 nodes of 2 GPUs (shard group: a node; replicas: one GPU of each node, on its
// own NIC): SimGrid sees the same links the closed form prices (semantics_test.cpp has the figures).
TEST(SimgridBackend, HybridShardingMatchesAnalytic) {
  const core::Workload w = testing::hybrid_sharded_workload(4, 2, 3, 8e6);
  const network::ClusterConfig cluster = testing::make_cluster(2, 2, 100e9, 25e9, 1e-6);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const SimulationResult r = run_both(w, cluster, testing::unit_profile(), ring_options(f), 0.01);
    EXPECT_NEAR(r.iteration_time.value(), 3 * 244e-6, 0.01 * 3 * 244e-6);
  }
}

// 1F1B over 4 pipeline stages on 4 nodes of one GPU and one NIC each: every send has its own NIC
// links on a non-blocking switch.
TEST(SimgridBackend, OneFOneBPipelineAcrossNodesMatchesAnalytic) {
  const network::ClusterConfig cluster = testing::make_cluster(4, 1, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::pipeline_workload(4, 8, 1e-3, 2e-3, testing::Schedule::ONE_F_ONE_B, 16e6);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const SimulationResult r = run_both(w, cluster, core::Profile{}, ring_options(f), 0.01);
    EXPECT_GT(r.comm_time[static_cast<size_t>(Axis::PIPELINE)].value(), 0.0);
  }
}

// Tensor-parallel ring all-reduces on each node's NVSwitch and pipeline sends between the nodes'
// NICs (hybrid_workload TP2 PP4 on 4 nodes of 2 GPUs): the two kinds of traffic share no link.
TEST(SimgridBackend, PipelineWithTensorRingsAcrossNodesMatchesAnalytic) {
  const network::ClusterConfig cluster = testing::make_cluster(4, 2, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::hybrid_workload(2, 1, 4, 6);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const SimulationResult r = run_both(w, cluster, core::Profile{}, ring_options(f), 0.01);
    EXPECT_GT(r.comm_time[static_cast<size_t>(Axis::TENSOR)].value(), 0.0);
    EXPECT_GT(r.comm_time[static_cast<size_t>(Axis::PIPELINE)].value(), 0.0);
  }
}

// With data parallelism too (TP2 DP2 PP4 on 8 nodes of 2 GPUs), the last gradient sends of each
// stage leave through the NIC that its data-parallel ring is using: the analytic backend cannot see
// that, the SimGrid backend must be slower, by little (a few sends of 8 MB against 50-200 MB rings).
TEST(SimgridBackend, PipelineSendsSlowDataParallelRingsSharingTheirNic) {
  const network::ClusterConfig cluster = testing::make_cluster(8, 2, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::hybrid_workload(2, 2, 4, 4);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const SimulationResult exact = make_analytic_backend()->run(w, cluster, core::Profile{}, ring_options(f));
    const SimulationResult sim = make_simgrid_backend()->run(w, cluster, core::Profile{}, ring_options(f));
    EXPECT_GT(sim.iteration_time.value(), exact.iteration_time.value() * (1 + 1e-3));
    EXPECT_LT(sim.iteration_time.value(), exact.iteration_time.value() * 1.05);
    EXPECT_EQ(sim.peak_memory_by_program, exact.peak_memory_by_program);
  }
}

// SimulationOptions::closed_form_groups, the over-budget approximation: the same job as above, whose
// pipeline sends slow the data-parallel rings sharing their NIC. With the data group's calls priced
// in closed form they neither feel nor cause that contention: the sends run alone, as in
// OneFOneBPipelineAcrossNodesMatchesAnalytic, and every figure is the analytic backend's. The flows
// simulated are the estimate's exactly (every rank simulated, no replays): the full run's less the
// data group's, and closed_form_calls counts the data-parallel calls.
TEST(SimgridBackend, ClosedFormGroupsAreThoseOfTheAnalyticBackend) {
  const network::ClusterConfig cluster = testing::make_cluster(8, 2, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::hybrid_workload(2, 2, 4, 4);
  size_t data = w.groups.size();
  for (size_t g = 0; g < w.groups.size(); ++g) {
    if (w.groups[g].axis == Axis::DATA) data = g;
  }
  ASSERT_LT(data, w.groups.size());
  SimulationOptions o = ring_options(Fidelity::FLOW);
  const FlowEstimate all = estimate_flows(w, cluster, core::Profile{}, o);
  const SimulationResult full = make_simgrid_backend()->run(w, cluster, core::Profile{}, o);
  EXPECT_EQ(full.closed_form_calls, 0u);
  EXPECT_EQ(all.total, static_cast<double>(full.network_flows));

  o.closed_form_groups.assign(w.groups.size(), false);
  o.closed_form_groups[data] = true;
  const FlowEstimate rest = estimate_flows(w, cluster, core::Profile{}, o);
  EXPECT_GT(all.by_group[data], 0);
  EXPECT_DOUBLE_EQ(rest.total, all.total - all.by_group[data]);
  EXPECT_EQ(rest.by_group, all.by_group) << "by_group counts every class, chosen or not";
  const SimulationResult approximated = run_both(w, cluster, core::Profile{}, o, 1e-6);
  EXPECT_EQ(static_cast<double>(approximated.network_flows), rest.total);
  // One gradient all-reduce per data-parallel group (a call, whatever its members): TP2 x PP4 groups.
  EXPECT_EQ(approximated.closed_form_calls, 8u);
  EXPECT_LT(approximated.iteration_time.value(), full.iteration_time.value());

  // Every collective class in closed form: only the sends are flows.
  o.closed_form_groups.assign(w.groups.size(), true);
  const FlowEstimate sends = estimate_flows(w, cluster, core::Profile{}, o);
  EXPECT_EQ(sends.total, sends.point_to_point);
  EXPECT_EQ(static_cast<double>(run_both(w, cluster, core::Profile{}, o, 1e-6).network_flows), sends.total);
}

// Two 2-rank data-parallel all-reduces at once on 8 nodes of one GPU and one 200 Gb/s NIC (B = 25
// GB/s), on a fat-tree of radix 4 with 2:1 oversubscription: every switch-to-switch link has B/2.
// Static routing takes 0 -> 4 and 1 -> 6 through leaf 0's up port 0, while 1 -> 5 takes port 1
// (tests/engine/collective_simulation_test.cpp). A 2-rank ring all-reduce of S bytes is one flow of
// S each way at rate e*B/2 (e the inter-node efficiency), S/(e*B/2) without latency, which is the
// closed form (B_inter = B/oversubscription*e). Rings {0, 4} and {1, 5} do not meet: both take the
// closed-form time. Rings {0, 4} and {1, 6} share an uplink: each gets half of it and both take
// twice as long, which the analytic backend cannot see.
TEST(SimgridBackend, TwoAllReducesSharingAnOversubscribedUplinkTakeTwiceTheAnalyticTime) {
  network::ClusterConfig cluster = testing::make_cluster(8, 1, 300e9, 25e9, 0);
  cluster.network.radix = 4;
  cluster.network.oversubscription = 2.0;
  core::Profile profile;
  profile.network.inter_node.step_latency = core::Seconds(0);
  const double size = 1 << 30;
  auto pairs = [&](std::vector<int> second) {
    core::Program ring;
    ring.name = "ring";
    ring.add(testing::collective(CollectiveOp::ALL_REDUCE, 0, size, Stream::DATA_COMM));
    core::Program other = ring;
    other.tasks[0].group = 1;
    core::Program idle;
    idle.name = "idle";
    core::Workload w = testing::make_workload({1, 1, 1, 8, 1}, {ring, other, idle}, {0, 2, 2, 2, 0, 2, 2, 2});
    w.program_of_rank[static_cast<size_t>(second[0])] = 1;
    w.program_of_rank[static_cast<size_t>(second[1])] = 1;
    w.groups = {{"first", Axis::DATA, {0, 4}, {}}, {"second", Axis::DATA, second, {}}};
    w.validate();
    return w;
  };
  const double rate = profile.network.inter_node.bandwidth_efficiency * 25e9 / 2;
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const core::Workload apart = pairs({1, 5});
    const core::Workload sharing = pairs({1, 6});
    const double exact = make_analytic_backend()->run(sharing, cluster, profile, ring_options(f)).iteration_time.value();
    EXPECT_NEAR(exact, size / rate, 1e-9);
    EXPECT_NEAR(make_simgrid_backend()->run(apart, cluster, profile, ring_options(f)).iteration_time.value(),
                size / rate, 1e-6 * exact);
    const SimulationResult shared = make_simgrid_backend()->run(sharing, cluster, profile, ring_options(f));
    EXPECT_NEAR(shared.iteration_time.value(), 2 * size / rate, 1e-6 * exact);
    EXPECT_NEAR(shared.comm_time[static_cast<size_t>(Axis::DATA)].value(), 2 * size / rate, 1e-6 * exact);
    // The shared uplink carries both rings' S and is busy the whole iteration: it leads the link
    // statistics at 100% utilization.
    ASSERT_FALSE(shared.top_links.empty());
    EXPECT_EQ(shared.top_links[0].link, "l1s0.l2s0.up");
    EXPECT_NEAR(shared.top_links[0].bytes, 2 * size, 1e-6 * size);
    EXPECT_NEAR(shared.top_links[0].utilization, 1.0, 1e-6);
    EXPECT_TRUE(make_analytic_backend()->run(sharing, cluster, profile, ring_options(f)).top_links.empty());
    // Rank 4 on the timeline: its ring's flows (S each way between GPUs 0 and 4) are recorded over
    // the whole iteration; the other ring's are not.
    SimulationOptions traced = ring_options(f);
    traced.timeline_ranks = {4};
    const SimulationResult with_flows = make_simgrid_backend()->run(sharing, cluster, profile, traced);
    ASSERT_FALSE(with_flows.flows.empty());
    double sent = 0, received = 0;
    for (const FlowEvent& e : with_flows.flows) {
      EXPECT_TRUE(e.src == 4 || e.dst == 4) << e.src << " -> " << e.dst;
      EXPECT_TRUE(e.src == 0 || e.dst == 0) << e.src << " -> " << e.dst;
      EXPECT_LE(e.end_s, with_flows.iteration_time.value() + 1e-9);
      (e.src == 4 ? sent : received) += e.bytes;
    }
    EXPECT_NEAR(sent, size, 1e-6 * size);
    EXPECT_NEAR(received, size, 1e-6 * size);
  }
}

// Nodes of g GPUs on a rail-optimized fabric (one NIC per GPU, rail k joining the k-th GPUs).
network::ClusterConfig rail_optimized_cluster(int nodes, int g) {
  network::ClusterConfig cluster = testing::make_cluster(nodes, g, 300e9, 25e9, 2e-6);
  cluster.network.topology = network::TopologyKind::RAIL_OPTIMIZED;
  return cluster;
}

// Symmetry (TP2 DP2 PP4 on 8 nodes of 2 GPUs): one representative per stage is simulated, and each
// of its calls starts its mirror images' flows too, so the contention between a stage's pipeline
// sends and the data-parallel rings that share their NICs is still there. On this symmetric,
// non-blocking platform the result is the full simulation's, with a quarter of the ranks and fewer
// flows (the tensor rings of the mirrored nodes share no link with anything simulated).
// b's times must be a's (to 1e-6 of the iteration).
void expect_same_times(const SimulationResult& a, const SimulationResult& b) {
  const double t = a.iteration_time.value();
  EXPECT_NEAR(b.iteration_time.value(), t, 1e-6 * t);
  for (size_t axis = 0; axis < core::AXIS_COUNT; ++axis) {
    EXPECT_NEAR(b.comm_time[axis].value(), a.comm_time[axis].value(), 1e-6 * t) << "axis " << axis;
  }
  EXPECT_NEAR(b.breakdown.exposed_comm_total().value(), a.breakdown.exposed_comm_total().value(), 1e-6 * t);
}

// The workload simulated in full (a) and with symmetry (b) at fidelity f; b's times must be a's.
// At flow fidelity it also runs with node folding (NodeSymmetry::EXACT), which must give the same
// times with at most b's flows (these clusters have one switch: folding is exact there).
std::pair<SimulationResult, SimulationResult> full_and_mirrored(const core::Workload& w,
                                                                const network::ClusterConfig& cluster, Fidelity f) {
  SimulationOptions full = ring_options(f);
  SimulationOptions mirrored = full;
  mirrored.use_symmetry = true;
  std::pair<SimulationResult, SimulationResult> out{make_simgrid_backend()->run(w, cluster, core::Profile{}, full),
                                                    make_simgrid_backend()->run(w, cluster, core::Profile{}, mirrored)};
  expect_same_times(out.first, out.second);
  if (f == Fidelity::FLOW) {
    SimulationOptions folded = mirrored;
    folded.node_symmetry = NodeSymmetry::EXACT;
    const SimulationResult c = make_simgrid_backend()->run(w, cluster, core::Profile{}, folded);
    SCOPED_TRACE("folded");
    expect_same_times(out.first, c);
    EXPECT_LE(c.network_flows, out.second.network_flows);
  }
  return out;
}

TEST(SimgridBackend, SymmetryGivesTheFullResultWithFewerRanksAndFlows) {
  const network::ClusterConfig cluster = testing::make_cluster(8, 2, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::hybrid_workload(2, 2, 4, 4);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const auto [a, b] = full_and_mirrored(w, cluster, f);
    SimulationOptions mirrored = ring_options(f);
    mirrored.use_symmetry = true;
    EXPECT_EQ(a.simulated_ranks, 16);
    EXPECT_EQ(b.simulated_ranks, 4);
    EXPECT_LT(b.network_flows, a.network_flows);
    EXPECT_GT(b.network_flows, a.network_flows / 4);
    // The mirrored sends still contend with the rings: slower than the analytic backend's.
    const SimulationResult exact = make_analytic_backend()->run(w, cluster, core::Profile{}, mirrored);
    EXPECT_GT(b.iteration_time.value(), exact.iteration_time.value() * (1 + 1e-3));
    ASSERT_FALSE(a.top_links.empty());
    ASSERT_FALSE(b.top_links.empty());
    EXPECT_NEAR(b.top_links[0].utilization, a.top_links[0].utilization, 1e-6);
  }
}

// Symmetry with a period (TP2 DP4 PP2 on 4 nodes of 4 GPUs): each node holds two data-parallel
// coordinates of one stage, so data coordinates 0 and 1 are simulated and the shift by 2 mirrors
// them onto the other node of their stage. Their data-parallel rings cross nodes and share the NICs
// with the mirrored tensor groups' and stages' traffic: still the full simulation's result. At flow
// fidelity the tensor groups' mirrors in the other node are left out (fewer flows), and the
// result is still the same: each ring ends with its edge in the representatives' node. Two NICs per
// node of 4 GPUs, so that the rails are not separate (with one NIC per GPU the tensor-parallel
// mirrors of inter-node calls run on rails of their own: the next test).
TEST(SimgridBackend, PeriodicSymmetryGivesTheFullResult) {
  network::ClusterConfig cluster = testing::make_cluster(4, 4, 300e9, 25e9, 2e-6);
  cluster.network.nics_per_node = 2;
  const core::Workload w = testing::hybrid_workload(2, 4, 2, 4);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const auto [a, b] = full_and_mirrored(w, cluster, f);
    EXPECT_EQ(a.simulated_ranks, 16);
    EXPECT_EQ(b.simulated_ranks, 4);
    if (f == Fidelity::FLOW) {
      EXPECT_LT(b.network_flows, a.network_flows);
    } else {
      EXPECT_EQ(b.network_flows, a.network_flows) << "every mirror kept at step fidelity";
    }
  }
}

// The bounds `run` checks before simulating (sim/cli refuses step fidelity above STEP_FLOW_BUDGET,
// flow fidelity above simulation.max_flows) are lower bounds: on a hybrid job, with and without
// symmetry, the flows simulated are at least them. At step fidelity the collectives' share (the job
// sends little else) is not far above it. At flow fidelity every rank simulated, no call has a
// mirror image, and the bound is exactly the flows: one per algorithm edge of each collective call,
// one per send.
TEST(SimgridBackend, FlowBoundsAreLowerBoundsOfTheFlowsSimulated) {
  const network::ClusterConfig cluster = testing::make_cluster(4, 4, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::hybrid_workload(2, 4, 2, 4);
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW}) {
    for (bool symmetry : {false, true}) {
      SCOPED_TRACE(std::string(to_string(f)) + (symmetry ? ", symmetry" : ", every rank"));
      SimulationOptions o = ring_options(f);
      o.use_symmetry = symmetry;
      const double bound = flows_lower_bound(w, cluster, core::Profile{}, o);
      const SimulationResult r = make_simgrid_backend()->run(w, cluster, core::Profile{}, o);
      EXPECT_GT(bound, 0);
      EXPECT_LE(bound, static_cast<double>(r.network_flows));
      if (!symmetry && f == Fidelity::STEP) {
        EXPECT_GT(bound, 0.5 * static_cast<double>(r.network_flows)) << "every call counted once";
      }
      if (!symmetry && f == Fidelity::FLOW) {
        EXPECT_EQ(bound, static_cast<double>(r.network_flows));
      }
    }
  }
}

// The same job on a rail-optimized fabric (one NIC per GPU, rail k joining the k-th GPU of every
// node): the tensor-parallel mirrors of every inter-node call run on the other rail, which shares no
// link with the representatives' rail, so they are left out. Still the full simulation's result, with
// exactly half of its flows: one rail of pipeline and data-parallel traffic instead of two, and the
// tensor rings of one node per stage instead of two.
TEST(SimgridBackend, SymmetryOnRailsSimulatesOneRail) {
  const network::ClusterConfig cluster = rail_optimized_cluster(8, 2);
  const core::Workload w = testing::hybrid_workload(2, 2, 4, 4);
  SimulationOptions full = ring_options(Fidelity::FLOW);
  SimulationOptions mirrored = full;
  mirrored.use_symmetry = true;
  const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, full);
  const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, mirrored);
  const double t = a.iteration_time.value();
  EXPECT_NEAR(b.iteration_time.value(), t, 1e-6 * t);
  for (size_t axis = 0; axis < core::AXIS_COUNT; ++axis) {
    EXPECT_NEAR(b.comm_time[axis].value(), a.comm_time[axis].value(), 1e-6 * t) << "axis " << axis;
  }
  EXPECT_EQ(b.simulated_ranks, 4);
  EXPECT_EQ(2 * b.network_flows, a.network_flows);
  const SimulationResult exact = make_analytic_backend()->run(w, cluster, core::Profile{}, mirrored);
  EXPECT_GT(b.iteration_time.value(), exact.iteration_time.value() * (1 + 1e-3));
}

// Rails with periodic symmetry (TP2 DP4 PP2 on 4 rail-optimized nodes of 4 GPUs): each node holds
// data-parallel coordinates 0 and 1 of a stage, on GPUs 0 and 2, so the simulated ranks sit on two
// rails (0 and 2). The tensor-parallel mirrors of their inter-node calls run on rails 1 and 3, which
// no simulated rank uses: they are left out, and the result is still the full simulation's.
TEST(SimgridBackend, SymmetryOnRailsWithAPeriodLeavesOutTheOtherRails) {
  const network::ClusterConfig cluster = rail_optimized_cluster(4, 4);
  const core::Workload w = testing::hybrid_workload(2, 4, 2, 4);
  const auto [a, b] = full_and_mirrored(w, cluster, Fidelity::FLOW);
  EXPECT_EQ(b.simulated_ranks, 4);
  // Exactly half of the full simulation's flows: the inter-node traffic of rails 0 and 2 of 0-3,
  // and the tensor rings of the simulated ranks' node per stage (4 of 8). Keeping the mirrors on
  // rails 1 and 3 (the rule before rails could be told apart with several simulated) gave 160 of 224.
  EXPECT_EQ(2 * b.network_flows, a.network_flows);
}

// ZeRO-3 with tensor and context parallelism (TP2 CP2 DP8 on 4 rail-optimized nodes of 8 GPUs): the
// parameters are sharded over the data x context group, GPUs 0, 2, 4 and 6 of every node for rank 0.
// Context shifts move a rank to another rail and the sharded group spans them, yet the tensor shift
// still separates the traffic: every call but the tensor all_reduces joins GPUs of one tensor
// coordinate, even GPUs or odd ones, whose rails are disjoint. So the tensor-parallel mirror of each
// sharded call (odd GPUs) is left out; the tensor all_reduces still cross the odd GPUs' NVLink ports,
// and the result is still the full simulation's.
TEST(SimgridBackend, SymmetryOnRailsLeavesOutTheTensorMirrorsOfShardedGroups) {
  const network::ClusterConfig cluster = rail_optimized_cluster(4, 8);
  const core::Workload w = testing::sharded_workload(2, 2, 8, 3);
  const auto [a, b] = full_and_mirrored(w, cluster, Fidelity::FLOW);
  EXPECT_EQ(b.simulated_ranks, 2);
  // Hand count, per image of a call: the sharded ring has 4 channels over 4 GPUs of each of 4 nodes,
  // 4 NVLink and 4 inter-node edges per node, 32 flows, for each of 6 all_gathers and 3
  // reduce_scatters; a tensor or context call joins 2 GPUs, 2 flows, and keeps its same-node image
  // (for ranks 0 and 4: the tensor pairs 0-1, 2-3, 4-5, 6-7 in 6 passes, the context pairs 0-2, 1-3,
  // 4-6, 5-7 in 3). 9 x 32 + 8 x 6 + 8 x 3 = 360; keeping the tensor mirror of the sharded calls
  // (the rule before) gave 648, the full simulation 864.
  EXPECT_EQ(b.network_flows, 360U);
  EXPECT_EQ(a.network_flows, 864U);
  // The tensor all_reduces do contend with the sharded rings on NVLink: slower than the closed form.
  SimulationOptions o = ring_options(Fidelity::FLOW);
  o.use_symmetry = true;
  const SimulationResult exact = make_analytic_backend()->run(w, cluster, core::Profile{}, o);
  const size_t tensor = static_cast<size_t>(Axis::TENSOR);
  EXPECT_GT(b.comm_time[tensor].value(), 1.2 * exact.comm_time[tensor].value());
}

// Node folding (SimulationOptions::node_symmetry) on the FSDP layout of issue 32 in small: TP1 CP4
// DP8 with ZeRO-3 on 4 rail-optimized nodes of 8 GPUs, the parameters sharded over all 32 GPUs. Each
// node holds data coordinates 2n and 2n+1, so symmetry simulates node 0's ranks and mirrors them by
// shifts of 2 along the data axis, which move whole nodes. With 4 nodes a rail is one switch: no
// switch-to-switch link, and folding is exact. Every node's links carry the same flows, so node 0's
// stand for all: the times are the full simulation's, and each sharded call runs the 16 flows of
// one node (8 NVLink edges, 8 edges leaving the node; NCCL's ring over 4 nodes of 8 GPUs with 8
// channels) instead of 64.
TEST(SimgridBackend, NodeFoldingRunsOneNodeOfAShardedRingWithTheFullTimes) {
  const network::ClusterConfig cluster = rail_optimized_cluster(4, 8);
  const core::Workload w = testing::sharded_workload(1, 4, 8, 3);
  const auto [full, mirrored] = full_and_mirrored(w, cluster, Fidelity::FLOW);
  SimulationOptions folded = ring_options(Fidelity::FLOW);
  folded.use_symmetry = true;
  folded.node_symmetry = NodeSymmetry::EXACT;
  const SimulationResult c = make_simgrid_backend()->run(w, cluster, core::Profile{}, folded);
  // 6 all_gathers and 3 reduce_scatters over the sharded group: 9 x 64 flows mirrored, 9 x 16 folded;
  // the context all_gathers (3, a ring of 4 in the node, and its image on data coordinate 1) are
  // in node 0 either way: 3 x 2 x 4 = 24 flows. TP1: no tensor flows.
  EXPECT_EQ(mirrored.network_flows, 9U * 64 + 24);
  EXPECT_EQ(c.network_flows, 9U * 16 + 24);
}

// EXACT on fabrics with switch-to-switch links (two- to four-level fat-trees and rails, pipelines
// across leaves, oversubscribed uplinks): tests/engine/node_folding_simgrid_test.cpp.

// APPROXIMATE folding on fabrics with switch-to-switch links, held to the full simulation. The
// folded switch-to-switch links carry only the representatives' flows, so a folded run can only be
// faster (less contention); on these non-blocking fabrics the links that bind are the nodes' own,
// which carry their full load, and the times are the full simulation's to 1e-6 (measured: identical
// to 2e-8 relative or closer, with 4x fewer flows for the sharded job). The one-sided bound and
// these cases are in docs/network.md, "Node folding".
void expect_folding_within_bound(const core::Workload& w, const network::ClusterConfig& cluster) {
  SimulationOptions full = ring_options(Fidelity::FLOW);
  SimulationOptions folded = full;
  folded.use_symmetry = true;
  folded.node_symmetry = NodeSymmetry::APPROXIMATE;
  const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, full);
  const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, folded);
  const double t = a.iteration_time.value();
  EXPECT_LE(b.iteration_time.value(), t * (1 + 1e-9));
  EXPECT_NEAR(b.iteration_time.value(), t, 1e-6 * t);
  EXPECT_LT(b.network_flows, a.network_flows);
}

// Rail-optimized with two nodes per rail switch (radix 4: two levels over 4 nodes), the sharded job.
TEST(SimgridBackend, ApproximateNodeFoldingOnTwoLevelRailsStaysWithinItsBound) {
  network::ClusterConfig rails = rail_optimized_cluster(4, 8);
  rails.network.radix = 4;
  expect_folding_within_bound(testing::sharded_workload(1, 4, 8, 3), rails);
  // Oversubscribed (4:1), folding would hide the uplinks' load of the other node of each switch (the
  // folded run came out 3x faster): APPROXIMATE does not fold there.
  rails.network.oversubscription = 4;
  SimulationOptions o = ring_options(Fidelity::FLOW);
  o.use_symmetry = true;
  const SimulationResult unfolded = make_simgrid_backend()->run(testing::sharded_workload(1, 4, 8, 3), rails, {}, o);
  o.node_symmetry = NodeSymmetry::APPROXIMATE;
  const SimulationResult approximate = make_simgrid_backend()->run(testing::sharded_workload(1, 4, 8, 3), rails, {}, o);
  EXPECT_EQ(approximate.network_flows, unfolded.network_flows);
  EXPECT_NEAR(approximate.iteration_time.value(), unfolded.iteration_time.value(), 1e-9);
}

// A fat-tree of 8-port-down leaves holding one node each (radix 16, two levels), the sharded job and
// a hybrid TP2 DP2 PP8 job (pipeline sends across nodes, data-parallel rings between node pairs).
TEST(SimgridBackend, ApproximateNodeFoldingOnAFatTreeStaysWithinItsBound) {
  network::ClusterConfig tree = testing::make_cluster(4, 8, 300e9, 25e9, 2e-6);
  tree.network.radix = 16;
  {
    SCOPED_TRACE("sharded");
    expect_folding_within_bound(testing::sharded_workload(1, 4, 8, 3), tree);
  }
  SCOPED_TRACE("hybrid");
  expect_folding_within_bound(testing::hybrid_workload(2, 2, 8, 4), tree);
}

// 8 ranks over data parallelism, each running `rounds` times a compute task of `compute_s` at peak
// and a blocking all_gather of `bytes` over all of them.
core::Workload gather_rounds(int rounds, double compute_s, double bytes) {
  core::Program p;
  p.name = "rounds";
  for (int i = 0; i < rounds; ++i) {
    p.add(compute(compute_s));
    p.add(testing::collective(CollectiveOp::ALL_GATHER, 0, bytes, Stream::COMPUTE));
  }
  core::Workload w = testing::make_workload({1, 1, 1, 8, 1}, {p}, std::vector<uint32_t>(8, 0));
  w.groups = {{"data", Axis::DATA, {}, {}}};
  w.validate();
  return w;
}

// Replays (SimulationOptions::replay_calls_alone): a call whose flows already ran alone on the idle
// network, and that starts alone again and ends before anything else can start, is not simulated
// again. Four compute + blocking all_gather rounds over 8 GPUs on 2 nodes: every gather runs alone,
// so the first one is simulated and the other three are replayed; the times are those of the run
// without replays (a second simulation in one process continues SimGrid's clock, rounded to 1e-9 s),
// and every round takes the first one's time.
TEST(SimgridBackend, ReplayedCallsAloneChangeNothing) {
  const network::ClusterConfig cluster = testing::make_cluster(2, 4, 300e9, 25e9, 2e-6);
  const core::Workload w = gather_rounds(4, 1e-3, 64e6);
  for (Fidelity f : {Fidelity::FLOW, Fidelity::STEP}) {
    SCOPED_TRACE(std::string(to_string(f)));
    SimulationOptions off = ring_options(f);
    off.replay_calls_alone = false;
    off.timeline_ranks = {0, 7};
    SimulationOptions on = off;
    on.replay_calls_alone = true;
    const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, off);
    const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, on);
    EXPECT_EQ(a.replayed_calls, 0U);
    EXPECT_EQ(b.replayed_calls, 3U);
    EXPECT_EQ(b.network_flows * 4, a.network_flows);
    const double nanoseconds = 1e-8;
    EXPECT_NEAR(b.iteration_time.value(), a.iteration_time.value(), nanoseconds);
    ASSERT_EQ(a.timeline.size(), b.timeline.size());
    for (size_t i = 0; i < a.timeline.size(); ++i) {
      EXPECT_EQ(a.timeline[i].task, b.timeline[i].task);
      EXPECT_NEAR(a.timeline[i].start_s, b.timeline[i].start_s, nanoseconds);
      EXPECT_NEAR(a.timeline[i].end_s, b.timeline[i].end_s, nanoseconds);
    }
    // The flows of the replayed gathers are on the timeline as the simulated one's, shifted; every
    // round's gather takes the first one's time.
    EXPECT_EQ(a.flows.size(), b.flows.size());
    std::vector<double> gathers;
    for (const TimelineEvent& e : b.timeline) {
      if (e.rank == 0 && e.task % 2 == 1) gathers.push_back(e.end_s - e.start_s);
    }
    ASSERT_EQ(gathers.size(), 4U);
    for (double g : gathers) EXPECT_NEAR(g, gathers.front(), nanoseconds);
  }
}

// A call is replayed only when nothing can start while it would run: two groups across the two
// nodes (GPU 0 of each, GPU 1 of each) gather over the same NIC of each node, the second one's calls starting
// during the first one's; no gather runs alone, so none is replayed and the contention is simulated.
TEST(SimgridBackend, CallsThatOverlapOthersAreNotReplayed) {
  network::ClusterConfig cluster = testing::make_cluster(2, 4, 300e9, 25e9, 2e-6);
  cluster.network.nics_per_node = 1;  // both groups cross the one NIC of each node
  core::Program first;
  first.name = "first";
  core::Program second;
  second.name = "second";
  core::Program idle;
  idle.name = "idle";
  second.add(compute(2e-4));
  for (int i = 0; i < 4; ++i) {
    first.add(compute(1e-3));
    first.add(testing::collective(CollectiveOp::ALL_GATHER, 0, 64e6, Stream::COMPUTE));
    second.add(compute(1e-3));
    second.add(testing::collective(CollectiveOp::ALL_GATHER, 1, 64e6, Stream::COMPUTE));
  }
  core::Workload w = testing::make_workload({1, 1, 1, 8, 1}, {first, second, idle}, {0, 1, 2, 2, 0, 1, 2, 2});
  w.groups = {{"first", Axis::DATA, {0, 4}, {}}, {"second", Axis::DATA, {1, 5}, {}}};
  w.validate();
  SimulationOptions off = ring_options(Fidelity::FLOW);
  off.replay_calls_alone = false;
  SimulationOptions on = off;
  on.replay_calls_alone = true;
  const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, off);
  const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, on);
  EXPECT_EQ(b.replayed_calls, 0U);
  EXPECT_NEAR(b.iteration_time.value(), a.iteration_time.value(), 1e-8);
  EXPECT_EQ(b.network_flows, a.network_flows);
  // The two groups share the NICs: each gather is slower than the same gather alone (the first
  // group without the second), which is replayed after its first round there.
  core::Workload solo = w;
  solo.program_of_rank = {0, 2, 2, 2, 0, 2, 2, 2};
  solo.validate();
  const SimulationResult alone = make_simgrid_backend()->run(solo, cluster, core::Profile{}, on);
  EXPECT_EQ(alone.replayed_calls, 3U);
  EXPECT_GT(b.iteration_time.value(), alone.iteration_time.value() * 1.1);
}

// TP8 DP2 on 2 nodes of 8 GPUs, every rank simulated: a data-parallel all_reduce of 2 GB across
// the nodes (80 ms on the 25 GB/s NICs) starts at once on the DATA stream, and meanwhile each rank
// runs `rounds` compute tasks of 0.1 ms, each followed by a 64 MB tensor all_reduce inside its node.
// With `second_stream`, every other tensor call goes on the CONTEXT stream instead, so that two
// tensor calls of a node may overlap.
core::Workload tensor_rounds_beside_a_data_ring(int rounds, bool second_stream) {
  core::Program p;
  p.name = "rank";
  p.add(testing::collective(CollectiveOp::ALL_REDUCE, 1, 2e9, Stream::DATA_COMM));
  for (int i = 0; i < rounds; ++i) {
    const uint32_t c = p.add(compute(1e-4));
    const Stream stream = second_stream && i % 2 == 1 ? Stream::CONTEXT_COMM : Stream::TENSOR_COMM;
    p.add(testing::collective(CollectiveOp::ALL_REDUCE, 0, 64e6, stream), {c});
  }
  core::Workload w = testing::make_workload({8, 1, 1, 2, 1}, {p}, std::vector<uint32_t>(16, 0));
  w.groups = {{"tensor", Axis::TENSOR, {}, {}}, {"data", Axis::DATA, {}, {}}};
  w.validate();
  return w;
}

// Isolated classes (sim/engine/isolated_calls.hpp): a call whose links no other call can cross
// while it runs is replayed from its class's first run, even while other calls are in flight. The
// tensor rings cross only their node's NVLink ports, which nothing else uses (the data rings leave
// through PCIe and the NICs), and each node's calls follow each other on the TENSOR stream: each
// node's first call runs its 8 flows (a ring of 8), the other 5 are replayed. Replays alone could
// replay none of them (the data ring is always in flight). Flows: 2 nodes x 6 calls x 8 = 96
// tensor flows and 8 rings of 2 = 16 data flows without replays; 2 x 8 + 16 = 32 with them. The
// times are the full simulation's.
TEST(SimgridBackend, CallsAloneOnTheirLinksAreReplayedBesideOthers) {
  const network::ClusterConfig cluster = testing::make_cluster(2, 8, 300e9, 25e9, 2e-6);
  const core::Workload w = tensor_rounds_beside_a_data_ring(6, false);
  for (Fidelity f : {Fidelity::FLOW, Fidelity::STEP}) {
    SCOPED_TRACE(std::string(to_string(f)));
    SimulationOptions off = ring_options(f);
    off.timeline_ranks = {0, 8};
    SimulationOptions on = off;
    on.replay_calls_alone = true;
    const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, off);
    const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, on);
    EXPECT_EQ(b.replayed_calls, 2U * 5);
    if (f == Fidelity::FLOW) {
      EXPECT_EQ(a.network_flows, 2U * 6 * 8 + 16);
      EXPECT_EQ(b.network_flows, 2U * 8 + 16);
    }
    expect_same_times(a, b);
    ASSERT_EQ(a.timeline.size(), b.timeline.size());
    for (size_t i = 0; i < a.timeline.size(); ++i) {
      EXPECT_NEAR(a.timeline[i].start_s, b.timeline[i].start_s, 1e-9 * a.iteration_time.value());
      EXPECT_NEAR(a.timeline[i].end_s, b.timeline[i].end_s, 1e-9 * a.iteration_time.value());
    }
    EXPECT_EQ(a.flows.size(), b.flows.size());
  }
}

// The tensor calls of a node on two streams may overlap, and then share the NVLink ports: no class
// is isolated, and with the data ring always in flight nothing is replayed. The same times.
TEST(SimgridBackend, CallsThatMayOverlapOnTheirLinksAreNotReplayed) {
  const network::ClusterConfig cluster = testing::make_cluster(2, 8, 300e9, 25e9, 2e-6);
  const core::Workload w = tensor_rounds_beside_a_data_ring(6, true);
  SimulationOptions off = ring_options(Fidelity::FLOW);
  SimulationOptions on = off;
  on.replay_calls_alone = true;
  const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, off);
  const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, on);
  EXPECT_EQ(b.replayed_calls, 0U);
  EXPECT_EQ(b.network_flows, a.network_flows);
  expect_same_times(a, b);
}

// Links on demand (simgrid_links_on_demand, for processes that simulate once): a run that declares
// its routes before it starts (replays on) gets a platform with only the links they cross, and the
// same figures (here the analytic backend's: TP8 rings in one node, no link shared). A later run in
// the process whose routes cross a link that was not created (a copy to host memory) is refused.
TEST(SimgridBackend, LinksOnDemandGiveTheSameRunAndRefuseALaterOneThatNeedsOthers) {
  simgrid_links_on_demand();
  const network::ClusterConfig cluster = testing::make_cluster(1, 8, 300e9, 25e9, 1e-6);
  SimulationOptions o = ring_options(Fidelity::FLOW);
  o.replay_calls_alone = true;
  const SimulationResult r = run_both(testing::hybrid_workload(8, 1, 1, 4), cluster, core::Profile{}, o, 1e-9);
  EXPECT_EQ(r.network_flows, 8U);  // one ring of 8; the other 7 calls replayed
  core::Program p;
  p.name = "copy";
  core::Task copy;
  copy.kind = TaskKind::COPY;
  copy.stream = Stream::COPY_OUT;
  copy.copy = core::CopyDirection::DEVICE_TO_HOST;
  copy.bytes = 1e9;
  p.add(copy);
  core::Workload w = testing::make_workload({1, 1, 1, 8, 1}, {p}, std::vector<uint32_t>(8, 0));
  w.validate();
  try {
    make_simgrid_backend()->run(w, cluster, core::Profile{}, o);
    ADD_FAILURE() << "a run that needs a link not created was not refused";
  } catch (const core::InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("adds no link once it has run"), std::string::npos) << e.what();
  }
}

// A stop request (Ctrl-C in `run`) ends the run with what it knew: 200 compute + all_gather rounds,
// stopped at the first check (every 64 calls of the driver), part of the way through.
TEST(SimgridBackend, StopRequestEndsTheRunWithItsProgress) {
  const network::ClusterConfig cluster = testing::make_cluster(2, 4, 300e9, 25e9, 2e-6);
  const core::Workload w = gather_rounds(200, 1e-4, 1e6);
  SimulationOptions options = ring_options(Fidelity::FLOW);
  int asked = 0;
  options.stop_requested = [&asked] { return ++asked == 2; };
  try {
    make_simgrid_backend()->run(w, cluster, core::Profile{}, options);
    FAIL() << "not interrupted";
  } catch (const Interrupted& e) {
    EXPECT_EQ(asked, 2);
    EXPECT_EQ(e.progress.tasks_total, 8U * 400U);
    EXPECT_GT(e.progress.tasks_done, 0U);
    EXPECT_LT(e.progress.tasks_done, e.progress.tasks_total);
    EXPECT_GT(e.progress.simulated_s, 0);
    EXPECT_GT(e.progress.flows, 0U);
  }
}

// Rank 0 sends with tag 1 what rank 1 waits for with tag 0: nothing can run, and the error names the
// stuck tasks instead of hanging.
TEST(SimgridBackend, MismatchedSendIsADeadlock) {
  core::Program sender;
  sender.name = "sender";
  core::Task send = testing::p2p(TaskKind::SEND, Axis::DATA, 1, 1e6, Stream::DATA_COMM);
  send.tag = 1;
  sender.add(send);
  core::Program receiver;
  receiver.name = "receiver";
  receiver.add(compute(1e-3));
  receiver.add(testing::p2p(TaskKind::RECV, Axis::DATA, -1, 1e6, Stream::DATA_COMM));
  const core::Workload w = testing::make_workload({1, 1, 1, 2, 1}, {sender, receiver}, {0, 1});
  try {
    make_simgrid_backend()->run(w, testing::make_cluster(1, 2), testing::unit_profile(), SimulationOptions{});
    FAIL() << "no deadlock reported";
  } catch (const core::InternalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 (program \"sender\")"), std::string::npos) << what;
    EXPECT_NE(what.find("waits for rank 1 to post the matching recv"), std::string::npos) << what;
  }
}

// A collective that one member never calls, after traffic has flowed: the simulation stops when
// nothing is in flight and reports the members that wait.
TEST(SimgridBackend, MissingCollectiveMemberIsADeadlock) {
  core::Program caller;
  caller.name = "caller";
  caller.add(testing::p2p(TaskKind::SEND, Axis::DATA, 1, 1e6, Stream::DATA_COMM));
  caller.add(testing::collective(CollectiveOp::ALL_REDUCE, 0, 1e6, Stream::TENSOR_COMM));
  core::Program absent;
  absent.name = "absent";
  absent.add(testing::p2p(TaskKind::RECV, Axis::DATA, -1, 1e6, Stream::DATA_COMM));
  core::Workload w = testing::make_workload({1, 1, 1, 2, 1}, {caller, absent}, {0, 1});
  w.groups = {{"data", Axis::DATA, {}, {}}};
  EXPECT_THROW(
      {
        try {
          make_simgrid_backend()->run(w, testing::make_cluster(1, 2), testing::unit_profile(), SimulationOptions{});
        } catch (const core::InternalError& e) {
          EXPECT_NE(std::string(e.what()).find("waits for the other members of its \"data\" communicator"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      core::InternalError);
}

// Same inputs, same result. A process runs the CLI's one simulation from a simulated clock at 0,
// so its output is byte-identical from run to run; a second simulation in one process continues
// SimGrid's clock (3.32 cannot reset it), and SimGrid rounds completion dates to its precision
// (surf/precision, 1e-9 s), so that times may move by a few nanoseconds.
TEST(SimgridBackend, Deterministic) {
  const network::ClusterConfig cluster = testing::make_cluster(8, 2, 300e9, 25e9, 2e-6);
  const core::Workload w = testing::hybrid_workload(2, 2, 4, 4);
  SimulationOptions options = ring_options(Fidelity::STEP);
  options.timeline_ranks = {0, 15};
  const SimulationResult a = make_simgrid_backend()->run(w, cluster, core::Profile{}, options);
  const SimulationResult b = make_simgrid_backend()->run(w, cluster, core::Profile{}, options);
  const double nanoseconds = 1e-8;
  EXPECT_NEAR(a.iteration_time.value(), b.iteration_time.value(), nanoseconds);
  EXPECT_EQ(a.critical_rank, b.critical_rank);
  EXPECT_EQ(a.events, b.events);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].task, b.timeline[i].task);
    EXPECT_NEAR(a.timeline[i].start_s, b.timeline[i].start_s, nanoseconds);
    EXPECT_NEAR(a.timeline[i].end_s, b.timeline[i].end_s, nanoseconds);
  }
}

// Ready pools (workload.hpp, READY POOL; tests/engine/ready_pool_test.cpp has the timelines drawn
// by hand): p = 3, m = 4, forward 1 s, backward 2 s, 1 GB/s NICs, one GPU per node.
SimulationOptions all_ranks_traced(int ranks) {
  SimulationOptions o;
  o.use_symmetry = false;
  for (int r = 0; r < ranks; ++r) o.timeline_ranks.push_back(r);
  return o;
}

testing::PipelineSpec three_stages(double activation_bytes) {
  testing::PipelineSpec spec;
  spec.stages = 3;
  spec.micro_batches = 4;
  spec.activation_bytes = {std::vector<double>(4, activation_bytes), {0, 0, 0, 0}, {0, 0, 0, 0}};
  return spec;
}

// (c) Without contention both backends pick the same order: the slow link of
// ReadyPool.ASlowLinkMakesAStageRunTheBackwardWhoseGradientCameFirst (3 GB activations from stage 0,
// one transfer at a time on its link) gives the same timelines.
TEST(SimgridBackend, AsyncPipelineWithoutContentionMatchesAnalytic) {
  testing::PipelineSpec spec = three_stages(3e9);
  spec.pool = true;
  const core::Workload w = testing::timed_pipeline_workload(spec);
  const SimulationResult sim =
      run_both(w, testing::make_cluster(3, 1, 1e9, 1e9, 0), testing::unit_profile(), all_ranks_traced(3), 1e-12);
  EXPECT_EQ(testing::draw_passes(w, sim), (std::vector<std::string>{"012.......aa3bb.cc....dd",
                                                                     "....0..1aa2bb.cc3...dd..",
                                                                     ".....0aa1bb2cc...3dd...."}));
}

// Contention reorders: activations of 1.5 GB (1.5 s alone) share stage 0's link with a background
// transfer of 20 GB from stage 0 to stage 1 (stream STORAGE: background work, outside the
// iteration), running from 0 to past the last activation. The analytic backend sees no contention:
// the activations land at 2.5, 4, 5.5 and (async) 13, and stage 1 runs F0 F1 B0 F2 B1 B2 F3 B3
// (1F1B's order but for B2 first: its gradient at 12.5 beats F3's activations at 13), 22.5 s
// against 21 for fixed 1F1B. SimGrid shares the link fairly: each activation gets 0.5 GB/s and takes
// 3 s, which is the 3-second slow link drawn by hand in ready_pool_test.cpp: fixed 1F1B takes 25 s,
// async 24 s, with the async order of that timeline (stage 1 runs B2 before F3, 14-16).
TEST(SimgridBackend, ContentionReordersAnAsyncPipeline) {
  auto workload = [](bool pool) {
    testing::PipelineSpec spec = three_stages(1.5e9);
    spec.pool = pool;
    core::Workload w = testing::timed_pipeline_workload(spec);
    core::Task send = testing::p2p(TaskKind::SEND, Axis::PIPELINE, +1, 20e9, Stream::STORAGE);
    core::Task recv = testing::p2p(TaskKind::RECV, Axis::PIPELINE, -1, 20e9, Stream::STORAGE);
    send.tag = recv.tag = 7;
    w.programs[0].add(send);
    w.programs[1].add(recv);
    w.validate();
    return w;
  };
  const network::ClusterConfig cluster = testing::make_cluster(3, 1, 1e9, 1e9, 0);
  const SimulationOptions options = all_ranks_traced(3);
  const core::Workload fixed = workload(false);
  const core::Workload async = workload(true);
  EXPECT_DOUBLE_EQ(make_analytic_backend()->run(fixed, cluster, testing::unit_profile(), options).iteration_time.value(), 21);
  EXPECT_DOUBLE_EQ(make_analytic_backend()->run(async, cluster, testing::unit_profile(), options).iteration_time.value(), 22.5);
  const SimulationResult f = make_simgrid_backend()->run(fixed, cluster, testing::unit_profile(), options);
  EXPECT_NEAR(f.iteration_time.value(), 25, 1e-9);
  EXPECT_EQ(testing::draw_passes(fixed, f), (std::vector<std::string>{"012........aa3.bb...cc.dd",
                                                                        "....0...1aa.2bb..3cc.dd..",
                                                                        ".....0aa.1bb.2cc..3dd...."}));
  const SimulationResult a = make_simgrid_backend()->run(async, cluster, testing::unit_profile(), options);
  EXPECT_NEAR(a.iteration_time.value(), 24, 1e-9);
  EXPECT_EQ(testing::draw_passes(async, a), (std::vector<std::string>{"012.......aa3bb.cc....dd",
                                                                        "....0..1aa2bb.cc3...dd..",
                                                                        ".....0aa1bb2cc...3dd...."}));
}

}  // namespace
}  // namespace trainsim::engine
