// Physical feasibility (network/feasibility.hpp): each rule refuses the combination it names and
// nothing else, the GPU catalog says which GPUs have NVLink SHARP, and docs/network.md prints the
// code's table.

#include "network/feasibility.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <sstream>

namespace trainsim::network {
namespace {

ClusterConfig read(const core::Json& cluster) {
  core::Diagnostics diag;
  core::ObjectReader r(cluster, "c.json", "/cluster", diag);
  ClusterConfig c = ClusterConfig::from_json(r);
  diag.throw_if_any();
  return c;
}

// The problems of a cluster section as "pointer: message" lines.
std::vector<std::string> problems(const core::Json& cluster) {
  core::Diagnostics diag;
  check_feasibility(read(cluster), "c.json", "/cluster", diag);
  std::vector<std::string> out;
  for (const core::InputProblem& p : diag.problems()) out.push_back(p.pointer + ": " + p.message);
  return out;
}

core::Json with_network(core::Json network, const std::string& gpu = "H100-SXM5-80GB") {
  return {{"gpu", gpu}, {"nodes", 4}, {"network", std::move(network)}};
}

TEST(Feasibility, EveryBundledKindOfClusterKeepsEveryRule) {
  EXPECT_TRUE(problems({{"gpu", "A100-SXM4-80GB"}}).empty());
  EXPECT_TRUE(problems(with_network({{"in_network_aggregation", "sharp"}})).empty()) << "InfiniBand by default";
  EXPECT_TRUE(problems(with_network({{"in_network_aggregation", "switchml"}})).empty()) << "Ethernet by default";
  EXPECT_TRUE(problems(with_network({{"in_network_aggregation", "switchml"}, {"technology", "roce"}})).empty());
  EXPECT_TRUE(problems({{"gpu", "H100-SXM5-80GB"}, {"intra_node", {{"nvls", true}}}}).empty());
  EXPECT_TRUE(problems({{"gpu", "B200"}, {"intra_node", {{"nvls", true}}}}).empty());
}

TEST(Feasibility, TheTechnologyDefaultFollowsTheAggregation) {
  EXPECT_EQ(read(with_network(core::Json::object())).network.technology, NetworkTechnology::INFINIBAND);
  EXPECT_EQ(read(with_network({{"in_network_aggregation", "sharp"}})).network.technology, NetworkTechnology::INFINIBAND);
  EXPECT_EQ(read(with_network({{"in_network_aggregation", {{"kind", "switchml"}}}})).network.technology,
            NetworkTechnology::ETHERNET);
  EXPECT_EQ(read(with_network({{"technology", "roce"}})).network.technology, NetworkTechnology::ROCE);
  EXPECT_EQ(read(with_network({{"technology", "ethernet"}})).to_json()["network"]["technology"], "ethernet");
}

TEST(Feasibility, NvlsNeedsAnNvswitchWithNvlinkSharp) {
  const std::vector<std::string> a100 = problems({{"gpu", "A100-SXM4-80GB"}, {"intra_node", {{"nvls", true}}}});
  ASSERT_EQ(a100.size(), 1u);
  EXPECT_EQ(a100[0].rfind("/cluster/intra_node/nvls: needs a GPU whose NVSwitch has NVLink SHARP", 0), 0u) << a100[0];
  EXPECT_NE(a100[0].find("cluster.gpu A100-SXM4-80GB has none"), std::string::npos) << a100[0];
  const std::vector<std::string> pcie =
      problems({{"gpu", "H100-SXM5-80GB"}, {"intra_node", {{"fabric", "pcie"}, {"nvls", true}}}});
  ASSERT_EQ(pcie.size(), 1u);
  EXPECT_EQ(pcie[0].rfind("/cluster/intra_node/nvls: needs fabric \"nvswitch\" (cluster.intra_node.fabric), found \"pcie\"", 0),
            0u)
      << pcie[0];
  // A described GPU takes its base's capability, and may state its own.
  const core::Json based = {{"base", "H100-SXM5-80GB"}, {"hbm_bandwidth", "6.7 TB/s"}};
  EXPECT_TRUE(problems({{"gpu", based}, {"intra_node", {{"nvls", true}}}}).empty());
  core::Json without = based;
  without["nvlink_sharp"] = false;
  ASSERT_EQ(problems({{"gpu", without}, {"intra_node", {{"nvls", true}}}}).size(), 1u);
  core::Json a100_with = {{"base", "A100-SXM4-80GB"}, {"nvlink_sharp", true}};
  EXPECT_TRUE(problems({{"gpu", a100_with}, {"intra_node", {{"nvls", true}}}}).empty());
}

TEST(Feasibility, SharpNeedsAnEdrOrLaterInfinibandFabric) {
  for (const char* technology : {"ethernet", "roce"}) {
    const auto p = problems(with_network({{"in_network_aggregation", "sharp"}, {"technology", technology}}));
    ASSERT_EQ(p.size(), 1u) << technology;
    EXPECT_EQ(p[0], fmt::format("/cluster/network/in_network_aggregation: \"sharp\" needs cluster.network.technology "
                                "\"infiniband\" (SHARP runs in InfiniBand switches), found \"{}\": on Ethernet or "
                                "RoCE give \"switchml\" (a programmable switch) or no in-network aggregation",
                                technology));
  }
  // The original key is the one named when it alone asked for SHARP.
  const auto reduction = problems(with_network({{"in_network_reduction", true}, {"technology", "ethernet"}}));
  ASSERT_EQ(reduction.size(), 1u);
  EXPECT_EQ(reduction[0].rfind("/cluster/network/in_network_reduction: ", 0), 0u) << reduction[0];
  // FDR (56 Gb/s) switches predate SHARP; EDR (100 Gb/s) is the first generation with it.
  const auto fdr = problems(with_network({{"in_network_aggregation", "sharp"}, {"nic_bandwidth", "56 Gb/s"}}));
  ASSERT_EQ(fdr.size(), 1u);
  EXPECT_NE(fdr[0].find("cluster.network.nic_bandwidth 56 Gb/s is an older generation"), std::string::npos) << fdr[0];
  EXPECT_TRUE(problems(with_network({{"in_network_aggregation", "sharp"}, {"nic_bandwidth", "100 Gb/s"}})).empty());
}

TEST(Feasibility, SwitchmlNeedsAnEthernetSwitchAndAggregationNeedsSwitches) {
  const auto ib = problems(with_network({{"in_network_aggregation", "switchml"}, {"technology", "infiniband"}}));
  ASSERT_EQ(ib.size(), 1u);
  EXPECT_EQ(ib[0].rfind("/cluster/network/in_network_aggregation: \"switchml\" needs cluster.network.technology "
                        "\"ethernet\" or \"roce\"",
                        0),
            0u)
      << ib[0];
  const auto torus = problems({{"nodes", 8}, {"network", {{"topology", "torus"}, {"in_network_aggregation", "sharp"}}}});
  ASSERT_EQ(torus.size(), 1u);
  EXPECT_EQ(torus[0].rfind("/cluster/network/in_network_aggregation: needs a switched topology", 0), 0u) << torus[0];
}

// Hand-written from the vendors' documents (the rule's sources): third-generation NVSwitch (HGX H100,
// H800, H200) and Blackwell's NVLink Switch have NVLink SHARP; A100's, V100's and non-NVSwitch GPUs not.
TEST(Feasibility, TheCatalogSaysWhichGpusHaveNvlinkSharp) {
  const std::set<std::string> with = {"H100-SXM5-80GB", "H800-SXM5-80GB", "H200-SXM-141GB", "B200", "GB200"};
  for (const core::GpuSpec& g : core::gpu_catalog()) EXPECT_EQ(g.nvlink_sharp, with.count(g.name) == 1) << g.name;
}

// docs/network.md's "Physical feasibility" table is the code's: one row per rule, in order, with its
// requirement and source.
TEST(Feasibility, TheDocumentedTableIsTheCodes) {
  std::ifstream f(std::filesystem::path(TRAINSIM_SOURCE_DIR) / "docs/network.md");
  std::stringstream text;
  text << f.rdbuf();
  std::vector<std::string> rows;
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("| `") && line.find("-needs-") != std::string::npos) rows.push_back(line);
  }
  const std::vector<FeasibilityRule>& rules = feasibility_rules();
  ASSERT_EQ(rows.size(), rules.size());
  for (size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(rows[i].rfind(fmt::format("| `{}` |", rules[i].id), 0), 0u) << rows[i];
    std::string requirement(rules[i].requirement);
    // The doc quotes names in backticks where the code has double quotes.
    for (char& c : requirement) c = c == '"' ? '`' : c;
    std::string source(rules[i].source);
    EXPECT_NE(rows[i].find("| " + requirement + " |"), std::string::npos) << rules[i].id << "\n" << rows[i];
    EXPECT_NE(rows[i].find("| " + source + " |"), std::string::npos) << rules[i].id << "\n" << rows[i];
  }
}

}  // namespace
}  // namespace trainsim::network
