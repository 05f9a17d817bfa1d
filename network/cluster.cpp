#include "network/cluster.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/error.hpp"
#include "sim/core/gpu_description.hpp"

namespace trainsim::network {
namespace {

constexpr const char* DEFAULT_GPU = "A100-SXM4-80GB";

const std::vector<std::string>& fabric_names() {
  static const std::vector<std::string> names = {"nvswitch", "nvlink-mesh", "pcie"};
  return names;
}

const std::vector<std::string>& technology_names() {
  static const std::vector<std::string> names = {"infiniband", "roce", "ethernet"};
  return names;
}

const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> names = {"fat-tree", "rail-optimized", "dragonfly", "torus", "ideal"};
  return names;
}

const std::vector<std::string>& routing_names() {
  static const std::vector<std::string> names = {"static", "adaptive"};
  return names;
}

// Index of `name` in `names`; REQUIRES: present (ObjectReader::choice only returns allowed values).
size_t index_of(const std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  TRAINSIM_CHECK(false, fmt::format("\"{}\" is not an allowed choice", name));
  return 0;
}

core::BytesPerSecond positive_bandwidth(core::ObjectReader& r, std::string_view key, core::BytesPerSecond fallback) {
  const core::BytesPerSecond b = r.bandwidth(key, fallback);
  if (b.value() <= 0) {
    r.problem(key, fmt::format("must be positive, found {}", core::format_bandwidth(b)));
    return fallback;
  }
  return b;
}

// The fabric inside a node when the scenario names none: NVSwitch, or PCIe for a GPU without NVLink.
IntraFabric default_fabric(const core::GpuSpec& gpu) {
  return gpu.nvlink_bandwidth.value() > 0 ? IntraFabric::NVSWITCH : IntraFabric::PCIE;
}

void read_intra_node(core::ObjectReader& r, const core::GpuSpec& gpu, IntraNode& out) {
  out.fabric = static_cast<IntraFabric>(
      index_of(fabric_names(), r.choice("fabric", to_string(default_fabric(gpu)), fabric_names())));
  const core::BytesPerSecond fallback =
      out.fabric == IntraFabric::PCIE ? gpu.pcie_bandwidth : gpu.nvlink_bandwidth;
  if (fallback.value() <= 0 && !r.has("bandwidth")) {
    r.problem("bandwidth", fmt::format("missing: {} has no NVLink, so fabric \"{}\" needs its bandwidth per GPU and "
                                       "direction, e.g. \"100 GB/s\" (or fabric \"pcie\")",
                                       gpu.name, to_string(out.fabric)));
  }
  out.bandwidth = positive_bandwidth(r, "bandwidth", fallback.value() > 0 ? fallback : gpu.pcie_bandwidth);
  out.latency = r.duration("latency", out.latency);
  out.nvls = r.boolean("nvls", out.nvls);  // what the node's hardware allows: network/feasibility.hpp
  out.nvls_bandwidth = positive_bandwidth(r, "nvls_bandwidth", out.bandwidth * NVLS_SHARE);
  if (r.has("nvls_bandwidth") && !out.nvls) r.problem("nvls_bandwidth", "is only used with \"nvls\": true");
  r.finish();
}

// Checks of the network section that depend on the node count.
void check_network_shape(core::ObjectReader& r, int nodes, InterNode& net) {
  if (!net.torus_dims.empty()) {
    int64_t product = 1;
    for (int d : net.torus_dims) product *= d;
    if (net.torus_dims.size() < 2 || net.torus_dims.size() > 3 || product != nodes) {
      r.problem("torus_dims", fmt::format("must hold 2 or 3 sizes whose product is nodes ({}), found {}",
                                     nodes, fmt::join(net.torus_dims, " x ")));
      net.torus_dims.clear();
    }
  }
  if (net.levels > 0 && (net.topology == TopologyKind::FAT_TREE || net.topology == TopologyKind::RAIL_OPTIMIZED)) {
    const int64_t endpoints = net.topology == TopologyKind::FAT_TREE ? int64_t{nodes} * net.nics_per_node : nodes;
    const int needed = fat_tree_levels(endpoints, net.radix);
    if (net.levels < needed) {
      r.problem("levels", fmt::format("{} levels of radix-{} switches reach {} endpoints at most, the cluster has {} "
                                     "(needs {} levels)",
                                     net.levels, net.radix, fmt::format("{:.0f}", std::pow(net.radix / 2.0, net.levels)),
                                     endpoints, needed));
      net.levels = needed;
    } else if (net.levels > needed + 1) {
      r.problem("levels", fmt::format("{} levels add switches but no reach: {} endpoints need {}, allow at most {}",
                                      net.levels, endpoints, needed, needed + 1));
      net.levels = needed;
    }
  }
}

const std::vector<std::string>& aggregation_names() {
  static const std::vector<std::string> names = {"none", "sharp", "switchml"};
  return names;
}

// "in_network_aggregation": a kind name, or an object with "kind" and SwitchML's limits.
void read_aggregation(core::ObjectReader& r, InterNode& out) {
  const core::Json* raw = r.raw("in_network_aggregation");
  if (raw == nullptr) return;
  InNetworkAggregation& a = out.aggregation;
  const std::string current = to_string(a.kind);
  if (raw->is_string()) {
    a.kind = static_cast<AggregationKind>(
        index_of(aggregation_names(), r.choice("in_network_aggregation", current, aggregation_names())));
  } else if (auto o = r.object("in_network_aggregation")) {
    a.kind = static_cast<AggregationKind>(index_of(aggregation_names(), o->choice("kind", current, aggregation_names())));
    const bool switchml = a.kind == AggregationKind::SWITCHML;
    for (const char* key : {"pool_size", "packet_payload", "packet_header", "packet_rate"}) {
      if (o->has(key) && !switchml) o->problem(key, "is a limit of kind \"switchml\" only");
    }
    a.pool_size = static_cast<int>(o->integer("pool_size", a.pool_size, 1, 1 << 24));
    a.packet_payload = o->bytes("packet_payload", a.packet_payload);
    if (a.packet_payload.value() < 1) {
      o->problem("packet_payload", "must be at least 1 byte");
      a.packet_payload = core::Bytes(256);
    }
    a.packet_header = o->bytes("packet_header", a.packet_header);
    // A packet is one Ethernet frame: at most a 9,216-byte jumbo frame, payload and headers together.
    constexpr double MAX_PACKET_BYTES = 9216;
    if (a.packet_payload.value() + a.packet_header.value() > MAX_PACKET_BYTES) {
      o->problem(o->has("packet_header") ? "packet_header" : "packet_payload",
                 fmt::format("a packet (payload {} + header {}) must fit one Ethernet frame of at most {} bytes (a "
                             "jumbo frame)",
                             core::format_bytes(a.packet_payload), core::format_bytes(a.packet_header), MAX_PACKET_BYTES));
      a.packet_payload = core::Bytes(256);
      a.packet_header = core::Bytes(66);
    }
    // 0 is line rate; otherwise at least 1,000 packets per second: SwitchML's Tofino aggregates tens
    // of millions per port, and a slower rate made a collective's time infinite (1e-300 printed null).
    constexpr double MIN_PACKET_RATE = 1e3;
    a.packet_rate = o->number("packet_rate", a.packet_rate, 0.0, 1e12);
    if (a.packet_rate > 0 && a.packet_rate < MIN_PACKET_RATE) {
      o->problem("packet_rate", fmt::format("expected 0 (line rate) or a rate from {:g} to 1e12 packets per second, "
                                            "found {:g}",
                                            MIN_PACKET_RATE, a.packet_rate));
      a.packet_rate = 0;
    }
    o->finish();
  } else {
    r.problem("in_network_aggregation", "must be \"none\", \"sharp\", \"switchml\" or an object with \"kind\"");
  }
  if (out.in_network_reduction && a.kind != AggregationKind::SHARP) {
    r.problem("in_network_reduction", fmt::format("true means in_network_aggregation \"sharp\", which contradicts \"{}\"; "
                                                  "give only in_network_aggregation",
                                                  to_string(a.kind)));
  }
}

void read_network(core::ObjectReader& r, int nodes, InterNode& out) {
  out.topology = static_cast<TopologyKind>(index_of(topology_names(), r.choice("topology", "fat-tree", topology_names())));
  out.nics_per_node = static_cast<int>(r.integer("nics_per_node", out.nics_per_node, 1, 1024));
  out.nic_bandwidth = positive_bandwidth(r, "nic_bandwidth", out.nic_bandwidth);
  out.latency = r.duration("latency", out.latency);
  out.oversubscription = r.number("oversubscription", out.oversubscription, 1.0, 1e6);
  if (out.topology == TopologyKind::IDEAL && out.oversubscription != 1.0) {
    r.problem("oversubscription",
              fmt::format("must be 1 for topology \"ideal\" (a non-blocking crossbar), found {}", out.oversubscription));
    out.oversubscription = 1.0;
  }
  out.routing = static_cast<Routing>(index_of(routing_names(), r.choice("routing", "static", routing_names())));
  if (out.routing == Routing::ADAPTIVE && out.topology != TopologyKind::FAT_TREE &&
      out.topology != TopologyKind::RAIL_OPTIMIZED) {
    r.problem("routing", fmt::format("\"adaptive\" is modelled on the trees of topology \"fat-tree\" and "
                                     "\"rail-optimized\" only; topology \"{}\" routes as documented "
                                     "(docs/network.md): give \"static\" or leave routing out",
                                     to_string(out.topology)));
    out.routing = Routing::STATIC;
  }
  out.radix = static_cast<int>(r.integer("radix", out.radix, 4, 1 << 16));
  if (out.radix % 2 != 0) {
    r.problem("radix", fmt::format("must be even (half the ports face down, half up), found {}", out.radix));
    out.radix += 1;
  }
  out.levels = static_cast<int>(r.integer("levels", out.levels, 0, 16));
  for (int64_t d : r.integer_array("torus_dims", 1, 1 << 20)) out.torus_dims.push_back(static_cast<int>(d));
  out.dragonfly_groups = static_cast<int>(r.integer("dragonfly_groups", out.dragonfly_groups, 0, 1 << 20));
  out.in_network_reduction = r.boolean("in_network_reduction", out.in_network_reduction);
  if (out.in_network_reduction) out.aggregation.kind = AggregationKind::SHARP;
  read_aggregation(r, out);
  out.in_network_reduction = out.aggregation.kind != AggregationKind::NONE;
  out.aggregation_key = r.has("in_network_aggregation") ? "in_network_aggregation" : "in_network_reduction";
  // SwitchML's switches are Ethernet switches: without a technology given, such a fabric is Ethernet.
  const NetworkTechnology technology =
      out.aggregation.kind == AggregationKind::SWITCHML ? NetworkTechnology::ETHERNET : NetworkTechnology::INFINIBAND;
  out.technology = static_cast<NetworkTechnology>(
      index_of(technology_names(), r.choice("technology", to_string(technology), technology_names())));
  check_network_shape(r, nodes, out);
  r.finish();
}

// The "host" section; `link` and `gpu_link` are the link defaults (they depend on the node's GPUs).
void read_host(core::ObjectReader* r, core::BytesPerSecond link, core::BytesPerSecond gpu_link, HostSpec& out) {
  out.link_bandwidth = link;
  out.gpu_link_bandwidth = gpu_link;
  if (r == nullptr) return;
  out.cores = static_cast<int>(r->integer("cores", out.cores, 1, 1 << 20));
  out.core_flops = r->flops_rate("core_flops", out.core_flops);
  out.memory_bandwidth = positive_bandwidth(*r, "memory_bandwidth", out.memory_bandwidth);
  out.memory_efficiency = r->number("memory_efficiency", out.memory_efficiency, 0.01, 1.0);
  out.link_bandwidth = positive_bandwidth(*r, "link_bandwidth", link);
  out.gpu_link_bandwidth = positive_bandwidth(*r, "gpu_link_bandwidth", gpu_link);
  out.link_efficiency = r->number("link_efficiency", out.link_efficiency, 0.01, 1.0);
  r->finish();
}

NvmeSpec read_nvme(core::ObjectReader& r) {
  NvmeSpec n;
  for (const char* key : {"read_bandwidth", "write_bandwidth"}) {
    if (!r.has(key)) r.problem(key, "missing: the NVMe drives' aggregate bandwidth per node, e.g. \"25 GB/s\"");
  }
  n.read_bandwidth = positive_bandwidth(r, "read_bandwidth", core::BytesPerSecond(1e9));
  n.write_bandwidth = positive_bandwidth(r, "write_bandwidth", core::BytesPerSecond(1e9));
  if (r.has("capacity")) n.capacity = r.bytes("capacity", core::Bytes(0));
  r.finish();
  return n;
}

// cluster.pools[i].network: its nodes' NICs. The fabric's keys (topology, latency, oversubscription,
// ...) belong to the cluster's network, one for every pool: named as such rather than as unknown.
// Resolved against the cluster's network later (from_json), where not given.
void read_pool_network(core::ObjectReader& r, NodePool& p) {
  p.own_network = true;
  // 0: not given, the cluster's network's (resolved in from_json, once it is read).
  p.nics_per_node = r.has("nics_per_node") ? static_cast<int>(r.integer("nics_per_node", 8, 1, 1024)) : 0;
  p.nic_bandwidth = r.has("nic_bandwidth") ? positive_bandwidth(r, "nic_bandwidth", p.nic_bandwidth) : core::BytesPerSecond(0);
  for (const char* key : {"technology", "topology", "latency", "oversubscription", "radix", "levels", "torus_dims",
                          "dragonfly_groups", "in_network_reduction", "in_network_aggregation"}) {
    if (r.raw(key) != nullptr) {
      r.problem(key, fmt::format("a pool's network gives its nodes' NICs only (nics_per_node, nic_bandwidth); "
                                 "\"{}\" is the fabric's, one for every pool: give it in cluster.network",
                                 key));
    }
  }
  r.finish();
}

// cluster.pools: each pool's name, GPU and nodes; the cluster's gpu (the first pool's) and nodes
// (their sum). first_rank is counted in nodes here (from_json scales it by gpus_per_node).
void read_pools(core::ObjectReader& r, ClusterConfig& c) {
  if (r.raw("gpu") != nullptr) {  // raw: known, so that it is not also an unknown key
    r.problem("gpu", "not with \"pools\": each pool gives its own \"gpu\" (cluster.pools[i].gpu)");
  }
  // `nodes` may stay (the resolved scenario writes it): it must be the pools' sum, checked below.
  const core::Json* given_nodes = r.raw("nodes");
  const core::Json* pools = r.raw("pools");
  if (!pools->is_array() || pools->empty()) {
    r.problem("pools", fmt::format("expected a non-empty list of node pools [{{\"name\": ..., \"gpu\": ..., \"nodes\": "
                                   "...}}, ...], found {}",
                                   core::describe_json(*pools)));
    return;
  }
  if (pools->size() > 255) {
    r.problem("pools", fmt::format("at most 255 node pools, found {}", pools->size()));
    return;
  }
  int nodes = 0;
  for (size_t i = 0; i < pools->size(); ++i) {
    core::ObjectReader pr((*pools)[i], r.file(), core::append_pointer(r.pointer_of("pools"), i), r.diagnostics());
    NodePool p;
    p.name = pr.required_string("name").value_or("");
    for (const NodePool& q : c.pools) {
      if (!p.name.empty() && q.name == p.name) pr.problem("name", fmt::format("a second pool named \"{}\"", p.name));
    }
    if (!pr.has("gpu")) pr.problem("gpu", "missing: the pool's GPU, a catalog name (`trainsim describe gpus`) or an object");
    const core::GpuChoice gpu = core::read_gpu(pr, "gpu", DEFAULT_GPU);
    p.gpu_spec = gpu.spec;
    p.gpu = gpu.spec.name;
    p.gpu_base = gpu.base;
    p.gpu_described = gpu.described;
    if (!pr.has("nodes")) pr.problem("nodes", "missing: how many nodes of gpus_per_node GPUs the pool has");
    p.nodes = static_cast<int>(pr.integer("nodes", 1, 1, 1 << 20));
    if (std::optional<core::ObjectReader> net = pr.object("network")) read_pool_network(*net, p);
    pr.finish();
    p.first_rank = nodes;
    nodes += p.nodes;
    c.pools.push_back(std::move(p));
  }
  if (given_nodes != nullptr && !(given_nodes->is_number_integer() && given_nodes->get<int64_t>() == nodes)) {
    r.problem("nodes", fmt::format("with \"pools\", the pools' nodes together ({}), found {}", nodes,
                                   core::describe_json(*given_nodes)));
  }
  const NodePool& first = c.pools.front();
  c.gpu_spec = first.gpu_spec;
  c.gpu = first.gpu;
  c.gpu_base = first.gpu_base;
  c.gpu_described = first.gpu_described;
  c.nodes = std::min(nodes, 1 << 20);
}

// The first pool's GPU with the slowest NVLink and PCIe bandwidths among the pools' GPUs.
core::GpuSpec slowest_links(const std::vector<NodePool>& pools) {
  if (pools.empty()) return core::GpuSpec{};
  core::GpuSpec g = pools.front().gpu_spec;
  for (const NodePool& p : pools) {
    g.nvlink_bandwidth = std::min(g.nvlink_bandwidth, p.gpu_spec.nvlink_bandwidth);
    g.pcie_bandwidth = std::min(g.pcie_bandwidth, p.gpu_spec.pcie_bandwidth);
  }
  return g;
}

}  // namespace

