// optimizations.gradient_compression in the workload builder: what the data-parallel gradient
// reductions send under each method, the compute tasks around them, and the error-feedback memory.
// Oracles are computed by hand for the tiny model of pruning_test.cpp and written out in the
// comments.

#include "models/compression.hpp"

#include <gtest/gtest.h>

#include <map>

#include "models/workload_builder.hpp"
#include "tests/models/tiny_models.hpp"

namespace trainsim::models {
namespace {

using core::CollectiveOp;
using core::Task;
using core::TaskKind;

// A tiny Llama-style model on one GPU per replica, bf16 (pruning_test.cpp counts it):
//   2 layers, h 64, 4 heads (kv 4, head_dim 16), SwiGLU f 128, V 256, tied embeddings.
// 98624 parameters, all in one gradient bucket (40 MB holds 1e7 fp32 gradients), reduced in fp32
// (Megatron's main gradients, no ZeRO): N = 98624, g = 4.
// Weight matrices ([out, in]) per layer: QKV 192 x 64, projection 64 x 64, gate+up 256 x 64, down
// 64 x 128; the word embedding 256 x 64. Their rows sum to 2 x (192 + 64 + 256 + 64) + 256 = 1408,
// their columns to 2 x (64 + 64 + 64 + 128) + 64 = 704, their elements to 81920 + 16384 = 98304; the
// 320 other parameters are the norms (2 x 2 x 64 + 64).
constexpr double N = 98624;
constexpr double MATRIX_ELEMENTS = 98304;
constexpr double ROWS = 1408;
constexpr double COLS = 704;

using test_support::tiny_llama;

struct Job {
  explicit Job(int data = 2) {
    training.sequence_length = 64;
    par.data = data;
  }
  ModelSpec model = tiny_llama();
  TrainingConfig training;
  ParallelismConfig par;
  PruningConfig pruning;
  CompressionConfig compression;

  BuiltWorkload build() {
    training.global_batch = 2 * par.sequences_per_step(training);
    core::Diagnostics diag;
    check_strategy(model, training, par, par.world_size(), "test", diag);
    check_compression(compression, model, par, pruning, "test", diag);
    EXPECT_TRUE(diag.empty()) << (diag.empty() ? "" : diag.problems().front().to_string());
    return build_workload(model, training, par, pruning, {}, compression);
  }
};

CompressionConfig method(CompressionMethod m) {
  CompressionConfig c;
  c.method = m;
  c.error_feedback = m == CompressionMethod::TOPK || m == CompressionMethod::POWERSGD ||
                     m == CompressionMethod::ONEBIT_ADAM;
  return c;
}

// The data-parallel stream's collectives of stage 0, in issue order: (op, bytes).
std::vector<std::pair<CollectiveOp, double>> data_collectives(const BuiltWorkload& w) {
  std::vector<std::pair<CollectiveOp, double>> out;
  for (const Task& t : w.workload.programs[0].tasks) {
    if (t.kind == TaskKind::COLLECTIVE && t.stream == core::Stream::DATA_COMM) out.push_back({t.collective, t.bytes});
  }
  return out;
}

std::vector<const Task*> data_compute(const BuiltWorkload& w) {
  std::vector<const Task*> out;
  for (const Task& t : w.workload.programs[0].tasks) {
    if (t.kind == TaskKind::COMPUTE && t.stream == core::Stream::DATA_COMM) out.push_back(&t);
  }
  return out;
}

TEST(Compression, WithoutItTheBucketIsOneFp32AllReduce) {
  Job j;
  const BuiltWorkload w = j.build();
  const auto c = data_collectives(w);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].first, CollectiveOp::ALL_REDUCE);
  EXPECT_DOUBLE_EQ(c[0].second, N * 4);
  EXPECT_TRUE(data_compute(w).empty());
  EXPECT_TRUE(w.compression.empty());
  EXPECT_DOUBLE_EQ(w.memory[0].error_feedback.value(), 0);
}

