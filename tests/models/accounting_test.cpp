#include "models/accounting.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trainsim::models {
namespace {

ModelSpec gpt(int layers, int64_t hidden, int heads, int64_t vocab) {
  ModelSpec m;
  m.name = "custom";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  return m;
}

void expect_relative(double got, double want, double tolerance = 1e-9) {
  EXPECT_NEAR(got / want, 1.0, tolerance) << "got " << got << ", want " << want;
}

struct FlopsCase {
  int64_t batch, seq;
  int layers;
  int64_t hidden;
  int heads;
  int64_t vocab;
};

TEST(IterationFlops, MatchKorthikantiEq7AndNarayananEq3) {
  const std::vector<FlopsCase> cases = {
      {1536, 2048, 96, 12288, 96, 51200},   // GPT-3 175B (Narayanan et al. 2021, Table 1)
      {2240, 2048, 105, 20480, 128, 51200},  // MT-NLG 530B
      {3072, 2048, 128, 25600, 160, 51200},  // 1T
      {8, 512, 4, 256, 8, 1000},
  };
  for (const FlopsCase& c : cases) {
    const ModelSpec m = gpt(c.layers, c.hidden, c.heads, c.vocab);
    TrainingConfig t;
    t.global_batch = c.batch;
    t.sequence_length = c.seq;
    const double B = static_cast<double>(c.batch), s = static_cast<double>(c.seq), l = c.layers,
                 h = static_cast<double>(c.hidden), V = static_cast<double>(c.vocab);
    ParallelismConfig p;
    p.tensor = 8;  // the totals do not depend on the split
    p.sequence_parallel = true;
    // Korthikanti et al. 2022, Eq. 7: model FLOPs without recomputation.
    const double eq7 = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    // Narayanan et al. 2021, Eq. 3: FLOPs executed with full activation recomputation.
    const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    const IterationFlops none = iteration_flops(m, t, p);
    expect_relative(none.model.value(), eq7);
    expect_relative(none.hardware.value(), eq7);
    p.recompute = Recompute::FULL;
    const IterationFlops full = iteration_flops(m, t, p);
    expect_relative(full.model.value(), eq7);
    expect_relative(full.hardware.value(), eq3);
    // An early-stopped re-run (recompute_early_stop) leaves out each layer's MLP down-projection:
    // 2·B·s·4h·h FLOPs per layer.
    p.recompute_early_stop = true;
    expect_relative(iteration_flops(m, t, p).hardware.value(), eq3 - 8 * B * s * h * h * l);
    p.recompute_early_stop = false;
    // Selective recompute re-executes only QKᵀ and ·V: 4·B·s²·h per layer (Korthikanti §5).
    p.recompute = Recompute::SELECTIVE;
    expect_relative(iteration_flops(m, t, p).hardware.value(), eq7 + 4 * B * s * s * h * l);
  }
}

// Per-op selective checkpointing (recompute "selective-op", torchtitan's selective_ac_option "op").
// A Llama-style layer (SwiGLU, GQA): h 1024, 16 heads of 64 (q 1024), 4 KV heads (kv 256), f 2816,
// flash attention, b·s = 2 x 512 = 1024 tokens per micro-batch, bf16. Its mm calls in forward order,
// wq wk wv wo w1 w3 w2: the 2nd, 4th and 6th re-run, i.e. wk (2·T·h·kv), wo (2·T·q·h) and w3
// (2·T·h·f) FLOPs again per layer, and every norm, activation and residual add; saved: the layer
// input T·h, wq T·q, wv T·kv, w1 T·f, w2 T·h, SDPA's output T·q (2 bytes each) and its fp32 statistics
// b·a·s·4.
// The Llama-style layer of the selective-op and eager tests: 4 layers, h 1024, 16 heads of 64, 4 KV
// heads, SwiGLU f 2816, V 32000, rotary; one micro-batch of 2 x 512 tokens, flash attention, bf16.
ModelSpec llama_style() {
  ModelSpec m = gpt(4, 1024, 16, 32000);
  m.kv_heads = 4;
  m.ffn_hidden = 2816;
  m.activation = Activation::SWIGLU;
  m.learned_positions = false;
  return m;
}

TrainingConfig one_micro_batch_of_1024_tokens() {
  TrainingConfig t;
  t.global_batch = 2;
  t.micro_batch = 2;
  t.sequence_length = 512;
  t.attention = Attention::FLASH;
  return t;
}

// Non-reentrant checkpointing's early stop (recompute_early_stop): walking back from the layer's end,
// the residual add saves nothing, the down-projection saves only its input (before its kernel), so a
// dense layer's re-run ends after its activation; an MoE layer's combine saves the experts' output,
// so only its residual add is left out.
TEST(FullRecompute, EarlyStopEndsTheReRunAtTheLastSavedTensor) {
  const ModelSpec dense = gpt(2, 256, 8, 1000);
  const TrainingConfig t = one_micro_batch_of_1024_tokens();
  const ParallelismConfig p;
  const std::vector<OpCost> ops = layer_ops(dense, t, p);
  std::vector<std::string> names;
  for (size_t i = 0; i < full_recompute_ops(ops, true); ++i) names.push_back(ops[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"ln1", "qkv", "attention", "proj", "attn_bda", "ln2", "mlp_up", "mlp_act"}));
  EXPECT_EQ(full_recompute_ops(ops, false), ops.size());

