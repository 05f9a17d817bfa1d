// The planner library on its own (sim/plan/plan.hpp), without the command line: the example at the
// top of plan.hpp, a prediction against the golden `run --format json` report, search, compare and
// sweep results, and bad input thrown with the file and JSON pointer the command line prints; what the
// Python module relies on: scenarios as documents, ranges as values, StopOnInterrupt's restore.

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <gtest/gtest.h>
#include <set>

#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/progress.hpp"

namespace trainsim::plan {
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);
const std::string SMALL = (SOURCE / "scenarios/gpt3-6.7b-a100-8.json").string();

// tests/cli/exit_codes.sh's small search space: 8 GPUs, 8 layers, a batch of 32.
SearchOptions small_search() {
  SearchOptions o;
  o.scenario = SMALL;
  o.overrides = {"model.layers=8", "training.global_batch=32"};
  o.max_micro_batch = 2;
  o.refine = 8;
  o.top = 2;
  o.recheck = false;
  o.quiet = true;
  return o;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(b), 1e-12); }

// The example at the top of sim/plan/plan.hpp, as written there.
TEST(Plan, HeaderExampleRuns) {
  namespace plan = trainsim::plan;
  const plan::Scenario s = plan::load_scenario(SMALL, {"training.micro_batch=2"});
  const plan::Prediction p = plan::predict(s, "analytic");
  const trainsim::core::Json report = plan::report_json(s, p);
  double t = report["iteration_time_s"];
  EXPECT_EQ(t, p.iteration_time_s());
  EXPECT_GT(t, 0);

  plan::SearchOptions so;
  so.scenario = SMALL;
  so.overrides = {"model.layers=8", "training.global_batch=32"};  // a smaller space than the example's
  so.recheck = false;
  so.quiet = true;
  const plan::Search search(so);
  const plan::SearchResult found = search.run();
  ASSERT_FALSE(found.ranked.empty());

  const plan::CompareResult c = plan::compare({.inputs = {so.scenario}, .vary = {"parallelism.tensor=2,4"}, .quiet = true});
  EXPECT_EQ(c.configurations.size(), 2u);
  const plan::SweepResult w =
      plan::sweep({.scenario = so.scenario, .ranges = {"training.micro_batch=1:4:x2"}, .quiet = true});
  EXPECT_EQ(w.points.size(), 3u);
  const plan::ValidateResult v = plan::validate(
      {.paths = {(SOURCE / "tests/data/validation").string()}, .backend = "analytic", .quiet = true});
  EXPECT_EQ(v.cases.size(), 1u);
}

// Scenario in, report out: the report of a bundled scenario is the one `trainsim run --format json
// --backend analytic` wrote into the golden file (tests/cli/golden_test.cpp regenerates it on purpose).
TEST(Plan, PredictionOfABundledScenarioIsTheGoldenReport) {
  const Scenario s = load_scenario(SMALL);
  const core::Json report = report_json(s, predict(s, "analytic"));
  const core::Json golden = core::load_json_file((SOURCE / "tests/data/golden/gpt3-6.7b-a100-8.analytic.json").string());
  EXPECT_TRUE(near(report["iteration_time_s"].get<double>(), golden["iteration_time_s"].get<double>()))
      << report["iteration_time_s"] << " vs " << golden["iteration_time_s"];
  EXPECT_TRUE(near(report["mfu"].get<double>(), golden["mfu"].get<double>()));
  EXPECT_EQ(report["memory"]["peak_bytes_per_gpu"], golden["memory"]["peak_bytes_per_gpu"]);
  EXPECT_EQ(report["schema"], "trainsim.report/1");
  // predict_report (what compare, sweep and validate use) gives the same figures.
  const core::Json again = predict_report(s, "analytic");
  EXPECT_EQ(again["iteration_time_s"], report["iteration_time_s"]);
}

