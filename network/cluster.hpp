#pragma once
// The "cluster" section of a scenario: which GPUs, how many, and how they are connected.
//
//   "cluster": {
//     "gpu": "A100-SXM4-80GB",       // catalog name (`trainsim describe gpus`), or an object describing
//                                    //   a GPU (sim/core/gpu_description.hpp); default A100-SXM4-80GB
//     "nodes": 128,                  // >= 1; default 1
//     "gpus_per_node": 8,            // >= 1; default 8
//     "intra_node": {
//       "fabric": "nvswitch",        // nvswitch | nvlink-mesh | pcie; default nvswitch (pcie for a
//                                    //   GPU without NVLink)
//       "bandwidth": "300 GB/s",     // per GPU, per direction; default: the GPU's NVLink bandwidth
//                                    //   (its PCIe bandwidth when fabric is pcie)
//       "latency": "1 us",           // per hop; default 1 us
//       "nvls": false,               // NVSwitch multicast/reduction (NVLink SHARP, NVSwitch gen 3 and
//                                    //   later); enables algorithm "nvls"; default false (NCCL enables
//                                    //   it where present: set it for H100/H200 HGX nodes once calibrated)
//       "nvls_bandwidth": "275 GB/s" // per GPU, effective: the rate at which the NVSwitch reduces
//                                    //   and multicasts one GPU's buffer; default 0.61 x bandwidth
//                                    //   (H100: ~275 GB/s algbw, ~480 GB/s busbw on 8 GPUs against
//                                    //   450 GB/s NVLink, NCCL maintainer in nccl-tests issue 212)
//     },
//     "network": {
//       "technology": "infiniband",  // infiniband | roce | ethernet: what the NICs and switches speak;
//                                    //   default infiniband (ethernet with in_network_aggregation
//                                    //   "switchml"). Decides which in-network features exist
//                                    //   (network/feasibility.hpp); the timing comes from the figures
//                                    //   below and the profile, not from this name
//       "topology": "fat-tree",      // fat-tree | rail-optimized | dragonfly | torus | ideal; default fat-tree
//       "nics_per_node": 8,          // >= 1; default 8
//       "nic_bandwidth": "200 Gb/s", // per NIC, per direction; default 200 Gb/s
//       "latency": "2 us",           // per hop, NIC to NIC; default 2 us
//       "oversubscription": 1.0,     // >= 1, downlink:uplink ratio of the switches; default 1;
//                                    //   must be 1 for "ideal" (a non-blocking crossbar)
//       "radix": 64,                 // ports per switch (fat-tree, rail-optimized, dragonfly), even,
//                                    //   >= 4; half face down, half up; default 64
//       "levels": 0,                 // fat-tree switch levels; 0 (default): as many as the endpoints
//                                    //   need, (radix/2)^levels >= endpoints
//       "torus_dims": [4, 4, 8],     // torus: 2 or 3 sizes whose product is "nodes"; default []: 3
//                                    //   dimensions as equal as the node count allows
//       "dragonfly_groups": 0,       // dragonfly: groups of leaf switches; 0 (default): about the
//                                    //   square root of the leaf count
//       "in_network_reduction": false, // the switches aggregate; true is in_network_aggregation
//                                    //   "sharp"; default false
//       "in_network_aggregation": "sharp" // or "switchml", or an object (InNetworkAggregation
//                                    //   below); enables algorithm "in-network" on switched
//                                    //   topologies; default: none
//     },
//     "price_per_gpu_hour": 2.5,     // USD per GPU-hour, 0.001 to 1000; optional, no default: given (with
//                                    //   training.tokens), time_to_train gains "cost"
//     "host_memory": "2 TiB",        // host DRAM per node (offload capacity); default 2 TiB
//     "gpu_speed_spread": 0.01,      // relative std. dev. of per-GPU sustained speed; the job runs at
//                                    //   its slowest rank's pace (core/variability.hpp); default 0
//     "host": { ... },               // the node's CPUs and host links (HostSpec below)
//     "nvme": { ... },               // the node's NVMe drives (NvmeSpec below); absent: none
//     "storage": { ... },            // checkpoint storage tiers (network/storage.hpp); absent: none
//     "reliability": { ... }         // failure rate and restart cost (network/storage.hpp); absent:
//                                    //   the defaults there (used only with training.checkpoint)
//   }
//
// The analytic cost model (network/collective_cost.hpp) sees the topology only through the per-GPU
// NIC share and the oversubscription; the flow-level backend models the switches themselves.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "network/storage.hpp"
#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"

