#pragma once
// Shared by the network tests: every collective op, and a cluster on which every algorithm applies.

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::network::testing {

inline constexpr core::CollectiveOp ALL_OPS[] = {core::CollectiveOp::ALL_REDUCE, core::CollectiveOp::REDUCE_SCATTER,
                                                 core::CollectiveOp::ALL_GATHER, core::CollectiveOp::BROADCAST,
                                                 core::CollectiveOp::REDUCE,     core::CollectiveOp::ALL_TO_ALL};

// NVLS inside the node and in-network reduction across, one NIC per GPU, so that every algorithm
// can apply.
inline ClusterConfig every_algorithm_cluster(int nodes, int gpus_per_node, TopologyKind kind = TopologyKind::FAT_TREE) {
  ClusterConfig c;
  c.gpu_spec = *core::find_gpu(c.gpu);
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_node.bandwidth = core::BytesPerSecond(300e9);
  c.intra_node.nvls = true;
  c.network.topology = kind;
  c.network.nics_per_node = gpus_per_node;
  c.network.in_network_reduction = true;
  return c;
}

}  // namespace trainsim::network::testing