TEST(Plan, SearchRanksValidCandidatesBestFirst) {
  const Search search(small_search());
  const SearchResult r = search.run();
  EXPECT_GT(r.candidates, 0u);
  EXPECT_GT(r.valid, 0u);
  EXPECT_LE(r.valid, r.candidates);
  ASSERT_GE(r.ranked.size(), 2u);
  // The refined candidates come first, in objective order (iteration time: lower is better), each a
  // layout of the whole cluster.
  size_t refined = 0;
  while (refined < r.ranked.size() && r.ranked[refined].analytic) ++refined;
  ASSERT_GE(refined, 2u);
  for (size_t i = 0; i < refined; ++i) {
    const Evaluated& e = r.ranked[i];
    EXPECT_EQ(e.best_figures(), &*e.analytic);
    EXPECT_EQ(e.layout.tensor * e.layout.pipeline * e.layout.data * e.layout.context, 8) << e.layout.describe();
    EXPECT_EQ(search.objective_of(e), e.analytic->iteration_time_s);
    if (i > 0) {
      EXPECT_LE(search.objective_of(r.ranked[i - 1]), search.objective_of(e));
    }
  }
  // The winner, predicted on its own, takes the time the search ranked it on.
  const Scenario best = search.scenario_of(r.ranked[0].layout);
  EXPECT_TRUE(near(predict(best, "analytic").iteration_time_s(), r.ranked[0].analytic->iteration_time_s));
}

TEST(Plan, MergedShardsRankLikeOneProcess) {
  const Search one(small_search());
  const SearchResult whole = one.run();
  std::vector<std::pair<core::Json, std::string>> files;
  for (int i = 0; i < 2; ++i) {
    SearchOptions o = small_search();
    o.shard_index = i;
    o.shard_count = 2;
    const Search shard(o);
    files.emplace_back(shard_json(shard, shard.evaluate()), "shard" + std::to_string(i) + ".json");
  }
  std::reverse(files.begin(), files.end());  // any order
  MergedShards merged = merge_shards(files, small_search());
  merged.search.finish(merged.result);
  ASSERT_EQ(merged.result.ranked.size(), whole.ranked.size());
  for (size_t i = 0; i < whole.ranked.size(); ++i) {
    EXPECT_EQ(merged.result.ranked[i].layout.to_json(), whole.ranked[i].layout.to_json()) << i;
  }
  // A shard given twice is refused, naming the file.
  files[1] = files[0];
  try {
    merge_shards(files, small_search());
    FAIL() << "a shard given twice was merged";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems().front().file, files[0].second);
    EXPECT_EQ(e.problems().front().pointer, "/shard");
  }
}

