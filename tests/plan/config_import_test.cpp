// `trainsim import` as a library call (sim/plan/config_import.hpp): the fixtures of
// tests/data/import (written from the models' published config.json, torchtitan's and Megatron's
// public configurations) give the published parameter counts, every value of a file is either
// imported or reported, sources are merged and checked against each other, and the bad-input corpus
// tests/data/bad/import/<format>/NAME.* gives the message in NAME.expected.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/model_spec.hpp"
#include "sim/plan/config_import.hpp"
#include "sim/plan/import_source.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);
const std::filesystem::path DATA = SOURCE / "tests/data/import";

std::string path(const std::string& relative) { return (DATA / relative).string(); }

models::ModelSpec model_of(const ImportFragment& f) {
  core::Diagnostics diag;
  models::ModelSpec m = models::ModelSpec::from_json(f.scenario.at("model"), f.file, "/model", diag);
  EXPECT_TRUE(diag.empty()) << core::InputError(diag.problems()).what();
  return m;
}

// The published figure, in billions, and the tolerance it implies: half a unit of its last digit
// ("8.03B" is 8.025-8.035B). Model cards round; trainsim counts exactly (models/model_spec.hpp).
void expect_published(int64_t count, double published_b, double half_unit_b, const std::string& what) {
  EXPECT_LE(std::abs(count / 1e9 - published_b), half_unit_b) << what << ": " << count / 1e9 << "B against the published " << published_b << "B";
}

TEST(ConfigImport, HuggingFaceConfigsGiveThePublishedParameterCounts) {
  // Meta's Llama 3 model cards: 8.03B and 70.6B.
  expect_published(model_of(read_hf_config(path("hf/llama3-8b.json"))).parameter_count(8192), 8.03, 0.005, "Llama 3 8B");
  expect_published(model_of(read_hf_config(path("hf/llama3-70b.json"))).parameter_count(8192), 70.6, 0.05, "Llama 3 70B");
  // Qwen3-8B's model card: 8.2B (of which 6.95B without embeddings); Qwen3-235B-A22B: 235B, 22B activated.
  expect_published(model_of(read_hf_config(path("hf/qwen3-8b.json"))).parameter_count(4096), 8.2, 0.05, "Qwen3-8B");
  const models::ModelSpec qwen = model_of(read_hf_config(path("hf/qwen3-235b-a22b.json")));
  expect_published(qwen.parameter_count(4096), 235, 0.5, "Qwen3-235B-A22B total");
  expect_published(qwen.active_parameter_count(4096), 22, 0.5, "Qwen3-235B-A22B active");
  // Mistral AI, "Mixtral of Experts" (Jiang et al. 2024): 46.7B total, 12.9B active.
  const models::ModelSpec mixtral = model_of(read_hf_config(path("hf/mixtral-8x7b.json")));
  expect_published(mixtral.parameter_count(4096), 46.7, 0.05, "Mixtral 8x7B total");
  expect_published(mixtral.active_parameter_count(4096), 12.9, 0.05, "Mixtral 8x7B active");
  EXPECT_EQ(mixtral.experts, 8);
  EXPECT_EQ(mixtral.top_k, 2);
}

TEST(ConfigImport, DeepSeekLatentAttentionIsApproximatedAndSaysByHowMuch) {
  // DeepSeek-V3 (DeepSeek-AI 2024, Table 1 and its config.json): 671B total, 37B activated. Its
  // multi-head latent attention has no counterpart: the note gives both counts, and the model is
  // within 1% of the published total (MLA's own count, in the note, within half a unit).
  const ImportFragment f = read_hf_config(path("hf/deepseek-v3.json"));
  const models::ModelSpec m = model_of(f);
  EXPECT_EQ(m.first_dense_layers, 3);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.dense_ffn(), 18432);
  EXPECT_EQ(m.experts, 256);
  EXPECT_LE(std::abs(m.parameter_count(4096) / 671e9 - 1), 0.01) << m.parameter_count(4096);
  const auto mla = std::find_if(f.notes.begin(), f.notes.end(), [](const ImportNote& n) { return n.field.starts_with("kv_lora_rank"); });
  ASSERT_NE(mla, f.notes.end());
  EXPECT_NE(mla->message.find("approximated"), std::string::npos);
  EXPECT_NE(mla->message.find("671.03B with MLA"), std::string::npos) << mla->message;
  const auto mtp = std::find_if(f.notes.begin(), f.notes.end(), [](const ImportNote& n) { return n.field == "/num_nextn_predict_layers"; });
  EXPECT_NE(mtp, f.notes.end());
}