// int8: N·1 bytes + one fp32 scale per 2048 elements (ceil(98624 / 2048) = 49): 98624 + 196. With
// one scale per bucket (scale_block >= N) exactly N + 4. Compress and decompress run around it.
TEST(Compression, Int8AllReduceSendsOneBytePerElementPlusScales) {
  Job j;
  j.compression = method(CompressionMethod::INT8);
  BuiltWorkload w = j.build();
  auto c = data_collectives(w);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].first, CollectiveOp::ALL_REDUCE);
  EXPECT_DOUBLE_EQ(c[0].second, N * 1 + 49 * 4);
  // Compress: read 4 + write 1, absmax read 4 per element; decompress: read 1 + write 4.
  const auto compute = data_compute(w);
  ASSERT_EQ(compute.size(), 2u);
  EXPECT_DOUBLE_EQ(compute[0]->bytes, N * (4 + 1 + 4));
  EXPECT_DOUBLE_EQ(compute[1]->bytes, N * (1 + 4));
  EXPECT_EQ(compute[0]->op_class, core::OpClass::ELEMENTWISE);
  EXPECT_DOUBLE_EQ(w.memory[0].error_feedback.value(), 0);  // quantization: no error feedback by default

  j.compression.scale_block = int64_t{1} << 40;
  w = j.build();
  EXPECT_DOUBLE_EQ(data_collectives(w)[0].second, N + 4);
  // Two replicas, all-reduce: busbw factor 2(n-1)/n = 1; saved N·4 - (N + 4).
  EXPECT_DOUBLE_EQ(w.compression[0].uncompressed_wire_bytes, N * 4);
  EXPECT_DOUBLE_EQ(w.compression[0].wire_bytes, N + 4);
}

// bf16 under Megatron's fp32 main gradients halves the all-reduce; where FSDP already reduces in
// bf16 (zero_stage 3) it changes nothing, and says so.
TEST(Compression, Bf16HalvesFp32GradientsAndIsANoOpWhereTheyAreAlready16Bit) {
  Job j;
  j.compression = method(CompressionMethod::BF16);
  EXPECT_DOUBLE_EQ(data_collectives(j.build())[0].second, N * 2);
  EXPECT_TRUE(compression_warnings(j.compression, j.training, j.par).empty());

  Job fsdp;
  fsdp.par.zero_stage = 3;
  fsdp.par.zero_impl = ZeroImpl::FSDP;
  const double plain = [&] {
    double b = 0;
    for (const auto& [op, bytes] : data_collectives(fsdp.build())) {
      if (op == CollectiveOp::REDUCE_SCATTER) b += bytes;
    }
    return b;
  }();
  fsdp.compression = method(CompressionMethod::BF16);
  double compressed = 0;
  for (const auto& [op, bytes] : data_collectives(fsdp.build())) {
    if (op == CollectiveOp::REDUCE_SCATTER) compressed += bytes;
  }
  EXPECT_DOUBLE_EQ(compressed, plain);
  EXPECT_EQ(compression_warnings(fsdp.compression, fsdp.training, fsdp.par).size(), 1u);
}

// fp8 at ZeRO-3 (FSDP, 2 micro-batches): every micro-batch's per-unit reduce-scatters carry 1 byte
// per element instead of bf16's 2 (+ scales), each between a compress and a decompress task.
TEST(Compression, Fp8ReduceScattersAtZeroThree) {
  Job j;
  j.par.zero_stage = 3;
  j.par.zero_impl = ZeroImpl::FSDP;
  j.compression = method(CompressionMethod::FP8);
  j.compression.scale_block = int64_t{1} << 40;
  const BuiltWorkload w = j.build();
  double scattered = 0;
  int reductions = 0;
  for (const auto& [op, bytes] : data_collectives(w)) {
    if (op != CollectiveOp::REDUCE_SCATTER) continue;
    scattered += bytes;
    ++reductions;
  }
  // 4 units (embedding, 2 layers, head: the final norm) x 2 micro-batches, one scale each.
  EXPECT_EQ(reductions, 8);
  EXPECT_DOUBLE_EQ(scattered, 2 * N + reductions * 4);
  EXPECT_EQ(static_cast<int>(data_compute(w).size()), 2 * reductions);
}

