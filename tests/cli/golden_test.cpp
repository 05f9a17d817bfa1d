// Golden reports: every bundled scenario's JSON report (without the wall-clock time) is compared to
// tests/data/golden/NAME.json (the default SimGrid backend) and NAME.analytic.json, so that any
// change in a prediction is noticed; the two backends must agree on the bundled scenarios, whose
// networks share no link between concurrent calls beyond what the closed forms assume. One test per
// scenario: SimGrid builds one platform per process, and gtest_discover_tests runs each alone.
// Regenerate on purpose:
//   for t in $(build/tests/cli/cli_tests --gtest_list_tests --gtest_filter='Scenarios/Golden*' | grep '^ ' | awk '{print $1}'); do
//     TRAINSIM_UPDATE_GOLDEN=1 build/tests/cli/cli_tests --gtest_filter="Scenarios/Golden.$t"; done

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/cli/compare_command.hpp"
#include "sim/plan/prediction.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);

core::Json stable_report(const std::filesystem::path& scenario, const std::string& backend = "") {
  const Scenario s = load_scenario(scenario.string());
  core::Json r = report_json(s, predict(s, backend));
  r["simulation"].erase("wall_s");
  return r;
}

// Numbers agree to 1e-9 relative (different compilers may round the last digit differently).
void expect_same(const core::Json& expected, const core::Json& actual, const std::string& path) {
  if (expected.is_number() && actual.is_number()) {
    const double e = expected.get<double>(), a = actual.get<double>();
    EXPECT_LE(std::abs(e - a), 1e-9 * std::max(std::abs(e), 1e-12)) << path << ": expected " << e << ", got " << a;
    return;
  }
  ASSERT_EQ(expected.type(), actual.type()) << path;
  if (expected.is_object()) {
    ASSERT_EQ(expected.size(), actual.size()) << path << ": keys differ";
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      ASSERT_TRUE(actual.contains(it.key())) << path << "/" << it.key() << " missing";
      expect_same(it.value(), actual[it.key()], path + "/" + it.key());
    }
  } else if (expected.is_array()) {
    ASSERT_EQ(expected.size(), actual.size()) << path;
    for (size_t i = 0; i < expected.size(); ++i) expect_same(expected[i], actual[i], path + "/" + std::to_string(i));
  } else {
    EXPECT_EQ(expected, actual) << path;
  }
}

std::vector<std::string> bundled_scenarios() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(SOURCE / "scenarios")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void check_golden(const core::Json& actual, const std::filesystem::path& golden) {
  if (std::getenv("TRAINSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << actual.dump(2) << "\n";
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " missing: regenerate on purpose";
  expect_same(core::load_json_file(golden.string()), actual, "");
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, ReportIsUnchangedAndTheBackendsAgree) {
  const std::filesystem::path scenario = SOURCE / "scenarios" / (GetParam() + ".json");
  const core::Json simgrid = stable_report(scenario);
  const core::Json analytic = stable_report(scenario, "analytic");
  EXPECT_EQ(simgrid["simulation"]["backend"], "simgrid");
  check_golden(simgrid, SOURCE / "tests/data/golden" / (GetParam() + ".json"));
  check_golden(analytic, SOURCE / "tests/data/golden" / (GetParam() + ".analytic.json"));
  const double t = analytic["iteration_time_s"].get<double>();
  EXPECT_NEAR(simgrid["iteration_time_s"].get<double>(), t, 2e-3 * t);
  EXPECT_EQ(simgrid["memory"], analytic["memory"]);
}

// Issue 33: `compare --vary` over GPU objects heads its columns with each GPU's label or name, not
// the object (300-character headers), and its table is golden. A Golden instance so that the loop at
// the top regenerates it; it runs for one scenario.
TEST_P(Golden, CompareVaryOverGpuObjectsHasShortHeaders) {
  if (GetParam() != "gpt3-6.7b-a100-8") GTEST_SKIP() << "runs on gpt3-6.7b-a100-8 only";
  CompareArgs args;
  args.inputs = {(SOURCE / "scenarios/gpt3-6.7b-a100-8.json").string()};
  args.vary = {R"(cluster.gpu={"base":"A100-SXM4-80GB","hbm_bandwidth":"4 TB/s","label":"A100 4TB/s"},)"
               R"({"base":"H100-SXM5-80GB","hbm_capacity":"96 GiB"},H100-SXM5-80GB)"};
  args.quiet = true;
  std::ostringstream table, err;
  ASSERT_EQ(compare_command(args, table, err), 0) << err.str();
  const std::string text = table.str();
  const std::string header = text.substr(text.find('\n') + 1, text.find('\n', text.find('\n') + 1) - text.find('\n') - 1);
  for (const char* label : {"gpu=A100 4TB/s", "gpu=H100-SXM5-80GB (custom)", "gpu=H100-SXM5-80GB"}) {
    EXPECT_NE(header.find(label), std::string::npos) << label << " in: " << header;
  }
  EXPECT_EQ(header.find("hbm_bandwidth"), std::string::npos) << header;
  const std::filesystem::path golden = SOURCE / "tests/data/golden/compare-vary-gpu-objects.txt";
  if (std::getenv("TRAINSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << text;
    return;
  }
  std::ifstream f(golden);
  ASSERT_TRUE(f) << golden << " missing: regenerate on purpose";
  std::stringstream expected;
  expected << f.rdbuf();
  EXPECT_EQ(text, expected.str());
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden, ::testing::ValuesIn(bundled_scenarios()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(GoldenContract, ReportHasEveryContractField) {
  const core::Json r = stable_report(SOURCE / "scenarios/gpt3-175b-a100-1024.json", "analytic");
  for (const char* key : {"schema", "scenario", "world_size", "iteration_time_s", "samples_per_s", "tokens_per_s",
                          "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu", "breakdown_s",
                          "communication_s", "memory", "simulation"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  for (const char* key : {"compute", "exposed_communication", "pipeline_bubble", "other"}) {
    EXPECT_TRUE(r["breakdown_s"].contains(key)) << key;
  }
  for (const char* key : {"tensor", "pipeline", "data", "context", "expert"}) {
    EXPECT_TRUE(r["communication_s"].contains(key)) << key;
  }
  for (const char* key : {"peak_bytes_per_gpu", "capacity_bytes", "fits", "breakdown_bytes"}) {
    EXPECT_TRUE(r["memory"].contains(key)) << key;
  }
  EXPECT_EQ(r["schema"], "trainsim.report/1");
  EXPECT_EQ(r["world_size"], 1024);
  // The breakdown adds up to the iteration time.
  const core::Json& b = r["breakdown_s"];
  const double sum = b["compute"].get<double>() + b["exposed_communication"].get<double>() +
                     b["pipeline_bubble"].get<double>() + b["other"].get<double>();
  EXPECT_NEAR(sum, r["iteration_time_s"].get<double>(), 1e-9 * r["iteration_time_s"].get<double>());
}

}  // namespace
}  // namespace trainsim::cli