namespace trainsim::network {

// Bounds on cluster.price_per_gpu_hour, in USD (docs/hardening.md: why these).
inline constexpr double MIN_PRICE_PER_GPU_HOUR = 0.001;
inline constexpr double MAX_PRICE_PER_GPU_HOUR = 1000;

enum class IntraFabric { NVSWITCH, NVLINK_MESH, PCIE };
// What the inter-node NICs and switches speak: InfiniBand, RDMA over Converged Ethernet, or plain
// Ethernet (TCP/UDP).
enum class NetworkTechnology { INFINIBAND, ROCE, ETHERNET };
// The kind of inter-node network (the graph itself is network::Topology, network/topology.hpp).
enum class TopologyKind { FAT_TREE, RAIL_OPTIMIZED, DRAGONFLY, TORUS, IDEAL };
// How a fat-tree or rail-optimized tree picks a flow's way up (network/topology.hpp): STATIC, one
// up port per destination (D-mod-k, as a subnet manager's linear forwarding tables do); ADAPTIVE,
// the switches spread every flow over all their up ports (InfiniBand adaptive routing, packet
// spraying), modelled as each subtree's up links and down links pooled into one link each of their
// summed bandwidth.
enum class Routing { STATIC, ADAPTIVE };
std::string to_string(IntraFabric f);  // "nvswitch", "nvlink-mesh", "pcie"
std::string to_string(TopologyKind t); // "fat-tree", "rail-optimized", "dragonfly", "torus", "ideal"
std::string to_string(NetworkTechnology t);  // "infiniband", "roce", "ethernet"
std::string to_string(Routing r);            // "static", "adaptive"

struct IntraNode {
  IntraFabric fabric = IntraFabric::NVSWITCH;
  core::BytesPerSecond bandwidth;  // per GPU, per direction (default: the GPU's NVLink, or PCIe)
  core::Seconds latency = core::Seconds(1e-6);
  bool nvls = false;  // the NVSwitch reduces and multicasts (NVLink SHARP)
  // Effective NVLS rate per GPU (no profile efficiency applies to it); default NVLS_SHARE x bandwidth.
  core::BytesPerSecond nvls_bandwidth;
};
// NVLS's default rate as a share of the nominal NVLink bandwidth: 275 of 450 GB/s on H100 (peak
// all_reduce algbw ~275 GB/s, busbw ~480 GB/s on 8 GPUs; S. Jeaugey, NCCL, nccl-tests issue 212).
inline constexpr double NVLS_SHARE = 275.0 / 450.0;

// Where the switches aggregate, and their limits.
//   kind     "sharp": InfiniBand SHARP as NCCL's CollNet uses it: the members of a node first
//            reduce-scatter over NVLink, each then streams its 1/k shard through its NIC into the
//            switch tree, which reduces and returns it, and an all-gather inside the node follows
//            (Graham et al., COMHPC 2016; NCCL 2.7+ CollNet). Any group spanning nodes.
//            "switchml": a programmable top-of-rack switch (Sapio et al., "Scaling Distributed
//            Machine Learning with In-Network Aggregation", NSDI 2021): workers stream packets of
//            integer gradients into a pool of `pool_size` aggregation slots; a slot is reused when its
//            result has come back, so a worker's rate is at most pool_size * payload / RTT, and at most
//            packet_rate * payload, and the packet headers take their share of the line rate. Only
//            all_reduce, and only for groups whose nodes hang from one switch (a rack).
//   pool_size       aggregation slots (switchml); default 512: the bandwidth-delay product of a
//                   100 Gb/s port over a ~10 us RTT in 256-byte packets (NSDI 2021, section 4)
//   packet_payload  gradient bytes per packet (switchml); default 256 B (64 32-bit elements); payload
//                   + header at most 9,216 B (a jumbo Ethernet frame)
//   packet_header   header bytes per packet on the wire (switchml); default 66 B (Ethernet 18 with
//                   FCS, preamble and gap 20, IPv4 20, UDP 8)
//   packet_rate     packets per second one switch port aggregates (switchml); default 0: line rate,
//                   else 1,000 to 1e12
enum class AggregationKind { NONE, SHARP, SWITCHML };
std::string to_string(AggregationKind k);  // "none", "sharp", "switchml"
struct InNetworkAggregation {
  AggregationKind kind = AggregationKind::NONE;
  int pool_size = 512;
  core::Bytes packet_payload = core::Bytes(256);
  core::Bytes packet_header = core::Bytes(66);
  double packet_rate = 0;
};

struct InterNode {
  NetworkTechnology technology = NetworkTechnology::INFINIBAND;
  TopologyKind topology = TopologyKind::FAT_TREE;
  int nics_per_node = 8;
  core::BytesPerSecond nic_bandwidth = core::BytesPerSecond(200e9 / 8);  // per NIC, per direction
  core::Seconds latency = core::Seconds(2e-6);
  double oversubscription = 1.0;  // >= 1: uplink bandwidth = downlink / oversubscription
  Routing routing = Routing::STATIC;  // fat-tree and rail-optimized trees only
  int radix = 64;                 // ports per switch, even
  int levels = 0;                 // fat-tree levels; 0: as many as needed
  std::vector<int> torus_dims;    // empty: chosen by torus_dimensions()
  int dragonfly_groups = 0;       // 0: chosen by the topology builder
  bool in_network_reduction = false;  // aggregation.kind != NONE (the original key)
  InNetworkAggregation aggregation;
  // The key that asked for the aggregation: "in_network_aggregation", or "in_network_reduction" when
  // only that one was given (feasibility messages point at it).
  std::string aggregation_key = "in_network_aggregation";
  // aggregation.kind, or SHARP where only in_network_reduction is set.
  AggregationKind aggregation_kind() const {
    return aggregation.kind != AggregationKind::NONE ? aggregation.kind
           : in_network_reduction                    ? AggregationKind::SHARP
                                                     : AggregationKind::NONE;
  }
  // How many nodes hang from one switch that can aggregate for them (SwitchML's rack): the leaf's
  // down ports over the NICs per node (rail-optimized: one NIC of each node per rail leaf; ideal:
  // every node).
  int nodes_per_switch(int nodes) const;
};

// The torus a cluster of `nodes` nodes gets when "torus_dims" is not given: 3 dimensions, each a
// divisor of `nodes`, as equal as possible, largest first (a prime count gives {nodes, 1, 1}).
std::vector<int> torus_dimensions(int nodes);
// Fat-tree levels a tree of `radix`-port switches needs for `endpoints` NIC ports: the least h with
// (radix/2)^h >= endpoints (1 for one leaf).
int fat_tree_levels(int64_t endpoints, int radix);

// The host side of a node, for offloading (models/offload.hpp): its CPUs, which run a CPU optimizer
// step, and the links between its GPUs and host memory. Defaults describe a DGX A100 (640 GB)
// node: 2 x AMD EPYC 7742 (64 cores each, 2.25 GHz base, two 256-bit FMA pipes per Zen 2 core:
// 32 fp32 FLOP per cycle), 8 DDR4-3200 channels per socket (2 x 8 x 25.6 GB/s), 2 TB of memory,
// and four PCIe 4.0 switches each holding two GPUs behind one x16 uplink to the CPUs (NVIDIA DGX
// A100 user guide / datasheet; AMD EPYC 7742 product page).
//   cores               CPU cores per node; default 128
//   core_flops          fp32 FLOP/s of one core with its vector units; default 72 GFLOP/s
//   memory_bandwidth    peak DRAM bandwidth per node; default 409.6 GB/s
//   memory_efficiency   fraction of it a streaming optimizer step reaches; default 0.55: about
//                       STREAM Triad's 0.8 of the DDR peak, times 34 counted bytes per parameter
//                       over the ~48 the CPU moves with the write-allocate reads of the 4 arrays it
//                       stores (DeepSpeed's CPU-Adam uses ordinary stores)
//   link_bandwidth      between the node's GPUs and host memory, per direction, shared by all the
//                       node's GPUs (the CPUs' PCIe root ports); default max(1, gpus_per_node / 2) x
//                       the GPU's PCIe bandwidth (DGX-1, DGX-2, DGX A100 and DGX H100 put two GPUs
//                       behind each x16 switch uplink)
//   gpu_link_bandwidth  between one GPU and the host, per direction; default the GPU's PCIe
//                       bandwidth (set it for CPU-GPU NVLink, e.g. 50 GB/s on Summit's POWER9)
//   link_efficiency     fraction of those links' nominal bandwidth that pinned copies reach; default
//                       0.8 (CUDA samples' bandwidthTest, pinned: ~12.2 of 15.75 GB/s on PCIe 3.0 x16,
//                       ~25 of 31.5 on PCIe 4.0)
// CPU work of the GPUs of a node shares the node: each GPU's optimizer step gets 1/gpus_per_node of
// its cores and of its memory bandwidth (every rank steps at the same time in data parallelism).
struct HostSpec {
  int cores = 128;
  core::FlopsPerSecond core_flops = core::FlopsPerSecond(72e9);
  core::BytesPerSecond memory_bandwidth = core::BytesPerSecond(409.6e9);
  double memory_efficiency = 0.55;
  core::BytesPerSecond link_bandwidth;      // 0: the default (ClusterConfig::host_link_bandwidth())
  core::BytesPerSecond gpu_link_bandwidth;  // 0: the default (ClusterConfig::gpu_host_link_bandwidth())
  double link_efficiency = 0.8;
};

// The NVMe drives of a node (ZeRO-Infinity's offload target), aggregate per node. No defaults: a
// scenario that offloads to "nvme" must describe its drives (one PCIe 4.0 SSD reads ~7 GB/s).
//   read_bandwidth, write_bandwidth   per node (required)
//   capacity                          per node; default: unlimited (not checked)
struct NvmeSpec {
  core::BytesPerSecond read_bandwidth;
  core::BytesPerSecond write_bandwidth;
  std::optional<core::Bytes> capacity;
};

// One pool of identical nodes of a cluster of several GPU types ("cluster.pools", docs/scenario.md
// "Mixed GPU types"): its GPU and node count, and optionally its nodes' NICs. Pools share the
// cluster's gpus_per_node, intra_node, host sections and its network's fabric (topology, switches,
// latency, oversubscription); ranks are given to the pools in list order.
//
//   { "name": "a100", "gpu": "A100-SXM4-80GB", "nodes": 4,
//     "network": { "nics_per_node": 4, "nic_bandwidth": "100 Gb/s" } }   // optional: its nodes' NICs
//
// A pool's "network" gives only nics_per_node and nic_bandwidth (each defaults to the cluster's
// network); a transfer between two nodes crosses both nodes' NICs, so it runs at the slower side.
struct NodePool {
  std::string name;                // unique among the pools
  std::string gpu;                 // gpu_spec.name
  core::GpuSpec gpu_spec;
  std::string gpu_base;            // a described GPU's "base"
  bool gpu_described = false;
  int nodes = 1;
  int first_rank = 0;              // its ranks: [first_rank, first_rank + nodes x gpus_per_node)
  // Its nodes' NICs: pools[i].network, resolved (the cluster's network where not given).
  bool own_network = false;        // "network" given
  int nics_per_node = 8;
  core::BytesPerSecond nic_bandwidth = core::BytesPerSecond(200e9 / 8);  // per NIC, per direction
  // The pool GPU's device profile: its built-in profile with the job's stack costs (filled by the
  // scenario reader, sim/plan/scenario.cpp; ClusterConfig::from_json leaves the defaults).
  core::DeviceProfile device = core::DeviceProfile::defaults();
};

struct ClusterConfig {
  std::string gpu = "A100-SXM4-80GB";  // the GPU's name (gpu_spec.name)
  core::GpuSpec gpu_spec;            // resolved from the catalog, or as the scenario describes it
  std::string gpu_base;              // a described GPU's "base" ("" when described from scratch)
  bool gpu_described = false;        // "gpu" was an object (core::GpuChoice)
  int nodes = 1;
  int gpus_per_node = 8;
  IntraNode intra_node;
  InterNode network;
  std::optional<double> price_per_gpu_hour;  // USD; absent: no cost in the report
  core::Bytes host_memory = core::Bytes(2 * core::TiB);  // per node
  // Relative standard deviation of the GPUs' sustained speed (core/variability.hpp); 0: identical
  // GPUs. In [0, 0.25].
  double gpu_speed_spread = 0;
  HostSpec host;
  std::optional<NvmeSpec> nvme;              // absent: the nodes have no NVMe for offloading
  std::optional<StorageSpec> storage;        // checkpoint storage (network/storage.hpp); absent: none
  std::optional<ReliabilitySpec> reliability;  // absent: ReliabilitySpec's defaults
  // Several GPU types: the pools, in rank order (nodes is their sum; gpu and gpu_spec are the first
  // pool's). Empty: one GPU type, `gpu` on every node.
  std::vector<NodePool> pools;