// Top-k at ratio 0.01 with int32 indices: each rank contributes k = 986.24 values (4 bytes) and
// indices (4 bytes), all-gathered from the n replicas: n·k·8 bytes, instead of an N·4 all-reduce.
// The gathered buffer doubles from 2 to 4 replicas: the sparsification's traffic grows with n.
TEST(Compression, TopKIsAnAllGatherOfValuesAndIndicesThatGrowsWithTheReplicas) {
  const double k = 0.01 * N;
  for (const int n : {2, 4}) {
    Job j(n);
    j.compression = method(CompressionMethod::TOPK);
    const BuiltWorkload w = j.build();
    const auto c = data_collectives(w);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].first, CollectiveOp::ALL_GATHER);
    EXPECT_DOUBLE_EQ(c[0].second, n * k * (4 + 4));
    // The wire: an all-gather sends (n-1)/n of it; the all-reduce sent 2(n-1)/n of N·4.
    EXPECT_DOUBLE_EQ(w.compression[0].wire_bytes, (n - 1.0) * k * 8);
    EXPECT_DOUBLE_EQ(w.compression[0].uncompressed_wire_bytes, 2.0 * (n - 1) / n * N * 4);
    // Error feedback: one fp32 residual per element.
    EXPECT_DOUBLE_EQ(w.memory[0].error_feedback.value(), N * 4);
    EXPECT_DOUBLE_EQ(w.compression[0].error_feedback_bytes, N * 4);
  }
  Job wide(2);
  wide.compression = method(CompressionMethod::TOPK);
  wide.compression.index_bytes = 8;  // int64, torch.topk's own indices
  EXPECT_DOUBLE_EQ(data_collectives(wide.build())[0].second, 2 * k * (4 + 8));
  // Without error feedback there is no residual.
  wide.compression.error_feedback = false;
  EXPECT_DOUBLE_EQ(wide.build().memory[0].error_feedback.value(), 0);
}

// PowerSGD rank 4: the 320 norm parameters go uncompressed first (fp32 all-reduce); then every P
// (m x 4) in one all-reduce, 1408·4·4 = 22528 bytes, and every Q (n x 4), 704·4·4 = 11264: (m + n)·r
// elements per matrix. GEMMs P = MQ, Q = MᵀP, M = PQᵀ, each 2·m·n·r FLOPs per matrix, in fp32.
// Memory: the residual (N·4) and P and Q ((1408 + 704)·4·4 = 33792).
TEST(Compression, PowerSgdAllReducesPAndQOfEveryMatrix) {
  Job j;
  j.compression = method(CompressionMethod::POWERSGD);
  const BuiltWorkload w = j.build();
  const auto c = data_collectives(w);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_DOUBLE_EQ(c[0].second, (N - MATRIX_ELEMENTS) * 4);
  EXPECT_DOUBLE_EQ(c[1].second, ROWS * 4 * 4);
  EXPECT_DOUBLE_EQ(c[2].second, COLS * 4 * 4);
  for (const auto& [op, bytes] : c) EXPECT_EQ(op, CollectiveOp::ALL_REDUCE);
  double gemm_flops = 0;
  for (const Task* t : data_compute(w)) {
    if (t->op_class != core::OpClass::GEMM) continue;
    gemm_flops += t->flops;
    EXPECT_TRUE(t->has_precision);
    EXPECT_EQ(t->precision, core::Precision::FP32);
  }
  EXPECT_DOUBLE_EQ(gemm_flops, 3 * 2 * MATRIX_ELEMENTS * 4);
  EXPECT_DOUBLE_EQ(w.memory[0].error_feedback.value(), N * 4 + (ROWS + COLS) * 4 * 4);
}