  ModelSpec moe = dense;
  moe.experts = 4;
  moe.top_k = 2;
  const std::vector<OpCost> moe_ops = layer_ops(moe, t, p, LayerKind::MOE);
  ASSERT_EQ(moe_ops.back().name, "mlp_bda");
  EXPECT_EQ(moe_ops[moe_ops.size() - 2].name, "expert_down");
  EXPECT_EQ(full_recompute_ops(moe_ops, true), moe_ops.size() - 1);
  EXPECT_EQ(full_recompute_ops({}, true), 0u);
}

TEST(SelectiveOp, RecomputesEverySecondMmAndTheNonMatmulOps) {
  ModelSpec m = llama_style();
  const TrainingConfig t = one_micro_batch_of_1024_tokens();
  ParallelismConfig p;
  p.recompute = Recompute::SELECTIVE_OP;
  const double T = 1024, h = 1024, q = 1024, kv = 256, f = 2816, L = 4;
  std::vector<OpCost> ops = layer_ops(m, t, p);
  mark_op_sac(ops, m, t, p);
  double rerun_gemm = 0;
  for (const OpCost& op : ops) {
    if (op.op_class == core::OpClass::GEMM) rerun_gemm += op.forward_flops.value() * op.op_sac_recompute;
    if (op.op_class == core::OpClass::NORM || op.op_class == core::OpClass::ELEMENTWISE) {
      EXPECT_EQ(op.op_sac_recompute, 1.0) << op.name;
    }
    if (op.op_class == core::OpClass::FLASH_ATTENTION) {
      EXPECT_EQ(op.op_sac_recompute, 0.0) << "SDPA is saved";
    }
  }
  const double oracle = 2 * T * h * kv + 2 * T * q * h + 2 * T * h * f;
  expect_relative(rerun_gemm, oracle);
  // The iteration's hardware FLOPs: those without recompute (FlashAttention's backward QKᵀ included)
  // plus that per layer (norms and the rest are memory-bound, no FLOPs).
  ParallelismConfig none;
  expect_relative(iteration_flops(m, t, p).hardware.value(), iteration_flops(m, t, none).hardware.value() + L * oracle);
  // Memory: what the policy saves, between full recompute (the input alone) and selective.
  const double saved = (T * h + T * q + T * kv + T * f + T * h + T * q) * 2 + 2 * 16 * 512 * 4.0;
  expect_relative(activation_bytes_per_layer(m, t, p).value(), saved);
  ParallelismConfig full, selective;
  full.recompute = Recompute::FULL;
  selective.recompute = Recompute::SELECTIVE;
  EXPECT_LT(activation_bytes_per_layer(m, t, full).value(), saved);
  EXPECT_GT(activation_bytes_per_layer(m, t, selective).value(), saved);
  EXPECT_GT(iteration_flops(m, t, full).hardware.value(), iteration_flops(m, t, p).hardware.value());

  // A GeLU MLP (wq wk wv wo up down): the down projection re-runs instead of w3.
  m.activation = Activation::GELU;
  m.ffn_hidden = 4096;
  std::vector<OpCost> gelu = layer_ops(m, t, p);
  mark_op_sac(gelu, m, t, p);
  for (const OpCost& op : gelu) {
    if (op.kind == OpKind::MLP_UP) {
      EXPECT_EQ(op.op_sac_recompute, 0.0);
    } else if (op.kind == OpKind::MLP_DOWN) {
      EXPECT_EQ(op.op_sac_recompute, 1.0);
    } else if (op.kind == OpKind::QKV) {
      expect_relative(op.op_sac_recompute, kv / (q + 2 * kv));
    }
  }
}

