#pragma once
// One collective simulated on its own, for `trainsim collective` (an nccl-tests-like table) and for
// the tests that hold the fidelities to each other: the time of `op` over `group` for each size, at
// a fidelity, with the most loaded links. SimGrid-backed for `step` and `flow`.

#include <ostream>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "network/collective_cost.hpp"
#include "network/schedule.hpp"
#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::engine {

struct CollectiveResult {
  core::Bytes size;
  core::Seconds time;
  network::Algorithm algorithm = network::Algorithm::RING;  // AUTO resolved
  double algbw = 0;          // bytes per second: size / time
  double busbw = 0;          // algbw x core::bus_bandwidth_factor
  uint64_t flows = 0;        // flows simulated (0 for analytic)
  std::vector<LinkLoad> top_links;  // most utilized first, at most `top_links` of them
};

struct CollectiveRequest {
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  network::Algorithm algorithm = network::Algorithm::AUTO;
  Fidelity fidelity = Fidelity::FLOW;
  std::vector<int> ranks;              // group members (global GPU indices); empty = every GPU
  std::vector<core::Bytes> sizes;      // per-rank buffer sizes, nccl-tests convention
  size_t top_links = 5;
  // `flow` fidelity: leave out flows that are exact copies of simulated ones on links of their own
  // (see simulate_collective). The result is the same; false simulates every flow.
  bool use_symmetry = true;
  // When set, wall-clock seconds of each phase (topology, platform, flows per size, simulation per
  // size) are written there, one line each: for profiling, never part of the results.
  std::ostream* timings = nullptr;
};

// Runs every size of `request` (in one SimGrid engine for step/flow). REQUIRES: the cluster passed
// its checks; the algorithm (unless AUTO) applies to the op and group.
//
// Symmetry (flow fidelity, request.use_symmetry). All flows start together and nothing else runs, so
// flows that share no link never slow each other: the flows split into connected components (joined
// by the links they share), and a component that is an exact copy of another one (the same flows
// relative to its lowest GPU, with routes whose links correspond one to one and have the same
// capacities and latencies) ends when its original does. Only one component per class of copies
// runs: each node's intra-node flows are copies of the first node's, and on a fabric whose rails are
// separate (network::Topology::separate_rails: rail-optimized, ideal, or a fat-tree whose leaves
// hold whole nodes) each rail's inter-node flows copies of the first rail's (a 1 GiB all-reduce over
// 4,096 GPUs on the default fat-tree: 1,790 of 18,400 flows); a flat ring over single-GPU nodes of
// an ideal switch runs two flows. Link statistics still count every flow's bytes.
// A lower bound on the flows `step` fidelity runs for the most demanding of request's sizes, from the
// algorithm's edges (network::flow_edges): per edge, its bytes over a member's share of the buffer
// (size/n, the largest transfer of a ring, hierarchy, CollNet, halving-doubling or direct schedule;
// a ring's channels cut it finer), or one transfer per step that uses it for the schedules that send
// larger pieces (flat tree, chain, flat switch reduction). A caller can refuse a run that would not
// finish: SimGrid runs 0.05-0.5 million flows per CPU-second.
uint64_t step_flows_lower_bound(const CollectiveRequest& request, const network::ClusterConfig& cluster,
                                const core::Profile& profile);
// The same for one iteration of a workload on the SimGrid backend at options.fidelity (step or flow):
// over the calls of the ranks it simulates (options.use_symmetry applied as the backend applies it),
// each collective call's flows for its group, op, size and algorithm (options.algorithm where it
// applies, else the tuner's), counted once per call: at step fidelity the bound above, at flow
// fidelity one flow per algorithm edge (network::flow_edges), of which node folding keeps those that
// leave a representative's node (folding_allowed and NodeFolding, as the backend folds); plus one
// flow per send and per copy. Replays (calls alone on their links, run once) only take from it;
// mirror images of calls (the traffic of ranks symmetry does not simulate) only add to it. Builds no
// flow: cheap next to the simulation it guards (sim/cli refuses `run` above STEP_FLOW_BUDGET at step
// fidelity, above simulation.max_flows at flow fidelity).
// REQUIRES: options.fidelity is not ANALYTIC.
double flows_lower_bound(const core::Workload& workload, const network::ClusterConfig& cluster,
                         const core::Profile& profile, const SimulationOptions& options);

// flows_lower_bound split by class of call, so that a caller over its budget can price the most
// expensive classes in closed form (SimulationOptions::closed_form_groups) and simulate the rest.
// total is flows_lower_bound: point_to_point plus the collectives of every group kind that
// options.closed_form_groups leaves to flows; by_group counts every kind's collectives, chosen or not.
// cpu_seconds prices each call's flows at simgrid_flow_rate of that many flows in flight: a call's
// edges all start together, and SimGrid's cost per flow grows with the flows in flight, so one call
// of 30,000 flows costs what 100 calls of 300 do many times over. It counts neither replays nor
// other calls in flight at once: an estimate of the order of magnitude, not a bound either way.
struct FlowEstimate {
  double total = 0;
  double point_to_point = 0;      // sends and copies: one flow each
  std::vector<double> by_group;   // per core::Workload::groups entry: its collectives' flows
  double cpu_seconds = 0;         // SimGrid CPU seconds of `total`'s flows
  std::vector<double> by_group_seconds;  // per group: its collectives' share of cpu_seconds
};

// SimGrid 3.32's flows per CPU-second with `in_flight` flows running at once, from the measured points
// of ../shared/SIMGRID-NOTES.md ("Cost": 0.5 million below 256 flows, 0.3 million at 1,024, 0.1
// million at 4,096, 0.06 million at 16,384), interpolated log-log between them and extended past the
// last along the last segment.
double simgrid_flow_rate(double in_flight);
FlowEstimate estimate_flows(const core::Workload& workload, const network::ClusterConfig& cluster,
                            const core::Profile& profile, const SimulationOptions& options);

// The most flows a step-fidelity simulation may run: about a minute of SimGrid at its best rate, and
// a few GB (../shared/SIMGRID-NOTES.md: budget ~1e7 flows per simulation).
inline constexpr uint64_t STEP_FLOW_BUDGET = 20'000'000;

std::vector<CollectiveResult> simulate_collective(const CollectiveRequest& request,
                                                  const network::ClusterConfig& cluster,
                                                  const core::Profile& profile);

}  // namespace trainsim::engine