std::string to_string(IntraFabric f) { return fabric_names()[static_cast<size_t>(f)]; }

std::string to_string(TopologyKind t) { return topology_names()[static_cast<size_t>(t)]; }

std::string to_string(NetworkTechnology t) { return technology_names()[static_cast<size_t>(t)]; }

std::string to_string(Routing r) { return routing_names()[static_cast<size_t>(r)]; }

std::vector<int> torus_dimensions(int nodes) {
  // Exhaustive over divisor pairs: O(nodes) at most, once per build.
  std::vector<int> best = {nodes, 1, 1};
  for (int a = 1; int64_t{a} * a * a <= nodes; ++a) {
    if (nodes % a != 0) continue;
    const int rest = nodes / a;
    for (int b = a; int64_t{b} * b <= rest; ++b) {
      if (rest % b != 0) continue;
      const int c = rest / b;  // a <= b <= c
      if (c - a < best[0] - best[2]) best = {c, b, a};
    }
  }
  return best;
}

std::string to_string(AggregationKind k) { return aggregation_names()[static_cast<size_t>(k)]; }

int InterNode::nodes_per_switch(int nodes) const {
  switch (topology) {
    case TopologyKind::IDEAL: return nodes;
    case TopologyKind::RAIL_OPTIMIZED: return radix / 2;
    case TopologyKind::FAT_TREE:
    case TopologyKind::DRAGONFLY: return std::max(1, (radix / 2) / nics_per_node);
    case TopologyKind::TORUS: return 1;
  }
  return 1;
}