// PowerSGD's bytes per matrix: (m + n)·r elements, against m·n uncompressed.
TEST(Compression, PowerSgdBytesPerMatrix) {
  CompressionConfig c = method(CompressionMethod::POWERSGD);
  c.rank = 2;
  GradientReduction r;
  r.elements = 1024.0 * 512;
  r.element_bytes = 4;
  r.replicas = 8;
  r.matrices = {{1024, 512}};
  double p = 0, q = 0;
  int collectives = 0;
  for (const CompressionStep& s : compressed_reduction(c, r)) {
    if (!s.collective) continue;
    ++collectives;
    (collectives == 1 ? p : q) = s.bytes;
  }
  EXPECT_EQ(collectives, 2);  // no uncompressed rest
  EXPECT_DOUBLE_EQ(p + q, (1024 + 512) * 2 * 4);
  // A matrix too small to be worth it (m·n < 2·(m + n)·r, PyTorch's min_compression_rate) is sent
  // uncompressed.
  r.elements = 8 * 8;
  r.matrices = {{8, 8}};
  c.rank = 4;
  const std::vector<CompressionStep> small = compressed_reduction(c, r);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_DOUBLE_EQ(small[0].bytes, 64 * 4);
}

// 1-bit Adam: an all-to-all and an all-gather of N/8 bytes + one fp32 scale per rank (2), in the
// optimizer phase after the whole backward; worker error N·4 and server error N/2·4.
TEST(Compression, OneBitAdamExchangesSignsAfterTheBackward) {
  Job j;
  j.compression = method(CompressionMethod::ONEBIT_ADAM);
  j.compression.warmup_steps = 100;
  const BuiltWorkload w = j.build();
  const auto c = data_collectives(w);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].first, CollectiveOp::ALL_TO_ALL);
  EXPECT_EQ(c[1].first, CollectiveOp::ALL_GATHER);
  EXPECT_DOUBLE_EQ(c[0].second, N / 8 + 2 * 4);
  EXPECT_DOUBLE_EQ(c[1].second, N / 8 + 2 * 4);
  EXPECT_DOUBLE_EQ(w.memory[0].error_feedback.value(), N * 4 + N / 2 * 4);
  // Issued after the last backward compute.
  const core::Program& p = w.workload.programs[0];
  size_t last_backward = 0, first_exchange = p.tasks.size();
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    if (t.kind == TaskKind::COMPUTE && t.stream == core::Stream::COMPUTE && t.phase == core::Phase::BACKWARD) {
      last_backward = i;
    }
    if (t.kind == TaskKind::COLLECTIVE && t.stream == core::Stream::DATA_COMM) {
      first_exchange = std::min(first_exchange, i);
      EXPECT_EQ(t.phase, core::Phase::OPTIMIZER);
    }
  }
  EXPECT_LT(last_backward, first_exchange);
}

// Compression and pruning's communication "values": quantization and top-k apply to the kept
// values. 50% unstructured pruning keeps 16704 + 40960 = 57664 elements.
TEST(Compression, AppliesToWhatPruningSends) {
  Job j;
  j.pruning.method = PruningMethod::MAGNITUDE;
  j.pruning.sparsity = 0.5;
  j.pruning.format = SparseFormat::BITMASK;
  j.pruning.communication = SparseCommunication::VALUES;
  j.compression = method(CompressionMethod::BF16);
  EXPECT_DOUBLE_EQ(data_collectives(j.build())[0].second, 57664 * 2);
  j.compression = method(CompressionMethod::TOPK);
  EXPECT_DOUBLE_EQ(data_collectives(j.build())[0].second, 2 * 0.01 * 57664 * 8);
}

