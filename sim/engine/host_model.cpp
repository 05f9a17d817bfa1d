#include "sim/engine/host_model.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace trainsim::engine {

core::BytesPerSecond copy_bandwidth(core::CopyDirection d, const network::ClusterConfig& cluster) {
  const network::HostSpec& h = cluster.host;
  if (core::to_storage(d)) {
    const network::ParallelFs& fs = *cluster.storage->parallel_fs;
    // The node's share of the file system, split over its GPUs; through the compute NICs, no more
    // than the GPU's share of them (its rail's NIC, as the SimGrid route).
    double bandwidth = cluster.storage_node_bandwidth(true).value() / cluster.gpus_per_node;
    if (!fs.dedicated_network) bandwidth = std::min(bandwidth, cluster.nic_bandwidth_per_gpu().value());
    if (d == core::CopyDirection::DEVICE_TO_STORAGE) {
      bandwidth = std::min(bandwidth, cluster.gpu_host_link_bandwidth().value() * h.link_efficiency);
    }
    return core::BytesPerSecond(bandwidth);
  }
  double bandwidth = std::min(cluster.gpu_host_link_bandwidth().value(), cluster.host_link_bandwidth().value());
  const bool nvme = d != core::CopyDirection::HOST_TO_DEVICE && d != core::CopyDirection::DEVICE_TO_HOST;
  if (nvme) {
    TRAINSIM_CHECK(cluster.nvme.has_value(), "an NVMe copy on a cluster without cluster.nvme");
    const bool writes = d == core::CopyDirection::DEVICE_TO_NVME || d == core::CopyDirection::HOST_TO_NVME;
    const double drives = (writes ? cluster.nvme->write_bandwidth : cluster.nvme->read_bandwidth).value();
    const bool device = d == core::CopyDirection::DEVICE_TO_NVME || d == core::CopyDirection::NVME_TO_DEVICE;
    bandwidth = device ? std::min(bandwidth, drives) : drives;
  }
  return core::BytesPerSecond(bandwidth * h.link_efficiency);
}

core::Seconds copy_time(core::Bytes bytes, core::CopyDirection d, const network::ClusterConfig& cluster) {
  return bytes / copy_bandwidth(d, cluster);
}

core::Seconds host_compute_time(const core::Task& task, const network::ClusterConfig& cluster) {
  if (task.seconds > 0) return core::Seconds(task.seconds);
  const network::HostSpec& h = cluster.host;
  const double share = 1.0 / cluster.gpus_per_node;
  const double memory = task.bytes / (h.memory_bandwidth.value() * h.memory_efficiency * share);
  const double compute = task.flops / (h.cores * h.core_flops.value() * share);
  return core::Seconds(std::max(memory, compute));
}

}  // namespace trainsim::engine
