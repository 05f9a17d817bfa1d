// Pipeline schedules, end to end: a model built by models/ and run by the analytic engine, with every
// cost except the layers' GEMMs removed (no communication cost, infinite HBM bandwidth, no kernel
// overhead, tiny vocabulary), must reproduce the closed forms of Narayanan et al. 2021 (SC21), §2.2:
//   GPipe and 1F1B: iteration = (m + p - 1)·(t_f + t_b), bubble fraction (p - 1)/(m + p - 1)
//   interleaved 1F1B with v chunks per stage: bubble = (p - 1)/v·(t_f + t_b), i.e. (p - 1)/(v·m) of the
//   ideal time m·(t_f + t_b)
// where t_f and t_b are one stage's forward and backward time for one micro-batch; and for the
// schedules of issue 14:
//   PipeDream, PipeDream-2BW (steady state, no flush): iteration = m·(t_f + t_b), no bubble
//   ZB-H1 (Qi et al. 2024, §3.1): bubble (p - 1)·(t_f + t_B - t_W) when t_f = t_B = t_W; here t_B (data
//     gradients plus the attention core's backward) exceeds t_W (weight gradients), so ZB-H1 is
//     held to 1F1B's bubble times (t_f + t_B - t_W)/(t_f + t_b) within a third of a pass per stage
//   ZB-H2: near zero bubble once m >= 2p

#include <gtest/gtest.h>

#include "models/workload_builder.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/compute_model.hpp"

