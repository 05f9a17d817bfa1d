#pragma once
// Closed-form (alpha-beta) costs of collectives and point-to-point transfers on a cluster, the way
// NCCL runs them: hierarchical when a group spans nodes (NVLink inside the node, one ring or tree
// across nodes per NIC rail). This is the cost model of the analytic backend and the oracle for the
// SimGrid backend.

#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::network {

enum class Algorithm { AUTO, RING, TREE };
std::string to_string(Algorithm a);  // "auto", "ring", "tree"

// Where the members of a communicator sit: `ranks` members over `nodes` nodes, `ranks_per_node` on
// each (groups built from the parallel layout are uniform).
struct GroupPlacement {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;

  static GroupPlacement of(const std::vector<int>& group_ranks, const ClusterConfig& cluster);
};

struct CollectiveCost {
  core::Seconds time;
  Algorithm algorithm = Algorithm::RING;  // the one used (AUTO resolved)
};

// Time of a collective whose per-rank buffer is `size` bytes (nccl-tests' convention: all_reduce and
// broadcast move `size`; all_gather's output and reduce_scatter's input are `size`).
// Ring all_reduce on one bottleneck bandwidth B with per-step latency a: 2(n-1)/n·S/B + 2(n-1)·a.
// AUTO picks the faster of ring and tree, as NCCL's tuner does.
CollectiveCost collective_cost(core::CollectiveOp op, core::Bytes size, const GroupPlacement& group,
                               const ClusterConfig& cluster, const core::NetworkProfile& profile,
                               Algorithm algorithm = Algorithm::AUTO);

// Time of one send/recv of `size` bytes between two GPUs.
core::Seconds p2p_time(core::Bytes size, bool same_node, const ClusterConfig& cluster,
                       const core::NetworkProfile& profile);

}  // namespace trainsim::network