TEST(Plan, CompareReturnsAColumnPerConfigurationAndTheRows) {
  // parallelism.tensor=4 leaves 8 GPUs / 4 for data with a batch the micro-batches no longer divide
  // (tests/cli/exit_codes.sh, compare-failing-column): a column with its problems, not an error.
  const CompareResult r = compare({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4"}, .quiet = true});
  ASSERT_EQ(r.configurations.size(), 2u);
  EXPECT_EQ(r.configurations[0].label, "tensor=2");
  EXPECT_EQ(r.configurations[1].label, "tensor=4");
  EXPECT_EQ(r.configurations[0].kind, "scenario");
  ASSERT_TRUE(r.configurations[0].ok());
  EXPECT_FALSE(r.configurations[1].ok());
  EXPECT_FALSE(r.configurations[1].problems.empty());
  EXPECT_EQ(r.reference, std::optional<size_t>(0));
  const auto row = std::find_if(r.rows.begin(), r.rows.end(),
                                [](const CompareRow& x) { return x.figure->name == "iteration_time_s"; });
  ASSERT_NE(row, r.rows.end());
  ASSERT_NE(row->values[0], nullptr);
  EXPECT_EQ(row->values[1], nullptr);
  const Scenario s = load_scenario(SMALL, {"parallelism.tensor=2"});
  EXPECT_EQ(row->values[0]->get<double>(), predict(s, "analytic").iteration_time_s());

  // Two configurations that both run: differences in percent from the first.
  const CompareResult both =
      compare({.inputs = {SMALL}, .vary = {"parallelism.tensor=2,4"}, .overrides = {"parallelism.data=auto"}, .quiet = true});
  ASSERT_TRUE(both.configurations[1].ok());
  const auto t = std::find_if(both.rows.begin(), both.rows.end(),
                              [](const CompareRow& x) { return x.figure->name == "iteration_time_s"; });
  ASSERT_NE(t, both.rows.end());
  const double a = t->values[0]->get<double>(), b = t->values[1]->get<double>();
  ASSERT_TRUE(t->diff_pct[1].has_value());
  EXPECT_NEAR(*t->diff_pct[1], (b - a) / a * 100, 1e-9);
  EXPECT_EQ(t->differs[1], std::abs(*t->diff_pct[1]) > HIGHLIGHT_PCT);
}

// --vary training.stack on a Composer FSDP case (zero_impl "fsdp" given, reduce_dtype "bf16" as the
// run was PURE): torchtitan and DeepSpeed run the layout with their own ZeRO implementation (the
// scenario's "fsdp" dropped, and said so), the PURE run's reduce dtype stays; Composer and PyTorch
// FSDP keep every key. Each column equals the scenario run with its own stack and implementation.
TEST(Plan, CompareOverStacksRunsEachStacksOwnImplementation) {
  const std::string mpt = (SOURCE / "validation/training-fsdp-dev/llmfoundry-mpt-7b-a100-40gb-128gpu-s2048-mb18-ga1.json").string();
  const CompareResult r =
      compare({.inputs = {mpt}, .vary = {"training.stack=composer,fsdp,torchtitan,deepspeed"}, .backend = "analytic", .quiet = true});
  ASSERT_EQ(r.configurations.size(), 4u);
  for (const Configuration& c : r.configurations) EXPECT_TRUE(c.ok()) << c.label << ": " << (c.ok() ? "" : c.error());
  EXPECT_EQ(r.configurations[0].stack_defaults, std::vector<std::string>{});
  EXPECT_EQ(r.configurations[1].stack_defaults, std::vector<std::string>{});
  EXPECT_EQ(r.configurations[2].stack_defaults, std::vector<std::string>{"parallelism.zero_impl"});
  EXPECT_EQ(r.configurations[3].stack_defaults, std::vector<std::string>{"parallelism.zero_impl"});
  const double titan = predict(load_scenario(mpt, {"training.stack=torchtitan", "parallelism.zero_impl=fsdp2"}), "analytic")
                           .iteration_time_s();
  EXPECT_DOUBLE_EQ(r.configurations[2].report["iteration_time_s"].get<double>(), titan);
  // Without a pipeline the bubble is idle time left between tasks by floating sums (1e-17 s), below
  // the table's last digit in every column: zero everywhere, no percentage of a rounding residue.
  const auto bubble = std::find_if(r.rows.begin(), r.rows.end(),
                                   [](const CompareRow& x) { return x.figure->name == "pipeline_bubble_s"; });
  ASSERT_NE(bubble, r.rows.end());
  for (size_t i = 0; i < r.configurations.size(); ++i) {
    EXPECT_LT(std::abs(bubble->values[i]->get<double>()), 5e-5) << i;
    EXPECT_EQ(bubble->diff_pct[i], std::optional<double>(0.0)) << i;
    EXPECT_FALSE(bubble->differs[i]) << i;
  }
  // Given by the user, the implementation is kept, and the stack refuses it.
  const CompareResult kept = compare({.inputs = {mpt}, .vary = {"training.stack=torchtitan"},
                                      .overrides = {"parallelism.zero_impl=fsdp"}, .backend = "analytic", .quiet = true});
  ASSERT_EQ(kept.configurations.size(), 1u);
  EXPECT_FALSE(kept.configurations[0].ok());
  EXPECT_TRUE(kept.configurations[0].stack_defaults.empty());
}

// parallelism.recompute_early_stop in a scenario file is dropped where the varied stack is Megatron
// (whose CheckpointFunction re-runs whole layers) and kept where it runs; set by --set, it stays,
// and Megatron refuses it (an input error, as for any key a varied configuration cannot take).
TEST(Plan, CompareOverStacksDropsTheEarlyStopUnderMegatron) {
  const std::string file = testing::TempDir() + "/early-stop.json";
  core::write_output_file(file, R"({"name": "es", "cluster": {"gpu": "A100-SXM4-80GB", "nodes": 1},
    "model": "gpt3-1.3b", "training": {"sequence_length": 2048, "global_batch": 16, "micro_batch": 2},
    "parallelism": {"data": 8, "recompute": "full", "recompute_early_stop": true}})");
  const CompareResult r =
      compare({.inputs = {file}, .vary = {"training.stack=torchtitan,megatron"}, .backend = "analytic", .quiet = true});
  ASSERT_EQ(r.configurations.size(), 2u);
  for (const Configuration& c : r.configurations) ASSERT_TRUE(c.ok()) << c.label << ": " << (c.ok() ? "" : c.error());
  EXPECT_EQ(r.configurations[0].stack_defaults, std::vector<std::string>{});
  EXPECT_EQ(r.configurations[1].stack_defaults, std::vector<std::string>{"parallelism.recompute_early_stop"});
  const double whole = predict(load_scenario(file, {"training.stack=megatron", "parallelism.recompute_early_stop=false"}),
                               "analytic")
                           .iteration_time_s();
  EXPECT_DOUBLE_EQ(r.configurations[1].report["iteration_time_s"].get<double>(), whole);
  const double early = predict(load_scenario(file, {"training.stack=torchtitan"}), "analytic").iteration_time_s();
  EXPECT_DOUBLE_EQ(r.configurations[0].report["iteration_time_s"].get<double>(), early);
  EXPECT_LT(early, predict(load_scenario(file, {"training.stack=torchtitan", "parallelism.recompute_early_stop=false"}),
                           "analytic")
                       .iteration_time_s());
  EXPECT_THROW(compare({.inputs = {file}, .vary = {"training.stack=megatron"},
                        .overrides = {"parallelism.recompute_early_stop=true"}, .backend = "analytic", .quiet = true}),
               core::InputError);
}

TEST(Plan, SweepReturnsAPointPerValueWithTheScalingEfficiency) {
  const SweepResult r = sweep({.scenario = SMALL, .ranges = {"training.micro_batch=1,2,3"}, .quiet = true});
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.ranges.size(), 1u);
  EXPECT_EQ(r.ran(), 2u);  // micro-batch 3 does not divide the batch
  EXPECT_EQ(r.points[0].values[0], 1);
  EXPECT_EQ(r.points[2].values[0], 3);
  EXPECT_TRUE(r.points[0].report.has_value());
  EXPECT_FALSE(r.points[2].report.has_value());
  EXPECT_FALSE(r.points[2].error.empty());
  EXPECT_EQ(r.points[0].efficiency, 1.0);
  EXPECT_EQ(r.throughput(), "tokens_per_s");
  // Same GPUs: the efficiency is the ratio of the throughputs.
  EXPECT_NEAR(r.points[1].efficiency, r.points[1].figure("tokens_per_s") / r.points[0].figure("tokens_per_s"), 1e-12);
  const Scenario s = load_scenario(SMALL, {"training.micro_batch=2"});
  EXPECT_EQ(r.points[1].figure("iteration_time_s"), predict(s, "analytic").iteration_time_s());
}