TEST(ConfigImport, TorchtitanFlavorsHaveTheHuggingFaceShapes) {
  // Two public descriptions of the same models must agree once imported.
  const auto shape = [](const models::ModelSpec& m) {
    core::Json j = m.to_json();
    j.erase("name");
    j.erase("source");
    return j;
  };
  EXPECT_EQ(shape(model_of(read_torchtitan_toml(path("torchtitan/llama3_8b.toml")))), shape(model_of(read_hf_config(path("hf/llama3-8b.json")))));
  for (const auto& [flavor, hf] : {std::pair{"70B", "hf/llama3-70b.json"}}) {
    const auto& all = import_detail::torchtitan_flavors();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& f) { return std::string(f.name) == "llama3" && f.flavor == std::string(flavor); });
    ASSERT_NE(it, all.end());
    core::Diagnostics diag;
    EXPECT_EQ(shape(models::ModelSpec::from_json(import_detail::flavor_model(*it), "", "", diag)), shape(model_of(read_hf_config(path(hf)))));
  }
  const auto& all = import_detail::torchtitan_flavors();
  const auto qwen = std::find_if(all.begin(), all.end(), [](const auto& f) { return std::string(f.flavor) == "235B-A22B"; });
  core::Diagnostics diag;
  EXPECT_EQ(shape(models::ModelSpec::from_json(import_detail::flavor_model(*qwen), "", "", diag)),
            shape(model_of(read_hf_config(path("hf/qwen3-235b-a22b.json")))));
}

std::string read_text(const std::string& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every value of a source file is imported (some origin names it, or a size left to the world size)
// or reported (some note names it).
void expect_every_field_accounted(const ImportFragment& f, const std::vector<std::string>& fields) {
  for (const std::string& field : fields) {
    const DeferredSizes& d = f.deferred;
    const bool imported = std::any_of(f.origin.begin(), f.origin.end(), [&](const auto& o) { return o.second.find(field) != std::string::npos; }) ||
                          d.steps_field.find(field) != std::string::npos || d.local_batch_field.find(field) != std::string::npos ||
                          d.world_field.find(field) != std::string::npos || d.data_field.find(field) != std::string::npos ||
                          d.batch_fields.find(field) != std::string::npos;
    const bool matched = std::any_of(f.matched.begin(), f.matched.end(), [&](const std::string& m) { return m.find(field) != std::string::npos; });
    const bool noted = matched || std::any_of(f.notes.begin(), f.notes.end(), [&](const ImportNote& n) {
      return n.field.find(field) != std::string::npos || n.value.find(field) != std::string::npos;
    });
    EXPECT_TRUE(imported || noted) << f.file << ": " << field << " was neither imported nor reported";
  }
}

// The leaf keys of a JSON document (top-level names and nested ones by their last key).
std::vector<std::string> json_keys(const core::Json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_null()) continue;  // null: not given
    if (it.value().is_object()) {
      for (const std::string& k : json_keys(it.value())) keys.push_back(k);
    } else {
      keys.push_back(it.key());
    }
  }
  return keys;
}

