// Issue 31's "Done when": the bundled scenarios round-trip. Each scenario of scenarios/ is written
// as Megatron-LM arguments, as a DeepSpeed config with a Hugging Face config.json, and as a
// torchtitan TOML (with the config.json when the shape is no torchtitan flavor), imported back with
// its cluster (--cluster-from) and the overrides the export asks for, and predicted with the
// analytic backend. Wherever the export lost nothing, the report is the same: iteration_time_s and
// the peak memory. The scenarios that are expressible are listed, so that a change in what an
// exporter can say is noticed.

#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <set>

#include "sim/core/output_file.hpp"
#include "sim/plan/config_export.hpp"
#include "sim/plan/config_import.hpp"
#include "sim/plan/prediction.hpp"

namespace trainsim::plan {
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);

struct Figures {
  double iteration_time_s = 0;
  double peak_bytes = 0;
};

Figures predict_figures(const Scenario& s) {
  const core::Json report = report_json(s, predict(s, "analytic"));
  return {report.at("iteration_time_s").get<double>(), report.at("memory").at("peak_bytes_per_gpu").get<double>()};
}

struct Trip {
  bool expressible = true;  // the export ran (a model of layers has no form)
  bool lossless = false;    // nothing lost
  bool imported = false;    // the import read it back as a scenario that runs
  Figures figures;
  std::string why;          // what was lost, or why the import failed
};

// Exports `s` (read from `file`) as `formats`, imports the files back with its cluster.
Trip round_trip(const Scenario& s, const std::string& file, const std::vector<ConfigFormat>& formats, const std::string& tag) {
  Trip t;
  ImportOptions o;
  o.cluster_from = file;
  o.name = s.name;
  bool lossless = true;
  for (ConfigFormat f : formats) {
    ExportResult r;
    try {
      r = export_scenario(s, f);
    } catch (const core::InputError& e) {
      t.expressible = false;
      t.why = e.what();
      return t;
    }
    for (const ExportLoss& l : r.lost) t.why += l.key + ": " + l.message + "; ";
    lossless = lossless && r.lost.empty();
    o.overrides.insert(o.overrides.end(), r.import_overrides.begin(), r.import_overrides.end());
    const std::string out = testing::TempDir() + "/roundtrip-" + tag + "." + to_string(f);
    core::write_output_file(out, r.text);
    switch (f) {
      case ConfigFormat::MEGATRON: o.megatron = out; break;
      case ConfigFormat::TORCHTITAN: o.torchtitan = out; break;
      case ConfigFormat::DEEPSPEED: o.deepspeed = out; break;
      case ConfigFormat::HUGGING_FACE: o.hf_config = out; break;
    }
  }
  t.lossless = lossless;
  try {
    const ImportResult imported = import_configs(o);
    t.figures = predict_figures(read_scenario(imported.scenario, "round trip of " + file));
    t.imported = true;
  } catch (const core::InputError& e) {
    t.why += e.what();
  }
  return t;
}

void expect_same(const Figures& a, const Figures& b, const std::string& what) {
  EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-12 * b.iteration_time_s) << what;
  EXPECT_EQ(a.peak_bytes, b.peak_bytes) << what;
}

TEST(ConfigRoundTrip, BundledScenariosThatAFormatExpressesComeBackWithTheSameReport) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(SOURCE / "scenarios")) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u);
  const std::vector<std::pair<std::string, std::vector<ConfigFormat>>> ways = {
      {"megatron", {ConfigFormat::MEGATRON}},
      {"deepspeed+hf", {ConfigFormat::DEEPSPEED, ConfigFormat::HUGGING_FACE}},
      {"torchtitan+hf", {ConfigFormat::TORCHTITAN, ConfigFormat::HUGGING_FACE}},
  };
  std::set<std::string> lossless;
  int index = 0;
  for (const std::filesystem::path& file : files) {
    const std::string name = std::filesystem::relative(file, SOURCE / "scenarios").string();
    const Scenario s = load_scenario(file.string());
    const Figures original = predict_figures(s);
    for (const auto& [way, formats] : ways) {
      SCOPED_TRACE(name + " as " + way);
      const Trip t = round_trip(s, file.string(), formats, std::to_string(index++));
      if (t.lossless) {
        lossless.insert(way + " " + name);
        ASSERT_TRUE(t.imported) << t.why;
        expect_same(t.figures, original, name);
      }
      std::cout << fmt::format("{:<14} {:<52} {}\n", way, name,
                               !t.expressible ? "not expressible (a model of layers)"
                               : t.lossless   ? fmt::format("exact: {:.6f} s = {:.6f} s", t.figures.iteration_time_s, original.iteration_time_s)
                               : t.imported   ? fmt::format("lossy: {:.6f} s against {:.6f} s ({})", t.figures.iteration_time_s,
                                                          original.iteration_time_s, t.why.substr(0, 90))
                                              : "lossy, and the import refuses it: " + t.why.substr(0, 90));
    }
  }
  const std::set<std::string> expected = {
      "megatron bench/gpt3-175b-a100-1024.json",
      "megatron gpt3-175b-a100-1024.json",
      "megatron gpt3-6.7b-a100-8.json",
      "megatron llama3-70b-h100-64.json",
      "megatron pipeline/gpt3-175b-h200-128-pp16.json",
      "megatron pipeline/gpt3-175b-h200-32-pp4.json",
      "megatron pipeline/gpt3-2.7b-h100-16-ethernet-pp4.json",
      "deepspeed+hf offload/zero-infinity-gpt3-175b-dgx2.json",
      "deepspeed+hf offload/zero-offload-10b-v100-1.json",
      "deepspeed+hf sanity/zero-sc20-13b-v100-128.json",
  };
  EXPECT_EQ(lossless, expected);
}

