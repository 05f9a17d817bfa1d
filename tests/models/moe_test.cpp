// Model-spec additions real models need (head_dim, shared experts, dense and MoE layers mixed) and
// Megatron-core's MoE parallel folding (parallelism.expert_tensor), held to hand-computed oracles.

#include <gtest/gtest.h>

#include <functional>

#include "models/accounting.hpp"
#include "models/model_spec.hpp"
#include "models/strategy.hpp"
#include "models/workload_builder.hpp"

namespace trainsim::models {
namespace {

using core::Axis;
using core::CollectiveOp;

// Qwen3-235B-A22B, from its model card / config.json (Qwen team 2025): 94 layers, hidden 4096,
// 64 query heads and 4 key/value heads of head_dim 128 (64 x 128 = 8192 != 4096), 128 experts of
// moe_intermediate_size 1536, 8 per token, vocabulary 151936, untied embeddings, RMSNorm, SwiGLU.
// Its q/k norms (2 x 128 weights per layer) are not modelled.
ModelSpec qwen3_235b() {
  ModelSpec m;
  m.name = "qwen3-235b-a22b";
  m.layers = 94;
  m.hidden = 4096;
  m.heads = 64;
  m.kv_heads = 4;
  m.head_dim_given = 128;
  m.ffn_hidden = 1536;
  m.experts = 128;
  m.top_k = 8;
  m.vocab = 151936;
  m.activation = Activation::SWIGLU;
  m.tied_embeddings = false;
  m.learned_positions = false;
  return m;
}

// A dense Qwen3 (config.json of Qwen3-8B / Qwen3-32B).
ModelSpec qwen3_dense(int layers, int64_t hidden, int heads, int64_t ffn) {
  ModelSpec m = qwen3_235b();
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.ffn_hidden = ffn;
  m.experts = 1;
  m.top_k = 1;
  return m;
}

// A small DeepSeek-style model: 6 layers of which the first 3 are dense (first_k_dense_replace),
// h 64, 4 heads, 8 routed experts of inner size 16 (2 per token), one shared expert, dense MLP 128.
ModelSpec deepseek_style() {
  ModelSpec m;
  m.name = "small-deepseek";
  m.layers = 6;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 4;
  m.ffn_hidden = 16;
  m.experts = 8;
  m.top_k = 2;
  m.shared_experts = 1;
  m.first_dense_layers = 3;
  m.dense_ffn_given = 128;
  m.vocab = 1000;
  m.activation = Activation::SWIGLU;
  m.tied_embeddings = false;
  m.learned_positions = false;
  return m;
}

// The validation case's strategy (megatron-bridge-26.04-qwen3_235b_a22b-h100-256gpu-fp8.json):
// TP2 PP8 DP16, EP32 folded over TP x DP with expert_tensor 1.
ParallelismConfig qwen3_folded() {
  ParallelismConfig p;
  p.tensor = 2;
  p.pipeline = 8;
  p.data = 16;
  p.expert = 32;
  p.expert_tensor = 1;
  p.sequence_parallel = true;
  return p;
}

// Per layer: attention h·(a·d + 2·k·d) + a·d·h = 4096·(8192 + 1024) + 8192·4096 = 71,303,168;
// norms 2·4096 = 8,192; router 4096·128 = 524,288; one expert 3·4096·1536 = 18,874,368.
// Total: 94·(71,303,168 + 8,192 + 524,288 + 128·18,874,368) + 2·151936·4096 + 4096
//      = 94·2,487,754,752 + 1,244,659,712 + 4,096 = 235,093,610,496 (the card's "235B").
// Active: 94·(71,303,168 + 8,192 + 524,288 + 8·18,874,368) + 1,244,663,808 = 22,190,739,456 ("A22B").
TEST(ModelSpecMoe, Qwen3_235bTotalAndActiveParameters) {
  const ModelSpec m = qwen3_235b();
  EXPECT_EQ(m.parameter_count(4096), int64_t{235'093'610'496});
  EXPECT_EQ(m.active_parameter_count(4096), int64_t{22'190'739'456});
}

// Qwen3-8B (36 layers, h 4096, 32 heads of 128, 8 KV heads, ffn 12288): per layer
// 4096·(4096 + 2048) + 4096·4096 + 3·4096·12288 + 8192 = 192,946,176; x 36 + 2·151936·4096 + 4096
// = 8,190,726,144 (the card's "8.2B"). Qwen3-32B (64 layers, h 5120, 64 heads of 128 = 8192 wide,
// ffn 25600): 5120·(8192 + 2048) + 8192·5120 + 3·5120·25600 + 10240 = 487,598,080; x 64
// + 2·151936·5120 + 5120 = 32,762,106,880 ("32.8B"). The latter only holds with Q 8192 wide.
TEST(ModelSpecMoe, HeadDimSetsTheAttentionWidth) {
  EXPECT_EQ(qwen3_dense(36, 4096, 32, 12288).parameter_count(4096), int64_t{8'190'726'144});
  const ModelSpec q32 = qwen3_dense(64, 5120, 64, 25600);
  EXPECT_EQ(q32.attention_width(), 8192);
  EXPECT_EQ(q32.parameter_count(4096), int64_t{32'762'106'880});
  EXPECT_EQ(q32.active_parameter_count(4096), q32.parameter_count(4096));
  // Without head_dim, d = h/a: the attention is h wide.
  ModelSpec derived = q32;
  derived.head_dim_given = 0;
  EXPECT_EQ(derived.head_dim(), 80);
  EXPECT_EQ(derived.attention_width(), 5120);
}

// Attention products and projections use a·d: QKV 2·b·s·h·(a·d + 2·k·d), attention 4·b·s²·a·d,
// projection 2·b·s·a·d·h (one GPU, b = 1, s = 4096).
TEST(ModelSpecMoe, HeadDimEntersTheAttentionFlops) {
  const ModelSpec m = qwen3_235b();
  TrainingConfig t;
  t.sequence_length = 4096;
  const std::vector<OpCost> ops = layer_ops(m, t, ParallelismConfig{});
  auto forward = [&](const std::string& name) {
    for (const OpCost& op : ops) {
      if (op.name == name) return op.forward_flops.value();
    }
    ADD_FAILURE() << name;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(forward("qkv"), 2.0 * 4096 * 4096 * (8192 + 1024));
  EXPECT_DOUBLE_EQ(forward("attention"), 4.0 * 4096 * 4096 * 8192);
  EXPECT_DOUBLE_EQ(forward("proj"), 2.0 * 4096 * 8192 * 4096);
}

// Attention h·(a·d + 2·k·d) + a·d·h = 64·192 + 64·64 = 16,384; norms 2·64 = 128.
// Dense layer: 16,512 + 3·64·128 = 41,088. MoE layer: 16,512 + 8·3·64·16 + 64·8 (router) + 3·64·16
// (shared) = 44,672. Layers 0-2 dense, 3-5 MoE: 3·41,088 + 3·44,672 + 2·1000·64 + 64 = 385,344.
// Active: MoE layer with 2 routed experts: 16,512 + 2·3,072 + 512 + 3,072 = 26,240;
// 3·41,088 + 3·26,240 + 128,064 = 330,048.
TEST(ModelSpecMoe, FirstDenseLayersAndSharedExpertsCountRight) {
  const ModelSpec m = deepseek_style();
  EXPECT_EQ(m.layer_kind(2), LayerKind::DENSE);
  EXPECT_EQ(m.layer_kind(3), LayerKind::MOE);
  EXPECT_EQ(m.moe_layer_count(), 3);
  EXPECT_EQ(m.parameter_count(128), 385'344);
  EXPECT_EQ(m.active_parameter_count(128), 330'048);
  // The per-rank accounting on one GPU sums to the same total.
  const ParallelismConfig one;
  TrainingConfig t;
  double sum = embedding_parameters(m, t, one).total() + head_parameters(m, one).total();
  for (int l = 0; l < m.layers; ++l) sum += layer_parameters(m, one, m.layer_kind(l)).total();
  EXPECT_DOUBLE_EQ(sum, 385'344.0);
}

// Megatron's --moe-layer-freq k: layers 0, k, 2k, ... are MoE.
TEST(ModelSpecMoe, MoeLayerFrequency) {
  ModelSpec m = deepseek_style();
  m.first_dense_layers = 0;
  m.moe_layer_freq = 2;
  std::vector<LayerKind> kinds;
  for (int l = 0; l < m.layers; ++l) kinds.push_back(m.layer_kind(l));
  EXPECT_EQ(kinds, (std::vector<LayerKind>{LayerKind::MOE, LayerKind::DENSE, LayerKind::MOE, LayerKind::DENSE,
                                           LayerKind::MOE, LayerKind::DENSE}));
  // 3·41,088 + 3·44,672 + 128,064, as with first_dense_layers 3.
  EXPECT_EQ(m.parameter_count(128), 385'344);
}

std::vector<std::string> problems_of(const core::Json& model) {
  core::Diagnostics diag;
  ModelSpec::from_json(model, "s.json", "/model", diag);
  std::vector<std::string> out;
  for (const auto& p : diag.problems()) out.push_back(p.to_string());
  return out;
}

TEST(ModelSpecMoe, JsonKeysRoundTripAndAreChecked) {
  const core::Json qwen = {{"family", "transformer"}, {"layers", 94},   {"hidden", 4096},   {"heads", 64},
                           {"kv_heads", 4},           {"head_dim", 128}, {"ffn_hidden", 1536}, {"experts", 128},
                           {"top_k", 8},              {"vocab", 151936}, {"activation", "swiglu"}};
  core::Diagnostics diag;
  const ModelSpec m = ModelSpec::from_json(qwen, "s.json", "/model", diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(m.attention_width(), 8192);
  const core::Json j = m.to_json();
  EXPECT_EQ(j["head_dim"], 128);
  EXPECT_EQ(j["moe_layer_freq"], 1);
  EXPECT_EQ(j["dense_ffn_hidden"], 1536);
  const ModelSpec back = ModelSpec::from_json(j, "s.json", "/model", diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(back.to_json(), j);

  // heads need not divide hidden when head_dim is given; they must without it.
  core::Json odd = qwen;
  odd["hidden"] = 4000;
  EXPECT_TRUE(problems_of(odd).empty());
  odd.erase("head_dim");
  EXPECT_EQ(problems_of(odd), (std::vector<std::string>{
                                  "s.json: /model/heads: heads (64) must divide hidden (4000) unless head_dim is given"}));

  core::Json dense = {{"family", "transformer"}, {"layers", 4}, {"hidden", 64}, {"heads", 4}, {"vocab", 100},
                      {"shared_experts", 1}, {"moe_layer_freq", 2}, {"first_dense_layers", 1}, {"dense_ffn_hidden", 32},
                      {"head_dim", 0}};
  EXPECT_EQ(problems_of(dense),
            (std::vector<std::string>{
                "s.json: /model/head_dim: expected an integer in [1, 1099511627776], found 0",
                "s.json: /model/shared_experts: shared_experts applies to MoE models (experts > 1) only, found 1 with "
                "experts 1",
                "s.json: /model/moe_layer_freq: moe_layer_freq applies to MoE models (experts > 1) only, found 2 with "
                "experts 1",
                "s.json: /model/first_dense_layers: first_dense_layers applies to MoE models (experts > 1) only, found 1 "
                "with experts 1",
                "s.json: /model/dense_ffn_hidden: dense_ffn_hidden applies to MoE models (experts > 1) only, found 32 "
                "with experts 1"}));
  core::Json moe = {{"family", "transformer"}, {"layers", 4}, {"hidden", 64}, {"heads", 4}, {"vocab", 100},
                    {"experts", 4}, {"first_dense_layers", 4}, {"shared_expert_ffn_hidden", 32}};
  EXPECT_EQ(problems_of(moe),
            (std::vector<std::string>{
                "s.json: /model/shared_expert_ffn_hidden: shared_expert_ffn_hidden (32) needs shared_experts >= 1, "
                "found shared_experts 0",
                "s.json: /model/first_dense_layers: first_dense_layers 4 and moe_layer_freq 1 leave no MoE layer among "
                "the 4 layers"}));
}

// The validation case: world = TP x CP x DP x PP = 2 x 1 x 16 x 8 = 256 (not x EP 32). The expert
// group (32) spans the stage's 2 tensor ranks and k = 32 / 2 = 16 data replicas; expert-data =
// 2·1·16 / (32·1) = 1. Layout axes {tensor 2, context 1, expert 16, data 1, pipeline 8}.
TEST(ParallelFolding, Qwen3CaseLayoutAndGroupSizes) {
  const ParallelismConfig p = qwen3_folded();
  EXPECT_EQ(p.world_size(), 256);
  EXPECT_EQ(p.layout_sizes(), (std::array<int, core::AXIS_COUNT>{2, 1, 16, 1, 8}));
  EXPECT_EQ(p.dense_replicas(), 16);
  EXPECT_EQ(p.expert_replicas(), 1);
  TrainingConfig t;
  t.sequence_length = 4096;
  t.global_batch = 8192;
  EXPECT_EQ(p.sequences_per_step(t), 16);
  EXPECT_EQ(micro_batch_count(t, p), 512);
  core::Diagnostics diag;
  check_strategy(qwen3_235b(), t, p, 256, "q.json", diag);
  EXPECT_TRUE(diag.empty()) << diag.problems()[0].to_string();

  // The same sizes without expert_tensor read as 2 x 8 x 16 x 32 GPUs.
  ParallelismConfig unfolded = p;
  unfolded.expert_tensor = 0;
  EXPECT_EQ(unfolded.world_size(), 8192);
}

// One MoE layer on one rank of the folded layout: attention split over t = 2 and the router
// replicated, 4096·9216/2 + 8192·4096/2 + 2·4096 + 4096·128 = 36,184,064 dense parameters; the
// E/EP = 128/32 = 4 local experts whole (expert_tensor 1): 4·18,874,368 = 75,497,472.
TEST(ParallelFolding, Qwen3PerRankParameters) {
  const ParameterCount c = layer_parameters(qwen3_235b(), qwen3_folded(), LayerKind::MOE);
  EXPECT_DOUBLE_EQ(c.dense, 36'184'064.0);
  EXPECT_DOUBLE_EQ(c.expert, 75'497'472.0);
  // The default reading splits each local expert over the tensor group instead.
  ParallelismConfig unfolded = qwen3_folded();
  unfolded.expert_tensor = 0;
  EXPECT_DOUBLE_EQ(layer_parameters(qwen3_235b(), unfolded, LayerKind::MOE).expert, 75'497'472.0 / 2);
}

double flops_of(const std::vector<OpCost>& ops, const std::string& name) {
  for (const OpCost& op : ops) {
    if (op.name == name) return op.forward_flops.value() + op.backward_flops.value();
  }
  ADD_FAILURE() << name;
  return 0;
}

// Folded (expert_tensor 1): rows = (s/t)·top_k = 2048·8 = 16384, full 4096 x 3072 (gate and up)
// weights: 2·16384·4096·3072 forward. Default reading: rows = s·top_k = 32768, 3072/2 columns:
// the same product. x 3 with the backward.
TEST(ParallelFolding, ExpertGemmFlopsAreTheSameInBothReadings) {
  TrainingConfig t;
  t.sequence_length = 4096;
  const ParallelismConfig folded = qwen3_folded();
  ParallelismConfig unfolded = folded;
  unfolded.expert_tensor = 0;
  const auto f = layer_ops(qwen3_235b(), t, folded, LayerKind::MOE);
  const auto u = layer_ops(qwen3_235b(), t, unfolded, LayerKind::MOE);
  EXPECT_DOUBLE_EQ(flops_of(f, "expert_up"), 3 * 2.0 * 16384 * 4096 * 3072);
  EXPECT_DOUBLE_EQ(flops_of(u, "expert_up"), flops_of(f, "expert_up"));
  EXPECT_DOUBLE_EQ(flops_of(f, "expert_down"), 3 * 2.0 * 16384 * 1536 * 4096);
  EXPECT_DOUBLE_EQ(flops_of(u, "expert_down"), flops_of(f, "expert_down"));
  // The router runs on the rank's own 2048 tokens in both.
  EXPECT_DOUBLE_EQ(flops_of(f, "router"), 3 * 2.0 * 2048 * 4096 * 128);
}

TEST(ParallelFolding, UnsupportedCombinationsAreInputErrors) {
  const ModelSpec m = qwen3_235b();
  TrainingConfig t;
  t.sequence_length = 4096;
  t.global_batch = 8192;
  auto problems = [&](const ParallelismConfig& p) {
    core::Diagnostics diag;
    check_strategy(m, t, p, 256, "q.json", diag);
    std::vector<std::string> out;
    for (const auto& d : diag.problems()) out.push_back(d.to_string());
    return out;
  };
  ParallelismConfig p = qwen3_folded();
  p.tensor = 4;
  p.data = 8;
  p.expert_tensor = 2;
  EXPECT_EQ(problems(p), (std::vector<std::string>{
                             "q.json: /parallelism/expert_tensor: expert_tensor 2 is not supported with tensor 4 "
                             "(supported: expert_tensor 1 with expert = tensor x context x k (here 4 x k) and k "
                             "dividing data (8), or expert_tensor = tensor (4) with expert dividing data)"}));
  p = qwen3_folded();
  p.expert = 64;  // 64 / 2 = 32 does not divide 16
  EXPECT_EQ(problems(p), (std::vector<std::string>{
                             "q.json: /parallelism/expert: expert 64 does not fold over tensor x context x data = 2 x "
                             "1 x 16 with expert_tensor 1 (supported: expert_tensor 1 with expert = tensor x context "
                             "x k (here 2 x k) and k dividing data (16), or expert_tensor = tensor (2) with expert "
                             "dividing data)"}));
  p = qwen3_folded();
  p.data = 8;
  p.expert = 16;
  EXPECT_EQ(problems(p), (std::vector<std::string>{
                             "q.json: /parallelism: tensor x pipeline x data x context = 2 x 8 x 8 x 1 = 128 must "
                             "equal the cluster's GPU count (256) (with expert_tensor, expert parallelism folds over "
                             "these ranks)"}));
}

size_t count_tasks(const core::Program& p, const std::function<bool(const core::Task&)>& pred) {
  size_t n = 0;
  for (const core::Task& t : p.tasks) n += pred(t) ? 1 : 0;
  return n;
}

// A small folded MoE job: TP2 DP4 PP1, EP4 with expert_tensor 1 (k = 2 data replicas per expert
// group), the DeepSeek-style model (3 dense, 3 MoE layers), s 128, 2 micro-batches.
TEST(ParallelFolding, WorkloadGroupsCollectivesAndLayerKinds) {
  ModelSpec m = deepseek_style();
  TrainingConfig t;
  t.sequence_length = 128;
  ParallelismConfig p;
  p.tensor = 2;
  p.data = 4;
  p.expert = 4;
  p.expert_tensor = 1;
  p.sequence_parallel = true;
  t.global_batch = 2 * p.sequences_per_step(t);
  core::Diagnostics diag;
  check_strategy(m, t, p, 8, "test", diag);
  ASSERT_TRUE(diag.empty()) << diag.problems()[0].to_string();
  const BuiltWorkload w = build_workload(m, t, p);
  const core::Workload& wl = w.workload;
  EXPECT_EQ(wl.layout.sizes(), (std::array<int, core::AXIS_COUNT>{2, 1, 2, 2, 1}));
  auto group = [&](const std::string& name) -> const core::GroupKind& {
    for (const core::GroupKind& g : wl.groups) {
      if (g.name == name) return g;
    }
    throw std::runtime_error(name);
  };
  // Expert group: tensor x k = 2 x 2 adjacent ranks; dense data: 4; expert-data: 4 x 2 / (4 x 1) = 2.
  EXPECT_EQ(group("expert").ranks_of(wl.layout, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(group("data").ranks_of(wl.layout, 0), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(group("expert-data").ranks_of(wl.layout, 0), (std::vector<int>{0, 4}));

  const core::Program& prog = wl.programs[0];
  auto named = [&](const std::string& name) {
    return [&wl, name](const core::Task& task) { return wl.names[task.name] == name; };
  };
  // 3 MoE layers x 2 micro-batches x (forward + backward) expert GEMMs; the dense layers' MLPs.
  EXPECT_EQ(count_tasks(prog, named("expert_up")), 12u);
  EXPECT_EQ(count_tasks(prog, named("shared_up")), 12u);
  EXPECT_EQ(count_tasks(prog, named("mlp_up")), 12u);
  // All-to-alls: 2 forward + 2 backward per MoE layer per micro-batch, each carrying the rank's own
  // 128/2 = 64 tokens x top_k 2 x h 64 x 2 bytes = 16,384 bytes. No tensor collective around the
  // expert GEMMs: the tensor collectives are those of attention, the dense MLP and shared expert,
  // the embedding and logits.
  auto a2a = [&](const core::Task& task) {
    return task.kind == core::TaskKind::COLLECTIVE && task.collective == CollectiveOp::ALL_TO_ALL;
  };
  EXPECT_EQ(count_tasks(prog, a2a), 24u);
  for (const core::Task& task : prog.tasks) {
    if (a2a(task)) {
      EXPECT_DOUBLE_EQ(task.bytes, 16384.0);
    }
  }
  for (const core::Task& task : prog.tasks) {
    if (task.kind != core::TaskKind::COLLECTIVE || a2a(task)) continue;
    EXPECT_EQ(wl.names[task.name].rfind("expert_", 0), std::string::npos) << wl.names[task.name];
  }
}

// Folding with expert_tensor = tensor is the default reading with data / expert replicas: TP2 DP4
// EP2 folded and TP2 DP2 EP2 unfolded are both laid out {2, 1, 2, 2, 1} on 8 GPUs, consume 4
// sequences per step, and must build the same programs and groups.
TEST(ParallelFolding, ExpertTensorEqualToTensorIsTheDefaultReading) {
  const ModelSpec m = deepseek_style();
  TrainingConfig t;
  t.sequence_length = 128;
  t.global_batch = 8;
  ParallelismConfig folded;
  folded.tensor = 2;
  folded.data = 4;
  folded.expert = 2;
  folded.expert_tensor = 2;
  folded.sequence_parallel = true;
  ParallelismConfig unfolded = folded;
  unfolded.data = 2;
  unfolded.expert_tensor = 0;
  for (const ParallelismConfig& p : {folded, unfolded}) {
    core::Diagnostics diag;
    check_strategy(m, t, p, 8, "test", diag);
    ASSERT_TRUE(diag.empty()) << diag.problems()[0].to_string();
  }
  EXPECT_EQ(folded.dense_replicas(), unfolded.dense_replicas());
  EXPECT_EQ(folded.expert_replicas(), 2);
  EXPECT_EQ(unfolded.expert_replicas(), 2);
  const BuiltWorkload a = build_workload(m, t, folded);
  const BuiltWorkload b = build_workload(m, t, unfolded);
  EXPECT_EQ(a.workload.layout.sizes(), b.workload.layout.sizes());
  EXPECT_EQ(a.micro_batches, b.micro_batches);
  ASSERT_EQ(a.workload.groups.size(), b.workload.groups.size());
  for (size_t g = 0; g < a.workload.groups.size(); ++g) {
    EXPECT_EQ(a.workload.groups[g].ranks_of(a.workload.layout, 0), b.workload.groups[g].ranks_of(b.workload.layout, 0));
  }
  const core::Program& pa = a.workload.programs[0];
  const core::Program& pb = b.workload.programs[0];
  ASSERT_EQ(pa.tasks.size(), pb.tasks.size());
  for (size_t i = 0; i < pa.tasks.size(); ++i) {
    EXPECT_EQ(pa.tasks[i].flops, pb.tasks[i].flops) << i;
    EXPECT_EQ(pa.tasks[i].bytes, pb.tasks[i].bytes) << i;
  }
  EXPECT_EQ(pa.static_memory, pb.static_memory);
}

}  // namespace
}  // namespace trainsim::models