// The same layer under tensor parallelism 2 with sequence parallelism (T = 1024 tokens per rank):
// saved per rank are the layer input T·h/2, the column-parallel mm outputs wq T·q/2, wv T·kv/2, w1
// T·f/2, the row-parallel w2's partial output T·h, the two saved reduce-scatter outputs 2·T·h/2,
// SDPA's output T·q/2 (2 bytes each) and its statistics b·(a/2)·s·4. Under context parallelism 2
// (no tensor parallelism) every token term halves (512 tokens per rank), the statistics too.
TEST(SelectiveOp, SavesPerRankUnderTensorAndContextParallelism) {
  const ModelSpec m = llama_style();
  const TrainingConfig t = one_micro_batch_of_1024_tokens();
  ParallelismConfig p;
  p.recompute = Recompute::SELECTIVE_OP;
  p.tensor = 2;
  p.sequence_parallel = true;
  const double T = 1024, h = 1024, q = 1024, kv = 256, f = 2816;
  const double tp_saved = (T * h / 2 + T * q / 2 + T * kv / 2 + T * f / 2 + T * h + 2 * T * h / 2 + T * q / 2) * 2 +
                          2 * 8 * 512 * 4.0;
  expect_relative(activation_bytes_per_layer(m, t, p).value(), tp_saved);
  p.tensor = 1;
  p.sequence_parallel = false;
  p.context = 2;
  const double Tc = 512;
  const double cp_saved = (Tc * h + Tc * q + Tc * kv + Tc * f + Tc * h + Tc * q) * 2 + 2 * 16 * 256 * 4.0;
  expect_relative(activation_bytes_per_layer(m, t, p).value(), cp_saved);
}

// Eager PyTorch's op-by-op kernels (eager_elementwise): a Llama-style layer under training.stack
// torchtitan without torch.compile. b·s = 2 x 512 = 1024 tokens, h 1024, q 1024, kv 256, f 2816, bf16
// (e = 2). RMSNorm: (28 + 4e) = 36 bytes per element forward, (56 + 6e) = 68 backward; SwiGLU 5e / 9e
// per element of f; a rotary op of (q + kv)(16 + 2e) + 2qe + 2(kv + q)e = 1280·20 + 4096 + 5120 =
// 34,816 bytes per token each way. With torch.compile, under Megatron, or for a GELU model: the fused
// counts (norm 2e / 3e, SwiGLU 3e / 5e) and no rotary op.
TEST(EagerElementwise, LlamaBlockUnderEagerPyTorchMovesItsOpChainsBytes) {
  const ModelSpec m = llama_style();
  TrainingConfig t = one_micro_batch_of_1024_tokens();
  t.stack = core::Stack::TORCHTITAN;
  const ParallelismConfig p;
  const double T = 1024, h = 1024, f = 2816;
  auto find = [](const std::vector<OpCost>& ops, const std::string& name) -> const OpCost* {
    for (const OpCost& op : ops) {
      if (op.name == name) return &op;
    }
    return nullptr;
  };
  ASSERT_TRUE(eager_elementwise(m, t, p));
  const std::vector<OpCost> eager = layer_ops(m, t, p);
  ASSERT_NE(find(eager, "rotary"), nullptr);
  expect_relative(find(eager, "ln1")->forward_bytes.value(), 36 * T * h);
  expect_relative(find(eager, "ln1")->backward_bytes.value(), 68 * T * h);
  expect_relative(find(eager, "mlp_act")->forward_bytes.value(), 10 * T * f);
  expect_relative(find(eager, "mlp_act")->backward_bytes.value(), 18 * T * f);
  expect_relative(find(eager, "rotary")->forward_bytes.value(), 34816 * T);
  expect_relative(find(eager, "rotary")->backward_bytes.value(), 34816 * T);
  EXPECT_EQ(find(eager, "rotary")->forward_flops.value(), 0.0);

  for (const char* what : {"compile", "megatron", "gelu"}) {
    TrainingConfig fused_t = t;
    ModelSpec fused_m = m;
    if (std::string(what) == "compile") fused_t.compile = true;
    if (std::string(what) == "megatron") fused_t.stack = core::Stack::MEGATRON;
    if (std::string(what) == "gelu") fused_m.activation = Activation::GELU;
    EXPECT_FALSE(eager_elementwise(fused_m, fused_t, p)) << what;
    const std::vector<OpCost> fused = layer_ops(fused_m, fused_t, p);
    EXPECT_EQ(find(fused, "rotary"), nullptr) << what;
    expect_relative(find(fused, "ln1")->forward_bytes.value(), 4 * T * h);
    expect_relative(find(fused, "ln1")->backward_bytes.value(), 6 * T * h);
  }
  // The GEMM FLOPs, and so MFU's model FLOPs, do not depend on it.
  TrainingConfig compiled = t;
  compiled.compile = true;
  expect_relative(iteration_flops(m, t, p).model.value(), iteration_flops(m, compiled, p).model.value());
}

