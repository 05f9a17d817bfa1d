#include "sim/cli/sweep_command.hpp"

#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

// stderr of the commands (warnings, progress): not what these tests look at.
std::ostringstream err_log;

const std::string SCENARIO = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/gpt3-6.7b-a100-8.json";

std::vector<core::Json> values(const std::string& assignment) { return parse_sweep_range(assignment).values; }

TEST(SweepRange, GeometricArithmeticAndList) {
  const SweepRange g = parse_sweep_range("cluster.nodes=16:512:x2");
  EXPECT_EQ(g.key, "cluster.nodes");
  EXPECT_TRUE(g.geometric);
  EXPECT_EQ(g.values, (std::vector<core::Json>{16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(values("cluster.nodes=16:500:x2").back(), 256);  // END is an upper bound
  EXPECT_EQ(values("cluster.nodes=16:64:+16"), (std::vector<core::Json>{16, 32, 48, 64}));
  EXPECT_EQ(values("a=0.5:1:+0.25"), (std::vector<core::Json>{0.5, 0.75, 1.0}));
  EXPECT_EQ(values("x=1.5:6:x2"), (std::vector<core::Json>{1.5, 3.0, 6.0}));
  EXPECT_EQ(values("p.recompute=none,full,3"), (std::vector<core::Json>{"none", "full", 3}));
  EXPECT_EQ(values("cluster.nodes=8:8:x2"), (std::vector<core::Json>{8}));
  EXPECT_FALSE(parse_sweep_range("a=1,2").geometric);
}

TEST(SweepRange, MalformedRangesNameTheFlag) {
  for (const std::string bad : {"cluster.nodes", "=1,2", "a=", "a=16:8:x2", "a=16:512:x1", "a=0:8:x2", "a=1:8:+0",
                                "a=1:8:*2", "a=1:8", "a=one:8:+1", "a=1,,2", "a=1:1e300:+1"}) {
    try {
      parse_sweep_range(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.problems()[0].file, "--set-range") << bad;
      EXPECT_NE(e.problems()[0].message.find(bad.substr(0, bad.find('=') + 1)), std::string::npos) << e.what();
    }
  }
}

core::Json sweep_json(SweepArgs args) {
  args.scenario = SCENARIO;
  args.format = Format::JSON;
  std::ostringstream out;
  EXPECT_EQ(sweep_command(args, out, err_log), 0);
  return core::Json::parse(out.str());
}

double tokens_per_s_of_run(const std::vector<std::string>& overrides) {
  const Scenario s = load_scenario(SCENARIO, overrides);
  return report_json(s, predict(s, "analytic"))["tokens_per_s"].get<double>();
}

TEST(Sweep, PointsErrorsAndEfficiencyAgainstRun) {
  SweepArgs args;
  args.ranges = {"training.micro_batch=1,2,3,4"};
  const core::Json j = sweep_json(args);
  EXPECT_EQ(j["schema"], "trainsim.sweep/1");
  const core::Json& pts = j["points"];
  ASSERT_EQ(pts.size(), 4u);
  // micro-batch 3: 256 samples over 4 data-parallel ranks do not split into micro-batches of 3.
  EXPECT_TRUE(pts[2].contains("error"));
  EXPECT_NE(pts[2]["error"].get<std::string>().find("/training"), std::string::npos) << pts[2]["error"];
  EXPECT_EQ(pts[0]["scaling_efficiency"].get<double>(), 1.0);  // exactly
  // Same 8 GPUs: efficiency is the throughput ratio, and each point is what `run --set` predicts.
  const double t1 = tokens_per_s_of_run({"training.micro_batch=1"});
  const double t4 = tokens_per_s_of_run({"training.micro_batch=4"});
  EXPECT_DOUBLE_EQ(pts[0]["tokens_per_s"].get<double>(), t1);
  EXPECT_DOUBLE_EQ(pts[3]["tokens_per_s"].get<double>(), t4);
  EXPECT_DOUBLE_EQ(pts[3]["scaling_efficiency"].get<double>(), t4 / t1);
  EXPECT_EQ(pts[3]["values"]["training.micro_batch"], 4);
  EXPECT_EQ(pts[3]["world_size"], 8);
}

TEST(Sweep, CartesianProductAcrossClusterSizes) {
  // Nodes x data-parallel degree: only the diagonal fills the cluster; efficiency is per GPU.
  SweepArgs args;
  args.ranges = {"cluster.nodes=1:4:x2", "parallelism.data=4:16:x2"};
  const core::Json pts = sweep_json(args)["points"];
  ASSERT_EQ(pts.size(), 9u);
  std::vector<size_t> ran;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (!pts[i].contains("error")) ran.push_back(i);
  }
  ASSERT_EQ(ran, (std::vector<size_t>{0, 4, 8}));  // the last range varies fastest
  EXPECT_EQ(pts[8]["world_size"], 32);
  const double t8 = tokens_per_s_of_run({"cluster.nodes=1", "parallelism.data=4"});
  const double t32 = tokens_per_s_of_run({"cluster.nodes=4", "parallelism.data=16"});
  EXPECT_DOUBLE_EQ(pts[8]["scaling_efficiency"].get<double>(), (t32 / 32) / (t8 / 8));
  EXPECT_LE(pts[8]["scaling_efficiency"].get<double>(), 1.0);  // more ranks never make a GPU faster here
}

TEST(Sweep, CsvAndTable) {
  SweepArgs args;
  args.scenario = SCENARIO;
  args.ranges = {"training.micro_batch=1,3"};
  args.format = Format::CSV;
  std::ostringstream csv;
  sweep_command(args, csv, err_log);
  const std::string c = csv.str();
  EXPECT_EQ(c.substr(0, c.find('\n')),
            "training.micro_batch,gpus,iteration_time_s,tokens_per_s,model_tflops_per_gpu,mfu,scaling_efficiency,error,"
            "samples_per_s,time_to_train_days,time_to_train_gpu_hours,time_to_train_cost_usd,"
            "time_to_train_with_failures_days,time_to_train_with_failures_gpu_hours,"
            "time_to_train_with_failures_cost_usd,expected_failures,goodput,checkpoint_stall_s,peak_power_w,"
            "energy_to_train_mwh,energy_cost_usd,tco2");
  EXPECT_NE(c.find("\n1,8,"), std::string::npos);
  EXPECT_NE(c.find("\n3,,,,,,"), std::string::npos);
  args.format = Format::TABLE;
  std::ostringstream table;
  sweep_command(args, table, err_log);
  EXPECT_NE(table.str().find("2 points, 1 ran"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("100.0%"), std::string::npos);
}

// docs/sweep.md lists the CSV columns exactly as written: its example's header line and its list of
// the columns after the swept keys are the header the command writes.
TEST(Sweep, TheDocumentedCsvColumnsAreTheWrittenOnes) {
  SweepArgs args;
  args.scenario = SCENARIO;
  args.ranges = {"training.micro_batch=1"};
  args.format = Format::CSV;
  std::ostringstream csv;
  ASSERT_EQ(sweep_command(args, csv, err_log), 0);
  const std::string header = csv.str().substr(0, csv.str().find('\n'));
  std::ifstream f(std::string(TRAINSIM_SOURCE_DIR) + "/docs/sweep.md");
  std::stringstream doc;
  doc << f.rdbuf();
  EXPECT_NE(doc.str().find("\n" + header + "\n"), std::string::npos) << "docs/sweep.md's CSV example header: " << header;
  std::string listed;
  for (size_t at = header.find(',') + 1, end; at < header.size(); at = end + 1) {
    end = std::min(header.find(',', at), header.size());
    listed += fmt::format("{}`{}`", listed.empty() ? "" : ", ", header.substr(at, end - at));
  }
  EXPECT_NE(doc.str().find("the swept keys, then " + listed + "."), std::string::npos) << listed;
}

// Values that are objects (a described GPU) show as their label or name in the table, not as JSON
// (issue 33: 300-character columns); the CSV keeps the object.
TEST(Sweep, ObjectValuesShowTheirLabel) {
  SweepArgs args;
  args.scenario = SCENARIO;
  args.ranges = {R"(cluster.gpu={"base":"A100-SXM4-80GB","hbm_bandwidth":"4 TB/s","label":"A100 4TB/s"},)"
                 R"({"base":"A100-SXM4-80GB","hbm_bandwidth":"1 TB/s"})"};
  std::ostringstream table, csv;
  ASSERT_EQ(sweep_command(args, table, err_log), 0);
  const std::string t = table.str();
  EXPECT_NE(t.find("\nA100 4TB/s    "), std::string::npos) << t;
  EXPECT_NE(t.find("\nA100-SXM4-80GB (custom)  "), std::string::npos) << t;
  EXPECT_EQ(t.find("hbm_bandwidth"), std::string::npos) << t;
  args.format = Format::CSV;
  ASSERT_EQ(sweep_command(args, csv, err_log), 0);
  EXPECT_NE(csv.str().find("\"4 TB/s\""), std::string::npos) << csv.str();
}

// A layer-graph model (ResNet-50, docs/cnn.md) has no tokens: the table shows samples/s, the
// efficiency is in samples/s, and the CSV's samples_per_s column (last) carries it. Doubling the
// nodes with a fixed per-GPU batch: 8 -> 16 GPUs, samples/s nearly doubles (the gradient all-reduce
// hides under the backward), so the efficiency is the samples/s ratio over 2, just under 100%.
TEST(Sweep, LayerGraphModelsAreMeasuredInSamples) {
  SweepArgs args;
  args.scenario = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/cnn/resnet50-a100-8.json";
  args.overrides = {"parallelism.data=auto", "training.global_batch=4096"};
  args.ranges = {"cluster.nodes=1,2"};
  args.format = Format::JSON;
  std::ostringstream json;
  sweep_command(args, json, err_log);
  const core::Json j = core::Json::parse(json.str());
  const core::Json& pts = j["points"];
  ASSERT_EQ(pts.size(), 2u);
  const double s8 = pts[0]["samples_per_s"].get<double>();
  const double s16 = pts[1]["samples_per_s"].get<double>();
  EXPECT_EQ(pts[0]["tokens_per_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(pts[1]["scaling_efficiency"].get<double>(), (s16 / 16) / (s8 / 8));
  EXPECT_GT(pts[1]["scaling_efficiency"].get<double>(), 0.95);
  args.format = Format::TABLE;
  std::ostringstream table;
  sweep_command(args, table, err_log);
  EXPECT_NE(table.str().find("samples_per_s"), std::string::npos) << table.str();
  EXPECT_EQ(table.str().find("tokens_per_s"), std::string::npos) << table.str();
  args.format = Format::CSV;
  std::ostringstream csv;
  sweep_command(args, csv, err_log);
  // samples_per_s is the ninth column (after the one swept key and the seven figures before it).
  std::string second = csv.str().substr(csv.str().find('\n') + 1);
  for (int skip = 0; skip < 8; ++skip) second = second.substr(second.find(',') + 1);
  EXPECT_EQ(std::stod(second.substr(0, second.find(','))), s8) << csv.str();
}

TEST(Sweep, BadInputIsAnInputError) {
  SweepArgs args;
  args.scenario = SCENARIO;
  std::ostringstream out;
  auto message = [&]() -> std::string {
    try {
      sweep_command(args, out, err_log);
    } catch (const core::InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  args.ranges = {"parallelism.tensr=1,2"};
  EXPECT_NE(message().find("did you mean \"tensor\""), std::string::npos) << message();
  args.ranges = {"training.micro_batch=1:200:+1", "parallelism.tensor=1:100:+1"};
  EXPECT_NE(message().find("20000 points, more than 10000"), std::string::npos) << message();
  args.ranges = {"training.micro_batch=1,2", "training.micro_batch=4"};
  EXPECT_NE(message().find("already swept"), std::string::npos) << message();
  args.ranges = {"training.micro_batch=3,5"};  // no point can run
  EXPECT_NE(message().find("none of the 2 points"), std::string::npos) << message();
}

}  // namespace
}  // namespace trainsim::cli
