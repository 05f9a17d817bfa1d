#include "sim/engine/host_model.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace trainsim::engine {

core::BytesPerSecond copy_bandwidth(core::CopyDirection d, const network::ClusterConfig& cluster) {
  const network::HostSpec& h = cluster.host;
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