TEST(Plan, ValidateComparesEachCaseAndKeepsTheProblemsOfTheOthers) {
  // tests/data/validate-command: a case judged on its time, one on its TFLOP/s (tokens/s beside it),
  // an unknown key and an empty "expect" (`trainsim validate` prints them; tests/cli/exit_codes.sh).
  const std::string dir = (SOURCE / "tests/data/validate-command").string();
  const ValidateResult r = validate({.paths = {dir}, .tolerance = 0.25, .backend = "analytic", .quiet = true});
  ASSERT_EQ(r.cases.size(), 4u);
  EXPECT_EQ(r.cases[0].name, "time-case");
  ASSERT_EQ(r.cases[0].outcome, CaseOutcome::COMPARED);
  const ComparedFigure& t = r.cases[0].judged();
  EXPECT_EQ(t.metric, "iteration_time_s");
  EXPECT_EQ(t.measured, 1.0);
  EXPECT_DOUBLE_EQ(t.error, t.predicted / t.measured - 1);
  // The prediction is the scenario's, run by itself.
  const Scenario s = load_scenario(dir + "/1-time.json");
  EXPECT_EQ(t.predicted, predict(s, "analytic").iteration_time_s());
  EXPECT_EQ(direction(t.metric, t.error), t.error > 0 ? "slower" : "faster");
  ASSERT_EQ(r.cases[1].outcome, CaseOutcome::COMPARED);
  ASSERT_EQ(r.cases[1].figures.size(), 2u);
  EXPECT_EQ(r.cases[1].judged().metric, "model_tflops_per_gpu");
  EXPECT_EQ(r.cases[1].figures[1].metric, "tokens_per_s");
  EXPECT_EQ(r.cases[2].outcome, CaseOutcome::INPUT_ERROR);
  EXPECT_EQ(r.cases[2].problems.at(0).pointer, "/parallelism/tensr");
  EXPECT_EQ(r.cases[3].outcome, CaseOutcome::INPUT_ERROR);
  EXPECT_EQ(r.cases[3].problems.at(0).pointer, "/expect");
  EXPECT_EQ(r.totals.errors.size(), 2u);
  EXPECT_EQ(r.totals.input_errors, 2u);
  EXPECT_EQ(r.totals.internal_errors, 0u);
  size_t outside = 0;
  for (const ValidationCase& c : r.cases) outside += c.outcome == CaseOutcome::COMPARED && std::abs(c.judged().error) > 0.25;
  EXPECT_EQ(r.totals.outside, outside);
  // A predictor that fails inside: an internal error for that case, never a pass.
  const ValidateResult bug = validate({.paths = {dir + "/1-time.json"},
                                       .quiet = true,
                                       .predictor = [](const Scenario&, const std::string&) -> core::Json {
                                         throw core::InternalError("boom");
                                       }});
  ASSERT_EQ(bug.cases.size(), 1u);
  EXPECT_EQ(bug.cases[0].outcome, CaseOutcome::INTERNAL_ERROR);
  EXPECT_NE(bug.cases[0].internal.find("boom"), std::string::npos);
  EXPECT_EQ(bug.totals.internal_errors, 1u);
}