TEST(ConfigImport, EveryValueIsImportedOrReported) {
  for (const char* hf : {"hf/llama3-8b.json", "hf/llama3-70b.json", "hf/qwen3-8b.json", "hf/qwen3-235b-a22b.json", "hf/mixtral-8x7b.json",
                         "hf/deepseek-v3.json"}) {
    expect_every_field_accounted(read_hf_config(path(hf)), json_keys(core::load_json_file(path(hf))));
  }
  expect_every_field_accounted(read_deepspeed_json(path("deepspeed/zero3.json")), json_keys(core::load_json_file(path("deepspeed/zero3.json"))));
  // Megatron: every argument of the launch, the launcher's and the environment's too.
  const ImportFragment m = read_megatron_file(path("megatron/llama3-70b-pretrain.sh"));
  std::vector<std::string> arguments;
  for (const std::string& t : split_arguments(read_text(path("megatron/llama3-70b-pretrain.sh")), "")) {
    if (t.starts_with("--") || t.find('=') != std::string::npos) arguments.push_back(t.substr(0, t.find('=')));
  }
  EXPECT_GT(arguments.size(), 40u);
  expect_every_field_accounted(m, arguments);
  // torchtitan: every key of every table (the tables by their dotted names).
  const ImportFragment t = read_torchtitan_toml(path("torchtitan/llama3_8b.toml"));
  expect_every_field_accounted(t, {"job.dump_folder", "job.description", "profiling.enable_profiling", "metrics.log_freq", "model.flavor",
                                   "model.hf_assets_path", "optimizer.lr", "lr_scheduler.warmup_steps", "training.local_batch_size",
                                   "training.seq_len", "training.max_norm", "training.steps", "training.dataset",
                                   "training.mixed_precision_param", "parallelism.data_parallel_shard_degree",
                                   "parallelism.tensor_parallel_degree", "checkpoint.interval", "activation_checkpoint.mode",
                                   "activation_checkpoint.selective_ac_option", "compile.components"});
}

TEST(ConfigImport, MegatronLaunchBecomesTheScenarioItDescribes) {
  ImportOptions o;
  o.megatron = path("megatron/llama3-70b-pretrain.sh");
  o.gpu = "H100-SXM5-80GB";  // the nodes come from torchrun --nnodes 8 --nproc-per-node 8
  const ImportResult r = import_configs(o);
  const core::Json& s = r.scenario;
  EXPECT_EQ(s["cluster"]["nodes"], 8);
  EXPECT_EQ(s["cluster"]["gpus_per_node"], 8);
  EXPECT_EQ(s["parallelism"]["tensor"], 8);
  EXPECT_EQ(s["parallelism"]["pipeline"], 4);
  EXPECT_EQ(s["parallelism"]["data"], 2);  // 64 / (8 x 4)
  EXPECT_EQ(s["parallelism"]["sequence_parallel"], true);
  EXPECT_EQ(s["parallelism"]["zero_stage"], 1);  // --use-distributed-optimizer
  EXPECT_EQ(s["parallelism"]["recompute"], "selective");
  EXPECT_EQ(s["parallelism"]["tp_comm_overlap"], true);
  EXPECT_EQ(s["training"]["stack"], "megatron");
  EXPECT_EQ(s["training"]["attention"], "flash");
  EXPECT_EQ(s["training"]["tokens"], 1000.0 * 128 * 8192);  // --train-iters x global batch x sequence
  EXPECT_EQ(s["model"]["vocab"], 129024);                     // 128256 padded to a multiple of 128 x TP 8
  expect_published(r.parameters, 70.6, 0.05, "Megatron's Llama 3 70B (vocabulary padded)");
  const auto noted = [&](const std::string& field) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const ImportNote& n) { return n.field == field; });
  };
  EXPECT_TRUE(noted("--lr"));
  EXPECT_TRUE(noted("--save-interval"));
  EXPECT_TRUE(noted("vocab"));
  EXPECT_TRUE(noted("launcher"));
}

TEST(ConfigImport, MegatronBridgeOverridesWithAHuggingFaceShape) {
  ImportOptions o;
  o.hf_config = path("hf/qwen3-235b-a22b.json");
  o.megatron = path("megatron/qwen3-235b-bridge.args");
  o.gpu = "H100-SXM5-80GB";
  o.nodes = 32;
  const ImportResult r = import_configs(o);
  const core::Json& p = r.scenario["parallelism"];
  EXPECT_EQ(p["tensor"], 2);
  EXPECT_EQ(p["expert"], 32);
  EXPECT_EQ(p["expert_tensor"], 1);  // Megatron-core's parallel folding
  EXPECT_EQ(p["data"], 128);         // 256 / (TP 2 x PP 1 x CP 1): the experts fold over the data ranks
  EXPECT_EQ(p["moe_a2a_overlap"], true);
  EXPECT_EQ(r.scenario["training"]["precision"], "bf16");  // mixed_precision=bf16_mixed
  EXPECT_EQ(r.scenario["training"]["global_batch"], 2048);
  expect_published(r.parameters, 235, 0.5, "Qwen3-235B-A22B via Megatron-Bridge");
  expect_published(r.active_parameters, 22, 0.5, "Qwen3-235B-A22B active");
}

