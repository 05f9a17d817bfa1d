// `trainsim compare` (sim/cli/compare_command.hpp): scenarios and reports side by side, --vary
// products, a failing configuration as a column, CSV shape, and bad input as InputError (exit 2).

#include "sim/cli/compare_command.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

// stderr of the commands (warnings, progress): not what these tests look at.
std::ostringstream err_log;

const std::string SMALL = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json";

std::filesystem::path temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("trainsim-compare-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

// A variant of the small scenario as a file of its own.
std::string variant(const std::filesystem::path& dir, const std::string& name, const std::vector<std::string>& sets) {
  core::Json doc = core::load_json_file(SMALL);
  for (const std::string& s : sets) apply_override(doc, s);
  return write(dir / (name + ".json"), doc.dump(2));
}

core::Json compare_json(CompareArgs args) {
  args.format = Format::JSON;
  std::ostringstream out;
  EXPECT_EQ(compare_command(args, out, err_log), 0);
  return core::Json::parse(out.str());
}

const core::Json& row(const core::Json& j, const std::string& metric) {
  for (const core::Json& r : j["rows"]) {
    if (r["metric"] == metric) return r;
  }
  static const core::Json none;
  ADD_FAILURE() << "no row " << metric;
  return none;
}

double predicted_time(const std::string& path, const std::vector<std::string>& sets = {}) {
  const Scenario s = load_scenario(path, sets);
  return predict(s, "analytic").iteration_time_s();
}

TEST(Compare, TwoScenariosSideBySideWithTheirDifference) {
  const auto dir = temp_dir();
  const std::string a = variant(dir, "tp2", {});
  const std::string b = variant(dir, "tp4", {"parallelism.tensor=4", "parallelism.data=2"});
  const core::Json j = compare_json({.inputs = {a, b}});
  ASSERT_EQ(j["configurations"].size(), 2u);
  EXPECT_EQ(j["configurations"][0]["label"], "tp2");
  EXPECT_EQ(j["configurations"][1]["label"], "tp4");
  const core::Json& t = row(j, "iteration_time_s");
  const double ta = predicted_time(a), tb = predicted_time(b);
  EXPECT_DOUBLE_EQ(t["values"][0].get<double>(), ta);
  EXPECT_DOUBLE_EQ(t["values"][1].get<double>(), tb);
  EXPECT_DOUBLE_EQ(t["diff_pct"][0].get<double>(), 0.0);
  EXPECT_NEAR(t["diff_pct"][1].get<double>(), (tb - ta) / ta * 100, 1e-9);
  EXPECT_EQ(t["differs"], std::abs(tb - ta) / ta > 0.01);
  EXPECT_EQ(row(j, "world_size")["differs"], false);

  std::ostringstream table;
  compare_command({.inputs = {a, b}}, table, err_log);
  EXPECT_NE(table.str().find("differences vs \"tp2\""), std::string::npos);
  EXPECT_NE(table.str().find("* iteration time (s)"), std::string::npos) << table.str();
  EXPECT_EQ(table.str().find("\033["), std::string::npos) << "no escape codes unless on a terminal";
}

TEST(Compare, AReportAgainstAScenario) {
  const auto dir = temp_dir();
  const Scenario s = load_scenario(SMALL);
  const std::string report = write(dir / "report.json", report_json(s, predict(s, "analytic")).dump(2));
  const std::string tp4 = variant(dir, "tp4", {"parallelism.tensor=4", "parallelism.data=2"});
  const core::Json j = compare_json({.inputs = {report, tp4}});
  EXPECT_EQ(j["configurations"][0]["kind"], "report");
  EXPECT_EQ(j["configurations"][1]["kind"], "scenario");
  EXPECT_DOUBLE_EQ(row(j, "iteration_time_s")["values"][0].get<double>(), predicted_time(SMALL));
  // The same scenario as a report and re-predicted: no difference.
  const core::Json same = compare_json({.inputs = {report, SMALL}});
  EXPECT_EQ(row(same, "iteration_time_s")["diff_pct"][1], 0.0);
  EXPECT_EQ(row(same, "iteration_time_s")["differs"], false);
}

TEST(Compare, VaryIsTheCartesianProductAndAFailingConfigurationIsAColumn) {
  CompareArgs args{.inputs = {SMALL},
                   .vary = {"parallelism.tensor=1,2,8", "parallelism.recompute=none,full"},
                   .overrides = {"parallelism.data=auto"}};
  const core::Json j = compare_json(args);
  const core::Json& cs = j["configurations"];
  ASSERT_EQ(cs.size(), 6u);
  EXPECT_EQ(cs[0]["label"], "tensor=1 recompute=none");
  EXPECT_EQ(cs[1]["label"], "tensor=1 recompute=full");
  EXPECT_EQ(cs[5]["label"], "tensor=8 recompute=full");
  EXPECT_EQ(cs[3]["vary"], core::Json({"parallelism.tensor=2", "parallelism.recompute=full"}));
  // TP8 with data "auto" is DP1, and 256 / (micro_batch 4 x 1) divides; TP8 x 32 heads works too:
  // every configuration runs, each one the same as `run` with the same --set.
  for (size_t i = 0; i < cs.size(); ++i) {
    ASSERT_TRUE(cs[i].contains("report")) << cs[i].dump();
  }
  EXPECT_DOUBLE_EQ(row(j, "iteration_time_s")["values"][3].get<double>(),
                   predicted_time(SMALL, {"parallelism.data=auto", "parallelism.tensor=2", "parallelism.recompute=full"}));

  // Without data "auto", tensor 4 x data 4 does not match the 8 GPUs: that column fails, the others
  // are shown.
  const core::Json k = compare_json({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4"}});
  ASSERT_EQ(k["configurations"].size(), 2u);
  EXPECT_TRUE(k["configurations"][0].contains("report"));
  EXPECT_FALSE(k["configurations"][1].contains("report"));
  EXPECT_NE(k["configurations"][1]["error"].get<std::string>().find("/parallelism: tensor x pipeline x data"),
            std::string::npos)
      << k["configurations"][1]["error"];
  EXPECT_TRUE(row(k, "iteration_time_s")["values"][1].is_null());

  std::ostringstream table;
  compare_command({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4"}}, table, err_log);
  EXPECT_NE(table.str().find("FAILED (below)"), std::string::npos);
  EXPECT_NE(table.str().find("tensor=4 cannot run:"), std::string::npos) << table.str();
}

// Splits a CSV line on commas outside quotes (RFC 4180).
std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (line[i] == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += line[i];
    }
  }
  return out;
}

TEST(Compare, CsvHasOneValueAndOneDifferencePerConfigurationOnEveryLine) {
  CompareArgs args{.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4,8"}, .overrides = {"parallelism.data=auto"}};
  args.format = Format::CSV;
  std::ostringstream out;
  ASSERT_EQ(compare_command(args, out, err_log), 0);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<std::vector<std::string>> table;
  while (std::getline(lines, line)) table.push_back(csv_split(line));
  ASSERT_GT(table.size(), 10u);
  for (const auto& fields : table) EXPECT_EQ(fields.size(), 1u + 2 * 3) << fields.front();
  EXPECT_EQ(table[0][1], "tensor=2");
  EXPECT_EQ(table[0][6], "tensor=8 diff_pct");
  EXPECT_EQ(table.back()[0], "error");
}

TEST(Compare, TimeToTrainRowsOnlyWhenTheReportsHaveThem) {
  const core::Json without = compare_json({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4"},
                                           .overrides = {"parallelism.data=auto"}});
  for (const core::Json& r : without["rows"]) EXPECT_FALSE(r["metric"].get<std::string>().starts_with("time_to_train"));
  const core::Json with = compare_json({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4"},
                                        .overrides = {"parallelism.data=auto", "training.tokens=1e10",
                                                      "cluster.price_per_gpu_hour=2"}});
  EXPECT_EQ(row(with, "time_to_train_cost_usd")["values"].size(), 2u);
}

std::string input_error(const CompareArgs& args) {
  std::ostringstream out;
  try {
    compare_command(args, out, err_log);
  } catch (const ImpossibleScenario& e) {
    return std::string("impossible, not bad input: ") + e.what();
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Compare, BadInputIsAnInputErrorWithAClearMessage) {
  EXPECT_NE(input_error({.inputs = {SMALL}, .vary = {"parallelism.pipelin=1,2"}}).find("did you mean \"pipeline\""),
            std::string::npos);
  EXPECT_EQ(input_error({.inputs = {SMALL}, .vary = {"parallelism.tensor"}}),
            "--vary: expected key.path=value1,value2,..., found \"parallelism.tensor\"");
  EXPECT_EQ(input_error({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,,4"}}),
            "--vary: empty value in \"parallelism.tensor=2,,4\" (values are separated by commas)");
  EXPECT_NE(input_error({.inputs = {SMALL}, .vary = {"parallelism.tensor=two"}}).find("/parallelism/tensor: expected"),
            std::string::npos);
  EXPECT_NE(input_error({.inputs = {SMALL, "/nonexistent/b.json"}}).find("/nonexistent/b.json: cannot open"),
            std::string::npos);
  EXPECT_EQ(input_error({.inputs = {SMALL, SMALL}, .vary = {"parallelism.tensor=2,4"}}),
            "--vary: compares variations of one scenario, found 2 inputs");
  EXPECT_EQ(input_error({.inputs = {SMALL}, .vary = {"parallelism.tensor=2", "parallelism.tensor=4"}}),
            "--vary: \"parallelism.tensor\" is varied twice; give all its values in one --vary");
  const auto dir = temp_dir();
  const std::string other = write(dir / "other.json", R"({"schema": "something/2"})");
  EXPECT_NE(input_error({.inputs = {other}}).find("/schema: expected \"trainsim.report/1\""), std::string::npos);
}

TEST(Compare, VaryValuesKeepCommasInsideJson) {
  EXPECT_EQ(vary_assignments("parallelism.stage_layers=[4,4],[2,6]"),
            (std::vector<std::string>{"parallelism.stage_layers=[4,4]", "parallelism.stage_layers=[2,6]"}));
  EXPECT_EQ(vary_assignments("cluster.network.nic_bandwidth=200 Gb/s,\"400 Gb/s\""),
            (std::vector<std::string>{"cluster.network.nic_bandwidth=200 Gb/s",
                                      "cluster.network.nic_bandwidth=\"400 Gb/s\""}));
}

}  // namespace
}  // namespace trainsim::cli
