// The planning figures (time to train, cost, the same with failures, goodput, checkpoint stall) in
// every view that shows runs (issue 33, item 3): compare's rows (table, CSV, JSON) and --plot-figure
// pictures, sweep's table, CSV, JSON and plot, and run --html. The oracle is the report of `run`
// itself: each view must show the report's own figures, and the failure share of a bar is the
// difference of two report figures, computed here by hand.

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "sim/cli/compare_command.hpp"
#include "sim/cli/html_report.hpp"
#include "sim/cli/report_charts.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/case_traits.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

std::ostringstream err_log;

// Llama 3 405B on 16,384 H100 with training.tokens and checkpoints: every planning figure is there.
const std::string FAILURES = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/resilience/llama3-405b-h100-16384-failures.json";
// GPT-3 6.7B without training.tokens: no planning figure at all.
const std::string SMALL = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json";

core::Json report_of(const std::string& path, const std::vector<std::string>& sets) {
  const Scenario s = load_scenario(path, sets);
  return report_json(s, predict(s, "analytic"));
}

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("trainsim-planning-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" + name))
      .string();
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(PlanningViews, CompareRowsCarryTheReportsPlanningFigures) {
  const core::Json r = report_of(FAILURES, {"cluster.price_per_gpu_hour=2.5"});
  ASSERT_TRUE(r.contains("goodput"));
  CompareArgs args{.inputs = {FAILURES}, .overrides = {"cluster.price_per_gpu_hour=2.5"}};
  args.format = Format::JSON;
  std::ostringstream out;
  ASSERT_EQ(compare_command(args, out, err_log), 0);
  const core::Json j = core::Json::parse(out.str());
  std::map<std::string, core::Json> rows;
  for (const core::Json& row : j["rows"]) rows[row["metric"]] = row["values"][0];
  EXPECT_EQ(rows.at("time_to_train_with_failures_days"), r["time_to_train"]["with_failures"]["days"]);
  EXPECT_EQ(rows.at("time_to_train_with_failures_cost_usd"), r["time_to_train"]["with_failures"]["cost"]);
  EXPECT_EQ(rows.at("expected_failures"), r["time_to_train"]["with_failures"]["failures"]);
  EXPECT_EQ(rows.at("goodput"), r["goodput"]);
  EXPECT_EQ(rows.at("checkpoint_stall_s"), r["checkpoint"]["amortized_s_per_iteration"]);

  args.format = Format::TABLE;
  std::ostringstream table;
  ASSERT_EQ(compare_command(args, table, err_log), 0);
  for (const char* label : {"with failures (days)", "with failures (USD)", "goodput (%)", "checkpoint stall per iteration (s)"}) {
    EXPECT_NE(table.str().find(label), std::string::npos) << label << "\n" << table.str();
  }
}

TEST(PlanningViews, ComparePlotsDaysAndCostWithTheFailureShareStacked) {
  const core::Json r = report_of(FAILURES, {"cluster.price_per_gpu_hour=2.5"});
  const double days = r["time_to_train"]["days"], with = r["time_to_train"]["with_failures"]["days"];
  const report::BarChart chart = planning_bar_chart({{"a", r}}, PlanningFigure::DAYS, "t");
  ASSERT_EQ(chart.bars.size(), 1u);
  EXPECT_DOUBLE_EQ(chart.bars[0].values[0], days);
  EXPECT_NEAR(chart.bars[0].values[1], with - days, 1e-9 * with);
  EXPECT_GT(chart.bars[0].values[1], 0) << "goodput < 1: failures add days";
  const report::BarChart cost = planning_bar_chart({{"a", r}}, PlanningFigure::COST, "t");
  EXPECT_DOUBLE_EQ(cost.bars[0].values[0], r["time_to_train"]["cost"].get<double>());

  // The picture is titled with what it shows and what is compared.
  const std::string svg = temp_file("cost.svg");
  CompareArgs args{.inputs = {FAILURES}, .vary = {"training.micro_batch=1,2"}, .overrides = {"cluster.price_per_gpu_hour=2.5"}};
  args.plot = svg;
  args.plot_figure = "cost";
  std::ostringstream out;
  ASSERT_EQ(compare_command(args, out, err_log), 0);
  EXPECT_NE(read(svg).find(">cost by training.micro_batch<"), std::string::npos);
  args.plot_figure = "time";
  ASSERT_EQ(compare_command(args, out, err_log), 0);
  EXPECT_NE(read(svg).find(">iteration time by training.micro_batch<"), std::string::npos);
  std::filesystem::remove(svg);
}