TEST(ConfigImport, DeepSpeedBatchArithmeticUsesTheWorldSize) {
  ImportOptions o;
  o.hf_config = path("hf/llama3-8b.json");
  o.deepspeed = path("deepspeed/zero3.json");
  o.gpu = "H100-SXM5-80GB";
  o.nodes = 8;  // 64 data-parallel GPUs: 512 = 4 x 2 x 64
  const ImportResult r = import_configs(o);
  EXPECT_EQ(r.scenario["training"]["global_batch"], 512);
  EXPECT_EQ(r.scenario["training"]["micro_batch"], 4);
  EXPECT_EQ(r.scenario["parallelism"]["zero_stage"], 3);
  EXPECT_EQ(r.scenario["parallelism"]["zero_impl"], "deepspeed");
  EXPECT_EQ(r.scenario["parallelism"]["recompute"], "full");
  EXPECT_EQ(r.scenario["training"]["stack"], "deepspeed");
  // The same config on 16 nodes cannot hold: 512 is not 4 x 2 x 128.
  o.nodes = 16;
  try {
    import_configs(o);
    ADD_FAILURE() << "accepted train_batch_size 512 on 128 GPUs";
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()), path("deepspeed/zero3.json") +
                                         ": /train_batch_size: 512 is not 4 x 2 x 128 data-parallel GPUs (DeepSpeed's train_batch_size = "
                                         "train_micro_batch_size_per_gpu x gradient_accumulation_steps x data-parallel GPUs)");
  }
}

TEST(ConfigImport, TwoSourcesThatDisagreeAreAnErrorNamingBoth) {
  ImportOptions o;
  o.hf_config = path("hf/llama3-8b.json");
  o.megatron_args = {"--hidden-size", "8192", "--micro-batch-size", "1", "--global-batch-size", "64"};
  o.gpu = "H100-SXM5-80GB";
  try {
    import_configs(o);
    ADD_FAILURE() << "accepted two hidden sizes";
  } catch (const core::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("command line: --hidden-size: 8192 contradicts " + path("hf/llama3-8b.json") + ": /hidden_size = 4096"), std::string::npos) << what;
  }
}

TEST(ConfigImport, WhatIsMissingIsNamedWithTheOptionsThatGiveIt) {
  ImportOptions o;
  o.hf_config = path("hf/llama3-8b.json");
  EXPECT_THROW(
      {
        try {
          import_configs(o);
        } catch (const core::InputError& e) {
          EXPECT_NE(std::string(e.what()).find("the cluster is unknown: give --base SCENARIO, --cluster-from SCENARIO, or --gpu NAME"), std::string::npos);
          throw;
        }
      },
      core::InputError);
  o.gpu = "H100-SXM5-80GB";
  try {
    import_configs(o);
    ADD_FAILURE();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/training/global_batch: unknown: give it with --set training.global_batch=N"), std::string::npos);
  }
  // With a batch the model-only import runs: data parallelism over the cluster's GPUs.
  o.overrides = {"training.global_batch=256"};
  const ImportResult r = import_configs(o);
  EXPECT_EQ(r.scenario["parallelism"]["data"], 8);
  const auto noted = [&](const std::string& field) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const ImportNote& n) { return n.field == field; });
  };
  EXPECT_TRUE(noted("training.sequence_length"));  // trainsim's default, said so
  EXPECT_TRUE(noted("model"));                     // the shape of the catalog's llama3-8b
}

