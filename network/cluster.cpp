#include "network/cluster.hpp"

#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::network {
namespace {

constexpr const char* DEFAULT_GPU = "A100-SXM4-80GB";

const std::vector<std::string>& fabric_names() {
  static const std::vector<std::string> names = {"nvswitch", "nvlink-mesh", "pcie"};
  return names;
}

const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> names = {"fat-tree", "rail-optimized", "dragonfly", "torus", "ideal"};
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

std::string quoted_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += fmt::format("{}\"{}\"", out.empty() ? "" : ", ", n);
  return out;
}

core::BytesPerSecond positive_bandwidth(core::ObjectReader& r, std::string_view key, core::BytesPerSecond fallback) {
  const core::BytesPerSecond b = r.bandwidth(key, fallback);
  if (b.value() <= 0) {
    r.problem(key, fmt::format("must be positive, found {}", core::format_bandwidth(b)));
    return fallback;
  }
  return b;
}

void read_intra_node(core::ObjectReader& r, const core::GpuSpec& gpu, IntraNode& out) {
  out.fabric = static_cast<IntraFabric>(index_of(fabric_names(), r.choice("fabric", "nvswitch", fabric_names())));
  const core::BytesPerSecond fallback =
      out.fabric == IntraFabric::PCIE ? gpu.pcie_bandwidth : gpu.nvlink_bandwidth;
  out.bandwidth = positive_bandwidth(r, "bandwidth", fallback);
  out.latency = r.duration("latency", out.latency);
  r.finish();
}

void read_network(core::ObjectReader& r, InterNode& out) {
  out.topology = static_cast<Topology>(index_of(topology_names(), r.choice("topology", "fat-tree", topology_names())));
  out.nics_per_node = static_cast<int>(r.integer("nics_per_node", out.nics_per_node, 1, 1024));
  out.nic_bandwidth = positive_bandwidth(r, "nic_bandwidth", out.nic_bandwidth);
  out.latency = r.duration("latency", out.latency);
  out.oversubscription = r.number("oversubscription", out.oversubscription, 1.0, 1e6);
  if (out.topology == Topology::IDEAL && out.oversubscription != 1.0) {
    r.problem("oversubscription",
              fmt::format("must be 1 for topology \"ideal\" (a non-blocking crossbar), found {}", out.oversubscription));
    out.oversubscription = 1.0;
  }
  r.finish();
}

}  // namespace

std::string to_string(IntraFabric f) { return fabric_names()[static_cast<size_t>(f)]; }

std::string to_string(Topology t) { return topology_names()[static_cast<size_t>(t)]; }

core::BytesPerSecond ClusterConfig::nic_bandwidth_per_gpu() const {
  return network.nic_bandwidth * (static_cast<double>(network.nics_per_node) / gpus_per_node);
}

ClusterConfig ClusterConfig::from_json(core::ObjectReader& r) {
  ClusterConfig c;
  c.gpu = r.string("gpu", DEFAULT_GPU);
  if (const core::GpuSpec* spec = core::find_gpu(c.gpu)) {
    c.gpu_spec = *spec;
  } else {
    const std::string hint = core::closest_match(c.gpu, core::gpu_names());
    r.problem("gpu", fmt::format("expected a GPU of the catalog ({}), found \"{}\"{}", quoted_names(core::gpu_names()),
                                 c.gpu, hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
    c.gpu_spec = *core::find_gpu(DEFAULT_GPU);
  }
  c.nodes = static_cast<int>(r.integer("nodes", c.nodes, 1, 1 << 20));
  c.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", c.gpus_per_node, 1, 1024));
  if (static_cast<int64_t>(c.nodes) * c.gpus_per_node > (int64_t{1} << 24)) {
    r.problem("nodes", fmt::format("{} nodes of {} GPUs exceed the largest supported cluster of 2^24 GPUs",
                                   c.nodes, c.gpus_per_node));
    c.nodes = 1;
  }
  if (auto intra = r.object("intra_node")) {
    read_intra_node(*intra, c.gpu_spec, c.intra_node);
  } else {
    c.intra_node.bandwidth = c.gpu_spec.nvlink_bandwidth;
  }
  if (auto net = r.object("network")) read_network(*net, c.network);
  r.finish();
  return c;
}

core::Json ClusterConfig::to_json() const {
  core::Json j;
  j["gpu"] = gpu;
  j["nodes"] = nodes;
  j["gpus_per_node"] = gpus_per_node;
  j["intra_node"] = {{"fabric", to_string(intra_node.fabric)},
                     {"bandwidth", core::format_bandwidth(intra_node.bandwidth)},
                     {"latency", core::format_duration(intra_node.latency)}};
  j["network"] = {{"topology", to_string(network.topology)},
                  {"nics_per_node", network.nics_per_node},
                  {"nic_bandwidth", core::format_bandwidth(network.nic_bandwidth)},
                  {"latency", core::format_duration(network.latency)},
                  {"oversubscription", network.oversubscription}};
  return j;
}

}  // namespace trainsim::network