// The loss as each stack runs it, per micro-batch of T = b·s = 1024 tokens and V = 32000: a fused
// cross-entropy (Megatron; Composer with llm-foundry's fused_crossentropy; Megatron-DeepSpeed's GPT
// under deepspeed) keeps the fp32 softmax, 4·T·V bytes, and writes the gradient in place; PyTorch's
// F.cross_entropy on logits cast to fp32 (torchtitan, fsdp, ddp) also keeps the bf16 logits (2·T·V)
// and allocates two fp32 gradients during its backward (8·T·V).
TEST(Loss, EagerCrossEntropyKeepsTheLogitsAndAllocatesTwoFp32Gradients) {
  const ModelSpec m = gpt(4, 1024, 16, 32000);
  TrainingConfig t;
  t.global_batch = 2;
  t.micro_batch = 2;
  t.sequence_length = 512;
  const ParallelismConfig p;
  const double TV = 1024.0 * 32000;
  for (const core::Stack s : {core::Stack::MEGATRON, core::Stack::COMPOSER, core::Stack::DEEPSPEED}) {
    t.stack = s;
    EXPECT_FALSE(eager_loss(t, p));
    expect_relative(head_activation_bytes(m, t, p).value(), 4 * TV);
    EXPECT_EQ(head_backward_transient_bytes(m, t, p).value(), 0.0);
  }
  for (const core::Stack s : {core::Stack::TORCHTITAN, core::Stack::FSDP, core::Stack::DDP}) {
    t.stack = s;
    EXPECT_TRUE(eager_loss(t, p));
    expect_relative(head_activation_bytes(m, t, p).value(), 6 * TV);
    expect_relative(head_backward_transient_bytes(m, t, p).value(), 8 * TV);
  }
}

TEST(LayerOps, GemmFlopsFollowTwoMNK) {
  const ModelSpec m = *find_model("llama3-8b");
  TrainingConfig t;
  t.global_batch = 1;
  t.sequence_length = 4096;
  ParallelismConfig p;
  p.tensor = 4;
  p.context = 2;
  const std::vector<OpCost> ops = layer_ops(m, t, p);
  ASSERT_EQ(ops.size(), 10u);
  const double tokens = 4096.0 / 2, h = 4096, kv = 8 * 128, f = 14336;
  EXPECT_EQ(ops[1].name, "qkv");
  expect_relative(ops[1].forward_flops.value(), 2 * tokens * h * (h + 2 * kv) / 4);
  expect_relative(ops[1].backward_flops.value(), 2 * ops[1].forward_flops.value());
  EXPECT_EQ(ops[2].name, "attention");
  EXPECT_EQ(ops[2].op_class, core::OpClass::ATTENTION);
  expect_relative(ops[2].forward_flops.value(), 4 * tokens * 4096 * h / 4);
  EXPECT_EQ(ops[6].name, "mlp_up");
  expect_relative(ops[6].forward_flops.value(), 2 * tokens * h * 2 * f / 4);  // gate and up
  for (const OpCost& op : ops) {
    if (op.op_class != core::OpClass::GEMM && op.op_class != core::OpClass::ATTENTION) {
      EXPECT_EQ(op.forward_flops.value(), 0) << op.name << ": memory-bound ops carry bytes only";
      EXPECT_GT(op.forward_bytes.value(), 0) << op.name;
    }
  }
}

