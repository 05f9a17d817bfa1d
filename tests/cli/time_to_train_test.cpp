// Time-to-train and cost (sim/plan/time_to_train.hpp) against hand-computed figures, and their place
// in the report: present with training.tokens, cost only with cluster.price_per_gpu_hour, absent
// (not zero) otherwise.

#include "sim/plan/time_to_train.hpp"

#include <algorithm>
#include <gtest/gtest.h>

#include "sim/plan/prediction.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIOS = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/";

// 15T tokens at GPT-3's batch (1536 x 2048 = 3,145,728 tokens per iteration): 15e12 / 3,145,728 =
// 4,768,371.58 -> 4,768,372 iterations. At 9.6 s: 45,776,371.2 s = 529.8191 days; on 1,024 GPUs
// 45,776,371.2 / 3600 x 1024 = 13,020,834.47 GPU-hours; at $2: $26,041,668.95.
TEST(TimeToTrain, HandComputedLargeRun) {
  const TimeToTrain t = time_to_train(15e12, 1536 * 2048, 9.6, 1024, 2.0);
  EXPECT_EQ(t.iterations, 4768372);
  EXPECT_NEAR(t.days, 529.819111, 1e-6);
  EXPECT_NEAR(t.gpu_hours, 13020834.4747, 1e-3);
  ASSERT_TRUE(t.cost.has_value());
  EXPECT_NEAR(*t.cost, 26041668.9493, 1e-3);
}

// A whole number of batches needs no extra iteration; one more token needs a whole one.
TEST(TimeToTrain, IterationsRoundUpOnlyForARemainder) {
  EXPECT_EQ(time_to_train(1000.0 * 3145728, 3145728, 1.0, 8, std::nullopt).iterations, 1000);
  EXPECT_EQ(time_to_train(1000.0 * 3145728 + 1, 3145728, 1.0, 8, std::nullopt).iterations, 1001);
  EXPECT_EQ(time_to_train(1, 3145728, 1.0, 8, std::nullopt).iterations, 1);
  // 86,400 iterations of 1 s on 8 GPUs: exactly one day, 192 GPU-hours.
  const TimeToTrain day = time_to_train(86400.0 * 4096, 4096, 1.0, 8, std::nullopt);
  EXPECT_DOUBLE_EQ(day.days, 1.0);
  EXPECT_DOUBLE_EQ(day.gpu_hours, 192.0);
}

// Early phases: 1,000 iterations of 1 s steady state; the first 100 take 3 s (dense before pruning
// starts), the first 50 take 2 s (uncompressed warm-up). By hand: iterations 0-49 are in both and take
// the longer 3 s, 50-99 take 3 s, the 900 others 1 s: 150 + 150 + 900 = 1,200 s.
TEST(TimeToTrain, EarlyPhasesTakeTheirOwnTimeAndOverlapsTheLongest) {
  const double tokens = 1000.0 * 4096;
  const TimeToTrain t = time_to_train(tokens, 4096, 1.0, 2, 1.0, {{100, 3.0}, {50, 2.0}});
  EXPECT_EQ(t.iterations, 1000);
  EXPECT_DOUBLE_EQ(t.days * 86400, 1200.0);
  EXPECT_DOUBLE_EQ(t.gpu_hours, 1200.0 / 3600 * 2);
  // Order does not matter; a phase longer than the run is cut to it; an empty phase changes nothing.
  EXPECT_DOUBLE_EQ(time_to_train(tokens, 4096, 1.0, 2, 1.0, {{50, 2.0}, {100, 3.0}}).days, t.days);
  EXPECT_DOUBLE_EQ(time_to_train(tokens, 4096, 1.0, 2, 1.0, {{5000, 2.0}}).days * 86400, 2000.0);
  EXPECT_DOUBLE_EQ(time_to_train(tokens, 4096, 1.0, 2, 1.0, {{0, 2.0}}).days * 86400, 1000.0);
}