TEST(ConfigImport, ABaseScenarioKeepsWhatTheImportsLeave) {
  ImportOptions o;
  o.base = (SOURCE / "scenarios/llama3-70b-h100-64.json").string();
  o.megatron_args = {"model.tensor_model_parallel_size=4", "model.pipeline_model_parallel_size=8"};
  const ImportResult r = import_configs(o);
  EXPECT_EQ(r.scenario["model"], "llama3-70b");  // Megatron-Bridge overrides give no shape
  EXPECT_EQ(r.scenario["parallelism"]["tensor"], 4);
  EXPECT_EQ(r.scenario["parallelism"]["pipeline"], 8);
  EXPECT_EQ(r.scenario["parallelism"]["data"], 2);  // 64 / (4 x 8)
  EXPECT_EQ(r.scenario["training"]["global_batch"], 128);  // the base's
  EXPECT_EQ(r.scenario["cluster"]["gpu"], "H100-SXM5-80GB");
}

TEST(ConfigImport, TheScenarioTextReadsBackWithItsNotesAsComments) {
  ImportOptions o;
  o.torchtitan = path("torchtitan/llama3_8b.toml");
  o.cluster_from = (SOURCE / "scenarios/llama3-70b-h100-64.json").string();
  const ImportResult r = import_configs(o);
  const std::string text = scenario_text(r);
  EXPECT_TRUE(text.starts_with("// Imported by `trainsim import` from:\n"));
  EXPECT_NE(text.find("optimizer.lr = 0.0003: no counterpart"), std::string::npos);
  const core::Json back = core::parse_json_text(text, "imported");
  EXPECT_EQ(back, r.scenario);
  const Scenario s = read_scenario(back, "imported");
  EXPECT_EQ(s.parallelism.zero_impl, models::ZeroImpl::FSDP2);
  EXPECT_EQ(s.parallelism.data, 64);
  EXPECT_TRUE(s.training.compile);
  EXPECT_EQ(models::resolved_stack(s.training, s.parallelism), core::Stack::TORCHTITAN);
}

TEST(ConfigImport, TorchtitanReshardPolicyGivesTheShardingStage) {
  // torchtitan's parallelize.py: "default" reshards after forward unless a pipeline runs.
  const auto stage = [](const std::string& parallelism) {
    const std::string file = testing::TempDir() + "/reshard.toml";
    std::ofstream(file) << "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n" << parallelism << "\n";
    return read_torchtitan_toml(file).scenario.at("parallelism").at("zero_stage").get<int>();
  };
  EXPECT_EQ(stage(""), 3);
  EXPECT_EQ(stage("pipeline_parallel_degree = 2"), 2);
  EXPECT_EQ(stage("pipeline_parallel_degree = 2\nfsdp_reshard_after_forward = \"always\""), 3);
  EXPECT_EQ(stage("fsdp_reshard_after_forward = \"never\""), 2);
  EXPECT_EQ(stage("data_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 4"), 0);  // DDP
}

// training.mixed_precision_reduce is FSDP2's reduce dtype: torchtitan's default float32 unless set,
// and nothing where the job is not sharded.
TEST(ConfigImport, TorchtitanReduceDtypeIsTheReduceDtype) {
  const auto reduce = [](const std::string& training) -> std::string {
    const std::string file = testing::TempDir() + "/reduce.toml";
    std::ofstream(file) << "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\n" << training << "\n";
    const ImportFragment f = read_torchtitan_toml(file);
    const core::Json& p = f.scenario.at("parallelism");
    return p.contains("reduce_dtype") ? p.at("reduce_dtype").get<std::string>() : "absent";
  };
  EXPECT_EQ(reduce(""), "fp32");
  EXPECT_EQ(reduce("mixed_precision_reduce = \"float32\""), "fp32");
  EXPECT_EQ(reduce("mixed_precision_reduce = \"bfloat16\""), "bf16");
  const std::string file = testing::TempDir() + "/ddp.toml";
  std::ofstream(file) << "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\ndata_parallel_shard_degree = 1\n"
                         "data_parallel_replicate_degree = 4\n[training]\nmixed_precision_reduce = \"bfloat16\"\n";
  EXPECT_FALSE(read_torchtitan_toml(file).scenario.at("parallelism").contains("reduce_dtype")) << "DDP: no framework reduce";
}

