#pragma once
// The "cluster" section of a scenario: which GPUs, how many, and how they are connected.

#include <string>

#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"

namespace trainsim::network {

enum class IntraFabric { NVSWITCH, NVLINK_MESH, PCIE };
enum class Topology { FAT_TREE, RAIL_OPTIMIZED, DRAGONFLY, TORUS, IDEAL };
std::string to_string(IntraFabric f);  // "nvswitch", "nvlink-mesh", "pcie"
std::string to_string(Topology t);     // "fat-tree", "rail-optimized", "dragonfly", "torus", "ideal"

struct IntraNode {
  IntraFabric fabric = IntraFabric::NVSWITCH;
  core::BytesPerSecond bandwidth;  // per GPU, per direction (default: the GPU's NVLink, or PCIe)
  core::Seconds latency = core::Seconds(1e-6);
};

struct InterNode {
  Topology topology = Topology::FAT_TREE;
  int nics_per_node = 8;
  core::BytesPerSecond nic_bandwidth = core::BytesPerSecond(200e9 / 8);  // per NIC, per direction
  core::Seconds latency = core::Seconds(2e-6);
  double oversubscription = 1.0;  // >= 1: uplink bandwidth = downlink / oversubscription
};

struct ClusterConfig {
  std::string gpu = "A100-SXM4-80GB";
  core::GpuSpec gpu_spec;            // resolved from the catalog
  int nodes = 1;
  int gpus_per_node = 8;
  IntraNode intra_node;
  InterNode network;

  int world_size() const { return nodes * gpus_per_node; }
  int node_of(int rank) const { return rank / gpus_per_node; }
  // Inter-node bandwidth available to one GPU when all GPUs of its node send at once.
  core::BytesPerSecond nic_bandwidth_per_gpu() const;

  static ClusterConfig from_json(core::ObjectReader& r);
  core::Json to_json() const;
};

}  // namespace trainsim::network
