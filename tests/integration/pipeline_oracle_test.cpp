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

#include <algorithm>
#include <array>
#include <map>

#include "models/schedule.hpp"
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

// pipeline_execution "async": each stage's passes form a ready pool whose order the engine picks as
// inputs arrive (sim/core/workload.hpp, READY POOL). Each simulated rank's passes in the order their
// first compute task started.
std::vector<std::vector<models::PassSlot>> executed_order(const models::BuiltWorkload& built,
                                                          const engine::SimulationResult& r) {
  std::map<int, std::vector<engine::TimelineEvent>> by_rank;
  for (const engine::TimelineEvent& e : r.timeline) by_rank[e.rank].push_back(e);
  std::vector<std::vector<models::PassSlot>> order;
  for (auto& [rank, events] : by_rank) {
    std::stable_sort(events.begin(), events.end(),
                     [](const engine::TimelineEvent& a, const engine::TimelineEvent& b) { return a.start_s < b.start_s; });
    std::vector<models::PassSlot> passes;
    for (const engine::TimelineEvent& e : events) {
      const core::Task& t = built.workload.program_of(rank).tasks[e.task];
      if (t.kind != core::TaskKind::COMPUTE || t.stream != core::Stream::COMPUTE) continue;
      if (t.phase != core::Phase::FORWARD && t.phase != core::Phase::BACKWARD) continue;
      const models::Pass pass = t.phase == core::Phase::FORWARD            ? models::Pass::FORWARD
                                : t.gradient == core::BackwardPart::WEIGHT ? models::Pass::BACKWARD_WEIGHT
                                                                           : models::Pass::BACKWARD;
      const models::PassSlot slot{pass, static_cast<int>(t.micro_batch), 0};
      const bool seen = std::any_of(passes.begin(), passes.end(), [&](const models::PassSlot& p) {
        return p.pass == slot.pass && p.micro_batch == slot.micro_batch;
      });
      if (!seen) passes.push_back(slot);
    }
    order.push_back(passes);
  }
  return order;
}

std::string describe(const std::vector<models::PassSlot>& passes) {
  std::string out;
  for (const models::PassSlot& p : passes) {
    out += p.pass == models::Pass::FORWARD ? 'F' : p.pass == models::Pass::BACKWARD ? 'B' : 'W';
    out += std::to_string(p.micro_batch) + " ";
  }
  return out;
}

// Each stage's forward, backward (B under a split) and W time for one micro-batch, as the engine
// prices them.
std::array<std::vector<double>, 3> pass_times(const models::BuiltWorkload& built, const Setup& s) {
  std::array<std::vector<double>, 3> times;
  for (const core::Program& prog : built.workload.programs) {
    std::array<double, 3> t{};
    for (const core::Task& task : prog.tasks) {
      if (task.kind != core::TaskKind::COMPUTE || task.micro_batch != 0 || task.stream != core::Stream::COMPUTE) continue;
      if (task.phase != core::Phase::FORWARD && task.phase != core::Phase::BACKWARD) continue;
      const size_t k = task.phase == core::Phase::FORWARD ? 0 : task.gradient == core::BackwardPart::WEIGHT ? 2 : 1;
      t[k] += engine::compute_time(task, built.workload.precision, s.cluster.gpu_spec, s.profile.device).value();
    }
    for (size_t k = 0; k < 3; ++k) times[k].push_back(t[k]);
  }
  return times;
}

