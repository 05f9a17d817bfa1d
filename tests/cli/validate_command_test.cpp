// `trainsim validate` on tests/data/validate-command: a case judged on its time, one judged on a
// throughput, one that cannot be read (unknown key) and one whose expect block gives no figure.
// Most tests use a fixed report in place of the simulation, so every error is computed by hand
// from error = predicted / measured - 1 (sim/cli/validate_command.hpp); one runs the analytic
// backend to hold the command to the report it compares with.

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/plan/prediction.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string DIR = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/validate-command/";

// A report with round figures. Against the cases' measurements:
//   time-case:       iteration_time_s 2.0 / 1.0 - 1        = +1.00 (predicted slower)
//   throughput-case: model_tflops_per_gpu 150 / 100 - 1    = +0.50 (judged; predicted faster)
//                    tokens_per_s 65536 / 131072 - 1       = -0.50 (not judged; predicted slower)
// Summary over the judged errors {1.00, 0.50}: median (1.00 + 0.50) / 2 = 0.75, mean 0.75, max 1.00.
core::Json fixed_report(const Scenario&, const std::string&) {
  return {{"iteration_time_s", 2.0}, {"tokens_per_s", 65536.0}, {"model_tflops_per_gpu", 150.0},
          {"hardware_tflops_per_gpu", 200.0}, {"mfu", 0.48}};
}

struct Outcome {
  int code = 0;
  std::string out;
  std::string err;
};

