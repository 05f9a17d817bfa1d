#pragma once
// The physical network of a cluster as a graph of directed links, built from the "cluster" section:
// what a flow-level simulator needs (SimGrid's platform is built from it in sim/engine) and what a
// collective algorithm needs to know about placement (node, rail).
//
// Inside a node: every GPU has an NVLink port into an NVSwitch (star), or point-to-point NVLink
// links to every other GPU (nvlink-mesh, the intra-node bandwidth split evenly over the peers), or
// PCIe only (GPU -> PCIe switch -> host bridge). Every GPU also has a PCIe link to its node's PCIe
// switch, through which it reaches the NIC of its rail (NIC k serves GPUs k*g/n .. (k+1)*g/n - 1,
// g = gpus_per_node, n = nics_per_node).
// Across nodes, from the NICs:
//   fat-tree        leaf switches of `radix/2` down-ports, spines above; uplink bandwidth is the
//                   down-link bandwidth / oversubscription; levels as needed for the node count
//   rail-optimized  a fat-tree per rail: NIC k of every node on rail k's switches; crossing rails
//                   goes through the node (NVLink to the GPU of the other rail, as NCCL's PXN does)
//   dragonfly       groups of leaf switches all-to-all inside a group, one global link between
//                   every pair of groups
//   torus           2D or 3D torus of nodes (dimensions chosen to be as cubic as possible), NICs
//                   as the torus ports
//   ideal           one non-blocking switch: only the NIC links limit
// Links are full-duplex: each direction is its own directed link, so traffic in one direction does
// not slow the other (SimGrid's SPLITDUPLEX).
//
// Shapes and bandwidths in detail (p = radix/2; all bandwidths nominal: efficiencies stay in
// core::NetworkProfile):
//   NVLink    nvswitch: a port per GPU ("node0.gpu3.nvlink.up" / ".down") at intra_node.bandwidth;
//             nvlink-mesh: one link per ordered GPU pair ("node0.gpu3.gpu5.nvlink") at
//             intra_node.bandwidth / (gpus_per_node - 1)
//   PCIe      one link pair per GPU to its PCIe switch ("node0.gpu3.pcie.up"); there is one PCIe switch
//             per NIC, GPU k sits on the switch of its rail. At gpu_spec.pcie_bandwidth, or at
//             intra_node.bandwidth for fabric pcie, which also adds a link pair from every PCIe
//             switch to the host bridge ("node0.pcie1.host.up") for traffic between PCIe switches
//   NIC       one link pair per NIC to the first network switch ("node0.nic3.up") at nic_bandwidth
//             (a pool with its own network: its nodes' nics x nic_bandwidth over the cluster's
//             nics_per_node ports, ClusterConfig::nic_link_bandwidth_of_node)
//   fabric    switch-to-switch links at nic_bandwidth / oversubscription (with pool networks the
//             fastest NIC link's, ClusterConfig::fabric_link_bandwidth):
//             fat-tree: a k-ary n-tree (Petrini & Vanneschi 1997) of arity p over the endpoints (NIC k
//             of node n is endpoint n*nics_per_node + k; in rail-optimized one tree per rail whose
//             endpoints are the nodes); level j holds ceil(E/p^j) * p^(j-1) switches, each with p up
//             links ("l1s4.l2s1.up", prefixed "rail2." per rail); levels: network.levels, or as few
//             as reach every endpoint. Routing (network.routing "static", the default): up to the
//             lowest common level, choosing the up port from the destination's digits (D-mod-k),
//             then the unique way down. With "adaptive" the links between levels j and j + 1 are
//             pooled per level-j subtree (endpoints w * p^j to (w + 1) * p^j - 1): one up link and
//             one down link ("l1w7.up", "rail2.l2w0.down") at p^j times a link's bandwidth, and a
//             route crosses the pooled up links of the source's subtrees below the lowest common
//             level, then the pooled down links of the destination's: the fluid limit of switches
//             that spread each flow over every up port (adaptive routing, packet spraying), in
//             which flows collide only where a subtree's whole up (or down) capacity is short.
//             dragonfly: leaves of p endpoints, `network.dragonfly_groups` groups of equal leaf count
//             (the last may be smaller), all-to-all local links in a group ("group1.leaf0.leaf3"),
//             one global link per ordered pair of groups ("group1.group4"), attached to leaf
//             (other group index, skipping its own) mod group size. Minimal routing: local, global,
//             local.
//             torus: a router per node, two links per dimension of size > 1 ("node5.torus.y+",
//             "node5.torus.y-") at nic_bandwidth; dimension-order routing, the shorter way round (the
//             positive way on ties).
//   host      after the fabric, for offload copies (core::CopyDirection): per GPU a link pair to its
//             node's host memory ("node0.gpu3.host.up" toward the host, ".down" back) at
//             host.gpu_link_bandwidth; per node a pair shared by the node's GPUs ("node0.host.up",
//             "node0.host.down") at host.link_bandwidth; and with cluster.nvme a pair to the node's
//             drives ("node0.nvme.write" at nvme.write_bandwidth, "node0.nvme.read" at
//             read_bandwidth). A copy crosses the GPU's link and the node's (and the drives' for
//             NVMe: ZeRO-Infinity stages NVMe traffic through host memory); host <-> NVMe transfers
//             cross the drives' links only. These links carry nothing else, so the GPUs of a node
//             contend with each other for host bandwidth, not with their network traffic.
//   storage   with cluster.storage.parallel_fs, per node a pair to the parallel file system
//             ("node0.storage.write", "node0.storage.read") at ClusterConfig::storage_node_bandwidth:
//             the node's link, or its share of the aggregate when every node writes at once (the
//             file system's servers are not modelled beyond that share, so a representative node's
//             flows see what all nodes together leave it). Checkpoint writes (CopyDirection
//             HOST_TO_STORAGE, DEVICE_TO_STORAGE) cross the writing GPU's rail NIC up link first
//             (parallel_fs.network "compute"; not with "dedicated"), so they contend with training
//             traffic; DEVICE_TO_STORAGE starts on the GPU's PCIe link (GPUDirect Storage).
// Latency: network.latency is end-to-end NIC to NIC (docs/scenario.md), so each NIC link carries half
// of it and fabric links none; intra_node.latency is per GPU-to-GPU hop, split over the two links of
// a switched hop (NVSwitch port, PCIe link of fabric pcie). Other links carry none.
//
// Routes are computed on demand (never an all-pairs table: 16,384 GPUs), deterministically: static
// destination-based up/down routing in trees (like SimGrid's fat-tree zone and InfiniBand's static
// routing), dimension-order in tori, minimal routing in dragonflies.

