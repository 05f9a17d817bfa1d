// optimizations.pruning in the workload builder: sparse storage (CSR, bitmask, 2:4, BSR) of the
// weights, gradients and optimizer states, what the data-parallel collectives send, the optimizer
// step on the kept values, and the GEMM tasks' sparse kernels. Oracles are computed by hand for a
// tiny model (below) and written out in the comments.

#include "models/pruning.hpp"

#include <gtest/gtest.h>

#include "models/workload_builder.hpp"
#include "tests/models/tiny_models.hpp"

namespace trainsim::models {
namespace {

using core::Task;
using core::TaskKind;

// A tiny Llama-style model on one GPU, bf16, no ZeRO:
//   2 layers, h 64, 4 heads (kv 4, head_dim 16), SwiGLU f 128, V 256, tied embeddings, rotary.
// Linear weights of one layer ([out, in]): QKV 192 x 64 = 12288, projection 64 x 64 = 4096, gate+up
// 256 x 64 = 16384, down 64 x 128 = 8192: N = 40960 per layer, 81920 pruned in all; rows 192 + 64 +
// 256 + 64, so (R + 1) row pointers 193 + 65 + 257 + 65 = 580 per layer.
// Not pruned: 2 RMSNorms per layer (2 x 64), the embedding 256 x 64 = 16384, the final norm 64:
// 256 + 16384 + 64 = 16704. Total 98624 parameters.
constexpr double PRUNED = 81920;
constexpr double UNPRUNED = 16704;
constexpr double TOTAL = PRUNED + UNPRUNED;
constexpr double ROW_POINTERS = 2 * 580;

using test_support::tiny_llama;

struct Job {
  Job() {
    training.sequence_length = 64;
    training.global_batch = 2;
  }
  ModelSpec model = tiny_llama();
  TrainingConfig training;
  ParallelismConfig par;
  PruningConfig pruning;