int fat_tree_levels(int64_t endpoints, int radix) {
  const int64_t down = radix / 2;
  int levels = 1;
  for (int64_t reach = down; reach < endpoints; reach *= down) ++levels;
  return levels;
}

core::BytesPerSecond ClusterConfig::nic_bandwidth_per_gpu() const {
  return network.nic_bandwidth * (static_cast<double>(network.nics_per_node) / gpus_per_node);
}

bool ClusterConfig::pool_networks() const {
  return std::any_of(pools.begin(), pools.end(), [](const NodePool& p) { return p.own_network; });
}

core::BytesPerSecond ClusterConfig::nic_bandwidth_per_gpu_of_node(int node) const {
  if (!pool_networks()) return nic_bandwidth_per_gpu();
  const NodePool& p = pools[static_cast<size_t>(pool_of(node * gpus_per_node))];
  if (!p.own_network) return nic_bandwidth_per_gpu();
  return p.nic_bandwidth * (static_cast<double>(p.nics_per_node) / gpus_per_node);
}

core::BytesPerSecond ClusterConfig::nic_link_bandwidth_of_node(int node) const {
  if (!pool_networks()) return network.nic_bandwidth;
  const NodePool& p = pools[static_cast<size_t>(pool_of(node * gpus_per_node))];
  if (!p.own_network) return network.nic_bandwidth;
  return p.nic_bandwidth * (static_cast<double>(p.nics_per_node) / network.nics_per_node);
}