#include <cstdint>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::network {

enum class LinkClass : uint8_t { NVLINK, PCIE, NIC, FABRIC, HOST, STORAGE };
inline constexpr int LINK_CLASS_COUNT = 6;
std::string to_string(LinkClass c);  // "nvlink", "pcie", "nic", "fabric", "host", "storage"

struct Link {
  std::string name;     // stable and readable, e.g. "node12.gpu3.nvlink.up", "leaf4.spine1.down"
  LinkClass link_class = LinkClass::FABRIC;
  core::BytesPerSecond bandwidth;
  core::Seconds latency;
};

// Where in-network reductions happen (schedule.hpp's IN_NETWORK endpoint).
enum class Aggregator : uint8_t {
  NVSWITCH,  // the node's NVSwitch (NVLS): reached over the GPU's NVLink port
  NETWORK    // the first network switch (SHARP, SwitchML): reached over the GPU's PCIe link and NIC
};

class Topology {
 public:
  // REQUIRES: `cluster` passed ClusterConfig::from_json's checks.
  static Topology build(const ClusterConfig& cluster);

  int gpu_count() const { return gpu_count_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int node_of(int gpu) const { return gpu / gpus_per_node_; }
  int rail_of(int gpu) const;  // the NIC index of the GPU inside its node
  // Whether every GPU's inter-node traffic to a GPU of its own rail crosses only links of that rail,
  // intra-node traffic none of any rail, and relabelling the rails maps the network onto itself:
  // one NIC per GPU, NVLink inside the node (on PCIe-only nodes intra-node traffic shares the PCIe
  // tree with the NICs), and a rail-optimized fabric, an ideal switch, or a fat-tree whose leaves
  // hold whole nodes (radix/2 a multiple of nics_per_node: its static routes to different rails
  // use different switch links).
  bool separate_rails() const;
  const std::vector<Link>& links() const { return links_; }
  const ClusterConfig& cluster() const { return cluster_; }

  // Appends to `out` the directed links a transfer from GPU `from` to GPU `to` crosses, in order.
  // REQUIRES: from != to, both in [0, gpu_count()).
  void route(int from, int to, std::vector<uint32_t>& out) const;

  // Appends the links between GPU `gpu` and the switch that reduces for it (toward the switch when
  // `to_switch`, else back). REQUIRES: NVSWITCH only with fabric nvswitch; NETWORK only with more
  // than one node and a switched topology (not torus).
  void route_to_aggregator(int gpu, Aggregator where, bool to_switch, std::vector<uint32_t>& out) const;

  // Appends the links a copy of GPU `gpu` in direction `d` crosses, in order (for NVME_TO_HOST and
  // HOST_TO_NVME, the drives' link of the GPU's node). REQUIRES: gpu in [0, gpu_count()); a
  // direction involving NVMe only with cluster.nvme, to storage only with cluster.storage.parallel_fs.
  void copy_route(int gpu, core::CopyDirection d, std::vector<uint32_t>& out) const;

  // Fat-tree and rail-optimized fabrics (tree_levels() > 1): a switch-to-switch link by its
  // position. Endpoints are numbered per tree (fat-tree: NIC k of node n is n * nics_per_node + k;
  // rail-optimized: node n in every rail's tree) and read as digits base tree_arity(). The link
  // between level `level` and level + 1 (up, or its down twin) whose lower switch serves the
  // endpoints of `digits`' digits from `level` upward and whose port is digit level - 1 is named by
  // `digits`: its digits below `level` - 1 and its digits from `level` (the lower switch) and digit
  // level - 1 (the up port). A route from endpoint a to b crosses, below their lowest common level,
  // the up link of digits (a's digits from `level`, b's below it) and the down link of digits b: so
  // a permutation of the endpoints that acts on each digit alone (digit i of the image a function
  // of digit i) maps every route onto the route of the images, link by link. With adaptive routing a
  // pooled link is named by its subtree's first endpoint (digits below `level` at 0) and has no port:
  // the same permutations map its routes onto routes.
  struct TreeLink {
    int tree = 0;         // rail, for rail-optimized; 0 for a fat-tree
    int level = 1;        // 1 .. tree_levels() - 1: the link's lower switch's level
    bool up = true;
    int64_t digits = 0;
  };
  int64_t tree_arity() const { return shape_.arity; }
  int tree_levels() const { return shape_.levels; }
  // Whether `link` is a tree's switch-to-switch link, and which (into `out`).
  bool tree_link(uint32_t link, TreeLink& out) const;
  // The id of the tree link at `l`. REQUIRES: l names a link of this topology's trees.
  uint32_t tree_link_id(const TreeLink& l) const;

  // Links of a class and their total bandwidth, for `trainsim describe` and reports.
  size_t count(LinkClass c) const;
  core::BytesPerSecond total_bandwidth(LinkClass c) const;

 private:
  // The first link of each block of links_ and the fabric's shape: link ids are computed from these
  // (topology.cpp documents the order), so route() never searches.
  struct Shape {
    int nics_per_node = 1;
    uint32_t nvlink_first = 0;  // nvswitch: 2 per GPU; nvlink-mesh: g-1 per GPU; pcie: none
    uint32_t pcie_first = 0;    // 2 per GPU
    uint32_t host_first = 0;    // fabric pcie: 2 per PCIe switch (one per NIC)
    uint32_t nic_first = 0;     // 2 per NIC
    uint32_t fabric_first = 0;  // the inter-node topology's links
    int64_t endpoints = 0;      // fat-tree: per tree; dragonfly: NICs
    int64_t arity = 1;          // p = radix/2
    int levels = 0;             // fat-tree
    int64_t leaves_per_group = 1;  // dragonfly
    int64_t groups = 1;            // dragonfly
    uint32_t global_first = 0;     // dragonfly: first global link
    std::vector<int> torus_dims;   // torus: dimensions of size > 1
    uint32_t gpu_host_first = 0;   // 2 per GPU: its link to host memory
    uint32_t node_host_first = 0;  // 2 per node: the node's shared host link
    uint32_t nvme_first = 0;       // with cluster.nvme, 2 per node: write then read
    uint32_t storage_first = 0;    // with cluster.storage.parallel_fs, 2 per node: write then read
  };

  void add_link(std::string name, LinkClass c, core::BytesPerSecond bandwidth, core::Seconds latency);
  void build_intra_node();
  void build_fat_trees();
  void build_dragonfly();
  void build_torus();
  void build_host_links();
  void intra_route(int from, int to, std::vector<uint32_t>& out) const;
  // Between the NICs of GPUs on the same rail (or any NICs when the fabric is shared).
  void fabric_route(int from, int to, std::vector<uint32_t>& out) const;
  void fat_tree_route(int64_t from, int64_t to, int tree, std::vector<uint32_t>& out) const;
  void dragonfly_route(int64_t from, int64_t to, std::vector<uint32_t>& out) const;
  void torus_route(int from_node, int to_node, std::vector<uint32_t>& out) const;

  Shape shape_;
  int gpu_count_ = 0;
  int gpus_per_node_ = 1;
  std::vector<Link> links_;
  // Implementation-defined indexing that lets route() find links without search (documented in
  // topology.cpp): the first link of each fat-tree level, per tree.
  std::vector<uint32_t> index_;
  ClusterConfig cluster_;
};

}  // namespace trainsim::network
