#pragma once
// One collective simulated on its own, for `trainsim collective` (an nccl-tests-like table) and for
// the tests that hold the fidelities to each other: the time of `op` over `group` for each size, at
// a fidelity, with the most loaded links. SimGrid-backed for `step` and `flow`.

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
};

// Runs every size of `request` (in one SimGrid engine for step/flow). REQUIRES: the cluster passed
// its checks; the algorithm (unless AUTO) applies to the op and group.
//
// Symmetry (flow fidelity, request.use_symmetry). All flows start together and the collective ends
// with the last flow's end plus its tail, so a flow whose links only ever carry copies of another
// set of flows need not run. On a rail-optimized fabric with one NIC per GPU and NVLink inside the
// nodes, when the group takes the same GPUs of every node it spans, each inter-node flow stays on
// its rail and no flow goes through the in-network switch, every node's intra-node flows are a copy
// of the first node's and every rail's inter-node flows a copy of the first member's rail: only
// those run (a 1 GiB all-reduce over 4,096 GPUs: 1,808 of 18,400 flows). Link statistics still count
// every flow's bytes.
std::vector<CollectiveResult> simulate_collective(const CollectiveRequest& request,
                                                  const network::ClusterConfig& cluster,
                                                  const core::Profile& profile);

}  // namespace trainsim::engine
