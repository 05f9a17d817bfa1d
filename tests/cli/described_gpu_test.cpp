// Issue 17, items 3 and 4 end to end: a what-if on a described GPU (an H100 with twice the HBM
// bandwidth) moves the memory-bound work and leaves the GEMM-bound work alone; a GPU described
// without a base and a profile fitted on another GPU are warned about, in the scenario and in the
// report.

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "sim/cli/compare_command.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/cli/search_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/core/gpu_description.hpp"
#include "sim/engine/compute_model.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIOS = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/";
const std::string DOUBLE_HBM = R"(cluster.gpu={"base": "H100-SXM5-80GB", "hbm_bandwidth": "6.7 TB/s"})";

// Compute time of every COMPUTE task of every program, summed by op class.
std::array<double, core::OP_CLASS_COUNT> time_by_op_class(const Scenario& s, const core::Workload& w) {
  std::array<double, core::OP_CLASS_COUNT> out{};
  for (const core::Program& program : w.programs) {
    for (const core::Task& t : program.tasks) {
      if (t.kind != core::TaskKind::COMPUTE) continue;
      out[static_cast<size_t>(t.op_class)] +=
          engine::compute_time(t, s.training.precision, s.cluster.gpu_spec, s.profile.device).value();
    }
  }
  return out;
}

double class_time(const std::array<double, core::OP_CLASS_COUNT>& t, core::OpClass c) {
  return t[static_cast<size_t>(c)];
}

TEST(DescribedGpu, DoubleHbmBandwidthSpeedsUpMemoryBoundOpsAndNotGemms) {
  const Scenario h100 = load_scenario(SCENARIOS + "llama3-70b-h100-64.json", {"simulation.backend=analytic"});
  const Scenario fast = load_scenario(SCENARIOS + "llama3-70b-h100-64.json", {"simulation.backend=analytic", DOUBLE_HBM});
  ASSERT_EQ(fast.cluster.gpu, "H100-SXM5-80GB (custom)");
  ASSERT_DOUBLE_EQ(fast.cluster.gpu_spec.hbm_bandwidth.value(), 2 * h100.cluster.gpu_spec.hbm_bandwidth.value());
  // The base's built-in profile: the same efficiencies, so only the figure changed differs.
  EXPECT_EQ(fast.profile.device.source, h100.profile.device.source);
  EXPECT_TRUE(fast.warnings.empty());

  const models::BuiltWorkload built = models::build_workload(h100.model, h100.training, h100.parallelism);
  const auto before = time_by_op_class(h100, built.workload);
  const auto after = time_by_op_class(fast, built.workload);
  // GEMMs are bound by the tensor cores: not a nanosecond changes.
  ASSERT_GT(class_time(before, core::OpClass::GEMM), 0);
  EXPECT_DOUBLE_EQ(class_time(after, core::OpClass::GEMM), class_time(before, core::OpClass::GEMM));
  // Memory-bound classes: their HBM time halves; the kernel overhead (2 us a task) stays.
  const double overhead = h100.profile.device.kernel_overhead.value();
  for (core::OpClass c : {core::OpClass::ELEMENTWISE, core::OpClass::NORM, core::OpClass::OPTIMIZER}) {
    SCOPED_TRACE(std::string(core::to_string(c)));
    size_t tasks = 0;
    for (const core::Program& program : built.workload.programs) {
      for (const core::Task& t : program.tasks) tasks += t.kind == core::TaskKind::COMPUTE && t.op_class == c;
    }
    ASSERT_GT(tasks, 0u);
    const double hbm_before = class_time(before, c) - tasks * overhead;
    const double hbm_after = class_time(after, c) - tasks * overhead;
    EXPECT_NEAR(hbm_after / hbm_before, 0.5, 1e-9);
  }

  // The prediction: the optimizer step (pure HBM streaming) halves, the iteration gets faster, and
  // the communication (NVLink and network unchanged) stays as it was.
  const Prediction p_before = predict(h100);
  const Prediction p_after = predict(fast);
  const auto optimizer = [](const Prediction& p) {
    return p.result.breakdown.compute_by_phase[static_cast<size_t>(core::Phase::OPTIMIZER)].value();
  };
  EXPECT_NEAR(optimizer(p_after) / optimizer(p_before), 0.5, 0.01);
  EXPECT_LT(p_after.iteration_time_s(), p_before.iteration_time_s());
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    const double before_s = p_before.result.comm_time[a].value();
    EXPECT_NEAR(p_after.result.comm_time[a].value(), before_s, 1e-9 * before_s) << a;
  }
}