  int world_size() const { return nodes * gpus_per_node; }
  // The pool that holds `rank` (0 without pools). REQUIRES: rank in [0, world_size()).
  int pool_of(int rank) const;
  // The GPU of pool `pool` (gpu_spec without pools).
  const core::GpuSpec& gpu_of_pool(int pool) const {
    return pools.empty() ? gpu_spec : pools[static_cast<size_t>(pool)].gpu_spec;
  }
  // host.link_bandwidth and host.gpu_link_bandwidth, or their defaults when 0 (see HostSpec).
  core::BytesPerSecond host_link_bandwidth() const;
  core::BytesPerSecond gpu_host_link_bandwidth() const;
  int node_of(int rank) const { return rank / gpus_per_node; }
  // One node's bandwidth to the parallel file system while every writing node (parallel_fs
  // writing_nodes, or all nodes) writes, or every node reads, at once: min(its link to it, the
  // aggregate bandwidth / those nodes). Its link: parallel_fs.node_bandwidth, else its compute NICs
  // (nics_per_node x nic_bandwidth). REQUIRES: storage->parallel_fs.
  core::BytesPerSecond storage_node_bandwidth(bool write) const;
  // Inter-node bandwidth available to one GPU when all GPUs of its node send at once:
  // nics_per_node * nic_bandwidth / gpus_per_node (the cluster's network: its fabric's NICs).
  core::BytesPerSecond nic_bandwidth_per_gpu() const;
  // Whether some pool gives its own network (its nodes' NICs differ from the cluster's network).
  bool pool_networks() const;
  // The same for one node: its pool's NICs (the cluster's network without pool networks).
  // REQUIRES: node in [0, nodes).
  core::BytesPerSecond nic_bandwidth_per_gpu_of_node(int node) const;
  // The bandwidth of each of the node's cluster.network.nics_per_node NIC links in the flow-level
  // platform: its pool's NICs together (nics x bandwidth) spread over the fabric's NIC ports, so that
  // the node's total and each GPU's share are its pool's (network.nic_bandwidth without pool networks).
  core::BytesPerSecond nic_link_bandwidth_of_node(int node) const;
  // The fabric's switch links are built for the fastest NIC link (before oversubscription):
  // network.nic_bandwidth without pool networks, else the largest nic_link_bandwidth_of_node.
  core::BytesPerSecond fabric_link_bandwidth() const;
  // The catalog GPU whose built-in device profile applies (DeviceProfile::defaults_for): the GPU
  // itself, a described GPU's base, or "" for a GPU described from scratch (the datasheet defaults).
  std::string profile_gpu() const { return gpu_described ? gpu_base : gpu_spec.name; }

  // Reads the section, resolving every default. Problems (unknown GPU with a "did you mean" hint,
  // values out of range, unknown keys) are recorded in r's Diagnostics; the caller throws.
  static ClusterConfig from_json(core::ObjectReader& r);
  // The fully resolved section, quantities as unit strings; from_json reads it back.
  core::Json to_json() const;
};

}  // namespace trainsim::network