core::BytesPerSecond ClusterConfig::fabric_link_bandwidth() const {
  if (!pool_networks()) return network.nic_bandwidth;
  core::BytesPerSecond fastest(0);
  for (const NodePool& p : pools) {
    fastest = std::max(fastest, nic_link_bandwidth_of_node(p.first_rank / gpus_per_node));
  }
  return fastest;
}

core::BytesPerSecond ClusterConfig::host_link_bandwidth() const {
  if (host.link_bandwidth.value() > 0) return host.link_bandwidth;
  return gpu_spec.pcie_bandwidth * std::max(1.0, gpus_per_node / 2.0);
}

core::BytesPerSecond ClusterConfig::gpu_host_link_bandwidth() const {
  return host.gpu_link_bandwidth.value() > 0 ? host.gpu_link_bandwidth : gpu_spec.pcie_bandwidth;
}

ClusterConfig ClusterConfig::from_json(core::ObjectReader& r) {
  ClusterConfig c;
  // The GPU whose links set the intra-node defaults: the GPU, or with pools the slowest links among
  // the pools' GPUs (one fabric: no link is faster than the slowest GPU's port).
  core::GpuSpec link_gpu;
  if (r.has("pools")) {
    read_pools(r, c);
    link_gpu = slowest_links(c.pools);
  } else {
    const core::GpuChoice gpu = core::read_gpu(r, "gpu", DEFAULT_GPU);
    c.gpu_spec = gpu.spec;
    c.gpu = gpu.spec.name;
    c.gpu_base = gpu.base;
    c.gpu_described = gpu.described;
    c.nodes = static_cast<int>(r.integer("nodes", c.nodes, 1, 1 << 20));
    link_gpu = c.gpu_spec;
  }
  c.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", c.gpus_per_node, 1, 1024));
  for (NodePool& p : c.pools) p.first_rank *= c.gpus_per_node;  // read_pools counted nodes
  if (static_cast<int64_t>(c.nodes) * c.gpus_per_node > (int64_t{1} << 24)) {
    r.problem("nodes", fmt::format("{} nodes of {} GPUs exceed the largest supported cluster of 2^24 GPUs",
                                   c.nodes, c.gpus_per_node));
    c.nodes = 1;
  }
  if (auto intra = r.object("intra_node")) {
    read_intra_node(*intra, link_gpu, c.intra_node);
  } else {
    c.intra_node.fabric = default_fabric(link_gpu);
    c.intra_node.bandwidth =
        c.intra_node.fabric == IntraFabric::PCIE ? link_gpu.pcie_bandwidth : link_gpu.nvlink_bandwidth;
  }
  if (auto net = r.object("network")) read_network(*net, c.nodes, c.network);
  for (NodePool& p : c.pools) {  // a pool's NICs default to the cluster's network's
    if (!p.own_network || p.nics_per_node == 0) p.nics_per_node = c.network.nics_per_node;
    if (!p.own_network || p.nic_bandwidth.value() == 0) p.nic_bandwidth = c.network.nic_bandwidth;
  }
  if (c.pool_networks() && c.network.aggregation_kind() != AggregationKind::NONE) {
    r.problem("network", fmt::format("in-network aggregation (network.{}) is not modelled with pools that give their "
                                     "own network: leave out one or the other",
                                     c.network.aggregation_key));
  }
  if (const core::Json* v = r.raw("price_per_gpu_hour")) {
    // 0.001 USD is 1/35 of an H100's power bill alone (700 W at 0.05 USD/kWh); 1,000 USD is 100x the
    // dearest cloud list price. Outside them a run's cost or tokens per dollar print as inf or 0.
    if (v->is_number() && v->get<double>() >= MIN_PRICE_PER_GPU_HOUR && v->get<double>() <= MAX_PRICE_PER_GPU_HOUR) {
      c.price_per_gpu_hour = v->get<double>();
    } else {
      r.problem("price_per_gpu_hour",
                fmt::format("expected a price in USD per GPU-hour from {} to {} (such as 2.5), found {}",
                            MIN_PRICE_PER_GPU_HOUR, MAX_PRICE_PER_GPU_HOUR, core::describe_json(*v)));
    }
  }
  c.host_memory = r.bytes("host_memory", c.host_memory);
  // Above 25% a quarter of the GPUs would run below half the median speed by a normal spread; the
  // published spreads are a few percent (core/variability.hpp).
  c.gpu_speed_spread = r.number("gpu_speed_spread", c.gpu_speed_spread, 0.0, 0.25);
  std::optional<core::ObjectReader> host = r.object("host");
  read_host(host ? &*host : nullptr, c.host_link_bandwidth(), c.gpu_host_link_bandwidth(), c.host);
  if (auto nvme = r.object("nvme")) c.nvme = read_nvme(*nvme);
  if (auto storage = r.object("storage")) c.storage = read_storage(*storage);
  if (auto reliability = r.object("reliability")) c.reliability = read_reliability(*reliability, c.gpus_per_node);
  r.finish();
  return c;
}

