#include "network/feasibility.hpp"

#include <fmt/format.h>

namespace trainsim::network {
namespace {

// SHARP-capable InfiniBand switches start with Switch-IB 2, an EDR (100 Gb/s) switch.
constexpr double EDR_BITS_PER_S = 100e9;

core::InputProblem keeps() { return {}; }

core::InputProblem at(std::string pointer, std::string message) { return {"", std::move(pointer), std::move(message)}; }

std::string aggregation_pointer(const InterNode& n) { return "/network/" + n.aggregation_key; }

core::InputProblem nvls_needs_nvswitch(const ClusterConfig& c) {
  if (!c.intra_node.nvls || c.intra_node.fabric == IntraFabric::NVSWITCH) return keeps();
  return at("/intra_node/nvls", fmt::format("needs fabric \"nvswitch\" (cluster.intra_node.fabric), found \"{}\": "
                                            "NVLink SHARP runs in the NVSwitch",
                                            to_string(c.intra_node.fabric)));
}

core::InputProblem nvls_needs_nvlink_sharp(const ClusterConfig& c) {
  if (!c.intra_node.nvls || c.gpu_spec.nvlink_sharp) return keeps();
  return at("/intra_node/nvls",
            fmt::format("needs a GPU whose NVSwitch has NVLink SHARP (third-generation NVSwitch or later: H100, H800, "
                        "H200, B200, GB200); cluster.gpu {} has none{}: set intra_node.nvls false",
                        c.gpu, c.gpu_described ? " (a described GPU says so with \"nvlink_sharp\": true)" : ""));
}

core::InputProblem in_network_needs_switches(const ClusterConfig& c) {
  if (c.network.aggregation.kind == AggregationKind::NONE || c.network.topology != TopologyKind::TORUS) return keeps();
  return at(aggregation_pointer(c.network),
            "needs a switched topology (fat-tree, rail-optimized, dragonfly or ideal); a torus has no switches to "
            "aggregate in");
}

core::InputProblem sharp_needs_infiniband(const ClusterConfig& c) {
  if (c.network.aggregation.kind != AggregationKind::SHARP || c.network.technology == NetworkTechnology::INFINIBAND) {
    return keeps();
  }
  return at(aggregation_pointer(c.network),
            fmt::format("\"sharp\" needs cluster.network.technology \"infiniband\" (SHARP runs in InfiniBand "
                        "switches), found \"{}\": on Ethernet or RoCE give \"switchml\" (a programmable switch) or no "
                        "in-network aggregation",
                        to_string(c.network.technology)));
}

core::InputProblem sharp_needs_edr_or_later(const ClusterConfig& c) {
  if (c.network.aggregation.kind != AggregationKind::SHARP || c.network.technology != NetworkTechnology::INFINIBAND) {
    return keeps();
  }
  const double bits = c.network.nic_bandwidth.value() * 8;
  if (bits >= EDR_BITS_PER_S) return keeps();
  return at(aggregation_pointer(c.network),
            fmt::format("\"sharp\" needs SHARP-capable InfiniBand switches, Switch-IB 2 (EDR, 100 Gb/s) or later; "
                        "cluster.network.nic_bandwidth {:g} Gb/s is an older generation (FDR 56, QDR 40 Gb/s) whose "
                        "switches have no aggregation engine",
                        bits / 1e9));
}

core::InputProblem switchml_needs_ethernet(const ClusterConfig& c) {
  if (c.network.aggregation.kind != AggregationKind::SWITCHML || c.network.technology != NetworkTechnology::INFINIBAND) {
    return keeps();
  }
  return at(aggregation_pointer(c.network),
            "\"switchml\" needs cluster.network.technology \"ethernet\" or \"roce\" (SwitchML aggregates in a "
            "programmable Ethernet switch), found \"infiniband\": on InfiniBand give \"sharp\"");
}

}  // namespace

const std::vector<FeasibilityRule>& feasibility_rules() {
  static const std::vector<FeasibilityRule> rules = {
      {"nvls-needs-nvswitch", "intra_node.nvls, intra_node.fabric",
       "NVLS (NVLink SHARP) needs fabric \"nvswitch\": the reduction runs in the switch",
       "NVIDIA Hopper architecture whitepaper (2022), \"NVLink SHARP\" in the third-generation NVSwitch; NCCL 2.17 "
       "release notes (NVLS algorithm on NVSwitch systems)",
       nvls_needs_nvswitch},
      {"nvls-needs-nvlink-sharp", "intra_node.nvls, gpu (nvlink_sharp)",
       "NVLS needs a GPU whose NVSwitch generation has NVLink SHARP: third generation (HGX H100/H800/H200) and "
       "later (NVLink Switch of B200/GB200); not A100's second generation, V100's first, or GPUs without NVSwitch",
       "NVIDIA Hopper architecture whitepaper (2022): NVLink SHARP is new in the third-generation NVSwitch; NVIDIA "
       "Blackwell architecture technical brief (2024): NVLink Switch with SHARP v4; NVIDIA A100 whitepaper (2020): "
       "second-generation NVSwitch, which predates NVLink SHARP",
       nvls_needs_nvlink_sharp},
      {"in-network-needs-switches", "network.in_network_aggregation (or in_network_reduction), network.topology",
       "in-network aggregation needs a switched topology (fat-tree, rail-optimized, dragonfly, ideal): a torus "
       "has no switches",
       "Graham et al., \"Scalable Hierarchical Aggregation Protocol (SHArP)\", COMHPC 2016 (aggregation in the "
       "switch tree); Sapio et al., NSDI 2021 (in the top-of-rack switch)",
       in_network_needs_switches},
      {"sharp-needs-infiniband", "network.in_network_aggregation \"sharp\", network.technology",
       "SHARP needs technology \"infiniband\": it is a feature of InfiniBand switches, not of Ethernet or RoCE ones",
       "NVIDIA SHARP documentation (SHARP on Switch-IB 2, Quantum, Quantum-2 InfiniBand switches); NCCL CollNet "
       "through nccl-rdma-sharp-plugins (InfiniBand)",
       sharp_needs_infiniband},
      {"sharp-needs-edr-or-later", "network.in_network_aggregation \"sharp\", network.nic_bandwidth",
       "SHARP-capable InfiniBand switches: Switch-IB 2 (EDR, 100 Gb/s) or later, so nic_bandwidth >= 100 Gb/s "
       "(necessary, not sufficient: EDR's first Switch-IB had no SHARP either)",
       "Mellanox Switch-IB 2 product brief (2015): the first switch with SHARP; Graham et al., COMHPC 2016 "
       "(measured on Switch-IB 2, EDR)",
       sharp_needs_edr_or_later},
      {"switchml-needs-ethernet", "network.in_network_aggregation \"switchml\", network.technology",
       "SwitchML needs technology \"ethernet\" or \"roce\": it runs in a programmable Ethernet switch",
       "Sapio et al., \"Scaling Distributed Machine Learning with In-Network Aggregation\", NSDI 2021 (Intel "
       "Tofino; workers over DPDK or RDMA on RoCE)",
       switchml_needs_ethernet},
  };
  return rules;
}

void check_feasibility(const ClusterConfig& cluster, const std::string& file, const std::string& cluster_pointer,
                       core::Diagnostics& diag) {
  for (const FeasibilityRule& rule : feasibility_rules()) {
    const core::InputProblem p = rule.check(cluster);
    if (!p.pointer.empty()) diag.add(file, cluster_pointer + p.pointer, p.message);
  }
}

}  // namespace trainsim::network