TEST(TimeToTrain, CostOnlyWithAPrice) {
  const TimeToTrain t = time_to_train(4096, 4096, 3600.0, 4, std::nullopt);
  EXPECT_FALSE(t.cost.has_value());
  const core::Json j = t.to_json();
  EXPECT_FALSE(j.contains("cost"));
  EXPECT_EQ(j["iterations"], 1);
  EXPECT_DOUBLE_EQ(j["gpu_hours"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(time_to_train(4096, 4096, 3600.0, 4, 2.5).to_json()["cost"].get<double>(), 10.0);
}

TEST(TimeToTrain, ReportHasItOnlyWithTokensAndCostOnlyWithAPrice) {
  core::Json doc = core::load_json_file(SCENARIOS + "gpt3-6.7b-a100-8.json");
  {
    const Scenario s = read_scenario(doc, "x.json");
    const core::Json r = report_json(s, predict(s, "analytic"));
    EXPECT_FALSE(r.contains("time_to_train")) << "absent, not zero, without training.tokens";
  }
  apply_override(doc, "training.tokens=1e9");
  {
    const Scenario s = read_scenario(doc, "x.json");
    const Prediction p = predict(s, "analytic");
    const core::Json r = report_json(s, p);
    ASSERT_TRUE(r.contains("time_to_train"));
    const core::Json& t = r["time_to_train"];
    // 1e9 tokens / (256 x 2048 = 524,288 tokens per iteration) = 1907.35 -> 1908 iterations.
    EXPECT_EQ(t["iterations"], 1908);
    EXPECT_DOUBLE_EQ(t["days"].get<double>(), 1908 * p.iteration_time_s() / 86400);
    EXPECT_DOUBLE_EQ(t["gpu_hours"].get<double>(), 1908 * p.iteration_time_s() / 3600 * 8);
    EXPECT_FALSE(t.contains("cost"));
    EXPECT_NE(report_table(s, p).find("time to train"), std::string::npos);
  }
  apply_override(doc, "cluster.price_per_gpu_hour=3");
  {
    const Scenario s = read_scenario(doc, "x.json");
    const Prediction p = predict(s, "analytic");
    const core::Json r = report_json(s, p);
    EXPECT_DOUBLE_EQ(r["time_to_train"]["cost"].get<double>(), r["time_to_train"]["gpu_hours"].get<double>() * 3);
    EXPECT_EQ(s.to_json()["cluster"]["price_per_gpu_hour"], 3.0) << "the resolved scenario keeps the price";
    EXPECT_EQ(s.to_json()["training"]["tokens"], 1e9);
  }
}

TEST(TimeToTrain, BadValuesAreInputErrorsNamingTheKey) {
  for (const std::string bad : {"training.tokens=-5", "training.tokens=0", "training.tokens=\"15T\"",
                                "training.tokens=1e19", "cluster.price_per_gpu_hour=0",
                                "cluster.price_per_gpu_hour=-1", "cluster.price_per_gpu_hour=cheap"}) {
    SCOPED_TRACE(bad);
    core::Json doc = core::load_json_file(SCENARIOS + "gpt3-6.7b-a100-8.json");
    apply_override(doc, bad);
    try {
      read_scenario(doc, "x.json");
      ADD_FAILURE() << "accepted";
    } catch (const core::InputError& e) {
      const std::string key = bad.substr(bad.find('.') + 1, bad.find('=') - bad.find('.') - 1);
      EXPECT_NE(std::string(e.what()).find("/" + key + ": expected"), std::string::npos) << e.what();
    }
  }
}

// run --format csv: one header and one row with as many fields.
TEST(ReportCsv, HeaderAndOneRowOfTheSameWidth) {
  core::Json doc = core::load_json_file(SCENARIOS + "gpt3-6.7b-a100-8.json");
  const Scenario s = read_scenario(doc, "x.json");
  const std::string csv = report_csv(report_json(s, predict(s, "analytic")));
  const size_t nl = csv.find('\n');
  const std::string header = csv.substr(0, nl), row = csv.substr(nl + 1);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2);
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), std::count(row.begin(), row.end(), ','));
  EXPECT_TRUE(header.starts_with("scenario,world_size,backend,iteration_time_s,"));
  EXPECT_TRUE(row.starts_with("gpt3-6.7b-a100-8,8,analytic,"));
  // No time_to_train: its seven fields are empty; the prediction is inside the envelope or not.
  auto fields = [](const std::string& line) {
    std::vector<std::string> out(1);
    for (char c : line) {
      if (c == ',') {
        out.emplace_back();
      } else if (c != '\n') {
        out.back().push_back(c);
      }
    }
    return out;
  };
  const std::vector<std::string> names = fields(header), values = fields(row);
  ASSERT_EQ(names.size(), values.size());
  size_t empty = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].starts_with("time_to_train_")) empty += values[i].empty() ? 1 : 0;
    if (names[i] == "inside_envelope") {
      EXPECT_TRUE(values[i] == "true" || values[i] == "false") << values[i];
    }
    if (names[i] == "time_band_pct") {
      EXPECT_GT(std::stod(values[i]), 0) << "the 6.7B job has a finite time band";
    }
  }
  // iterations, days, GPU-hours, cost, and the three with failures
  EXPECT_EQ(empty, 7u) << "no time_to_train: seven empty fields";
}

}  // namespace
}  // namespace trainsim::cli
