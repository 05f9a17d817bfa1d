#include "network/cluster.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"

namespace trainsim::network {
namespace {

struct Parsed {
  ClusterConfig config;
  core::Diagnostics diag;
};

Parsed parse(const std::string& text) {
  Parsed p;
  const core::Json j = core::parse_json_text(text, "scenario.json");
  core::ObjectReader r(j, "scenario.json", "/cluster", p.diag);
  p.config = ClusterConfig::from_json(r);
  return p;
}

std::string messages(const core::Diagnostics& d) {
  std::string out;
  for (const core::InputProblem& p : d.problems()) out += p.to_string() + "\n";
  return out;
}

TEST(ClusterConfig, ResolvesDefaultsFromTheGpu) {
  const Parsed p = parse(R"({"gpu": "H100-SXM5-80GB", "nodes": 2})");
  ASSERT_TRUE(p.diag.empty()) << messages(p.diag);
  const ClusterConfig& c = p.config;
  EXPECT_EQ(c.world_size(), 16);
  EXPECT_EQ(c.node_of(9), 1);
  EXPECT_EQ(c.intra_node.fabric, IntraFabric::NVSWITCH);
  EXPECT_DOUBLE_EQ(c.intra_node.bandwidth.value(), 450e9) << "H100 NVLink4, per direction";
  EXPECT_DOUBLE_EQ(c.intra_node.latency.value(), 1e-6);
  EXPECT_EQ(c.network.topology, TopologyKind::FAT_TREE);
  EXPECT_EQ(c.network.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(c.network.nic_bandwidth.value(), 25e9) << "200 Gb/s";
  EXPECT_DOUBLE_EQ(c.network.latency.value(), 2e-6);
  EXPECT_DOUBLE_EQ(c.network.oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_per_gpu().value(), 25e9);
}

TEST(ClusterConfig, PcieFabricDefaultsToPcieBandwidth) {
  const Parsed p = parse(R"({"gpu": "A100-SXM4-40GB", "intra_node": {"fabric": "pcie"}})");
  ASSERT_TRUE(p.diag.empty()) << messages(p.diag);
  EXPECT_EQ(p.config.intra_node.fabric, IntraFabric::PCIE);
  EXPECT_DOUBLE_EQ(p.config.intra_node.bandwidth.value(), 31e9);
}

TEST(ClusterConfig, NicShareIsNicsTimesBandwidthOverGpus) {
  const Parsed p = parse(R"({"gpus_per_node": 8, "network": {"nics_per_node": 4, "nic_bandwidth": "400 Gb/s"}})");
  ASSERT_TRUE(p.diag.empty()) << messages(p.diag);
  EXPECT_DOUBLE_EQ(p.config.nic_bandwidth_per_gpu().value(), 4 * 50e9 / 8);
}

TEST(ClusterConfig, UnknownGpuSuggestsTheClosestName) {
  const Parsed p = parse(R"({"gpu": "A100-SXM4-80G"})");
  ASSERT_EQ(p.diag.size(), 1u);
  const core::InputProblem& problem = p.diag.problems()[0];
  EXPECT_EQ(problem.pointer, "/cluster/gpu");
  EXPECT_NE(problem.message.find("did you mean \"A100-SXM4-80GB\""), std::string::npos) << problem.message;
}

TEST(ClusterConfig, EveryProblemIsReportedWithItsPointer) {
  const Parsed p = parse(R"({"nodes": 0, "intra_node": {"fabric": "nvlink", "bandwidth": "0 GB/s"},
                             "network": {"topology": "fat_tree", "oversubscription": 0.5, "nic_bandwith": "1 Gb/s"},
                             "gpus": 8})");
  const std::string all = messages(p.diag);
  for (const char* pointer : {"/cluster/nodes", "/cluster/intra_node/fabric", "/cluster/intra_node/bandwidth",
                              "/cluster/network/topology", "/cluster/network/oversubscription",
                              "/cluster/network/nic_bandwith", "/cluster/gpus"}) {
    EXPECT_NE(all.find(pointer), std::string::npos) << pointer << " missing in:\n" << all;
  }
  EXPECT_NE(all.find("did you mean \"nic_bandwidth\""), std::string::npos) << all;
  EXPECT_NE(all.find("did you mean \"fat-tree\""), std::string::npos) << all;
}

TEST(ClusterConfig, TopologyShapeKeysAreCheckedAgainstTheCluster) {
  const Parsed p = parse(R"({"nodes": 12, "intra_node": {"fabric": "pcie", "nvls": true},
                             "network": {"topology": "torus", "torus_dims": [2, 5], "radix": 7,
                                         "in_network_reduction": true}})");
  const std::string all = messages(p.diag);
  for (const char* pointer : {"/cluster/network/torus_dims", "/cluster/network/radix"}) {
    EXPECT_NE(all.find(pointer), std::string::npos) << pointer << " missing in:\n" << all;
  }
  // NVLS over PCIe and aggregation on a torus are well-formed values of hardware the cluster lacks:
  // network::check_feasibility refuses them (tests/network/feasibility_test.cpp), not the reader.
  for (const char* pointer : {"/cluster/intra_node/nvls", "/cluster/network/in_network_reduction"}) {
    EXPECT_EQ(all.find(pointer), std::string::npos) << pointer << " in:\n" << all;
  }
  // 16 nodes x 8 NICs = 128 endpoints: radix 8 (arity 4) needs 4 levels.
  const Parsed few = parse(R"({"nodes": 16, "network": {"radix": 8, "levels": 3}})");
  ASSERT_EQ(few.diag.size(), 1u) << messages(few.diag);
  EXPECT_NE(few.diag.problems()[0].message.find("needs 4 levels"), std::string::npos) << messages(few.diag);
  const Parsed ok = parse(R"({"nodes": 12, "network": {"topology": "torus", "torus_dims": [3, 4]}})");
  EXPECT_TRUE(ok.diag.empty()) << messages(ok.diag);
  EXPECT_EQ(ok.config.network.torus_dims, (std::vector<int>{3, 4}));
  EXPECT_EQ(ok.config.network.radix, 64);
}

TEST(ClusterConfig, IdealTopologyIsNonBlocking) {
  const Parsed p = parse(R"({"network": {"topology": "ideal", "oversubscription": 2}})");
  ASSERT_EQ(p.diag.size(), 1u);
  EXPECT_EQ(p.diag.problems()[0].pointer, "/cluster/network/oversubscription");
}

TEST(ClusterConfig, ResolvedJsonReadsBackToTheSameConfig) {
  const Parsed p = parse(R"({"gpu": "B200", "nodes": 4, "gpus_per_node": 8,
                             "intra_node": {"fabric": "nvlink-mesh", "latency": "1.5 us"},
                             "network": {"topology": "rail-optimized", "nics_per_node": 4,
                                         "nic_bandwidth": "400 Gb/s", "latency": "3 us", "oversubscription": 2}})");
  ASSERT_TRUE(p.diag.empty()) << messages(p.diag);
  const core::Json resolved = p.config.to_json();
  const Parsed again = parse(resolved.dump());
  ASSERT_TRUE(again.diag.empty()) << messages(again.diag);
  EXPECT_EQ(again.config.to_json(), resolved);
  EXPECT_EQ(resolved["intra_node"]["fabric"], "nvlink-mesh");
  EXPECT_EQ(resolved["network"]["topology"], "rail-optimized");
  EXPECT_EQ(resolved["network"]["nic_bandwidth"], "50 GB/s");
  EXPECT_DOUBLE_EQ(again.config.network.latency.value(), 3e-6);
  EXPECT_DOUBLE_EQ(again.config.intra_node.bandwidth.value(), 900e9);
}

}  // namespace
}  // namespace trainsim::network