namespace trainsim {
namespace {

struct Setup {
  models::ModelSpec model;
  models::TrainingConfig training;
  models::ParallelismConfig parallelism;
  network::ClusterConfig cluster;
  core::Profile profile;
};

Setup make_setup(models::PipelineSchedule schedule, int p, int v, int m) {
  Setup s;
  s.model.name = "oracle";
  s.model.layers = 2 * p * v;
  s.model.hidden = 1024;
  s.model.heads = 8;
  s.model.kv_heads = 8;
  s.model.ffn_hidden = 4096;
  s.model.vocab = 8;  // the output head's GEMM is negligible: stages are balanced
  s.model.tied_embeddings = false;
  s.training.sequence_length = 512;
  s.training.micro_batch = 1;
  s.training.global_batch = m;
  s.parallelism.pipeline = p;
  s.parallelism.schedule = schedule;
  s.parallelism.virtual_stages = v;

  s.cluster.gpu_spec = *core::find_gpu("A100-SXM4-80GB");
  s.cluster.gpu_spec.hbm_bandwidth = core::BytesPerSecond(1e30);  // memory-bound ops take no time
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = p;
  s.cluster.intra_node.bandwidth = core::BytesPerSecond(1e30);
  s.cluster.intra_node.latency = core::Seconds(0);
  s.profile.network.intra_node.step_latency = core::Seconds(0);
  s.profile.device.kernel_overhead = core::Seconds(0);
  for (core::OpEfficiency& e : s.profile.device.ops) e = {1.0, 0.0, 1.0};
  return s;
}

struct Outcome {
  double iteration_s = 0;
  double bubble_s = 0;
  double t_f = 0;  // stage 0, one micro-batch, all its chunks
  double t_b = 0;  // backward incl. nothing else (no recompute here)
  double t_input = 0;   // the B part of t_b under a split backward
  double t_weight = 0;  // its W part
};

Outcome simulate(const Setup& s) {
  const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism);
  const core::Program& stage0 = built.workload.programs[0];
  Outcome o;
  for (const core::Task& t : stage0.tasks) {
    if (t.kind != core::TaskKind::COMPUTE || t.micro_batch != 0) continue;
    const double d = engine::compute_time(t, built.workload.precision, s.cluster.gpu_spec, s.profile.device).value();
    if (t.phase == core::Phase::FORWARD) o.t_f += d;
    if (t.phase == core::Phase::BACKWARD) o.t_b += d;
    if (t.phase == core::Phase::BACKWARD && t.gradient == core::BackwardPart::INPUT) o.t_input += d;
    if (t.phase == core::Phase::BACKWARD && t.gradient == core::BackwardPart::WEIGHT) o.t_weight += d;
  }
  const engine::SimulationResult r =
      engine::make_analytic_backend()->run(built.workload, s.cluster, s.profile, engine::SimulationOptions{});
  o.iteration_s = r.iteration_time.value();
  o.bubble_s = r.breakdown.pipeline_bubble.value();
  return o;
}

class PipelineOracle : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(PipelineOracle, GpipeAndOneFOneBTakeMPlusPMinusOneSteps) {
  const auto [p, m] = GetParam();
  for (models::PipelineSchedule schedule : {models::PipelineSchedule::GPIPE, models::PipelineSchedule::ONE_F_ONE_B}) {
    SCOPED_TRACE(models::to_string(schedule));
    const Outcome o = simulate(make_setup(schedule, p, 1, m));
    ASSERT_GT(o.t_f, 0);
    EXPECT_NEAR(o.t_b / o.t_f, 2.0, 1e-3) << "backward = 2 x forward FLOPs";
    // The head's GEMM (vocabulary 8) on the last stage is the only imbalance: ~1e-3 of a layer.
    EXPECT_NEAR(o.iteration_s, (m + p - 1) * (o.t_f + o.t_b), 2e-3 * o.iteration_s);
    EXPECT_NEAR(o.bubble_s / o.iteration_s, static_cast<double>(p - 1) / (m + p - 1), 2e-3);
  }
}

TEST_P(PipelineOracle, InterleavedBubbleShrinksByVirtualStages) {
  const auto [p, m] = GetParam();
  if (p == 1 || m % p != 0) GTEST_SKIP() << "interleaving needs p > 1 and m divisible by p (Megatron-LM)";
  for (int v : {2, 3}) {
    SCOPED_TRACE("v=" + std::to_string(v));
    const Outcome o = simulate(make_setup(models::PipelineSchedule::INTERLEAVED_1F1B, p, v, m));
    const double ideal = m * (o.t_f + o.t_b);
    EXPECT_NEAR(o.iteration_s, ideal + (p - 1) * (o.t_f + o.t_b) / v, 2e-3 * o.iteration_s);
    EXPECT_NEAR(o.bubble_s / ideal, static_cast<double>(p - 1) / (v * m), 2e-3);
  }
}

TEST_P(PipelineOracle, PipeDreamRunsWithoutAFlush) {
  const auto [p, m] = GetParam();
  if (p == 1 || m < p) GTEST_SKIP() << "a PipeDream window needs p > 1 and m >= p";
  for (models::PipelineSchedule schedule : {models::PipelineSchedule::PIPEDREAM, models::PipelineSchedule::PIPEDREAM_2BW}) {
    SCOPED_TRACE(models::to_string(schedule));
    const Outcome o = simulate(make_setup(schedule, p, 1, m));
    EXPECT_NEAR(o.iteration_s, m * (o.t_f + o.t_b), 2e-3 * o.iteration_s);
    EXPECT_LT(o.bubble_s / o.iteration_s, 2e-3);
  }
}

TEST_P(PipelineOracle, ZeroBubbleSchedulesCutTheBubble) {
  const auto [p, m] = GetParam();
  if (p == 1 || m < p) GTEST_SKIP() << "the closed forms hold for p > 1 and m >= p (Qi et al. 2024)";
  const Outcome ofob = simulate(make_setup(models::PipelineSchedule::ONE_F_ONE_B, p, 1, m));
  const Outcome h1 = simulate(make_setup(models::PipelineSchedule::ZERO_BUBBLE_H1, p, 1, m));
  ASSERT_GT(h1.t_weight, 0);
  EXPECT_NEAR(h1.t_input + h1.t_weight, ofob.t_b, 1e-3 * ofob.t_b) << "the split moves work, it adds none";
  EXPECT_LT(h1.t_weight, h1.t_input) << "the attention core's backward has no weight gradient";
  const double ideal = m * (ofob.t_f + ofob.t_b);
  const double h1_bubble = h1.iteration_s - ideal;
  EXPECT_NEAR(h1_bubble, (p - 1) * (h1.t_f + h1.t_input - h1.t_weight), (p - 1) * h1.t_f / 3);
  EXPECT_LT(h1_bubble, 0.5 * (ofob.iteration_s - ideal));
  if (m >= 2 * p) {
    const Outcome h2 = simulate(make_setup(models::PipelineSchedule::ZERO_BUBBLE_H2, p, 1, m));
    EXPECT_LT(h2.iteration_s - ideal, 0.1 * (ofob.iteration_s - ideal)) << "near zero: " << h2.iteration_s / ideal - 1;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelineOracle,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8), ::testing::Values(4, 8, 16)));

}  // namespace
}  // namespace trainsim