Outcome validate(std::vector<std::string> paths, const CasePredictor& predictor, Format format = Format::TABLE,
                 std::optional<double> tolerance = std::nullopt) {
  ValidateArgs args;
  args.paths = std::move(paths);
  args.format = format;
  args.tolerance = tolerance;
  args.backend = "analytic";
  std::ostringstream out, err;
  Outcome o;
  o.code = validate_command(args, predictor, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The table line whose first column is `name`.
std::string row(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return line;
  }
  return "";
}

TEST(Validate, EveryCaseGetsARowAndAnUnreadableCaseMakesExit2) {
  const Outcome o = validate({DIR}, fixed_report);
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_TRUE(has(row(o.out, "time-case"), "iteration_time_s")) << o.out;
  EXPECT_TRUE(has(row(o.out, "time-case"), "+100.0%  slower")) << o.out;
  EXPECT_TRUE(has(row(o.out, "throughput-case"), "model_tflops_per_gpu")) << o.out;
  EXPECT_TRUE(has(row(o.out, "throughput-case"), "+50.0%  faster")) << o.out;
  // tokens_per_s is shown, below its case, and not judged.
  EXPECT_TRUE(has(row(o.out, "  (not judged)"), "tokens_per_s")) << o.out;
  EXPECT_TRUE(has(row(o.out, "  (not judged)"), "-50.0%  slower")) << o.out;
  // The unreadable case is named by its file (it has no name yet), the empty one by its name; both
  // rows carry the problem as InputError prints it: file, JSON pointer, message.
  EXPECT_TRUE(has(row(o.out, "3-unknown-key"), "input error")) << o.out;
  EXPECT_TRUE(has(o.out, "3-unknown-key.json: /parallelism/tensr: unknown key \"tensr\" (did you mean \"tensor\"?)"));
  EXPECT_TRUE(has(row(o.out, "empty-expect-case"), "input error")) << o.out;
  EXPECT_TRUE(has(o.out, "4-empty-expect.json: /expect: gives no measured figure"));
  EXPECT_TRUE(has(o.out, "2 cases: median |error| 75.0%, mean 75.0%, max 100.0% (time-case)")) << o.out;
  EXPECT_TRUE(has(o.out, "2 case(s) could not be read or run")) << o.out;
  EXPECT_TRUE(has(o.err, "3-unknown-key.json: /parallelism/tensr")) << "problems also go to stderr";
}

TEST(Validate, ToleranceJudgesOnlyTheJudgedFigure) {
  // |+1.00| > 0.60 is outside; |+0.50| is inside, and the not-judged -0.50 does not count.
  const Outcome outside = validate({DIR + "1-time.json", DIR + "2-throughput.json"}, fixed_report, Format::TABLE, 0.60);
  EXPECT_EQ(outside.code, 3) << outside.out;
  EXPECT_TRUE(has(row(outside.out, "time-case"), "outside tolerance"));
  EXPECT_FALSE(has(row(outside.out, "throughput-case"), "outside tolerance"));
  EXPECT_TRUE(has(outside.out, "; 1 outside tolerance 60.0%")) << outside.out;
  // Only the throughput case, judged at +0.50, within 0.55 although its tokens_per_s is -0.50 off
  // and would be within it too: exit 0. At 0.45 it is outside: exit 3.
  EXPECT_EQ(validate({DIR + "2-throughput.json"}, fixed_report, Format::TABLE, 0.55).code, 0);
  EXPECT_EQ(validate({DIR + "2-throughput.json"}, fixed_report, Format::TABLE, 0.45).code, 3);
}

TEST(Validate, AnInternalErrorInOneCaseIsItsRowAndExit1) {
  auto throwing = [](const Scenario& s, const std::string& backend) -> core::Json {
    if (s.name == "time-case") throw core::InternalError("synthetic bug for the test");
    return fixed_report(s, backend);
  };
  const Outcome o = validate({DIR}, throwing);
  EXPECT_EQ(o.code, 1) << "a bug wins over the input errors of other cases";
  EXPECT_TRUE(has(row(o.out, "time-case"), "internal error")) << o.out;
  EXPECT_TRUE(has(o.out, "1-time.json: synthetic bug for the test")) << o.out;
  EXPECT_TRUE(has(row(o.out, "throughput-case"), "+50.0%")) << "the other cases still run";
  EXPECT_TRUE(has(o.out, "1 cases: median |error| 50.0%")) << o.out;
  EXPECT_TRUE(has(o.out, "1 case(s) hit an internal error")) << o.out;

  // A report without the figure a case gives is our bug too, not a pass.
  auto incomplete = [](const Scenario&, const std::string&) -> core::Json { return {{"iteration_time_s", 2.0}}; };
  const Outcome missing = validate({DIR + "2-throughput.json"}, incomplete);
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(has(missing.out, "the report has no number \"model_tflops_per_gpu\"")) << missing.out;
}

TEST(Validate, JsonCarriesTheMetricTheFiguresNotJudgedAndTheProblems) {
  const Outcome o = validate({DIR}, fixed_report, Format::JSON);
  EXPECT_EQ(o.code, 2);
  const core::Json j = core::Json::parse(o.out);
  EXPECT_EQ(j["schema"], "trainsim.validation/1");
  const core::Json& cases = j["cases"];
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0]["metric"], "iteration_time_s");
  EXPECT_DOUBLE_EQ(cases[0]["signed_error"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(cases[0]["predicted_s"].get<double>(), 2.0);
  EXPECT_EQ(cases[1]["metric"], "model_tflops_per_gpu");
  EXPECT_DOUBLE_EQ(cases[1]["signed_error"].get<double>(), 0.5);
  EXPECT_EQ(cases[1]["prediction"], "faster");
  EXPECT_FALSE(cases[1].contains("predicted_s")) << "no time was measured";
  ASSERT_EQ(cases[1]["not_judged"].size(), 1u);
  EXPECT_EQ(cases[1]["not_judged"][0]["metric"], "tokens_per_s");
  EXPECT_DOUBLE_EQ(cases[1]["not_judged"][0]["signed_error"].get<double>(), -0.5);
  EXPECT_EQ(cases[2]["error_kind"], "input");
  EXPECT_EQ(cases[2]["problems"][0]["pointer"], "/parallelism/tensr");
  EXPECT_EQ(cases[3]["problems"][0]["pointer"], "/expect");
  EXPECT_DOUBLE_EQ(j["summary"]["median_abs_error"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["summary"]["max_abs_error"].get<double>(), 1.0);
  EXPECT_EQ(j["summary"]["input_errors"], 2);
}

TEST(Validate, CsvHasOneRowPerFigureAndPerFailedCase) {
  const Outcome o = validate({DIR}, fixed_report, Format::CSV);
  EXPECT_EQ(o.code, 2);
  std::istringstream lines(o.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  // header + time + throughput judged + tokens_per_s + two failed cases
  ASSERT_EQ(rows.size(), 6u) << o.out;
  EXPECT_EQ(rows[0], "case,file,metric,judged,predicted,measured,signed_error,prediction,within_tolerance,status,message");
  EXPECT_TRUE(has(rows[1], "time-case,") && has(rows[1], ",iteration_time_s,true,2,1,1,slower,,ok,")) << rows[1];
  EXPECT_TRUE(has(rows[3], ",tokens_per_s,false,65536,131072,-0.5,slower,,ok,")) << rows[3];
  EXPECT_TRUE(has(rows[4], ",input_error,")) << rows[4];
  EXPECT_TRUE(has(rows[4], "did you mean \"\"tensor\"\"?")) << "quotes doubled inside a quoted field: " << rows[4];
}

TEST(Validate, ComparesWithTheReportOfTheAnalyticBackend) {
  const Outcome o = validate({DIR + "1-time.json", DIR + "2-throughput.json"}, predict_report, Format::JSON);
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  const core::Json j = core::Json::parse(o.out);
  const Scenario s = load_scenario(DIR + "2-throughput.json");
  const core::Json report = predict_report(s, "analytic");
  const double t = report["iteration_time_s"].get<double>();
  // The time case measured 1.0 s: its error is the predicted time minus one.
  EXPECT_NEAR(j["cases"][0]["signed_error"].get<double>(), t - 1.0, 1e-12);
  // 64 sequences of 2,048 tokens per iteration: tokens_per_s = 131,072 / t, against 131,072 measured,
  // so its error is 1 / t - 1.
  const core::Json& tokens = j["cases"][1]["not_judged"][0];
  EXPECT_NEAR(tokens["predicted"].get<double>(), 131072.0 / t, 1e-9 * 131072.0 / t);
  EXPECT_NEAR(tokens["signed_error"].get<double>(), 1.0 / t - 1.0, 1e-12);
  EXPECT_NEAR(j["cases"][1]["predicted"].get<double>(), report["model_tflops_per_gpu"].get<double>(), 1e-12);
}

TEST(Validate, MissingPathIsAnErrorRowAndTheOthersStillRun) {
  const Outcome o = validate({DIR + "no-such-case.json", DIR + "1-time.json"}, fixed_report);
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(has(row(o.out, "no-such-case"), "input error")) << o.out;
  EXPECT_TRUE(has(o.out, "no-such-case.json: cannot open file")) << o.out;
  EXPECT_TRUE(has(row(o.out, "time-case"), "+100.0%")) << o.out;
}

TEST(Validate, ExpectationFiguresComeInJudgingOrder) {
  Expectation e;
  EXPECT_TRUE(e.figures().empty());
  e.hardware_tflops_per_gpu = 140;
  e.mfu = 0.5;
  e.tokens_per_s = 1e6;
  e.model_tflops_per_gpu = 150;
  std::vector<std::string> order;
  for (const MeasuredFigure& f : e.figures()) order.push_back(f.metric);
  EXPECT_EQ(order, (std::vector<std::string>{"model_tflops_per_gpu", "tokens_per_s", "mfu", "hardware_tflops_per_gpu"}));
  e.iteration_time_s = 3;
  EXPECT_EQ(e.figures().front().metric, "iteration_time_s");
  EXPECT_EQ(e.figures().size(), 5u);
}

// expect.peak_memory_gib: compared with memory.peak_bytes_per_gpu / 2^30, and said as more or less
// memory (not faster or slower). 30 GiB predicted against 40 measured: 30 / 40 - 1 = -25%.
TEST(Validate, PeakMemoryIsComparedInGibAndSaidAsMemory) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "trainsim-validate-memory";
  std::filesystem::create_directories(dir);
  const std::string text = std::string(R"({
  "name": "memory-case",
  "cluster": { "gpu": "A100-SXM4-80GB", "nodes": 1, "gpus_per_node": 8,
               "network": { "topology": "ideal", "nics_per_node": 8, "nic_bandwidth": "200 Gb/s" } },
  "model": "gpt3-350m",
  "training": { "sequence_length": 2048, "global_batch": 64, "micro_batch": 4, "precision": "bf16" },
  "parallelism": { "tensor": 1, "pipeline": 1, "data": 8 },
  "expect": { "iteration_time_s": 2.0, "peak_memory_gib": 40, "source": "synthetic" }
})");
  const std::string file = (dir / "memory.json").string();
  { std::ofstream(file) << text; }
  auto report = [](const Scenario&, const std::string&) -> core::Json {
    return {{"iteration_time_s", 2.0}, {"memory", {{"peak_bytes_per_gpu", 30.0 * 1024 * 1024 * 1024}}}};
  };
  const Outcome o = validate({file}, report, Format::CSV);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(has(o.out, "peak_memory_gib")) << o.out;
  EXPECT_TRUE(has(o.out, "-0.25")) << o.out;
  EXPECT_TRUE(has(o.out, "less memory")) << o.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::cli