// Scenarios made by import round-trip through their own format: a torchtitan job (FSDP2, compile,
// selective AC) and a Megatron-Bridge MoE job (expert folding, all-to-all overlap).
TEST(ConfigRoundTrip, ImportedScenariosComeBackThroughTheirFormat) {
  const std::string data = (SOURCE / "tests/data/import").string();
  const std::string cluster = (SOURCE / "scenarios/llama3-70b-h100-64.json").string();
  struct Case {
    std::string name;
    ImportOptions options;
    std::vector<ConfigFormat> formats;
  };
  std::vector<Case> cases(2);
  cases[0].name = "torchtitan";
  cases[0].options.torchtitan = data + "/torchtitan/llama3_8b.toml";
  cases[0].options.cluster_from = cluster;
  cases[0].formats = {ConfigFormat::TORCHTITAN};
  cases[1].name = "megatron-moe";
  cases[1].options.hf_config = data + "/hf/qwen3-235b-a22b.json";
  cases[1].options.megatron = data + "/megatron/qwen3-235b-bridge.args";
  cases[1].options.gpu = "H100-SXM5-80GB";
  cases[1].options.nodes = 32;
  cases[1].formats = {ConfigFormat::MEGATRON};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ImportResult first = import_configs(c.options);
    const std::string file = testing::TempDir() + "/imported-" + c.name + ".json";
    core::write_output_file(file, scenario_text(first));
    const Scenario s = load_scenario(file);
    const Trip t = round_trip(s, file, c.formats, c.name);
    EXPECT_TRUE(t.lossless) << t.why;
    ASSERT_TRUE(t.imported) << t.why;
    expect_same(t.figures, predict_figures(s), c.name);
  }
}

// A torchtitan job with a pipeline: FSDP2 at stage 3 (reshard after forward) and at stage 2
// (SHARD_GRAD_OP, torchtitan's default under a pipeline) come back as the same stage, because the
// export states fsdp_reshard_after_forward rather than leave it to the default.
TEST(ConfigRoundTrip, TorchtitanPipelineKeepsItsShardingStage) {
  for (int stage : {2, 3}) {
    SCOPED_TRACE(stage);
    const std::string file = testing::TempDir() + fmt::format("/torchtitan-pp-zero{}.json", stage);
    core::write_output_file(file, fmt::format(R"({{"name": "tt-pp", "cluster": {{"gpu": "H100-SXM5-80GB", "nodes": 8}},
      "model": "llama3-70b",
      "training": {{"sequence_length": 8192, "global_batch": 64, "micro_batch": 1, "attention": "flash",
                    "stack": "torchtitan", "compile": true}},
      "parallelism": {{"tensor": 8, "pipeline": 4, "data": 2, "sequence_parallel": true,
                       "pipeline_schedule": "interleaved-1f1b", "virtual_stages": 2, "zero_stage": {}, "zero_impl": "fsdp2",
                       "recompute": "full"}}}})", stage));
    const Scenario s = load_scenario(file);
    const Trip t = round_trip(s, file, {ConfigFormat::TORCHTITAN}, fmt::format("tt-zero{}", stage));
    EXPECT_TRUE(t.lossless) << t.why;
    ASSERT_TRUE(t.imported) << t.why;
    expect_same(t.figures, predict_figures(s), file);
  }
}

// parallelism.recompute_early_stop is the checkpoint's, so a format whose checkpoint differs says so:
// Megatron-LM and DeepSpeed re-run whole layers, torchtitan always stops early.
TEST(ConfigRoundTrip, EarlyStopIsReportedLostWhereTheFormatsCheckpointDiffers) {
  auto lost_keys = [](const Scenario& s, ConfigFormat f) {
    std::set<std::string> keys;
    for (const ExportLoss& l : export_scenario(s, f).lost) keys.insert(l.key);
    return keys;
  };
  for (bool early_stop : {true, false}) {
    SCOPED_TRACE(early_stop);
    const std::string file = testing::TempDir() + fmt::format("/torchtitan-full-{}.json", early_stop);
    core::write_output_file(file, fmt::format(R"({{"name": "tt-full", "cluster": {{"gpu": "A100-SXM4-80GB", "nodes": 2}},
      "model": "llama3-8b",
      "training": {{"sequence_length": 4096, "global_batch": 16, "micro_batch": 1, "attention": "flash", "stack": "torchtitan"}},
      "parallelism": {{"data": 16, "zero_stage": 3, "recompute": "full", "recompute_early_stop": {}}}}})",
                                              early_stop));
    const Scenario s = load_scenario(file);
    EXPECT_EQ(s.parallelism.recompute_early_stop, early_stop);
    EXPECT_EQ(lost_keys(s, ConfigFormat::MEGATRON).count("parallelism.recompute_early_stop"), early_stop ? 1u : 0u);
    EXPECT_EQ(lost_keys(s, ConfigFormat::DEEPSPEED).count("parallelism.recompute_early_stop"), early_stop ? 1u : 0u);
    EXPECT_EQ(lost_keys(s, ConfigFormat::TORCHTITAN).count("parallelism.recompute_early_stop"), early_stop ? 0u : 1u);
  }
}

}  // namespace
}  // namespace trainsim::plan