TEST(LayerOps, UnfusedAttentionTrafficIsDominatedByTheScores) {
  const ModelSpec m = *find_model("gpt3-175b");
  TrainingConfig t;
  t.global_batch = 1;
  ParallelismConfig p;
  p.tensor = 8;
  const OpCost attention = layer_ops(m, t, p)[2];
  // 12 heads per rank x 2048² scores: written by QKᵀ, read+written by softmax and dropout, read by
  // ·V (6 x 2 bytes) plus a 1-byte dropout mask.
  const double scores = 12.0 * 2048 * 2048;
  EXPECT_GT(attention.forward_bytes.value(), scores * 13);
  EXPECT_LT(attention.forward_bytes.value(), scores * 14);
}

TEST(LayerOps, FlashAttentionHasNoScoreTrafficAndRecomputesQKInBackward) {
  // FlashAttention-2 (Dao 2023, Algorithm 2): forward reads Q, K, V and writes O once; the backward
  // recomputes S = QKᵀ, 2·b·s²·h/t FLOPs that are hardware FLOPs but not model FLOPs.
  const ModelSpec m = *find_model("gpt3-175b");
  TrainingConfig t;
  t.global_batch = 1;
  ParallelismConfig p;
  p.tensor = 8;
  const OpCost unfused = layer_ops(m, t, p)[2];
  t.attention = Attention::FLASH;
  const OpCost flash = layer_ops(m, t, p)[2];
  EXPECT_EQ(flash.forward_flops.value(), unfused.forward_flops.value());
  EXPECT_EQ(flash.backward_flops.value(), unfused.backward_flops.value());
  EXPECT_DOUBLE_EQ(flash.backward_recompute_flops.value(), 2.0 * 2048 * 2048 * 12288 / 8);
  EXPECT_FALSE(flash.recomputed_selective) << "selective recompute has nothing left to recompute";
  const double qkvo = 4.0 * 2048 * 12288 / 8 * 2;  // Q, K, V, O in bf16
  EXPECT_LT(flash.forward_bytes.value(), 1.01 * qkvo);
  EXPECT_LT(flash.forward_bytes.value(), unfused.forward_bytes.value() / 4);

  // Model FLOPs keep Korthikanti's Eq. 7; hardware FLOPs add the recomputed QKᵀ of every layer.
  TrainingConfig whole = t;
  whole.global_batch = 8;
  TrainingConfig whole_unfused = whole;
  whole_unfused.attention = Attention::UNFUSED;
  const IterationFlops f = iteration_flops(m, whole, p);
  EXPECT_DOUBLE_EQ(f.model.value(), iteration_flops(m, whole_unfused, p).model.value());
  expect_relative(f.hardware.value() - f.model.value(), 2.0 * 8 * 2048 * 2048 * 12288 * 96);
}

class ActivationMemory : public ::testing::Test {
 protected:
  ActivationMemory() : m(gpt(96, 12288, 96, 51200)) {
    t.global_batch = 1;
    t.micro_batch = 1;
    t.sequence_length = 2048;
  }
  double bytes() const { return activation_bytes_per_layer(m, t, p).value(); }
  ModelSpec m;
  TrainingConfig t;
  ParallelismConfig p;
  // Korthikanti et al. 2022, Table 2, with s = 2048, b = 1, h = 12288, a = 96.
  const double s = 2048, b = 1, h = 12288, a = 96;
};

TEST_F(ActivationMemory, NoParallelism) { expect_relative(bytes(), s * b * h * (34 + 5 * a * s / h)); }

TEST_F(ActivationMemory, TensorParallel) {
  p.tensor = 8;
  expect_relative(bytes(), s * b * h * (10 + 24.0 / 8 + 5 * a * s / (h * 8)));
}

