#include "sim/plan/scenario.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/cli/commands.hpp"
#include "sim/plan/prediction.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIOS = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/";

TEST(Scenario, LoadsBundledScenarioWithDefaultsResolved) {
  const Scenario s = load_scenario(SCENARIOS + "gpt3-175b-a100-1024.json");
  EXPECT_EQ(s.name, "gpt3-175b-a100-1024");
  EXPECT_EQ(s.cluster.world_size(), 1024);
  EXPECT_EQ(s.parallelism.tensor * s.parallelism.pipeline * s.parallelism.data, 1024);
  EXPECT_DOUBLE_EQ(s.cluster.network.nic_bandwidth.value(), 25e9) << "200 Gb/s is 25 GB/s";
  const core::Json resolved = s.to_json();
  EXPECT_EQ(resolved["model"]["layers"], 96);
  EXPECT_EQ(resolved["parallelism"]["zero_stage"], 0);
  EXPECT_TRUE(resolved.contains("profile"));
}

// `check` prints the resolved scenario, profile included; it reads back into the same scenario: the
// same resolved JSON, and an inline "profile" that changes a constant takes effect.
TEST(Scenario, ResolvedScenarioReadsBackToItself) {
  for (const char* name : {"gpt3-175b-a100-1024.json", "llama3-70b-h100-64.json", "sanity/opt-175b-fsdp-a100-992.json"}) {
    const Scenario s = load_scenario(SCENARIOS + name);
    const core::Json resolved = s.to_json();
    const Scenario again = read_scenario(resolved, std::string("resolved ") + name);
    EXPECT_EQ(again.to_json(), resolved) << name;
  }
  core::Json edited = load_scenario(SCENARIOS + "gpt3-6.7b-a100-8.json").to_json();
  edited["profile"]["device"]["kernel_overhead"] = "7 us";
  EXPECT_DOUBLE_EQ(read_scenario(edited, "edited").profile.device.kernel_overhead.value(), 7e-6);
}

// Issue 33, item 6: `check` writes a scenario that stays a scenario (the GPU by name, no built-in
// profile), so a what-if on another GPU gets that GPU's profile; `check --resolve-profile` embeds the
// resolved profile, and a what-if on such a file warns that the profile belongs to another GPU,
// naming where it came from and how to drop it.
TEST(Scenario, CheckWritesAScenarioAndOnlyResolvesTheProfileWhenAsked) {
  const std::string file = SCENARIOS + "gpt3-6.7b-a100-8.json";
  std::ostringstream plain, resolved, err;
  ASSERT_EQ(check_command({.scenario = file, .overrides = {}}, plain, err), 0);
  ASSERT_EQ(check_command({.scenario = file, .overrides = {}, .resolve_profile = true}, resolved, err), 0);
  const core::Json as_scenario = core::Json::parse(plain.str());
  EXPECT_EQ(as_scenario["cluster"]["gpu"], "A100-SXM4-80GB");
  EXPECT_FALSE(as_scenario.contains("profile")) << "the built-in profile is the GPU's, not the scenario's";
  const core::Json with_profile = core::Json::parse(resolved.str());
  ASSERT_TRUE(with_profile.contains("profile"));
  EXPECT_EQ(with_profile["profile"]["fitted_on"]["gpu"], "A100-SXM4-80GB");
  EXPECT_EQ(with_profile["profile"]["source"].get<std::string>().rfind("built-in A100-SXM4-80GB profile", 0), 0u);

  // The what-if on the plain file: the H100's own profile, nothing to warn about.
  core::Json what_if = as_scenario;
  apply_override(what_if, "cluster.gpu=H100-SXM5-80GB");
  const Scenario h100 = read_scenario(what_if, "winner.json");
  EXPECT_EQ(h100.profile.device.fitted_on.gpu, "H100-SXM5-80GB");
  EXPECT_TRUE(h100.warnings.empty());
  EXPECT_EQ(h100.to_json(Scenario::ProfileOut::RESOLVED)["profile"],
            load_scenario(SCENARIOS + "gpt3-6.7b-a100-8.json", {"cluster.gpu=H100-SXM5-80GB"})
                .to_json(Scenario::ProfileOut::RESOLVED)["profile"]);

  // The what-if on the resolved file keeps the A100's profile and says so.
  core::Json stale = with_profile;
  apply_override(stale, "cluster.gpu=H100-SXM5-80GB");
  const Scenario kept = read_scenario(stale, "winner.json");
  EXPECT_EQ(kept.profile.device.fitted_on.gpu, "A100-SXM4-80GB");
  ASSERT_EQ(kept.warnings.size(), 1u);
  const std::string& w = kept.warnings[0];
  EXPECT_EQ(w.rfind("the profile embedded in winner.json (\"profile\", from: built-in A100-SXM4-80GB profile", 0), 0u) << w;
  EXPECT_NE(w.find("was fitted on A100-SXM4-80GB, not on the scenario's H100-SXM5-80GB"), std::string::npos) << w;
  EXPECT_NE(w.find("remove \"profile\" from the scenario to use the built-in profile of H100-SXM5-80GB (GPU catalog), "
                   "or calibrate on H100-SXM5-80GB"),
            std::string::npos)
      << w;
  // The report names that profile too, not the scenario file.
  EXPECT_EQ(kept.profile.device.source, with_profile["profile"]["source"]);
  // An inline profile as written survives `check`, and only it.
  core::Json edited = as_scenario;
  edited["profile"] = {{"device", {{"kernel_overhead", "7 us"}}}};
  EXPECT_EQ(read_scenario(edited, "edited.json").to_json(Scenario::ProfileOut::AS_GIVEN)["profile"], edited["profile"]);
}