core::BytesPerSecond ClusterConfig::storage_node_bandwidth(bool write) const {
  TRAINSIM_CHECK(storage && storage->parallel_fs, "storage_node_bandwidth without cluster.storage.parallel_fs");
  const ParallelFs& p = *storage->parallel_fs;
  const double link = p.node_bandwidth ? p.node_bandwidth->value() : network.nics_per_node * network.nic_bandwidth.value();
  const int sharing = write && p.writing_nodes > 0 ? p.writing_nodes : nodes;
  const double aggregate = (write ? p.write_bandwidth : p.read_bandwidth).value();
  return core::BytesPerSecond(std::min(link, aggregate / sharing));
}

int ClusterConfig::pool_of(int rank) const {
  int pool = 0;
  for (size_t i = 1; i < pools.size() && pools[i].first_rank <= rank; ++i) pool = static_cast<int>(i);
  return pool;
}

core::Json ClusterConfig::to_json() const {
  core::Json j;
  if (pools.empty()) {
    j["gpu"] = gpu_described ? core::GpuChoice{gpu_spec, gpu_base, true}.to_json() : core::Json(gpu);
    j["nodes"] = nodes;
  } else {
    core::Json list = core::Json::array();
    for (const NodePool& p : pools) {
      list.push_back({{"name", p.name},
                      {"gpu", p.gpu_described ? core::GpuChoice{p.gpu_spec, p.gpu_base, true}.to_json() : core::Json(p.gpu)},
                      {"nodes", p.nodes}});
      if (p.own_network) {
        list.back()["network"] = {{"nics_per_node", p.nics_per_node},
                                  {"nic_bandwidth", core::format_bandwidth(p.nic_bandwidth)}};
      }
    }
    j["pools"] = std::move(list);
    j["nodes"] = nodes;  // their sum
  }
  j["gpus_per_node"] = gpus_per_node;
  j["intra_node"] = {{"fabric", to_string(intra_node.fabric)},
                     {"bandwidth", core::format_bandwidth(intra_node.bandwidth)},
                     {"latency", core::format_duration(intra_node.latency)},
                     {"nvls", intra_node.nvls}};
  if (intra_node.nvls) j["intra_node"]["nvls_bandwidth"] = core::format_bandwidth(intra_node.nvls_bandwidth);
  j["network"] = {{"technology", to_string(network.technology)},
                  {"topology", to_string(network.topology)},
                  {"nics_per_node", network.nics_per_node},
                  {"nic_bandwidth", core::format_bandwidth(network.nic_bandwidth)},
                  {"latency", core::format_duration(network.latency)},
                  {"oversubscription", network.oversubscription},
                  {"radix", network.radix},
                  {"levels", network.levels},
                  {"torus_dims", network.torus_dims},
                  {"dragonfly_groups", network.dragonfly_groups},
                  {"in_network_reduction", network.in_network_reduction}};
  // Written only where it is not the default, so that reports of static fabrics keep their bytes.
  if (network.routing != Routing::STATIC) j["network"]["routing"] = to_string(network.routing);
  if (network.aggregation.kind != AggregationKind::NONE) {
    const InNetworkAggregation& a = network.aggregation;
    core::Json agg = {{"kind", to_string(a.kind)}};
    if (a.kind == AggregationKind::SWITCHML) {
      agg["pool_size"] = a.pool_size;
      agg["packet_payload"] = core::format_bytes(a.packet_payload);
      agg["packet_header"] = core::format_bytes(a.packet_header);
      agg["packet_rate"] = a.packet_rate;
    }
    j["network"]["in_network_aggregation"] = agg;
    // The original key says the same for SHARP; for SwitchML it would contradict the object.
    j["network"]["in_network_reduction"] = a.kind == AggregationKind::SHARP;
  }
  if (price_per_gpu_hour) j["price_per_gpu_hour"] = *price_per_gpu_hour;
  j["host_memory"] = core::format_bytes(host_memory);
  if (gpu_speed_spread > 0) j["gpu_speed_spread"] = gpu_speed_spread;
  j["host"] = {{"cores", host.cores},
               {"core_flops", core::format_flops_rate(host.core_flops)},
               {"memory_bandwidth", core::format_bandwidth(host.memory_bandwidth)},
               {"memory_efficiency", host.memory_efficiency},
               {"link_bandwidth", core::format_bandwidth(host_link_bandwidth())},
               {"gpu_link_bandwidth", core::format_bandwidth(gpu_host_link_bandwidth())},
               {"link_efficiency", host.link_efficiency}};
  if (nvme) {
    j["nvme"] = {{"read_bandwidth", core::format_bandwidth(nvme->read_bandwidth)},
                 {"write_bandwidth", core::format_bandwidth(nvme->write_bandwidth)}};
    if (nvme->capacity) j["nvme"]["capacity"] = core::format_bytes(*nvme->capacity);
  }
  if (storage) j["storage"] = network::to_json(*storage);
  if (reliability) j["reliability"] = network::to_json(*reliability);
  return j;
}

}  // namespace trainsim::network