TEST_F(ActivationMemory, TensorAndSequenceParallel) {
  p.tensor = 8;
  p.sequence_parallel = true;
  expect_relative(bytes(), s * b * h / 8 * (34 + 5 * a * s / h));
}

TEST_F(ActivationMemory, SelectiveRecompute) {
  p.tensor = 8;
  p.recompute = Recompute::SELECTIVE;
  expect_relative(bytes(), s * b * h * (10 + 24.0 / 8));
  p.sequence_parallel = true;
  expect_relative(bytes(), s * b * h / 8 * 34);
}

TEST_F(ActivationMemory, FlashAttentionStoresNoScores) {
  // Korthikanti Table 2 without the 5·a·s/h term (as selective recompute), plus FlashAttention's fp32
  // softmax statistics: 4 bytes per head and token.
  p.tensor = 8;
  p.sequence_parallel = true;
  t.attention = Attention::FLASH;
  expect_relative(bytes(), s * b * h / 8 * 34 + 4 * a / 8 * s * b);
  p.recompute = Recompute::SELECTIVE;
  expect_relative(bytes(), s * b * h / 8 * 34 + 4 * a / 8 * s * b);
}

TEST_F(ActivationMemory, FullRecompute) {
  p.tensor = 8;
  p.recompute = Recompute::FULL;
  expect_relative(bytes(), 2 * s * b * h);
  p.sequence_parallel = true;
  expect_relative(bytes(), 2 * s * b * h / 8);
}

TEST_F(ActivationMemory, ScalesWithMicroBatchAndContext) {
  const double one = bytes();
  t.micro_batch = 4;
  expect_relative(bytes(), 4 * one);
  t.micro_batch = 1;
  p.context = 2;
  // Per-rank tokens halve; the score matrix is (s/2) x s, so it halves too.
  expect_relative(bytes(), one / 2);
}

TEST(Parameters, PerRankShardsAddUpToTheModel) {
  for (const char* name : {"gpt3-175b", "llama3-70b", "bloom-176b"}) {
    const ModelSpec& m = *find_model(name);
    TrainingConfig t;
    t.sequence_length = 2048;
    ParallelismConfig p;  // one GPU: everything local
    ParameterCount all = embedding_parameters(m, t, p);
    for (int l = 0; l < m.layers; ++l) all += layer_parameters(m, p);
    all += head_parameters(m, p);
    EXPECT_EQ(all.total(), static_cast<double>(m.parameter_count(2048))) << name;
  }
}

TEST(Parameters, TiedCopyOnTheLastStageOnlyWithPipeline) {
  const ModelSpec& m = *find_model("gpt3-175b");
  ParallelismConfig p;
  EXPECT_EQ(head_parameters(m, p).total(), 2.0 * 12288);
  p.pipeline = 8;
  p.tensor = 8;
  EXPECT_EQ(head_parameters(m, p).total(), 2.0 * 12288 + 51200.0 * 12288 / 8);
}