// --set on a figure of a catalog GPU makes it {"base": name, figure: value}, as --set does for models.
TEST(DescribedGpu, SetOnAFigureOfACatalogGpuMakesItTheBase) {
  const Scenario s = load_scenario(SCENARIOS + "llama3-70b-h100-64.json", {"cluster.gpu.hbm_bandwidth=6.7 TB/s"});
  EXPECT_TRUE(s.cluster.gpu_described);
  EXPECT_EQ(s.cluster.gpu_base, "H100-SXM5-80GB");
  EXPECT_DOUBLE_EQ(s.cluster.gpu_spec.hbm_bandwidth.value(), 6.7e12);
  EXPECT_EQ(s.to_json()["cluster"]["gpu"]["base"], "H100-SXM5-80GB");
}

// The same GPU described in full from the H100's figures predicts what the catalog H100 predicts
// once it is given the H100's profile (its own default is the datasheet defaults, and it says so).
TEST(DescribedGpu, FullDescriptionOfACatalogGpuWithItsProfileMatchesTheCatalogGpu) {
  const std::string scenario = SCENARIOS + "gpt3-6.7b-a100-8.json";
  const Scenario catalog = load_scenario(scenario, {"simulation.backend=analytic"});
  core::Json described = core::GpuChoice{catalog.cluster.gpu_spec, "", true}.to_json();
  described["name"] = "my-A100";
  const std::string gpu = "cluster.gpu=" + described.dump();
  const Scenario own = load_scenario(scenario, {"simulation.backend=analytic", gpu});
  ASSERT_EQ(own.warnings.size(), 1u);
  EXPECT_NE(own.warnings[0].find("describes \"my-A100\" without a \"base\": its compute efficiencies are the "
                                 "datasheet defaults"),
            std::string::npos)
      << own.warnings[0];
  EXPECT_EQ(own.profile.device.source, "datasheet defaults");

  core::Json doc = catalog.to_json();  // the A100's built-in profile, inline
  doc["cluster"]["gpu"] = described;
  const Scenario with_profile = read_scenario(doc, "described.json");
  ASSERT_EQ(with_profile.warnings.size(), 1u) << "the inline profile is the A100's";
  EXPECT_NE(with_profile.warnings[0].find("was fitted on A100-SXM4-80GB, not on the scenario's my-A100"),
            std::string::npos)
      << with_profile.warnings[0];
  EXPECT_DOUBLE_EQ(predict(with_profile).iteration_time_s(), predict(catalog).iteration_time_s());
}

// Item 3: a profile fitted on another GPU is warned about in the scenario and the report.
TEST(DescribedGpu, ProfileFittedOnAnotherGpuIsWarnedAbout) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "trainsim_profile_gpu_test";
  std::filesystem::create_directories(dir);
  const std::string profile = (dir / "a100.json").string();
  std::ofstream(profile) << R"({"schema": "trainsim.profile/1", "fitted_on": {"gpu": "A100-SXM4-80GB", "cuda": "12.4"}})";

  const std::string h100 = SCENARIOS + "llama3-70b-h100-64.json";
  const Scenario s = load_scenario(h100, {"simulation.backend=analytic", "simulation.profile=" + profile});
  const std::string expected = "the profile " + profile +
                               " was fitted on A100-SXM4-80GB, not on the scenario's H100-SXM5-80GB: its efficiencies "
                               "describe another GPU's kernels; calibrate on H100-SXM5-80GB";
  EXPECT_EQ(s.profile_mismatch, expected);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0], expected + " (`run --strict-profile` makes this an error)");
  const core::Json report = report_json(s, predict(s));
  ASSERT_TRUE(report.contains("warnings"));
  EXPECT_EQ(report["warnings"], core::Json::array({s.warnings[0]}));
  EXPECT_NE(report_table(s, predict(s)).find("warning: the profile " + profile), std::string::npos);

  // The profile's own GPU, or a described GPU whose base it is: no warning, and no report field.
  const Scenario a100 = load_scenario(SCENARIOS + "gpt3-6.7b-a100-8.json",
                                      {"simulation.backend=analytic", "simulation.profile=" + profile});
  EXPECT_TRUE(a100.warnings.empty());
  EXPECT_FALSE(report_json(a100, predict(a100)).contains("warnings"));
  const Scenario based = load_scenario(SCENARIOS + "gpt3-6.7b-a100-8.json",
                                       {"simulation.profile=" + profile,
                                        R"(cluster.gpu={"base": "A100-SXM4-80GB", "hbm_bandwidth": "4 TB/s"})"});
  EXPECT_TRUE(based.profile_mismatch.empty());
  // Bundled scenarios (built-in profiles) warn about nothing.
  for (const char* name : {"gpt3-175b-a100-1024.json", "llama3-70b-h100-64.json", "llama3-405b-h100-16384.json"}) {
    EXPECT_TRUE(load_scenario(SCENARIOS + name).warnings.empty()) << name;
  }
  std::filesystem::remove_all(dir);
}

