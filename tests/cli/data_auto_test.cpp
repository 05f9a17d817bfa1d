// parallelism.data "auto": the data-parallel degree that fills the cluster, resolved when the
// scenario is read (sim/plan/scenario.hpp).

#include <gtest/gtest.h>

#include "sim/plan/scenario.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIOS = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/";

core::Json gpt3_175b() { return core::load_json_file(SCENARIOS + "gpt3-175b-a100-1024.json"); }

TEST(DataAuto, FillsTheClusterAndFollowsTheNodeCount) {
  core::Json doc = gpt3_175b();
  const int tp = doc["parallelism"]["tensor"], pp = doc["parallelism"]["pipeline"];
  apply_override(doc, "parallelism.data=auto");
  const Scenario s = read_scenario(doc, "x.json");
  EXPECT_EQ(s.parallelism.data, 1024 / (tp * pp));
  EXPECT_EQ(s.to_json()["parallelism"]["data"], 1024 / (tp * pp)) << "check prints the resolved number";

  // The what-if of issue 10: only the node count changes (global batch 1536 stays divisible).
  apply_override(doc, "cluster.nodes=64");
  EXPECT_EQ(read_scenario(doc, "x.json").parallelism.data, 512 / (tp * pp));
}

TEST(DataAuto, DividesByTensorPipelineContextAndExpert) {
  core::Json doc = gpt3_175b();
  apply_override(doc, "parallelism.tensor=4");
  apply_override(doc, "parallelism.pipeline=4");
  apply_override(doc, "parallelism.context=2");
  apply_override(doc, "parallelism.data=\"auto\"");
  EXPECT_EQ(read_scenario(doc, "x.json").parallelism.data, 1024 / 32);
}

TEST(DataAuto, NotDividingIsAnImpossibleScenarioNamingTheNumbers) {
  core::Json doc = gpt3_175b();
  apply_override(doc, "parallelism.data=auto");
  apply_override(doc, "parallelism.pipeline=6");
  try {
    read_scenario(doc, "x.json");
    FAIL() << "accepted";
  } catch (const ImpossibleScenario& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.json: /parallelism/data: \"auto\" needs the cluster's 1024 GPUs to be a multiple of tensor x "
              "pipeline x context x expert = 8 x 6 x 1 x 1 = 48");
  }
}

TEST(DataAuto, OtherStringsAreMalformedNotImpossible) {
  core::Json doc = gpt3_175b();
  apply_override(doc, "parallelism.data=max");
  try {
    read_scenario(doc, "x.json");
    FAIL() << "accepted";
  } catch (const ImpossibleScenario&) {
    FAIL() << "a malformed value is not an impossible configuration";
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.json: /parallelism/data: expected a positive integer or \"auto\" (the degree that fills the "
              "cluster), found \"max\"");
  }
}

// A strategy that does not divide is impossible, a typo malformed: compare and search tell them apart.
TEST(DataAuto, ImpossibleScenarioOnlyForWellFormedInput) {
  core::Json doc = gpt3_175b();
  apply_override(doc, "parallelism.tensor=7");
  EXPECT_THROW(read_scenario(doc, "x.json"), ImpossibleScenario);
  apply_override(doc, "parallelism.tensr=8");
  try {
    read_scenario(doc, "x.json");
    FAIL() << "accepted";
  } catch (const ImpossibleScenario&) {
    FAIL() << "an unknown key is malformed input";
  } catch (const core::InputError&) {
  }
}

}  // namespace
}  // namespace trainsim::cli