// Bad input is an InputError naming the file and the JSON pointer, as the command line prints it
// (tests/data/bad/tp-not-dividing-heads.expected).
TEST(Plan, BadScenarioThrowsTheFileAndField) {
  const std::string bad = (SOURCE / "tests/data/bad/tp-not-dividing-heads.json").string();
  try {
    load_scenario(bad);
    FAIL() << "loaded";
  } catch (const ImpossibleScenario& e) {
    ASSERT_EQ(e.problems().size(), 2u);
    EXPECT_EQ(e.problems()[0].to_string(), bad + ": /parallelism/tensor: tensor parallelism 8 must divide heads (12)");
    EXPECT_EQ(e.problems()[1].to_string(), bad + ": /parallelism/tensor: tensor parallelism 8 must divide kv_heads (12)");
  }
  // The same scenario in a sweep or a comparison: a row or column that cannot run, with that message.
  const CompareResult c = compare({.inputs = {bad}, .quiet = true});
  ASSERT_EQ(c.configurations.size(), 1u);
  ASSERT_FALSE(c.configurations[0].ok());
  EXPECT_EQ(c.configurations[0].problems[0].pointer, "/parallelism/tensor");
  EXPECT_FALSE(c.reference.has_value());
  // An unknown key is bad input, not a row: thrown once, with a hint.
  try {
    sweep({.scenario = SMALL, .ranges = {"parallelism.tensr=1,2"}, .quiet = true});
    FAIL() << "swept an unknown key";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems()[0].file, "--set-range");
    EXPECT_EQ(e.problems()[0].pointer, "/parallelism/tensr");
    EXPECT_NE(e.problems()[0].message.find("did you mean \"tensor\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(sweep({.scenario = SMALL, .ranges = {"training.micro_batch=4:1:x2"}}), core::InputError);
  EXPECT_THROW(Search(SearchOptions{.scenario = (SOURCE / "tests/data/bad/nope.json").string()}), core::InputError);
}

// Scenarios given as documents (the Python module's dicts) are read as their files are: the same
// results, and messages that name the document where they would name the file.
TEST(Plan, DocumentsInMemoryReadAsTheirFiles) {
  const core::Json doc = core::load_scenario_file(SMALL);

  SearchOptions from_file = small_search();
  SearchOptions from_doc = small_search();
  from_doc.scenario = "<doc>";
  from_doc.document = doc;
  const SearchResult a = Search(from_file).run(), b = Search(from_doc).run();
  ASSERT_FALSE(a.ranked.empty());
  ASSERT_EQ(a.ranked.size(), b.ranked.size());
  EXPECT_EQ(a.candidates, b.candidates);
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    EXPECT_EQ(a.ranked[i].layout.describe(), b.ranked[i].layout.describe());
    EXPECT_EQ(a.ranked[i].iteration_time_s(), b.ranked[i].iteration_time_s());
  }

  const SweepResult file_sweep = sweep({.scenario = SMALL, .ranges = {"training.micro_batch=1,2"}, .quiet = true});
  const SweepResult doc_sweep = sweep({.scenario = "<doc>", .ranges = {"training.micro_batch=1,2"}, .quiet = true, .document = doc});
  ASSERT_EQ(doc_sweep.ran(), 2u);
  EXPECT_EQ(doc_sweep.points[1].figure("iteration_time_s"), file_sweep.points[1].figure("iteration_time_s"));

  // Compare: a document is labelled by its whole name (no stem is taken of "<gpt3-6.7b>").
  const CompareResult c = compare({.inputs = {"<gpt3-6.7b>", SMALL}, .quiet = true, .documents = {doc, nullptr}});
  ASSERT_EQ(c.configurations.size(), 2u);
  EXPECT_EQ(c.configurations[0].label, "<gpt3-6.7b>");
  EXPECT_EQ(c.configurations[1].label, "gpt3-6.7b-a100-8");
  EXPECT_EQ(*c.rows[0].values[0], *c.rows[0].values[1]);

  core::Json bad = doc;
  bad["training"]["micro_bach"] = 2;
  try {
    Search(SearchOptions{.scenario = "<doc>", .document = bad});
    FAIL() << "searched an unknown key";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.problems()[0].file, "<doc>");
    EXPECT_EQ(e.problems()[0].pointer, "/training/micro_bach");
  }
}