TEST(PlanningViews, ComparePlotOfDaysWithoutTrainingTokensIsAnInputError) {
  CompareArgs args{.inputs = {SMALL}};
  args.plot = temp_file("days.svg");
  args.plot_figure = "days";
  std::ostringstream out;
  try {
    compare_command(args, out, err_log);
    FAIL() << "accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--plot-figure"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("training.tokens"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(out.str().empty()) << "nothing printed before the error";
  EXPECT_FALSE(std::filesystem::exists(args.plot));
}

TEST(PlanningViews, SweepShowsPlanningColumnsOnlyWhereThePointsHaveThem) {
  SweepArgs args;
  args.scenario = FAILURES;
  args.ranges = {"training.micro_batch=1,2"};
  args.overrides = {"cluster.price_per_gpu_hour=2.5"};
  std::ostringstream table;
  ASSERT_EQ(sweep_command(args, table, err_log), 0);
  for (const char* h : {"  days", "  cost_usd", "  with_failures_days", "  goodput", "  checkpoint_stall_s"}) {
    EXPECT_NE(table.str().find(h), std::string::npos) << h << "\n" << table.str();
  }
  const core::Json r = report_of(FAILURES, {"cluster.price_per_gpu_hour=2.5", "training.micro_batch=1"});
  EXPECT_NE(table.str().find(fmt::format("  {:.2f}  ", r["time_to_train"]["days"].get<double>())), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find(fmt::format("{:.1f}%", 100 * r["goodput"].get<double>())), std::string::npos);

  args.format = Format::JSON;
  std::ostringstream json;
  ASSERT_EQ(sweep_command(args, json, err_log), 0);
  const core::Json point = core::Json::parse(json.str())["points"][0];
  EXPECT_EQ(point["time_to_train_days"], r["time_to_train"]["days"]);
  EXPECT_EQ(point["time_to_train_cost_usd"], r["time_to_train"]["cost"]);
  EXPECT_EQ(point["goodput"], r["goodput"]);

  SweepArgs plain;
  plain.scenario = SMALL;
  plain.ranges = {"training.micro_batch=1,2"};
  std::ostringstream small;
  ASSERT_EQ(sweep_command(plain, small, err_log), 0);
  EXPECT_EQ(small.str().find("days"), std::string::npos) << "no training.tokens, no planning columns\n" << small.str();
}

TEST(PlanningViews, SweepPlotAddsDaysAndCostCharts) {
  SweepArgs args;
  args.scenario = FAILURES;
  args.ranges = {"training.micro_batch=1,2"};
  args.overrides = {"cluster.price_per_gpu_hour=2.5"};
  args.plot = temp_file("sweep.svg");
  std::ostringstream out;
  ASSERT_EQ(sweep_command(args, out, err_log), 0);
  const std::string svg = read(args.plot);
  EXPECT_NE(svg.find(": time to train<"), std::string::npos);
  EXPECT_NE(svg.find(": cost<"), std::string::npos);
  EXPECT_NE(svg.find(">with failures<"), std::string::npos);
  std::filesystem::remove(args.plot);
}

TEST(PlanningViews, HtmlReportHasTimeToTrainAndCost) {
  const core::Json r = report_of(FAILURES, {"cluster.price_per_gpu_hour=2.5"});
  const std::string h = html_report(r, "");
  ASSERT_NE(h.find("<h2>Time to train and cost</h2>"), std::string::npos);
  EXPECT_NE(h.find(fmt::format("{:.2f} days", r["time_to_train"]["days"].get<double>())), std::string::npos);
  EXPECT_NE(h.find(fmt::format("{:.1f}%", 100 * r["goodput"].get<double>())), std::string::npos);
  // The cost with thousands separators: 103040661.39 USD -> "$103,040,661" (by hand from the value).
  const double cost = r["time_to_train"]["cost"];
  const long dollars = std::lround(cost);
  const std::string grouped = fmt::format("${},{:03},{:03}", dollars / 1000000, dollars / 1000 % 1000, dollars % 1000);
  ASSERT_GE(dollars, 1000000);
  ASSERT_LT(dollars, 1000000000);
  EXPECT_NE(h.find(grouped), std::string::npos) << grouped;
  EXPECT_EQ(html_report(report_of(SMALL, {}), "").find("Time to train"), std::string::npos);
}

TEST(PlanningViews, CompareHtmlHasTheTableAndTheDaysAndCostCharts) {
  const std::string html = temp_file("compare.html");
  CompareArgs args{.inputs = {FAILURES}, .vary = {"training.micro_batch=1,2"}, .overrides = {"cluster.price_per_gpu_hour=2.5"}};
  args.html = html;
  std::ostringstream out;
  ASSERT_EQ(compare_command(args, out, err_log), 0);
  const std::string h = read(html);
  EXPECT_NE(h.find("<h1>compare by training.micro_batch</h1>"), std::string::npos);
  for (const char* row : {"time to train (days)", "with failures (USD)", "goodput (%)"}) {
    EXPECT_NE(h.find(fmt::format(">{}</td>", row)), std::string::npos) << row;
  }
  size_t charts = 0;
  for (size_t at = h.find("<svg"); at != std::string::npos; at = h.find("<svg", at + 1)) ++charts;
  EXPECT_EQ(charts, 3u) << "iteration time, days and cost";
  // Without training.tokens: the iteration-time chart alone.
  CompareArgs plain{.inputs = {SMALL}, .vary = {"training.micro_batch=1,2"}};
  plain.html = html;
  ASSERT_EQ(compare_command(plain, out, err_log), 0);
  const std::string p = read(html);
  EXPECT_EQ(p.find("time to train"), std::string::npos);
  EXPECT_NE(p.find("<svg"), std::string::npos);
  std::filesystem::remove(html);
}

// --bands on compare (issue 28): a user's cases like the configuration (same traits, residuals of
// 1-2%) tighten its band; the report's band is the merged set's, and narrower than the built-in one.
TEST(PlanningViews, CompareBandsFromAUsersCasesTightenTheBand) {
  const Scenario s = load_scenario(SMALL, {});
  BandSet mine;
  mine.source = "mine";
  for (double r : {0.01, -0.02, 0.015, -0.01, 0.02}) {
    BandCase c;
    c.name = fmt::format("my-run-{}", r);
    c.file = "my-run.json";
    c.traits = traits_of(s);
    c.time_residual = r;
    c.time_figure = "iteration_time_s";
    mine.cases.push_back(c);
  }
  const std::string file = temp_file("mine-bands.json");
  std::ofstream(file) << band_set_json(mine).dump(1);
  const double builtin = band_for(builtin_band_set(), traits_of(s), Residual::TIME).relative;
  const double merged = band_for(band_set_with(file), traits_of(s), Residual::TIME).relative;
  ASSERT_LE(merged, 0.02 + 1e-12) << "level 1 now holds the five cases within 2%";
  ASSERT_LT(merged, builtin);

  CompareArgs args{.inputs = {SMALL}};
  args.bands = file;
  args.format = Format::JSON;
  std::ostringstream out;
  ASSERT_EQ(compare_command(args, out, err_log), 0);
  const core::Json report = core::Json::parse(out.str())["configurations"][0]["report"];
  EXPECT_DOUBLE_EQ(report["bands"]["time"]["relative"].get<double>(), merged);
  EXPECT_NE(report["bands"]["source"].get<std::string>().find(file), std::string::npos);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace trainsim::cli