TEST(ModelStateMemory, MixedPrecisionAdamAndZeroSharding) {
  // Rajbhandari et al. 2020 (ZeRO), §3: mixed-precision Adam holds 2 + 2 + 12 bytes per parameter;
  // Megatron-LM keeps fp32 main gradients, so 2 + 4 + 12 here.
  ParameterCount local;
  local.dense = 1e9;
  ParallelismConfig p;
  p.data = 8;
  MemoryBreakdown m = model_state_memory(local, core::Precision::BF16, p);
  EXPECT_EQ(m.weights.value(), 2e9);
  EXPECT_EQ(m.gradients.value(), 4e9);
  EXPECT_EQ(m.optimizer_states.value(), 12e9);
  p.zero_stage = 1;
  m = model_state_memory(local, core::Precision::BF16, p);
  EXPECT_EQ(m.optimizer_states.value(), 12e9 / 8);
  EXPECT_EQ(m.gradients.value(), 4e9);
  p.zero_stage = 2;
  m = model_state_memory(local, core::Precision::BF16, p);
  EXPECT_EQ(m.gradients.value(), 4e9 / 8);
  EXPECT_EQ(m.weights.value(), 2e9);
  p.zero_stage = 3;
  m = model_state_memory(local, core::Precision::BF16, p);
  EXPECT_EQ(m.weights.value(), 2e9 / 8);
  m = model_state_memory(local, core::Precision::FP32, ParallelismConfig{});
  EXPECT_EQ(m.weights.value(), 4e9);
  EXPECT_EQ(m.optimizer_states.value(), 8e9);
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

const OpCost& op_named(const std::vector<OpCost>& ops, const std::string& name) {
  for (const OpCost& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << name;
  return ops.front();
}

// FP8 as Transformer Engine runs it (accounting.hpp, gemm_precision and FP8_CAST_BYTES), on a GPT
// layer with h = 1024, 16 heads, ffn 4096, b = 2, s = 512, TP 4 with sequence parallelism: 1024 tokens.
TEST(Fp8, LinearLayersRunInFp8AttentionAndOutputLayerStayBf16AndStandAloneCastsAreCounted) {
  const ModelSpec m = gpt(2, 1024, 16, 32000);
  TrainingConfig t;
  t.sequence_length = 512;
  t.micro_batch = 2;
  t.global_batch = 8;
  t.attention = Attention::FLASH;
  ParallelismConfig p;
  p.tensor = 4;
  p.sequence_parallel = true;
  t.precision = core::Precision::BF16;
  const std::vector<OpCost> bf16 = layer_ops(m, t, p);
  t.precision = core::Precision::FP8;
  const std::vector<OpCost> fp8 = layer_ops(m, t, p);

  for (const char* name : {"qkv", "proj", "mlp_up", "mlp_down"}) {
    EXPECT_EQ(op_named(fp8, name).precision, core::Precision::FP8) << name;
    EXPECT_EQ(op_named(bf16, name).precision, core::Precision::BF16) << name;
    // The same FLOPs; operands read at 1 byte instead of 2.
    EXPECT_EQ(op_named(fp8, name).forward_flops.value(), op_named(bf16, name).forward_flops.value()) << name;
    EXPECT_LT(op_named(fp8, name).forward_bytes.value(), op_named(bf16, name).forward_bytes.value()) << name;
  }
  EXPECT_EQ(op_named(fp8, "attention").precision, core::Precision::BF16);
  EXPECT_EQ(op_named(fp8, "attention").op_class, core::OpClass::FLASH_ATTENTION);
  EXPECT_EQ(head_ops(m, t, p)[1].precision, core::Precision::BF16);  // logits
  EXPECT_EQ(head_ops(m, t, p)[1].name, "logits");

  // Shapes: QKV is [1024 tokens x 1024] · [1024 x 3·1024/4 = 768]: m = 1024, n = 768, k = 1024.
  const core::GemmShape qkv = op_named(fp8, "qkv").gemm;
  EXPECT_EQ(qkv.m, 1024.0f);
  EXPECT_EQ(qkv.n, 768.0f);
  EXPECT_EQ(qkv.k, 1024.0f);
  EXPECT_EQ(qkv.count, 1u);

  // Casts, 4 bytes per element: the projection's input 1024 x 256 in forward (attn_bda); in backward
  // its output gradient 1024 x 1024 (attn_bda), MLP-down's 1024 x 1024 (mlp_bda), QKV's 1024 x 768 (ln1).
  auto extra = [&](const char* name, bool backward) {
    const OpCost& a = op_named(fp8, name);
    const OpCost& b = op_named(bf16, name);
    return backward ? a.backward_bytes.value() - b.backward_bytes.value() : a.forward_bytes.value() - b.forward_bytes.value();
  };
  EXPECT_DOUBLE_EQ(extra("attn_bda", false), 1024.0 * 256 * 4);
  EXPECT_DOUBLE_EQ(extra("attn_bda", true), 1024.0 * 1024 * 4);
  EXPECT_DOUBLE_EQ(extra("mlp_bda", true), 1024.0 * 1024 * 4);
  EXPECT_DOUBLE_EQ(extra("ln1", true), 1024.0 * 768 * 4);
  EXPECT_DOUBLE_EQ(extra("ln2", true), 0.0);
}

}  // namespace
}  // namespace trainsim::models