// Item 3 in the commands that run many scenarios: compare, sweep, search and validate print the
// warning on stderr once (not once per configuration), and say which runs it concerns when not all.
TEST(DescribedGpu, ManyScenarioCommandsPrintTheProfileWarningOnce) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("trainsim_profile_warning_commands_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string profile = (dir / "a100.json").string();
  std::ofstream(profile) << R"({"schema": "trainsim.profile/1", "fitted_on": {"gpu": "A100-SXM4-80GB"}})";
  const std::string scenario = SCENARIOS + "gpt3-6.7b-a100-8.json";
  const std::string warning = "warning: the profile " + profile + " was fitted on A100-SXM4-80GB, not on the scenario's H100-SXM5-80GB";
  const std::string h100 = "cluster.gpu=H100-SXM5-80GB";
  const std::string with_profile = "simulation.profile=" + profile;
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };

  {  // compare: two configurations, both on the H100: one line, no "(in: ...)".
    std::ostringstream out, err;
    CompareArgs args{.inputs = {scenario}, .vary = {"training.micro_batch=1,2"}, .overrides = {h100, with_profile}};
    args.quiet = true;
    ASSERT_EQ(compare_command(args, out, err), 0);
    EXPECT_EQ(count(err.str(), warning), 1u) << err.str();
    EXPECT_EQ(err.str().find("(in: "), std::string::npos) << err.str();
  }
  {  // compare: only the H100 column has the mismatch: the line names it.
    std::ostringstream out, err;
    CompareArgs args{.inputs = {scenario}, .vary = {"cluster.gpu=A100-SXM4-80GB,H100-SXM5-80GB"}, .overrides = {with_profile}};
    args.quiet = true;
    ASSERT_EQ(compare_command(args, out, err), 0);
    EXPECT_EQ(count(err.str(), warning), 1u) << err.str();
    EXPECT_NE(err.str().find("(`run --strict-profile` makes this an error) (in: gpu=H100-SXM5-80GB)\n"), std::string::npos)
        << err.str();
  }
  {  // sweep: three points, one line.
    std::ostringstream out, err;
    SweepArgs args;
    args.scenario = scenario;
    args.overrides = {h100, with_profile};
    args.ranges = {"training.micro_batch=1,2,4"};
    args.quiet = true;
    ASSERT_EQ(sweep_command(args, out, err), 0);
    EXPECT_EQ(count(err.str(), warning), 1u) << err.str();
  }
  {  // search: printed even with --quiet (it is not progress).
    std::ostringstream out, err;
    SearchArgs args;
    args.options.scenario = scenario;
    args.options.overrides = {h100, with_profile, "model.layers=8", "training.global_batch=32"};
    args.options.max_micro_batch = 2;
    args.options.refine = 4;
    args.options.top = 2;
    args.options.recheck = false;
    args.options.quiet = true;
    args.options.jobs = 1;
    ASSERT_EQ(search_command(args, out, err), 0);
    EXPECT_EQ(count(err.str(), warning), 1u) << err.str();
  }
  {  // validate: the case's warning, with its name when another case has none.
    core::Json doc = core::load_json_file(scenario);
    doc["expect"] = {{"iteration_time_s", 1.0}, {"source", "test"}};
    std::ofstream(dir / "plain.json") << doc.dump();
    doc["name"] = "on-h100";
    doc["cluster"]["gpu"] = "H100-SXM5-80GB";
    doc["simulation"]["profile"] = profile;
    std::ofstream(dir / "h100.json") << doc.dump();
    std::ostringstream out, err;
    ValidateArgs args;
    args.paths = {(dir / "plain.json").string(), (dir / "h100.json").string()};
    args.backend = "analytic";
    args.quiet = true;
    validate_command(args, out, err);
    EXPECT_EQ(count(err.str(), warning), 1u) << err.str();
    EXPECT_NE(err.str().find("(in: on-h100)"), std::string::npos) << err.str();
  }
  std::filesystem::remove_all(dir);
}

// A GPU without NVLink (L40S) puts its node on PCIe unless told otherwise.
TEST(DescribedGpu, GpuWithoutNvlinkDefaultsToThePcieFabric) {
  core::Json doc = core::load_json_file(SCENARIOS + "gpt3-6.7b-a100-8.json");
  doc["cluster"].erase("intra_node");
  doc["cluster"]["gpu"] = "L40S";
  const Scenario s = read_scenario(doc, "l40s.json");
  EXPECT_EQ(s.cluster.intra_node.fabric, network::IntraFabric::PCIE);
  EXPECT_DOUBLE_EQ(s.cluster.intra_node.bandwidth.value(), s.cluster.gpu_spec.pcie_bandwidth.value());
  EXPECT_EQ(read_scenario(s.to_json(), "resolved").to_json(), s.to_json());
}

}  // namespace
}  // namespace trainsim::cli
