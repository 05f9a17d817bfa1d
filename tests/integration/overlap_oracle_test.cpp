// Communication / computation overlap, end to end: models built by models/ and run by the analytic
// engine with every cost except GEMMs and collectives removed (infinite HBM bandwidth, no kernel
// overhead, no latency), against hand-derived exposed times. T(op, S) below is the closed-form time
// of one collective of per-rank size S on the test's group (network::collective_cost, the cost the
// backend charges); with zero latency T(op, S/2) = T(op, S)/2.

#include <gtest/gtest.h>

#include "models/workload_builder.hpp"
#include "network/collective_cost.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim {
namespace {

struct Job {
  models::ModelSpec model;
  models::TrainingConfig training;
  models::ParallelismConfig parallelism;
  network::ClusterConfig cluster;
  core::Profile profile;
};

// One node of `gpus` A100s whose memory-bound ops take no time: only GEMMs and collectives cost.
Job make_setup(int layers, int gpus, double intra_bandwidth) {
  Job s;
  s.model.name = "oracle";
  s.model.layers = layers;
  s.model.hidden = 1024;
  s.model.heads = 8;
  s.model.kv_heads = 8;
  s.model.ffn_hidden = 4096;
  s.model.vocab = 8;  // embedding and output head are negligible next to a layer
  s.model.tied_embeddings = false;
  s.model.learned_positions = false;
  s.training.sequence_length = 2048;
  s.training.micro_batch = 1;
  s.cluster.gpu_spec = *core::find_gpu("A100-SXM4-80GB");
  s.cluster.gpu_spec.hbm_bandwidth = core::BytesPerSecond(1e30);
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = gpus;
  s.cluster.intra_node.bandwidth = core::BytesPerSecond(intra_bandwidth);
  s.cluster.intra_node.latency = core::Seconds(0);
  s.profile.network.intra_node.step_latency = core::Seconds(0);
  s.profile.device.kernel_overhead = core::Seconds(0);
  for (core::OpEfficiency& e : s.profile.device.ops) e = {1.0, 0.0, 1.0};
  return s;
}

engine::SimulationResult simulate(Job& s, int micro_batches) {
  s.training.global_batch = micro_batches * s.parallelism.sequences_per_step(s.training);
  const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism);
  return engine::make_analytic_backend()->run(built.workload, s.cluster, s.profile, engine::SimulationOptions{});
}

double collective_time(const Job& s, core::CollectiveOp op, double bytes, int ranks) {
  const network::GroupPlacement group{ranks, 1, ranks};
  return network::collective_cost(op, core::Bytes(bytes), group, s.cluster, s.profile.network).time.value();
}

double exposed(const engine::SimulationResult& r, core::Axis a) {
  return r.breakdown.exposed_comm[static_cast<size_t>(a)].value();
}

// FSDP (FULL_SHARD, one unit per layer), data 2, one micro-batch. A layer's forward GEMMs take
// c = 2·(12h² + 2sh)·s / peak (more than its all-gather g), its backward 2c (more than g + r). With
// prefetch 1 every gather but the first of each pass runs under the previous unit's compute, so the
// exposed data-parallel time is:
//   forward:  the embedding's gather e (8h parameters), then the first layer's, g
//   backward: the last layer's gather g, less the head's backward GEMM (4·s·h·V FLOPs) that runs
//             beside it (the head, a root unit, is not gathered again); then the first layer's
//             reduce-scatter r and the embedding's e, which the optimizer waits for
// and r = g: FSDP reduces in the param dtype (2 bytes), the size of its bf16 all-gather. So
// 3g + 2e - 4·s·h·V / peak.
TEST(OverlapOracle, FsdpWithPrefetchOneExposesOneGatherPerPassAndTheLastReduceScatter) {
  const int layers = 4;
  Job s = make_setup(layers, 2, 300e9);
  s.parallelism.data = 2;
  s.parallelism.zero_stage = 3;
  s.parallelism.zero_impl = models::ZeroImpl::FSDP;
  s.parallelism.prefetch = 1;
  const double h = 1024;
  const double layer_params = 12 * h * h + 13 * h;  // GPT block with biases (Narayanan et al. 2021, §5.1 + biases)
  ASSERT_DOUBLE_EQ(models::layer_parameters(s.model, s.parallelism).dense, layer_params);
  const double g = collective_time(s, core::CollectiveOp::ALL_GATHER, layer_params * 2, 2);
  const double r = collective_time(s, core::CollectiveOp::REDUCE_SCATTER, layer_params * 2, 2);
  ASSERT_NEAR(r, g, 1e-12);
  const double e = collective_time(s, core::CollectiveOp::ALL_GATHER, 8 * h * 2, 2);
  const double head_backward = 4 * 2048 * h * 8 / s.cluster.gpu_spec.peak(core::Precision::BF16).value();
  const engine::SimulationResult one = simulate(s, 1);
  EXPECT_NEAR(exposed(one, core::Axis::DATA), 3 * g + 2 * e - head_backward, 1e-6 * g);

  // Without prefetch every layer's gather waits for the previous unit's compute: at least `layers`
  // gathers are exposed in the forward alone.
  s.parallelism.prefetch = 0;
  const engine::SimulationResult none = simulate(s, 1);
  EXPECT_GT(exposed(none, core::Axis::DATA), layers * g);
  EXPECT_GT(none.iteration_time.value(), one.iteration_time.value());
}

