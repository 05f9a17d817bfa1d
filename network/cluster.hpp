#pragma once
// The "cluster" section of a scenario: which GPUs, how many, and how they are connected.
//
//   "cluster": {
//     "gpu": "A100-SXM4-80GB",       // catalog name (`trainsim describe gpus`); default A100-SXM4-80GB
//     "nodes": 128,                  // >= 1; default 1
//     "gpus_per_node": 8,            // >= 1; default 8
//     "intra_node": {
//       "fabric": "nvswitch",        // nvswitch | nvlink-mesh | pcie; default nvswitch
//       "bandwidth": "300 GB/s",     // per GPU, per direction; default: the GPU's NVLink bandwidth
//                                    //   (its PCIe bandwidth when fabric is pcie)
//       "latency": "1 us"            // per hop; default 1 us
//     },
//     "network": {
//       "topology": "fat-tree",      // fat-tree | rail-optimized | dragonfly | torus | ideal; default fat-tree
//       "nics_per_node": 8,          // >= 1; default 8
//       "nic_bandwidth": "200 Gb/s", // per NIC, per direction; default 200 Gb/s
//       "latency": "2 us",           // per hop, NIC to NIC; default 2 us
//       "oversubscription": 1.0      // >= 1, downlink:uplink ratio of the switches; default 1;
//                                    //   must be 1 for "ideal" (a non-blocking crossbar)
//     }
//   }
//
// The analytic cost model (network/collective_cost.hpp) sees the topology only through the per-GPU
// NIC share and the oversubscription; the flow-level backend models the switches themselves.

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
  // Inter-node bandwidth available to one GPU when all GPUs of its node send at once:
  // nics_per_node * nic_bandwidth / gpus_per_node.
  core::BytesPerSecond nic_bandwidth_per_gpu() const;

  // Reads the section, resolving every default. Problems (unknown GPU with a "did you mean" hint,
  // values out of range, unknown keys) are recorded in r's Diagnostics; the caller throws.
  static ClusterConfig from_json(core::ObjectReader& r);
  // The fully resolved section, quantities as unit strings; from_json reads it back.
  core::Json to_json() const;
};

}  // namespace trainsim::network