// (a) Without contention, the order the engine picks at run time is the one schedule.hpp's
// async_pipeline_order computes from the same pass times (tests/models/schedule_test.cpp draws it
// for 4 x 8), for every schedule async applies to: the engine decides as the model does. With only
// the layers' GEMMs costing anything, GPipe's and 1F1B's passes take times proportional to the
// layers, which is the order the builder computes (the pool's default order); a split backward's B
// (data gradients and the attention core's backward) takes longer than its W (weight gradients
// only), which the builder's equal costs do not know: at run time zero-bubble stages order by the
// real times.
TEST(AsyncPipeline, UncontendedRunTimeOrderIsTheScheduleModelsOrder) {
  const int p = 4, m = 8;
  for (models::PipelineSchedule schedule : {models::PipelineSchedule::GPIPE, models::PipelineSchedule::ONE_F_ONE_B,
                                            models::PipelineSchedule::ZERO_BUBBLE_H1,
                                            models::PipelineSchedule::ZERO_BUBBLE_H2}) {
    SCOPED_TRACE(models::to_string(schedule));
    auto s = make_setup(schedule, p, 1, m);
    s.parallelism.execution = models::PipelineExecution::ASYNC;
    const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism);
    engine::SimulationOptions options;
    for (int r = 0; r < p; ++r) options.timeline_ranks.push_back(r);
    const engine::SimulationResult r = engine::make_analytic_backend()->run(built.workload, s.cluster, s.profile, options);
    const bool split = models::splits_backward(schedule);
    const auto [fwd, bwd, wgt] = pass_times(built, s);
    const auto expected = models::async_pipeline_order(schedule, p, m, fwd, bwd, split ? wgt : std::vector<double>{});
    const auto executed = executed_order(built, r);
    if (!split) {
      // The builder's layer-proportional model (a layer per unit, backward 2, the output head
      // V/(12h) layers on the last stage) gives the same order: the pool's default order.
      const double head = static_cast<double>(s.model.vocab) / (12.0 * static_cast<double>(s.model.hidden));
      std::vector<double> layers(p, 2.0), twice(p, 4.0);
      layers.back() += head;
      twice.back() += 2 * head;
      const auto model = models::async_pipeline_order(schedule, p, m, layers, twice, {});
      for (size_t stage = 0; stage < expected.size(); ++stage) EXPECT_EQ(describe(model[stage]), describe(expected[stage]));
    }
    ASSERT_EQ(executed.size(), expected.size());
    for (size_t stage = 0; stage < expected.size(); ++stage) {
      EXPECT_EQ(describe(executed[stage]), describe(expected[stage])) << "stage " << stage;
    }
  }
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// Ranks that share a communicator called from both forward and backward blocks (the tensor group
// of every layer; with ZeRO-3 the data-parallel group of the parameter gathers too) decide their
// order together, so that they issue the same collectives in the same order. Simulated each on its
// own (no symmetry) they give the representatives' result exactly, and every rank of a stage runs
// its passes in one order.
TEST(AsyncPipeline, RanksSharingACommunicatorDecideTogether) {
  for (int zero : {0, 3}) {
    SCOPED_TRACE("zero_stage " + std::to_string(zero));
    auto s = make_setup(models::PipelineSchedule::ONE_F_ONE_B, 4, 1, 8);
    s.parallelism.execution = models::PipelineExecution::ASYNC;
    s.parallelism.tensor = 2;
    s.parallelism.sequence_parallel = true;
    s.parallelism.data = zero == 3 ? 2 : 1;
    s.parallelism.zero_stage = zero;
    s.training.global_batch = 8 * s.parallelism.data;
    s.cluster.gpus_per_node = s.parallelism.world_size();
    s.cluster.intra_node.bandwidth = core::BytesPerSecond(300e9);
    s.cluster.intra_node.latency = core::Seconds(1e-6);
    s.profile.network.intra_node.step_latency = core::Seconds(1e-6);
    const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism);
    engine::SimulationOptions options;
    for (int r = 0; r < s.parallelism.world_size(); ++r) options.timeline_ranks.push_back(r);
    const engine::SimulationResult mirrored = engine::make_analytic_backend()->run(built.workload, s.cluster, s.profile, options);
    options.use_symmetry = false;
    const engine::SimulationResult full = engine::make_analytic_backend()->run(built.workload, s.cluster, s.profile, options);
    EXPECT_EQ(full.simulated_ranks, s.parallelism.world_size());
    EXPECT_LT(mirrored.simulated_ranks, full.simulated_ranks);
    EXPECT_DOUBLE_EQ(full.iteration_time.value(), mirrored.iteration_time.value());
    EXPECT_EQ(full.peak_dynamic_by_program, mirrored.peak_dynamic_by_program);
    const auto orders = executed_order(built, full);
    const auto mirrored_orders = executed_order(built, mirrored);
    for (int r = 0; r < s.parallelism.world_size(); ++r) {
      const int stage = built.workload.layout.coord(r, core::Axis::PIPELINE);
      const int first = built.workload.layout.rank_of({0, 0, 0, 0, stage});
      EXPECT_EQ(describe(orders[static_cast<size_t>(r)]), describe(orders[static_cast<size_t>(first)])) << "rank " << r;
      EXPECT_EQ(describe(orders[static_cast<size_t>(r)]), describe(mirrored_orders[static_cast<size_t>(r)])) << "rank " << r;
    }
  }
}

// Without symmetry to fall back on: TP2 PP3 on two nodes of 3 GPUs puts tensor rank 0 of stages 0
// and 1 in node 0 and tensor rank 1 of stages 1 and 2 in node 1, so each tensor rank of stage 1 gets
// one of its inputs (activations or gradients) over a slow network and the other from its own node.
// Deciding alone, the two would pick different passes at times (without the team rule, both cases
// below run their tensor collectives in different orders on the two ranks); deciding together, on
// the later arrival of each input, they issue the same passes.
TEST(AsyncPipeline, TensorRanksWithInputsAtDifferentTimesIssueTheSamePasses) {
  struct Case {
    models::PipelineSchedule schedule;
    int micro_batches;
    double nic_bandwidth;
  };
  for (const Case& c : {Case{models::PipelineSchedule::GPIPE, 12, 1e9}, Case{models::PipelineSchedule::ZERO_BUBBLE_H1, 6, 1e11}}) {
    SCOPED_TRACE(models::to_string(c.schedule));
    auto s = make_setup(c.schedule, 3, 1, c.micro_batches);
    s.parallelism.execution = models::PipelineExecution::ASYNC;
    s.parallelism.tensor = 2;
    s.cluster.nodes = 2;
    s.cluster.gpus_per_node = 3;
    s.cluster.network.nic_bandwidth = core::BytesPerSecond(c.nic_bandwidth);
    s.cluster.intra_node.bandwidth = core::BytesPerSecond(300e9);
    const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism);
    engine::SimulationOptions options;
    for (int r = 0; r < 6; ++r) options.timeline_ranks.push_back(r);
    const engine::SimulationResult r = engine::make_analytic_backend()->run(built.workload, s.cluster, s.profile, options);
    EXPECT_EQ(r.simulated_ranks, 6);
    const auto orders = executed_order(built, r);
    for (int stage = 0; stage < 3; ++stage) {
      EXPECT_EQ(describe(orders[static_cast<size_t>(2 * stage)]), describe(orders[static_cast<size_t>(2 * stage + 1)]))
          << "stage " << stage;
    }
  }
}

}  // namespace
}  // namespace trainsim