// Megatron's distributed optimizer (ZeRO-1): with overlap_param_gather the updated parameters'
// all-gathers run at the start of the iteration and each unit's first forward waits only for its own
// bucket, so all but the first bucket's gather hide under the forward; without it every gather runs
// after the optimizer step with nothing to hide behind.
TEST(OverlapOracle, DistributedOptimizerParamGatherOverlapExposesLess) {
  Job s = make_setup(4, 2, 300e9);
  s.parallelism.data = 2;
  s.parallelism.zero_stage = 1;
  s.parallelism.bucket_size = core::Bytes(1);  // one bucket per unit
  const double h = 1024;
  const double g = collective_time(s, core::CollectiveOp::ALL_GATHER, (12 * h * h + 13 * h) * 2, 2);
  s.parallelism.overlap_param_gather = false;
  const engine::SimulationResult blocking = simulate(s, 2);
  s.parallelism.overlap_param_gather = true;
  const engine::SimulationResult overlapped = simulate(s, 2);
  // Blocking: the four layer gathers (and the two tiny ones) follow the step.
  EXPECT_GE(exposed(blocking, core::Axis::DATA), 4 * g);
  // Overlapped: the first layer waits for the embedding's and its own gather (~g); the other three hide.
  EXPECT_NEAR(exposed(overlapped, core::Axis::DATA) - exposed(blocking, core::Axis::DATA), -3 * g, 2e-3 * g);
  EXPECT_LT(overlapped.iteration_time.value(), blocking.iteration_time.value());
}

// Tensor parallelism 2 with sequence parallelism on a one-layer model. Without tp_comm_overlap the
// layer exposes 8 collectives of the b·s·h·2-byte activation, each T: forward the QKV and MLP-up
// all-gathers and the projection and MLP-down reduce-scatters, backward the projection and MLP-down
// output-gradient all-gathers and the QKV and MLP-up dgrad reduce-scatters. With it, only the first
// all-gather chunk or the last reduce-scatter chunk of each pipelined GEMM is exposed (4 forward, 2
// backward, each of half the activation: T/2), and the backward bulk overlaps hide entirely (the
// link is fast enough that every chunk's GEMM outlasts its collective). The embedding, output layer
// and loss are the same in both runs. So the exposed tensor time drops by 8T - 6·T/2 = 5T.
TEST(OverlapOracle, TpCommOverlapExposesOnlyTheFirstOrLastChunk) {
  Job s = make_setup(1, 2, 2e12);
  s.parallelism.tensor = 2;
  s.parallelism.sequence_parallel = true;
  const double activation = 2048.0 * 1024 * 2;  // b·s·h bf16
  const double t = collective_time(s, core::CollectiveOp::ALL_GATHER, activation, 2);
  ASSERT_NEAR(collective_time(s, core::CollectiveOp::REDUCE_SCATTER, activation, 2), t, 1e-15);
  ASSERT_NEAR(collective_time(s, core::CollectiveOp::ALL_GATHER, activation / 2, 2), t / 2, 1e-15);
  const engine::SimulationResult blocking = simulate(s, 1);
  s.parallelism.tp_comm_overlap = true;
  const engine::SimulationResult overlapped = simulate(s, 1);
  EXPECT_NEAR(exposed(blocking, core::Axis::TENSOR) - exposed(overlapped, core::Axis::TENSOR), 5 * t, 1e-3 * t);
  // Computation is unchanged: the chunks and the dgrad / wgrad halves add up to the same GEMMs.
  EXPECT_NEAR(overlapped.breakdown.compute.value(), blocking.breakdown.compute.value(),
              1e-9 * blocking.breakdown.compute.value());

  // Without sequence parallelism the flag does not apply.
  s.parallelism.sequence_parallel = false;
  const engine::SimulationResult ignored = simulate(s, 1);
  s.parallelism.tp_comm_overlap = false;
  const engine::SimulationResult plain = simulate(s, 1);
  EXPECT_EQ(ignored.iteration_time.value(), plain.iteration_time.value());
}

// moe_a2a_overlap without a pipeline (Megatron-core combined_1f1b_schedule_for_no_pipelining): one
// MoE layer, 2 experts over expert 2, m micro-batches. Each micro-batch's forward dispatches and
// combines its tokens with an all-to-all, and its backward does so again: 4 all-to-alls of time a
// (top_k · b·s·h · 2 bytes per rank), all exposed when the passes run one after the other. Merged,
// backward i runs with forward i + 1 and each all-to-all runs under the next computation of the other
// pass, which here always outlasts it (a fast link): only the first forward's two and the last
// backward's two are exposed. So the exposed expert time drops by 4a·(m - 1), and computation is the
// same.
TEST(OverlapOracle, MoeA2aOverlapHidesAllToAllsOfMergedPasses) {
  Job s = make_setup(1, 2, 2e12);
  s.model.experts = 2;
  s.model.top_k = 1;
  s.parallelism.expert = 2;
  const double a = collective_time(s, core::CollectiveOp::ALL_TO_ALL, 2048.0 * 1024 * 2, 2);
  const int m = 3;
  s.parallelism.moe_a2a_overlap = false;
  const engine::SimulationResult sequential = simulate(s, m);
  EXPECT_NEAR(exposed(sequential, core::Axis::EXPERT), 4 * m * a, 1e-6 * a);
  s.parallelism.moe_a2a_overlap = true;
  const engine::SimulationResult merged = simulate(s, m);
  EXPECT_NEAR(exposed(sequential, core::Axis::EXPERT) - exposed(merged, core::Axis::EXPERT), 4 * a * (m - 1), 1e-6 * a);
  EXPECT_NEAR(merged.breakdown.compute.value(), sequential.breakdown.compute.value(),
              1e-9 * sequential.breakdown.compute.value());
  EXPECT_LT(merged.iteration_time.value(), sequential.iteration_time.value());
}

}  // namespace
}  // namespace trainsim