// Ranges given as values keep strings that --set-range text cannot hold (':' and ',').
TEST(Plan, SweepTakesRangesAsValues) {
  const std::string pruned = (SOURCE / "scenarios/llama3-8b-2of4-h100-16.json").string();
  SweepRange methods;
  methods.key = "optimizations.pruning.method";
  methods.values = {"none", "2:4"};
  const SweepResult r = sweep({.scenario = pruned, .ranges = {"training.micro_batch=1,2"}, .quiet = true,
                               .parsed_ranges = {methods}});
  ASSERT_EQ(r.ranges.size(), 2u);
  EXPECT_EQ(r.ranges[1].key, "optimizations.pruning.method");
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.points[1].values[1], "2:4");  // after the text ranges; the last varies fastest
  EXPECT_EQ(r.ran(), 4u);
  EXPECT_NE(r.points[0].figure("iteration_time_s"), r.points[1].figure("iteration_time_s"));
  try {
    sweep({.scenario = pruned, .ranges = {"optimizations.pruning.method=none"}, .parsed_ranges = {methods}});
    FAIL() << "swept a key twice";
  } catch (const core::InputError& e) {
    EXPECT_NE(e.problems()[0].message.find("is already swept"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sweep({.scenario = pruned, .parsed_ranges = {SweepRange{.key = "training.micro_batch", .values = {}}}}),
               core::InputError);
}

void ignore_sigint(int) {}

// StopOnInterrupt puts back the SIGINT disposition it found, flags included (Python's handler has no
// SA_RESTART), and requested() is false once none exists.
TEST(Plan, StopOnInterruptRestoresThePreviousHandler) {
  struct sigaction mine {};
  mine.sa_handler = ignore_sigint;
  mine.sa_flags = SA_ONSTACK;
  sigemptyset(&mine.sa_mask);
  struct sigaction saved {};
  ASSERT_EQ(sigaction(SIGINT, &mine, &saved), 0);
  for (bool second_ends_process : {true, false}) {
    {
      const StopOnInterrupt stop(second_ends_process);
      EXPECT_FALSE(StopOnInterrupt::requested());
      ASSERT_EQ(raise(SIGINT), 0);
      EXPECT_TRUE(StopOnInterrupt::requested());
      if (!second_ends_process) {
        ASSERT_EQ(raise(SIGINT), 0);  // only a request again, the process lives on
        EXPECT_TRUE(StopOnInterrupt::requested());
      }
    }
    EXPECT_FALSE(StopOnInterrupt::requested());
    struct sigaction now {};
    ASSERT_EQ(sigaction(SIGINT, nullptr, &now), 0);
    EXPECT_EQ(now.sa_handler, &ignore_sigint);
    EXPECT_EQ(now.sa_flags & (SA_ONSTACK | SA_RESTART), SA_ONSTACK);
  }
  sigaction(SIGINT, &saved, nullptr);
}

}  // namespace
}  // namespace trainsim::plan
