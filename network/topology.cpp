#include "network/topology.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"

// links_ holds, in this order (the Shape fields name each block's first link):
//   nvlink  nvswitch: per GPU, up then down; nvlink-mesh: per GPU, one per peer in peer order
//   pcie    per GPU, up (toward the PCIe switch) then down
//   host    fabric pcie only: per PCIe switch, up (toward the host bridge) then down
//   nic     per NIC, up (toward the network) then down
//   fabric  fat-tree (topology_fat_tree.cpp), dragonfly or torus (topology_direct.cpp)
//   host    per GPU, up (toward host memory) then down; per node, up then down; with cluster.nvme
//           per node, write then read
// Every up/down pair is adjacent: the down link of an up link u is u + 1.

namespace trainsim::network {

std::string to_string(LinkClass c) {
  switch (c) {
    case LinkClass::NVLINK:
      return "nvlink";
    case LinkClass::PCIE:
      return "pcie";
    case LinkClass::NIC:
      return "nic";
    case LinkClass::FABRIC:
      return "fabric";
    case LinkClass::HOST:
      return "host";
    case LinkClass::STORAGE:
      return "storage";
  }
  return "?";
}

Topology Topology::build(const ClusterConfig& cluster) {
  Topology t;
  t.cluster_ = cluster;
  t.gpu_count_ = cluster.world_size();
  t.gpus_per_node_ = cluster.gpus_per_node;
  t.shape_.nics_per_node = cluster.network.nics_per_node;
  t.build_intra_node();
  t.shape_.fabric_first = static_cast<uint32_t>(t.links_.size());
  if (cluster.nodes > 1) {
    switch (cluster.network.topology) {
      case TopologyKind::FAT_TREE:
      case TopologyKind::RAIL_OPTIMIZED:
        t.build_fat_trees();
        break;
      case TopologyKind::DRAGONFLY:
        t.build_dragonfly();
        break;
      case TopologyKind::TORUS:
        t.build_torus();
        break;
      case TopologyKind::IDEAL:
        break;
    }
  }
  t.build_host_links();
  TRAINSIM_CHECK(t.links_.size() < UINT32_MAX, fmt::format("{} links exceed 32-bit link ids", t.links_.size()));
  return t;
}

void Topology::build_host_links() {
  const ClusterConfig& c = cluster_;
  shape_.gpu_host_first = static_cast<uint32_t>(links_.size());
  for (int gpu = 0; gpu < gpu_count_; ++gpu) {
    for (const char* dir : {"up", "down"}) {
      add_link(fmt::format("node{}.gpu{}.host.{}", node_of(gpu), gpu % gpus_per_node_, dir), LinkClass::HOST,
               c.gpu_host_link_bandwidth(), core::Seconds(0));
    }
  }
  shape_.node_host_first = static_cast<uint32_t>(links_.size());
  for (int node = 0; node < c.nodes; ++node) {
    for (const char* dir : {"up", "down"}) {
      add_link(fmt::format("node{}.host.{}", node, dir), LinkClass::HOST, c.host_link_bandwidth(), core::Seconds(0));
    }
  }
  shape_.nvme_first = static_cast<uint32_t>(links_.size());
  if (c.nvme) {
    for (int node = 0; node < c.nodes; ++node) {
      add_link(fmt::format("node{}.nvme.write", node), LinkClass::HOST, c.nvme->write_bandwidth, core::Seconds(0));
      add_link(fmt::format("node{}.nvme.read", node), LinkClass::HOST, c.nvme->read_bandwidth, core::Seconds(0));
    }
  }
  shape_.storage_first = static_cast<uint32_t>(links_.size());
  if (c.storage && c.storage->parallel_fs) {
    for (int node = 0; node < c.nodes; ++node) {
      add_link(fmt::format("node{}.storage.write", node), LinkClass::STORAGE, c.storage_node_bandwidth(true),
               core::Seconds(0));
      add_link(fmt::format("node{}.storage.read", node), LinkClass::STORAGE, c.storage_node_bandwidth(false),
               core::Seconds(0));
    }
  }
}

void Topology::copy_route(int gpu, core::CopyDirection d, std::vector<uint32_t>& out) const {
  TRAINSIM_CHECK(gpu >= 0 && gpu < gpu_count_, fmt::format("GPU {} outside a cluster of {}", gpu, gpu_count_));
  const uint32_t gpu_up = shape_.gpu_host_first + 2 * static_cast<uint32_t>(gpu);
  const uint32_t node_up = shape_.node_host_first + 2 * static_cast<uint32_t>(node_of(gpu));
  if (core::to_storage(d)) {
    TRAINSIM_CHECK(cluster_.storage && cluster_.storage->parallel_fs,
                   "a checkpoint write on a cluster without cluster.storage.parallel_fs");
    if (d == core::CopyDirection::DEVICE_TO_STORAGE) out.push_back(shape_.pcie_first + 2 * static_cast<uint32_t>(gpu));
    if (!cluster_.storage->parallel_fs->dedicated_network) {
      out.push_back(shape_.nic_first +
                    2 * static_cast<uint32_t>(node_of(gpu) * shape_.nics_per_node + rail_of(gpu)));
    }
    out.push_back(shape_.storage_first + 2 * static_cast<uint32_t>(node_of(gpu)));
    return;
  }
  const bool nvme = d != core::CopyDirection::HOST_TO_DEVICE && d != core::CopyDirection::DEVICE_TO_HOST;
  TRAINSIM_CHECK(!nvme || cluster_.nvme.has_value(), "an NVMe copy on a cluster without cluster.nvme");
  const uint32_t write = shape_.nvme_first + 2 * static_cast<uint32_t>(node_of(gpu));
  switch (d) {
    case core::CopyDirection::DEVICE_TO_HOST: out.insert(out.end(), {gpu_up, node_up}); return;
    case core::CopyDirection::HOST_TO_DEVICE: out.insert(out.end(), {node_up + 1, gpu_up + 1}); return;
    case core::CopyDirection::DEVICE_TO_NVME: out.insert(out.end(), {gpu_up, node_up, write}); return;
    case core::CopyDirection::NVME_TO_DEVICE: out.insert(out.end(), {write + 1, node_up + 1, gpu_up + 1}); return;
    case core::CopyDirection::HOST_TO_NVME: out.push_back(write); return;
    case core::CopyDirection::NVME_TO_HOST: out.push_back(write + 1); return;
    case core::CopyDirection::HOST_TO_STORAGE:
    case core::CopyDirection::DEVICE_TO_STORAGE: return;  // above
  }
}

void Topology::add_link(std::string name, LinkClass c, core::BytesPerSecond bandwidth, core::Seconds latency) {
  links_.push_back(Link{std::move(name), c, bandwidth, latency});
}

void Topology::build_intra_node() {
  const ClusterConfig& c = cluster_;
  const int g = gpus_per_node_;
  const IntraFabric fabric = c.intra_node.fabric;
  const core::Seconds half_hop = c.intra_node.latency / 2;
  const size_t per_node = static_cast<size_t>(g) * (fabric == IntraFabric::NVLINK_MESH ? g + 3 : 6) +
                          static_cast<size_t>(shape_.nics_per_node) * 4;
  links_.reserve(per_node * static_cast<size_t>(c.nodes));

  shape_.nvlink_first = static_cast<uint32_t>(links_.size());
  for (int gpu = 0; gpu < gpu_count_; ++gpu) {
    const int node = node_of(gpu);
    const int local = gpu % g;
    if (fabric == IntraFabric::NVSWITCH) {
      for (const char* dir : {"up", "down"}) {
        add_link(fmt::format("node{}.gpu{}.nvlink.{}", node, local, dir), LinkClass::NVLINK, c.intra_node.bandwidth,
                 half_hop);
      }
    } else if (fabric == IntraFabric::NVLINK_MESH) {
      for (int peer = 0; peer < g; ++peer) {
        if (peer == local) continue;
        add_link(fmt::format("node{}.gpu{}.gpu{}.nvlink", node, local, peer), LinkClass::NVLINK,
                 c.intra_node.bandwidth / (g - 1), c.intra_node.latency);
      }
    }
  }

  const bool pcie_fabric = fabric == IntraFabric::PCIE;
  const core::BytesPerSecond pcie_bandwidth = pcie_fabric ? c.intra_node.bandwidth : c.gpu_spec.pcie_bandwidth;
  shape_.pcie_first = static_cast<uint32_t>(links_.size());
  for (int gpu = 0; gpu < gpu_count_; ++gpu) {
    for (const char* dir : {"up", "down"}) {
      add_link(fmt::format("node{}.gpu{}.pcie.{}", node_of(gpu), gpu % g, dir), LinkClass::PCIE, pcie_bandwidth,
               pcie_fabric ? half_hop : core::Seconds(0));
    }
  }

  shape_.host_first = static_cast<uint32_t>(links_.size());
  if (pcie_fabric) {
    for (int node = 0; node < c.nodes; ++node) {
      for (int sw = 0; sw < shape_.nics_per_node; ++sw) {
        for (const char* dir : {"up", "down"}) {
          add_link(fmt::format("node{}.pcie{}.host.{}", node, sw, dir), LinkClass::PCIE, pcie_bandwidth,
                   core::Seconds(0));
        }
      }
    }
  }

  shape_.nic_first = static_cast<uint32_t>(links_.size());
  for (int node = 0; node < c.nodes; ++node) {
    for (int nic = 0; nic < shape_.nics_per_node; ++nic) {
      for (const char* dir : {"up", "down"}) {
        add_link(fmt::format("node{}.nic{}.{}", node, nic, dir), LinkClass::NIC, c.nic_link_bandwidth_of_node(node),
                 c.network.latency / 2);
      }
    }
  }
}

int Topology::rail_of(int gpu) const {
  return static_cast<int>(static_cast<int64_t>(gpu % gpus_per_node_) * shape_.nics_per_node / gpus_per_node_);
}

bool Topology::separate_rails() const {
  if (shape_.nics_per_node != gpus_per_node_ || count(LinkClass::NVLINK) == 0) return false;
  switch (cluster_.network.topology) {
    case TopologyKind::RAIL_OPTIMIZED:
    case TopologyKind::IDEAL: return true;
    // D-mod-k routing picks every fabric link of a route from the destination's lowest digit
    // (endpoint mod p): with whole nodes per leaf (p a multiple of the NIC count), that digit
    // determines the rail, so the routes to different rails share no fabric link, and relabelling
    // the rails is an automorphism of the tree and of its routes (fat_tree_route).
    case TopologyKind::FAT_TREE: return shape_.arity % shape_.nics_per_node == 0;
    case TopologyKind::DRAGONFLY:
    case TopologyKind::TORUS: return false;
  }
  return false;
}

void Topology::route(int from, int to, std::vector<uint32_t>& out) const {
  TRAINSIM_CHECK(from != to && from >= 0 && to >= 0 && from < gpu_count_ && to < gpu_count_,
                 fmt::format("no route from GPU {} to GPU {} in a cluster of {}", from, to, gpu_count_));
  if (node_of(from) == node_of(to)) {
    intra_route(from, to, out);
    return;
  }
  // Rail-optimized: a different rail is reached inside the source node first (NCCL's PXN), from
  // the GPU with the destination's local index, which sits on the destination's rail.
  int sender = from;
  if (cluster_.network.topology == TopologyKind::RAIL_OPTIMIZED && rail_of(from) != rail_of(to)) {
    sender = node_of(from) * gpus_per_node_ + to % gpus_per_node_;
    intra_route(from, sender, out);
  }
  const uint32_t nic_from =
      shape_.nic_first + 2 * static_cast<uint32_t>(node_of(sender) * shape_.nics_per_node + rail_of(sender));
  const uint32_t nic_to =
      shape_.nic_first + 2 * static_cast<uint32_t>(node_of(to) * shape_.nics_per_node + rail_of(to));
  out.push_back(shape_.pcie_first + 2 * static_cast<uint32_t>(sender));
  out.push_back(nic_from);
  fabric_route(sender, to, out);
  out.push_back(nic_to + 1);
  out.push_back(shape_.pcie_first + 2 * static_cast<uint32_t>(to) + 1);
}

void Topology::intra_route(int from, int to, std::vector<uint32_t>& out) const {
  const int g = gpus_per_node_;
  switch (cluster_.intra_node.fabric) {
    case IntraFabric::NVSWITCH:
      out.push_back(shape_.nvlink_first + 2 * static_cast<uint32_t>(from));
      out.push_back(shape_.nvlink_first + 2 * static_cast<uint32_t>(to) + 1);
      return;
    case IntraFabric::NVLINK_MESH: {
      const int peer = to % g;
      const int slot = peer < from % g ? peer : peer - 1;
      out.push_back(shape_.nvlink_first + static_cast<uint32_t>(from * (g - 1) + slot));
      return;
    }
    case IntraFabric::PCIE: {
      out.push_back(shape_.pcie_first + 2 * static_cast<uint32_t>(from));
      const int from_switch = rail_of(from);
      const int to_switch = rail_of(to);
      if (from_switch != to_switch) {
        const uint32_t node_first = shape_.host_first + 2 * static_cast<uint32_t>(node_of(from) * shape_.nics_per_node);
        out.push_back(node_first + 2 * static_cast<uint32_t>(from_switch));
        out.push_back(node_first + 2 * static_cast<uint32_t>(to_switch) + 1);
      }
      out.push_back(shape_.pcie_first + 2 * static_cast<uint32_t>(to) + 1);
      return;
    }
  }
}

void Topology::fabric_route(int from, int to, std::vector<uint32_t>& out) const {
  const int64_t nics = shape_.nics_per_node;
  const int64_t from_nic = node_of(from) * nics + rail_of(from);
  const int64_t to_nic = node_of(to) * nics + rail_of(to);
  switch (cluster_.network.topology) {
    case TopologyKind::FAT_TREE:
      fat_tree_route(from_nic, to_nic, 0, out);
      return;
    case TopologyKind::RAIL_OPTIMIZED:
      fat_tree_route(node_of(from), node_of(to), rail_of(from), out);
      return;
    case TopologyKind::DRAGONFLY:
      dragonfly_route(from_nic, to_nic, out);
      return;
    case TopologyKind::TORUS:
      torus_route(node_of(from), node_of(to), out);
      return;
    case TopologyKind::IDEAL:
      return;
  }
}

void Topology::route_to_aggregator(int gpu, Aggregator where, bool to_switch, std::vector<uint32_t>& out) const {
  TRAINSIM_CHECK(gpu >= 0 && gpu < gpu_count_, fmt::format("GPU {} outside a cluster of {}", gpu, gpu_count_));
  if (where == Aggregator::NVSWITCH) {
    TRAINSIM_CHECK(cluster_.intra_node.fabric == IntraFabric::NVSWITCH, "NVLS needs an NVSwitch");
    out.push_back(shape_.nvlink_first + 2 * static_cast<uint32_t>(gpu) + (to_switch ? 0 : 1));
    return;
  }
  TRAINSIM_CHECK(cluster_.nodes > 1 && cluster_.network.topology != TopologyKind::TORUS,
                 "in-network reduction needs a switched network between nodes");
  const uint32_t pcie = shape_.pcie_first + 2 * static_cast<uint32_t>(gpu);
  const uint32_t nic = shape_.nic_first + 2 * static_cast<uint32_t>(node_of(gpu) * shape_.nics_per_node + rail_of(gpu));
  if (to_switch) {
    out.push_back(pcie);
    out.push_back(nic);
  } else {
    out.push_back(nic + 1);
    out.push_back(pcie + 1);
  }
}

size_t Topology::count(LinkClass c) const {
  size_t n = 0;
  for (const Link& l : links_) n += l.link_class == c ? 1 : 0;
  return n;
}

core::BytesPerSecond Topology::total_bandwidth(LinkClass c) const {
  core::BytesPerSecond total(0);
  for (const Link& l : links_) {
    if (l.link_class == c) total += l.bandwidth;
  }
  return total;
}

}  // namespace trainsim::network