// The ZeRO sanity anchors (scenarios/sanity) load, with their implementation resolved.
TEST(Scenario, SanityScenariosLoadWithTheirZeroImplementation) {
  const Scenario zero = load_scenario(SCENARIOS + "sanity/zero-sc20-13b-v100-128.json");
  EXPECT_EQ(zero.parallelism.zero_impl, models::ZeroImpl::DEEPSPEED);
  EXPECT_FALSE(zero.parallelism.overlap_grad_reduce) << "DeepSpeed's overlap_comm default below stage 3";
  const Scenario opt = load_scenario(SCENARIOS + "sanity/opt-175b-fsdp-a100-992.json");
  EXPECT_EQ(opt.parallelism.zero_impl, models::ZeroImpl::FSDP);
  EXPECT_EQ(opt.parallelism.prefetch, 1);
  EXPECT_EQ(opt.to_json()["parallelism"]["zero_impl"], "fsdp");
}

TEST(Scenario, SetOverridesNestedValuesAndCatalogModels) {
  core::Json doc = core::load_json_file(SCENARIOS + "gpt3-175b-a100-1024.json");
  apply_override(doc, "parallelism.pipeline=16");
  apply_override(doc, "parallelism.data=8");
  apply_override(doc, "model.layers=48");
  apply_override(doc, "cluster.network.nic_bandwidth=400 Gb/s");
  const Scenario s = read_scenario(doc, "x.json");
  EXPECT_EQ(s.parallelism.pipeline, 16);
  EXPECT_EQ(s.model.layers, 48);
  EXPECT_EQ(s.model.hidden, 12288) << "other fields come from the catalog base";
  EXPECT_DOUBLE_EQ(s.cluster.network.nic_bandwidth.value(), 50e9);
}

TEST(Scenario, MalformedOverrideIsAnInputError) {
  core::Json doc = core::Json::object();
  EXPECT_THROW(apply_override(doc, "no-equals-sign"), core::InputError);
  doc["name"] = "x";
  EXPECT_THROW(apply_override(doc, "name.inner=1"), core::InputError);
}

TEST(Scenario, ReportsEveryProblemAtOnce) {
  core::Json doc = core::load_json_file(SCENARIOS + "gpt3-175b-a100-1024.json");
  apply_override(doc, "cluster.nodez=4");
  apply_override(doc, "training.micro_batch=\"one\"");
  try {
    read_scenario(doc, "s.json");
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    ASSERT_EQ(e.problems().size(), 2u) << e.what();
    EXPECT_EQ(e.problems()[0].pointer, "/cluster/nodez");
    EXPECT_NE(e.problems()[0].message.find("did you mean \"nodes\""), std::string::npos);
    EXPECT_EQ(e.problems()[1].pointer, "/training/micro_batch");
  }
}

TEST(Scenario, ProfileFileOverridesTheDeviceDefaults) {
  // A profile that halves the GEMM efficiency must make a GEMM-bound job markedly slower; the path is
  // relative to the scenario's folder.
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "profile_case";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "slow.json") << R"({"schema": "trainsim.profile/1",
      "device": {"ops": {"gemm": {"max_efficiency": 0.4}}}})";
  core::Json doc = core::load_json_file(SCENARIOS + "gpt3-6.7b-a100-8.json");
  const Scenario base = read_scenario(doc, (dir / "s.json").string());
  apply_override(doc, "simulation.profile=slow.json");
  const Scenario slow = read_scenario(doc, (dir / "s.json").string());
  EXPECT_DOUBLE_EQ(slow.profile.device.op(core::OpClass::GEMM).max_efficiency, 0.4);
  EXPECT_EQ(slow.profile.device.op(core::OpClass::GEMM).half_flops,
            base.profile.device.op(core::OpClass::GEMM).half_flops) << "keys left out keep their defaults";
  const double t_base = predict(base).iteration_time_s();
  const double t_slow = predict(slow).iteration_time_s();
  EXPECT_GT(t_slow, 1.5 * t_base);
  EXPECT_LT(t_slow, 2.0 * t_base) << "only GEMMs slowed down";

  std::ofstream(dir / "bad.json") << R"({"device": {"ops": {"gemm": {"max_eficiency": 0.4}}}})";
  apply_override(doc, "simulation.profile=bad.json");
  try {
    read_scenario(doc, (dir / "s.json").string());
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems().at(0).file, (dir / "bad.json").string());
    EXPECT_EQ(e.problems().at(0).pointer, "/device/ops/gemm/max_eficiency");
  }
}

}  // namespace
}  // namespace trainsim::cli