// The refused combinations, each with a reason naming the key.
TEST(Compression, CheckRefusesWhatFrameworksCannotRun) {
  const ModelSpec m = tiny_llama();
  auto problems = [&](CompressionMethod method_, int zero, SparseCommunication comm, int rank = 4) {
    CompressionConfig c = method(method_);
    c.rank = rank;
    ParallelismConfig p;
    p.data = 2;
    p.zero_stage = zero;
    PruningConfig pruning;
    if (comm != SparseCommunication::DENSE) {
      pruning.method = PruningMethod::MAGNITUDE;
      pruning.communication = comm;
    }
    core::Diagnostics diag;
    check_compression(c, m, p, pruning, "f.json", diag);
    return diag.problems();
  };
  EXPECT_TRUE(problems(CompressionMethod::TOPK, 1, SparseCommunication::DENSE).empty());
  EXPECT_TRUE(problems(CompressionMethod::INT8, 3, SparseCommunication::DENSE).empty());
  EXPECT_EQ(problems(CompressionMethod::TOPK, 2, SparseCommunication::DENSE).size(), 1u);
  EXPECT_EQ(problems(CompressionMethod::POWERSGD, 3, SparseCommunication::DENSE).size(), 1u);
  EXPECT_EQ(problems(CompressionMethod::ONEBIT_ADAM, 1, SparseCommunication::DENSE).size(), 1u);
  EXPECT_EQ(problems(CompressionMethod::POWERSGD, 0, SparseCommunication::VALUES).size(), 1u);
  // The smallest matrix is the 64 x 64 projection: rank 64 is allowed, 65 is not.
  EXPECT_TRUE(problems(CompressionMethod::POWERSGD, 0, SparseCommunication::DENSE, 64).empty());
  const auto too_big = problems(CompressionMethod::POWERSGD, 0, SparseCommunication::DENSE, 65);
  ASSERT_EQ(too_big.size(), 1u);
  EXPECT_EQ(too_big[0].pointer, "/optimizations/gradient_compression/rank");
}

// The section's reader: defaults per method, and the bad values.
TEST(Compression, ReadsTheSectionAndRefusesBadValues) {
  auto read = [](const std::string& text, std::vector<std::string>* messages = nullptr) {
    const core::Json j = core::Json::parse(text);
    core::Diagnostics diag;
    core::ObjectReader r(j, "s.json", "/optimizations/gradient_compression", diag);
    const CompressionConfig c = CompressionConfig::from_json(r);
    if (messages != nullptr) {
      for (const core::InputProblem& p : diag.problems()) messages->push_back(p.pointer + ": " + p.message);
    } else {
      EXPECT_TRUE(diag.empty());
    }
    return c;
  };
  const CompressionConfig topk = read(R"({"method": "topk"})");
  EXPECT_DOUBLE_EQ(topk.ratio, 0.01);
  EXPECT_TRUE(topk.error_feedback);
  EXPECT_DOUBLE_EQ(topk.index_bytes, 4);
  EXPECT_FALSE(read(R"({"method": "int8"})").error_feedback);
  EXPECT_EQ(read(R"({"method": "powersgd"})").rank, 4);
  EXPECT_FALSE(read(R"({"method": "none", "ratio": 7})").enabled());
  // to_json reads back.
  const CompressionConfig p = read(R"({"method": "powersgd", "rank": 2, "warmup_steps": 10})");
  EXPECT_EQ(read(p.to_json().dump()).to_json(), p.to_json());

  for (const char* bad : {R"({"method": "topk", "ratio": 0})", R"({"method": "topk", "ratio": 1.5})",
                          R"({"method": "powersgd", "rank": 0})", R"({"method": "top-k"})",
                          R"({"method": "onebit_adam"})", R"({"method": "int8", "rank": 2})",
                          R"({"method": "onebit_adam", "warmup_steps": 5, "error_feedback": false})",
                          R"({"method": "topk", "index_bytes": 2})"}) {
    std::vector<std::string> messages;
    read(bad, &messages);
    EXPECT_EQ(messages.size(), 1u) << bad;
  }
  std::vector<std::string> messages;
  read(R"({"method": "topk", "ratio": 0})", &messages);
  EXPECT_EQ(messages[0], "/optimizations/gradient_compression/ratio: expected the fraction of the gradient elements "
                         "top-k sends, a number in [1e-06, 1] (0.01 sends 1%), found 0");
}

}  // namespace
}  // namespace trainsim::models