TEST(ConfigImport, TorchtitanReplicateDegreeIsHybridSharding) {
  // torchtitan HSDP: 2 replicas of shard groups of 32 on 64 GPUs; data_parallel_shard_degree -1
  // resolves to the 32 ranks left after the replicate degree.
  std::ifstream in(path("torchtitan/llama3_8b.toml"));
  std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string one = "data_parallel_replicate_degree = 1";
  ASSERT_NE(toml.find(one), std::string::npos);
  const size_t at = toml.find(one);
  const std::string file = testing::TempDir() + "/hsdp.toml";
  std::ofstream(file) << toml.substr(0, at) << "data_parallel_replicate_degree = 2" << toml.substr(at + one.size());
  ImportOptions o;
  o.torchtitan = file;
  o.cluster_from = (SOURCE / "scenarios/llama3-70b-h100-64.json").string();
  const ImportResult r = import_configs(o);
  const Scenario s = read_scenario(r.scenario, "imported");
  EXPECT_EQ(s.parallelism.data, 64);
  EXPECT_EQ(s.parallelism.shard_group, 32);
  EXPECT_TRUE(s.parallelism.hybrid_shard());
  EXPECT_EQ(s.parallelism.dense_shards(), 32);
  EXPECT_NE(scenario_text(r).find("HSDP: parallelism.shard_group = data / replicate"), std::string::npos);
}

TEST(ConfigImport, MoePatternsMapOntoTheScenarioRule) {
  const auto pattern = [](int layers, auto rule) {
    std::vector<bool> p;
    for (int i = 0; i < layers; ++i) p.push_back(rule(i));
    return p;
  };
  import_detail::MoePattern m = import_detail::fit_moe_pattern(pattern(61, [](int i) { return i >= 3; }));
  EXPECT_TRUE(m.exact);
  EXPECT_EQ(m.first_dense_layers, 3);
  EXPECT_EQ(m.moe_layer_freq, 1);
  m = import_detail::fit_moe_pattern(pattern(24, [](int i) { return i % 2 == 0; }));
  EXPECT_TRUE(m.exact);
  EXPECT_EQ(m.moe_layer_freq, 2);
  // Qwen2-MoE's decoder_sparse_step 2 puts the experts on odd layers: no rule gives it; the closest
  // keeps the count of MoE layers.
  m = import_detail::fit_moe_pattern(pattern(24, [](int i) { return (i + 1) % 2 == 0; }));
  EXPECT_FALSE(m.exact);
  EXPECT_EQ(m.first_dense_layers, 1);
  EXPECT_EQ(m.moe_layer_freq, 2);
}

// The bad-input corpus: each file read by its format's reader gives exactly NAME.expected.
TEST(ConfigImport, BadInputCorpusGivesEachCaseItsMessage) {
  const std::filesystem::path bad = SOURCE / "tests/data/bad/import";
  int cases = 0;
  for (const char* format : {"megatron", "torchtitan", "deepspeed", "hf"}) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(bad / format)) {
      if (e.path().extension() != ".expected") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& f : files) {
      SCOPED_TRACE(f.string());
      ++cases;
      std::ifstream in(std::filesystem::path(f).replace_extension(".expected"));
      ASSERT_TRUE(in) << "no .expected beside it";
      std::stringstream s;
      s << in.rdbuf();
      std::string expected = s.str();
      while (!expected.empty() && expected.back() == '\n') expected.pop_back();
      for (size_t at; (at = expected.find("{file}")) != std::string::npos;) expected.replace(at, 6, f.string());
      try {
        const std::string name = format;
        if (name == "megatron") read_megatron_file(f.string());
        else if (name == "torchtitan") read_torchtitan_toml(f.string());
        else if (name == "deepspeed") read_deepspeed_json(f.string());
        else read_hf_config(f.string());
        ADD_FAILURE() << "accepted";
      } catch (const core::InputError& e) {
        EXPECT_EQ(std::string(e.what()), expected);
      }
    }
  }
  EXPECT_GE(cases, 20);
}

}  // namespace
}  // namespace trainsim::plan
