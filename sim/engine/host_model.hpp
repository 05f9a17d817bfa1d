#pragma once
// Closed forms of offloading's host side (models/offload.hpp): how long a host<->device or NVMe copy
// takes alone, and how long a CPU task (the CPU optimizer step) takes on a GPU's share of its node.
// The analytic backend times copies with copy_time(); the SimGrid backend runs them as flows on the
// topology's host links (network/topology.hpp), whose capacities are the same nominal bandwidths
// times host.link_efficiency, so the two agree when no other copy shares a link.
//
// Example: a V100 (PCIe 3.0 x16, 15.75 GB/s) alone on a DGX-2-like node, default efficiency 0.8:
//   copy_bandwidth(DEVICE_TO_HOST, cluster) = min(15.75, link_bandwidth) x 0.8 = 12.6 GB/s.

#include "network/cluster.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

// The bottleneck of a copy's route, uncontended: the smallest nominal bandwidth among the GPU's
// host link, the node's host link and, for NVMe, the drives' read or write bandwidth, times
// host.link_efficiency. REQUIRES: a direction involving NVMe only with cluster.nvme.
// To the parallel file system (checkpoints): the node's share of it (ClusterConfig::
// storage_node_bandwidth) / gpus_per_node (every GPU of a node writes at once), no more than the
// GPU's share of the compute NICs unless the storage network is dedicated, and from the GPU no more
// than its host link x host.link_efficiency. REQUIRES: cluster.storage.parallel_fs.
core::BytesPerSecond copy_bandwidth(core::CopyDirection d, const network::ClusterConfig& cluster);
core::Seconds copy_time(core::Bytes bytes, core::CopyDirection d, const network::ClusterConfig& cluster);

// A COMPUTE task of stream HOST on one GPU's share of its node's CPUs (1/gpus_per_node of the cores
// and of the memory bandwidth): memory-bound or compute-bound, whichever is slower,
//   max(bytes / (memory_bandwidth x memory_efficiency / g), flops / (cores x core_flops / g)).
// A measured duration (Task::seconds > 0) replaces it, as for GPU compute.
core::Seconds host_compute_time(const core::Task& task, const network::ClusterConfig& cluster);

}  // namespace trainsim::engine