  BuiltWorkload build() {
    training.global_batch = 2 * par.sequences_per_step(training);
    core::Diagnostics diag;
    check_strategy(model, training, par, par.world_size(), "test", diag);
    EXPECT_TRUE(diag.empty());
    return build_workload(model, training, par, pruning);
  }
};

PruningConfig magnitude(SparseFormat format, double sparsity = 0.5) {
  PruningConfig c;
  c.method = PruningMethod::MAGNITUDE;
  c.sparsity = sparsity;
  c.format = format;
  return c;
}

double data_bytes(const core::Program& p) {
  double b = 0;
  for (const Task& t : p.tasks) {
    if (t.kind == TaskKind::COLLECTIVE && t.stream == core::Stream::DATA_COMM) b += t.bytes;
  }
  return b;
}

const Task& optimizer_task(const BuiltWorkload& w) {
  for (const Task& t : w.workload.programs[0].tasks) {
    if (t.kind == TaskKind::COMPUTE && t.phase == core::Phase::OPTIMIZER) return t;
  }
  throw std::runtime_error("no optimizer task");
}

TEST(Pruning, TinyModelHasTheHandCountedParameters) {
  Job s;
  const BuiltWorkload w = s.build();
  EXPECT_DOUBLE_EQ(w.memory[0].weights.value(), TOTAL * 2);
  const PrunedParameters p = pruned_parameters(layer_pruned_matrices(s.model, s.par, LayerKind::DENSE), magnitude(SparseFormat::CSR));
  EXPECT_DOUBLE_EQ(2 * p.pruned.dense, PRUNED);
}

// 50% unstructured pruning: kept values 40960.
//   CSR:     weights (16704 + 40960) x 2 + 40960 x 4 column indices + 1160 x 4 row pointers
//            = 115328 + 163840 + 4640 = 283808 bytes: more than dense (197248), the int32 index being
//            twice a bf16 value
//   bitmask: 115328 + 81920 / 8 = 125568 bytes
//   both:    gradients (16704 + 40960) x 4 = 230656; optimizer states x 12 = 691968
TEST(Pruning, FiftyPercentUnstructuredInCsrVersusBitmask) {
  const double stored = UNPRUNED + 0.5 * PRUNED;
  Job csr;
  csr.pruning = magnitude(SparseFormat::CSR);
  const MemoryBreakdown c = csr.build().memory[0];
  EXPECT_DOUBLE_EQ(c.weights.value(), stored * 2 + 0.5 * PRUNED * 4 + ROW_POINTERS * 4);
  EXPECT_DOUBLE_EQ(c.weights.value(), 283808);
  EXPECT_DOUBLE_EQ(c.gradients.value(), 230656);
  EXPECT_DOUBLE_EQ(c.optimizer_states.value(), 691968);

  Job bitmask;
  bitmask.pruning = magnitude(SparseFormat::BITMASK);
  const MemoryBreakdown b = bitmask.build().memory[0];
  EXPECT_DOUBLE_EQ(b.weights.value(), 125568);
  EXPECT_DOUBLE_EQ(b.gradients.value(), 230656);
  EXPECT_DOUBLE_EQ(b.optimizer_states.value(), 691968);

  Job dense;
  dense.pruning = magnitude(SparseFormat::DENSE);
  const MemoryBreakdown d = dense.build().memory[0];
  EXPECT_DOUBLE_EQ(d.weights.value(), TOTAL * 2);
  EXPECT_DOUBLE_EQ(d.gradients.value(), TOTAL * 4);
  EXPECT_DOUBLE_EQ(d.optimizer_states.value(), TOTAL * 12);
}

// At 90% CSR wins: kept 8192; weights (16704 + 8192) x 2 + 8192 x 4 + 4640 = 87200 (bitmask: 49792 + 10240).
TEST(Pruning, CsrPaysOffAtHighSparsity) {
  Job csr;
  csr.pruning = magnitude(SparseFormat::CSR, 0.9);
  EXPECT_NEAR(csr.build().memory[0].weights.value(), 87200, 1e-6);
  Job bitmask;
  bitmask.pruning = magnitude(SparseFormat::BITMASK, 0.9);
  EXPECT_NEAR(bitmask.build().memory[0].weights.value(), 60032, 1e-6);
}

// 2:4: 40960 values + 2 bits each (10240 bytes) = the bitmask's size at 50%. BSR, 16 x 16 blocks at
// 50%: 80 kept blocks per layer (320 bytes) + block row pointers (12 + 1) + (4 + 1) + (16 + 1) + (4 + 1)
// = 40 per layer (160 bytes): 960 bytes of index for both layers.
TEST(Pruning, StructuredAndBlockFormats) {
  Job two_four;
  two_four.pruning.method = PruningMethod::STRUCTURED_2_4;
  two_four.pruning.format = SparseFormat::COMPRESSED_2_4;
  EXPECT_DOUBLE_EQ(two_four.build().memory[0].weights.value(), (UNPRUNED + 40960) * 2 + 10240);

  Job block;
  block.pruning.method = PruningMethod::BLOCK;
  block.pruning.block_size = 16;
  block.pruning.format = SparseFormat::BSR;
  EXPECT_DOUBLE_EQ(block.build().memory[0].weights.value(), (UNPRUNED + 40960) * 2 + 960);
}

// Two data-parallel replicas, no ZeRO: one all-reduce bucket of every gradient, fp32.
//   dense communication:   98624 x 4 = 394496 bytes
//   values:                (16704 + 40960) x 4 = 230656
//   indexed, bitmask:      230656 + 10240 = 240896
//   indexed, CSR:          230656 + 168480 = 399136 (more than dense at 50%)
TEST(Pruning, CommunicationBytesWithSparseGradients) {
  auto bytes = [](SparseFormat format, SparseCommunication comm) {
    Job s;
    s.par.data = 2;
    s.pruning = magnitude(format);
    s.pruning.communication = comm;
    const BuiltWorkload w = s.build();
    const double emitted = data_bytes(w.workload.programs[0]);
    EXPECT_DOUBLE_EQ(w.pruning[0].data_bytes, emitted);
    EXPECT_DOUBLE_EQ(w.pruning[0].dense_data_bytes, TOTAL * 4);
    return emitted;
  };
  EXPECT_DOUBLE_EQ(bytes(SparseFormat::CSR, SparseCommunication::DENSE), 394496);
  EXPECT_DOUBLE_EQ(bytes(SparseFormat::CSR, SparseCommunication::VALUES), 230656);
  EXPECT_DOUBLE_EQ(bytes(SparseFormat::BITMASK, SparseCommunication::INDEXED), 240896);
  EXPECT_DOUBLE_EQ(bytes(SparseFormat::CSR, SparseCommunication::INDEXED), 399136);
}

// ZeRO-1 (distributed optimizer): the kept values' fp32 gradients are reduce-scattered (230656) and
// their bf16 weights all-gathered ((16704 + 40960) x 2 = 115328); Adam updates half of the kept
// values per rank: 57664 / 2 x 34 bytes.
TEST(Pruning, ZeroOneSendsAndUpdatesTheKeptValues) {
  Job s;
  s.par.data = 2;
  s.par.zero_stage = 1;
  s.pruning = magnitude(SparseFormat::BITMASK);
  s.pruning.communication = SparseCommunication::VALUES;
  const BuiltWorkload w = s.build();
  EXPECT_DOUBLE_EQ(data_bytes(w.workload.programs[0]), 230656 + 115328);
  EXPECT_DOUBLE_EQ(optimizer_task(w).bytes, (UNPRUNED + 40960) / 2 * 34);
  EXPECT_DOUBLE_EQ(w.memory[0].optimizer_states.value(), (UNPRUNED + 40960) / 2 * 12);
}

TEST(Pruning, OnlyTheLinearLayersGemmsRunTheSparseKernel) {
  Job s;
  s.pruning.method = PruningMethod::STRUCTURED_2_4;
  s.pruning.format = SparseFormat::COMPRESSED_2_4;
  s.pruning.sparse_kernel = true;
  const BuiltWorkload w = s.build();
  int sparse = 0;
  for (const Task& t : w.workload.programs[0].tasks) {
    if (t.kind != TaskKind::COMPUTE) continue;
    const std::string& name = w.workload.names[t.name];
    const bool linear = name == "qkv" || name == "proj" || name == "mlp_up" || name == "mlp_down";
    EXPECT_EQ(t.sparsity, linear ? core::GemmSparsity::STRUCTURED_2_4 : core::GemmSparsity::NONE) << name;
    if (linear) {
      EXPECT_FLOAT_EQ(t.density, 0.5f);
    }
    sparse += linear ? 1 : 0;
  }
  // 4 GEMMs x 2 layers x 2 micro-batches x (forward + backward)
  EXPECT_EQ(sparse, 32);

  // Unstructured pruning multiplies dense unless the scenario says a sparse kernel is used.
  Job dense_kernels;
  dense_kernels.pruning = magnitude(SparseFormat::CSR);
  // Held by name: a range-for over a member of build()'s temporary would read freed memory (ASan).
  const BuiltWorkload built = dense_kernels.build();
  for (const Task& t : built.workload.programs[0].tasks) EXPECT_EQ(t.sparsity, core::GemmSparsity::NONE);
}

TEST(Pruning, EmbeddingsArePrunedOnlyWhenAsked) {
  Job s;
  s.pruning = magnitude(SparseFormat::BITMASK);
  s.pruning.embeddings = true;
  // + the 16384-element tied embedding at 50%: 8192 fewer values, 2048 bytes of bitmask.
  EXPECT_DOUBLE_EQ(s.build().memory[0].weights.value(), (UNPRUNED - 16384 + 8192 + 40960) * 2 + (PRUNED + 16384) / 8);
}

}  // namespace
}  // namespace trainsim::models
