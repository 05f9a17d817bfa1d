#pragma once
// Physical feasibility: in-network features a cluster asks for that its hardware does not have. Each
// rule is a row of one table (feasibility_rules(); docs/network.md "Physical feasibility" prints
// the same table), with the scenario keys it involves, what it requires and where that comes from:
//
//   nvls-needs-nvswitch          intra_node.nvls needs intra_node.fabric "nvswitch"
//   nvls-needs-nvlink-sharp      intra_node.nvls needs a GPU whose NVSwitch has NVLink SHARP (gpu.nvlink_sharp)
//   in-network-needs-switches    in-network aggregation needs a switched topology (not a torus)
//   sharp-needs-infiniband       in_network_aggregation "sharp" needs network.technology "infiniband"
//   sharp-needs-edr-or-later     SHARP-capable InfiniBand switches: nic_bandwidth >= 100 Gb/s (EDR)
//   switchml-needs-ethernet      in_network_aggregation "switchml" needs technology "ethernet" or "roce"
//
// A broken rule is an impossible combination, not a malformed value: plan::read_scenario throws it
// as ImpossibleScenario (exit 2) at the key that asks for the feature, naming the keys that forbid
// it; `search` rejects every layout of such a GPU type with the same message as its reason.
//
// Example:
//   core::Diagnostics diag;
//   network::check_feasibility(cluster, "s.json", "/cluster", diag);   // "/cluster/intra_node/nvls: ..."

#include <string>
#include <string_view>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/error.hpp"

namespace trainsim::network {

struct FeasibilityRule {
  std::string_view id;           // "sharp-needs-infiniband"
  std::string_view keys;         // the scenario keys involved, under "cluster."
  std::string_view requirement;  // what must hold, in words
  std::string_view source;       // where the rule comes from
  // The broken rule's problem (pointer relative to the cluster section, message), or an empty
  // pointer when `c` keeps the rule.
  core::InputProblem (*check)(const ClusterConfig& c);
};

// Every rule, in the order they are checked (and documented).
const std::vector<FeasibilityRule>& feasibility_rules();

// Adds one problem per rule `cluster` breaks to `diag`, each at cluster_pointer + the key that asks
// for the feature ("/cluster" + "/intra_node/nvls").
void check_feasibility(const ClusterConfig& cluster, const std::string& file, const std::string& cluster_pointer,
                       core::Diagnostics& diag);

}  // namespace trainsim::network
