#include "models/strategy.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

// Every problem check_strategy() records, as "pointer: message".
std::vector<std::string> problems(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p, int world) {
  core::Diagnostics diag;
  check_strategy(m, t, p, world, "s.json", diag);
  std::vector<std::string> out;
  for (const core::InputProblem& x : diag.problems()) {
    EXPECT_EQ(x.file, "s.json");
    out.push_back(x.pointer + ": " + x.message);
  }
  return out;
}

using Lines = std::vector<std::string>;

class CheckStrategy : public ::testing::Test {
 protected:
  CheckStrategy() {
    gpt = *find_model("gpt3-175b");
    training.global_batch = 1536;
    par.tensor = 8;
    par.pipeline = 8;
    par.data = 16;
  }
  ModelSpec gpt;
  TrainingConfig training;
  ParallelismConfig par;
};

TEST_F(CheckStrategy, Gpt3OnSeleneIsValid) { EXPECT_EQ(problems(gpt, training, par, 1024), Lines{}); }

TEST_F(CheckStrategy, TensorMustDivideHeadsKvHeadsAndFfn) {
  par.tensor = 7;
  par.data = 1;
  training.global_batch = 7;
  EXPECT_EQ(problems(gpt, training, par, 56),
            (Lines{"/parallelism/tensor: tensor parallelism 7 must divide heads (96)",
                   "/parallelism/tensor: tensor parallelism 7 must divide kv_heads (96)",
                   "/parallelism/tensor: tensor parallelism 7 must divide ffn_hidden (49152)"}));
  ModelSpec llama = *find_model("llama3-70b");
  par.tensor = 16;
  EXPECT_EQ(problems(llama, training, par, 128),
            (Lines{"/parallelism/tensor: tensor parallelism 16 must divide kv_heads (8)"}));
}

TEST_F(CheckStrategy, ChunksMustNotExceedLayers) {
  gpt.layers = 12;
  par.schedule = PipelineSchedule::INTERLEAVED_1F1B;
  par.virtual_stages = 2;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/pipeline: pipeline x virtual_stages (8 x 2 = 16 model chunks) must not exceed "
                   "layers (12)"}));
}

TEST_F(CheckStrategy, StageLayersLengthEntriesAndSum) {
  par.stage_layers = {12, 12, 12, 12, 12, 12, 24};
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/stage_layers: stage_layers has 7 entries, expected pipeline x virtual_stages = "
                   "8 x 1 = 8"}));
  par.stage_layers = {12, 12, 12, 0, 12, 12, 12, 12};
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/stage_layers/3: every model chunk needs at least 1 layer, found 0",
                   "/parallelism/stage_layers: stage_layers sum to 84, expected the model's layers (96)"}));
}

TEST_F(CheckStrategy, VirtualStagesNeedTheInterleavedScheduleAndPipeline) {
  par.virtual_stages = 2;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/virtual_stages: virtual_stages 2 requires pipeline_schedule "
                   "\"interleaved-1f1b\", found \"1f1b\""}));
  par.schedule = PipelineSchedule::INTERLEAVED_1F1B;
  par.pipeline = 1;
  par.data = 128;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/virtual_stages: virtual_stages 2 requires pipeline > 1, found pipeline 1"}));
}

TEST_F(CheckStrategy, InterleavedNeedsMicroBatchesDivisibleByPipeline) {
  // Megatron-LM asserts num_microbatches % pipeline_model_parallel_size == 0 for the interleaved
  // schedule.
  par.schedule = PipelineSchedule::INTERLEAVED_1F1B;
  par.virtual_stages = 2;
  training.global_batch = 16 * 12;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/training/global_batch: interleaved-1f1b with virtual_stages 2 needs the micro-batch count "
                   "(global_batch 192 / 16 = 12) to be a multiple of pipeline (8)"}));
}

TEST_F(CheckStrategy, WorldSizeMustMatchTheProduct) {
  EXPECT_EQ(problems(gpt, training, par, 512),
            (Lines{"/parallelism: tensor x pipeline x data x context x expert = 8 x 8 x 16 x 1 x 1 = 1024 must "
                   "equal the cluster's GPU count (512)"}));
}

TEST_F(CheckStrategy, GlobalBatchMustBeDivisibleByTheReplicas) {
  training.global_batch = 1000;
  training.micro_batch = 2;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/training/global_batch: global_batch 1000 must be divisible by micro_batch x data x expert = "
                   "2 x 16 x 1 = 32"}));
}

TEST_F(CheckStrategy, ContextMustDivideTheSequence) {
  par.context = 3;
  par.data = 1;
  training.global_batch = 8;
  EXPECT_EQ(problems(gpt, training, par, 192),
            (Lines{"/parallelism/context: context parallelism 3 must divide sequence_length (2048)"}));
}

TEST_F(CheckStrategy, SequenceParallelNeedsTheSequenceSplittable) {
  training.sequence_length = 2044;
  par.sequence_parallel = true;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/tensor: tensor parallelism 8 must divide the sequence length per context rank "
                   "(2044) with sequence_parallel"}));
}

TEST_F(CheckStrategy, ExpertParallelismNeedsAnMoEModelWithDivisibleExperts) {
  par.expert = 2;
  par.data = 8;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            (Lines{"/parallelism/expert: expert parallelism 2 needs an MoE model (experts > 1), found experts 1"}));
  ModelSpec moe = gpt;
  moe.experts = 6;
  moe.top_k = 2;
  par.expert = 4;
  par.data = 4;
  par.sequence_parallel = true;
  EXPECT_EQ(problems(moe, training, par, 1024),
            (Lines{"/parallelism/expert: expert parallelism 4 must divide experts (6)"}));
  par.sequence_parallel = false;
  moe.experts = 8;
  EXPECT_EQ(problems(moe, training, par, 1024),
            (Lines{"/parallelism/sequence_parallel: an MoE model with tensor parallelism 8 needs "
                   "sequence_parallel true (as in Megatron-LM), found false"}));
}

// moe_a2a_overlap: Megatron-core's requirements are checked when it is given, and when it is not it
// defaults to true exactly where they hold.
TEST_F(CheckStrategy, MoeA2aOverlapRequirementsAndDefault) {
  ModelSpec moe = gpt;
  moe.experts = 8;
  moe.top_k = 2;
  par.expert = 4;
  par.data = 4;
  par.sequence_parallel = true;
  par.recompute = Recompute::FULL;
  ASSERT_EQ(problems(moe, training, par, 1024), Lines{});  // 1f1b, recompute full
  resolve_defaults(moe, par);
  EXPECT_FALSE(par.moe_a2a_overlap);
  par.moe_a2a_overlap = true;
  par.moe_a2a_overlap_given = true;
  EXPECT_EQ(problems(moe, training, par, 1024),
            (Lines{"/parallelism/moe_a2a_overlap: moe_a2a_overlap with pipeline 8 needs pipeline_schedule "
                   "\"interleaved-1f1b\" (as in Megatron-core), found \"1f1b\"",
                   "/parallelism/moe_a2a_overlap: moe_a2a_overlap does not run with recompute \"full\" "
                   "(Megatron-core rejects it): use \"selective\" or \"none\""}));
  par.schedule = PipelineSchedule::INTERLEAVED_1F1B;
  par.virtual_stages = 2;
  par.recompute = Recompute::SELECTIVE;
  EXPECT_EQ(problems(moe, training, par, 1024), Lines{});
  par.moe_a2a_overlap = false;
  par.moe_a2a_overlap_given = false;
  resolve_defaults(moe, par);
  EXPECT_TRUE(par.moe_a2a_overlap);
  resolve_defaults(gpt, par);  // dense: never
  EXPECT_FALSE(par.moe_a2a_overlap);
  par.moe_a2a_overlap_given = true;  // given false stays false
  resolve_defaults(moe, par);
  EXPECT_FALSE(par.moe_a2a_overlap);
}

TEST_F(CheckStrategy, ReportsEveryProblemAtOnce) {
  par.tensor = 5;
  par.context = 3;
  EXPECT_EQ(problems(gpt, training, par, 1024).size(), 5u);
}

TEST(StrategyJson, ReadsEveryKeyAndRoundTrips) {
  const core::Json j = core::parse_json_text(R"({
      "tensor": 4, "pipeline": 4, "data": 2, "context": 2, "expert": 1, "sequence_parallel": true,
      "pipeline_schedule": "interleaved-1f1b", "virtual_stages": 2, "stage_layers": [3, 3, 3, 3, 3, 3, 3, 3],
      "recompute": "selective", "zero_stage": 1, "bucket_size": "25 MB", "overlap_grad_reduce": false})",
                                             "s.json");
  core::Diagnostics diag;
  core::ObjectReader r(j, "s.json", "/parallelism", diag);
  const ParallelismConfig p = ParallelismConfig::from_json(r);
  ASSERT_TRUE(diag.empty()) << diag.problems()[0].to_string();
  EXPECT_EQ(p.world_size(), 64);
  EXPECT_EQ(p.schedule, PipelineSchedule::INTERLEAVED_1F1B);
  EXPECT_EQ(p.recompute, Recompute::SELECTIVE);
  EXPECT_EQ(p.bucket_size.value(), 25e6);
  EXPECT_FALSE(p.overlap_grad_reduce);
  const core::Json again = p.to_json();
  core::ObjectReader r2(again, "x", "/parallelism", diag);
  EXPECT_EQ(ParallelismConfig::from_json(r2).to_json(), again);
  EXPECT_TRUE(diag.empty());
}

ParallelismConfig read_parallelism(const std::string& text, core::Diagnostics& diag) {
  const core::Json j = core::parse_json_text(text, "s.json");
  core::ObjectReader r(j, "s.json", "/parallelism", diag);
  return ParallelismConfig::from_json(r);
}

TEST(StrategyJson, ZeroImplementationDefaultsFollowTheStage) {
  core::Diagnostics diag;
  ParallelismConfig p = read_parallelism(R"({"zero_stage": 1})", diag);
  EXPECT_EQ(p.zero_impl, ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER);
  EXPECT_TRUE(p.overlap_param_gather);
  EXPECT_TRUE(p.overlap_grad_reduce);
  EXPECT_EQ(p.bucket_elements(), 40e6 / 4);
  p = read_parallelism(R"({"zero_stage": 3})", diag);
  EXPECT_EQ(p.zero_impl, ZeroImpl::FSDP);
  EXPECT_EQ(p.prefetch, 1);
  EXPECT_FALSE(p.overlap_param_gather);
  p = read_parallelism(R"({"zero_stage": 2, "zero_impl": "deepspeed"})", diag);
  EXPECT_FALSE(p.overlap_param_gather) << "DeepSpeed gathers after the step";
  EXPECT_FALSE(p.overlap_grad_reduce) << "DeepSpeed's overlap_comm defaults to false below stage 3";
  EXPECT_EQ(p.bucket_elements(), 5e8) << "reduce_bucket_size";
  p = read_parallelism(R"({"zero_stage": 2, "zero_impl": "fsdp"})", diag);
  EXPECT_TRUE(p.shard_grad_op()) << "FSDP1 SHARD_GRAD_OP";
  EXPECT_TRUE(p.gathers_parameters());
  EXPECT_EQ(p.prefetch, 1);
  EXPECT_FALSE(p.overlap_param_gather) << "gathered in each forward, not after the step";
  EXPECT_EQ(implied_stack(p), core::Stack::FSDP);
  p = read_parallelism(R"({"zero_stage": 2, "zero_impl": "fsdp2", "prefetch": 0})", diag);
  EXPECT_TRUE(p.shard_grad_op()) << "fully_shard(reshard_after_forward=False)";
  EXPECT_EQ(p.prefetch, 0);
  EXPECT_EQ(implied_stack(p), core::Stack::TORCHTITAN);
  p = read_parallelism(R"({"zero_stage": 3, "zero_impl": "deepspeed"})", diag);
  EXPECT_EQ(p.prefetch, -1) << "resolved from the layer size by the workload builder";
  EXPECT_TRUE(p.overlap_grad_reduce);
  p = read_parallelism(R"({"zero_stage": 3, "zero_impl": "fsdp2", "prefetch": 2, "tp_comm_overlap": true})", diag);
  EXPECT_EQ(p.prefetch, 2);
  EXPECT_TRUE(p.tp_comm_overlap);
  EXPECT_FALSE(p.tp_overlap_active()) << "no sequence parallelism";
  ASSERT_TRUE(diag.empty()) << diag.problems()[0].to_string();
  const core::Json again = p.to_json();
  core::ObjectReader r2(again, "x", "/parallelism", diag);
  EXPECT_EQ(ParallelismConfig::from_json(r2).to_json(), again);
  p = read_parallelism(R"({"zero_stage": 1, "zero_impl": "deepspeed"})", diag);
  const core::Json ds = p.to_json();
  core::ObjectReader r3(ds, "x", "/parallelism", diag);
  EXPECT_NEAR(ParallelismConfig::from_json(r3).bucket_elements(), 5e8, 5e8 * 1e-4);  // format_bytes rounds
  EXPECT_TRUE(diag.empty());
}

TEST(StrategyJson, ZeroKeysThatMeanNothingForTheStageAreErrors) {
  core::Diagnostics diag;
  read_parallelism(R"({"zero_impl": "fsdp", "prefetch": -1, "overlap_param_gather": true})", diag);
  read_parallelism(R"({"zero_stage": 1, "zero_impl": "fsdp2"})", diag);
  read_parallelism(R"({"zero_stage": 2, "zero_impl": "fsdp", "overlap_param_gather": true})", diag);
  read_parallelism(R"({"zero_stage": 3, "zero_impl": "megatron-distributed-optimizer", "overlap_param_gather": false})", diag);
  std::vector<std::string> got;
  for (const core::InputProblem& p : diag.problems()) got.push_back(p.to_string());
  EXPECT_EQ(got, (Lines{
      "s.json: /parallelism/zero_impl: zero_impl needs zero_stage 1, 2 or 3 (nothing is sharded at zero_stage 0), "
      "found zero_stage 0",
      "s.json: /parallelism/overlap_param_gather: overlap_param_gather applies to zero_stage 1 or 2 (all-gather of "
      "the updated parameters), found zero_stage 0",
      "s.json: /parallelism/prefetch: prefetch applies to zero_stage 3 or FSDP's zero_stage 2 (parameter gathers), "
      "found zero_stage 0",
      "s.json: /parallelism/prefetch: expected an integer in [0, 1048576], found -1",
      "s.json: /parallelism/zero_impl: \"fsdp2\" shards parameters: it needs zero_stage 3 (FULL_SHARD) or 2 "
      "(SHARD_GRAD_OP), found zero_stage 1",
      "s.json: /parallelism/overlap_param_gather: overlap_param_gather applies to the updated parameters' all-gather "
      "after the step; \"fsdp\" at zero_stage 2 (SHARD_GRAD_OP) gathers them unit by unit in each forward instead",
      "s.json: /parallelism/zero_impl: \"megatron-distributed-optimizer\" shards optimizer states and gradients "
      "only: it needs zero_stage 1 or 2, found zero_stage 3 (use \"fsdp\", \"fsdp2\" or \"deepspeed\")",
      "s.json: /parallelism/overlap_param_gather: overlap_param_gather applies to zero_stage 1 or 2 (all-gather of "
      "the updated parameters), found zero_stage 3"}));
}

TEST(StrategyJson, TrainingRequiresGlobalBatchAndRejectsUnknownKeys) {
  const core::Json j = core::parse_json_text(R"({"sequence_length": 4096, "precision": "bf61", "micro_bach": 2})", "s.json");
  core::Diagnostics diag;
  core::ObjectReader r(j, "s.json", "/training", diag);
  TrainingConfig::from_json(r);
  std::vector<std::string> got;
  for (const core::InputProblem& p : diag.problems()) got.push_back(p.to_string());
  EXPECT_EQ(got, (Lines{"s.json: /training/global_batch: missing required integer",
                        "s.json: /training/precision: expected one of \"fp32\", \"tf32\", \"bf16\", \"fp16\" or "
                        "\"fp8\", found \"bf61\" (did you mean \"bf16\"?)",
                        "s.json: /training/micro_bach: unknown key \"micro_bach\" (did you mean \"micro_batch\"?)"}));
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

ParallelismConfig parse_parallelism(const core::Json& doc, std::optional<core::Stack> stack, Lines& errors) {
  core::Diagnostics diag;
  core::ObjectReader r(doc, "s.json", "/parallelism", diag);
  ParallelismConfig p = ParallelismConfig::from_json(r, stack);
  for (const core::InputProblem& x : diag.problems()) errors.push_back(x.pointer + ": " + x.message);
  return p;
}

// training.stack: the layouts each stack runs (stack_unsupported), checked only when it is given.
TEST_F(CheckStrategy, AGivenStackRefusesTheLayoutsItCannotRun) {
  // GPT-3 on Selene (TP8 PP8 DP16, no ZeRO) is a Megatron layout, and no other stack's.
  training.stack = core::Stack::MEGATRON;
  EXPECT_EQ(problems(gpt, training, par, 1024), Lines{});
  training.stack = core::Stack::COMPOSER;
  EXPECT_EQ(problems(gpt, training, par, 1024),
            Lines{"/training/stack: stack \"composer\" runs data parallelism only (FSDP or DDP): tensor, pipeline, "
                  "context and expert parallelism are not available"});
  // Composer with FSDP1 over all 1,024 GPUs runs; with FSDP2 it does not.
  ParallelismConfig fsdp;
  fsdp.data = 1024;
  fsdp.zero_stage = 3;
  fsdp.zero_impl = ZeroImpl::FSDP;
  training.global_batch = 2048;
  EXPECT_EQ(problems(gpt, training, fsdp, 1024), Lines{});
  fsdp.zero_impl = ZeroImpl::FSDP2;
  EXPECT_EQ(problems(gpt, training, fsdp, 1024),
            Lines{"/training/stack: stack \"composer\" runs PyTorch FSDP (zero_impl \"fsdp\": FULL_SHARD at stage three, "
                  "SHARD_GRAD_OP at two) or DDP, "
                  "found zero_stage 3 with zero_impl \"fsdp2\""});
  training.stack = core::Stack::TORCHTITAN;
  EXPECT_EQ(problems(gpt, training, fsdp, 1024), Lines{});
  // Megatron has no ZeRO-3; without a stack every layout is accepted, priced by the one it implies.
  training.stack = core::Stack::MEGATRON;
  EXPECT_EQ(problems(gpt, training, fsdp, 1024).size(), 1u);
  training.stack.reset();
  EXPECT_EQ(problems(gpt, training, fsdp, 1024), Lines{});
  EXPECT_EQ(implied_stack(fsdp), core::Stack::TORCHTITAN);
  fsdp.zero_impl = ZeroImpl::FSDP;
  EXPECT_EQ(implied_stack(fsdp), core::Stack::FSDP);
  EXPECT_EQ(implied_stack(par), core::Stack::MEGATRON);
  EXPECT_EQ(resolved_stack(training, par), core::Stack::MEGATRON);
  training.stack = core::Stack::DDP;
  EXPECT_EQ(resolved_stack(training, par), core::Stack::DDP);
}

// Megatron-core runs 1F1B with or without interleaving; torch.distributed.pipelining (torchtitan)
// has GPipe, 1F1B, interleaved and zero-bubble schedules that flush every step.
TEST_F(CheckStrategy, MegatronAndTorchtitanRunTheirOwnPipelineSchedules) {
  ParallelismConfig pp = par;  // TP8 PP8 DP16
  const auto runs = [&](core::Stack stack, PipelineSchedule s) {
    pp.schedule = s;
    return stack_runs(stack, pp);
  };
  for (PipelineSchedule s : {PipelineSchedule::ONE_F_ONE_B, PipelineSchedule::INTERLEAVED_1F1B}) {
    EXPECT_TRUE(runs(core::Stack::MEGATRON, s));
    EXPECT_TRUE(runs(core::Stack::TORCHTITAN, s));
  }
  for (PipelineSchedule s : {PipelineSchedule::GPIPE, PipelineSchedule::ZERO_BUBBLE_H1}) {
    EXPECT_FALSE(runs(core::Stack::MEGATRON, s)) << to_string(s);
    EXPECT_TRUE(runs(core::Stack::TORCHTITAN, s)) << to_string(s);
  }
  for (PipelineSchedule s :
       {PipelineSchedule::PIPEDREAM, PipelineSchedule::PIPEDREAM_2BW, PipelineSchedule::ZERO_BUBBLE_H2}) {
    EXPECT_FALSE(runs(core::Stack::MEGATRON, s)) << to_string(s);
    EXPECT_FALSE(runs(core::Stack::TORCHTITAN, s)) << to_string(s);
  }
  training.stack = core::Stack::MEGATRON;
  pp.schedule = PipelineSchedule::GPIPE;
  EXPECT_EQ(problems(gpt, training, pp, 1024),
            Lines{"/training/stack: stack \"megatron\" runs pipeline_schedule \"1f1b\" or \"interleaved-1f1b\" under "
                  "pipeline parallelism (Megatron-core's forward_backward_pipelining_without / with_interleaving)"});
  // Without a pipeline the schedule is moot; without a given stack every schedule is accepted.
  pp.pipeline = 1;
  pp.data = 128;
  EXPECT_TRUE(stack_runs(core::Stack::MEGATRON, pp));
  pp.pipeline = 8;
  pp.data = 16;
  training.stack.reset();
  EXPECT_EQ(problems(gpt, training, pp, 1024), Lines{});
}

// DeepSpeed's PipelineEngine asserts ZeRO stage < 2: ZeRO-1 runs under a pipeline, ZeRO-2 and -3
// only without one.
TEST_F(CheckStrategy, DeepSpeedRunsOnlyZeroOneUnderAPipeline) {
  ParallelismConfig ds;
  ds.pipeline = 8;
  ds.data = 128;
  ds.zero_impl = ZeroImpl::DEEPSPEED;
  training.stack = core::Stack::DEEPSPEED;
  training.global_batch = 2048;
  for (int stage : {1, 2, 3}) {
    ds.zero_stage = stage;
    const Lines got = problems(gpt, training, ds, 1024);
    if (stage == 1) {
      EXPECT_EQ(got, Lines{});
    } else {
      EXPECT_EQ(got, Lines{fmt::format("/training/stack: stack \"deepspeed\" runs ZeRO stage zero or one under pipeline "
                                       "parallelism (its PipelineEngine: \"ZeRO-2 and ZeRO-3 are incompatible with "
                                       "pipeline parallelism\"), found zero_stage {} with zero_impl \"deepspeed\"",
                                       stage)});
    }
    EXPECT_EQ(stack_runs(core::Stack::DEEPSPEED, ds), stage == 1) << stage;
  }
  // Its one training schedule, TrainSchedule, is 1F1B over one model chunk per stage.
  ds.zero_stage = 1;
  ds.schedule = PipelineSchedule::INTERLEAVED_1F1B;
  ds.virtual_stages = 2;
  EXPECT_EQ(problems(gpt, training, ds, 1024),
            Lines{"/training/stack: stack \"deepspeed\" runs pipeline_schedule \"1f1b\" with one model chunk per stage "
                  "(its TrainSchedule) under pipeline parallelism"});
  ds.schedule = PipelineSchedule::GPIPE;
  ds.virtual_stages = 1;
  EXPECT_FALSE(stack_runs(core::Stack::DEEPSPEED, ds));
  ds.pipeline = 1;
  ds.data = 1024;
  ds.zero_stage = 3;
  EXPECT_TRUE(stack_runs(core::Stack::DEEPSPEED, ds)) << "ZeRO-3 without a pipeline (the schedule is moot)";
}

// The stack sets parallelism defaults: torchtitan shards with FSDP2, DeepSpeed with its ZeRO,
// Composer's FSDP1 prefetches backward gathers after the gradients (BACKWARD_POST).
TEST(StackDefaults, ZeroImplAndBackwardPrefetch) {
  Lines errors;
  const core::Json zero3 = {{"data", 8}, {"zero_stage", 3}};
  EXPECT_EQ(parse_parallelism(zero3, std::nullopt, errors).zero_impl, ZeroImpl::FSDP);
  EXPECT_EQ(parse_parallelism(zero3, core::Stack::TORCHTITAN, errors).zero_impl, ZeroImpl::FSDP2);
  EXPECT_EQ(parse_parallelism(zero3, core::Stack::DEEPSPEED, errors).zero_impl, ZeroImpl::DEEPSPEED);
  EXPECT_FALSE(parse_parallelism(zero3, std::nullopt, errors).backward_prefetch_post);
  EXPECT_TRUE(parse_parallelism(zero3, core::Stack::COMPOSER, errors).backward_prefetch_post);
  // Stage 2 under a PyTorch stack is its SHARD_GRAD_OP; without one, Megatron's distributed optimizer.
  const core::Json zero2 = {{"data", 8}, {"zero_stage", 2}};
  EXPECT_EQ(parse_parallelism(zero2, std::nullopt, errors).zero_impl, ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER);
  EXPECT_EQ(parse_parallelism(zero2, core::Stack::COMPOSER, errors).zero_impl, ZeroImpl::FSDP);
  EXPECT_EQ(parse_parallelism(zero2, core::Stack::FSDP, errors).zero_impl, ZeroImpl::FSDP);
  EXPECT_EQ(parse_parallelism(zero2, core::Stack::TORCHTITAN, errors).zero_impl, ZeroImpl::FSDP2);
  EXPECT_FALSE(parse_parallelism(zero2, core::Stack::COMPOSER, errors).backward_prefetch_post) << "nothing gathered in backward";
  core::Json pre = zero3;
  pre["backward_prefetch"] = "pre";
  EXPECT_FALSE(parse_parallelism(pre, core::Stack::COMPOSER, errors).backward_prefetch_post);
  EXPECT_EQ(errors, Lines{});
  // The reduce dtype: Composer (mixed_precision DEFAULT) and torchtitan (mixed_precision_reduce
  // float32) reduce in fp32; PyTorch FSDP and DeepSpeed in the 16-bit dtype; given, it wins.
  EXPECT_TRUE(parse_parallelism(zero3, core::Stack::COMPOSER, errors).reduce_fp32());
  EXPECT_TRUE(parse_parallelism(zero3, core::Stack::TORCHTITAN, errors).reduce_fp32());
  EXPECT_FALSE(parse_parallelism(zero3, core::Stack::FSDP, errors).reduce_fp32());
  EXPECT_FALSE(parse_parallelism(zero3, core::Stack::DEEPSPEED, errors).reduce_fp32());
  EXPECT_FALSE(parse_parallelism(zero3, std::nullopt, errors).reduce_fp32());
  core::Json pure = zero3;
  pure["reduce_dtype"] = "bf16";
  EXPECT_FALSE(parse_parallelism(pure, core::Stack::COMPOSER, errors).reduce_fp32());
  pure["reduce_dtype"] = "fp32";
  EXPECT_TRUE(parse_parallelism(pure, std::nullopt, errors).reduce_fp32());
  EXPECT_FALSE(parse_parallelism(zero2, std::nullopt, errors).framework_reduce()) << "Megatron's fp32 main gradients";
  EXPECT_EQ(errors, Lines{});
  const core::Json megatron = {{"data", 8}, {"zero_stage", 1}, {"reduce_dtype", "fp32"}};
  parse_parallelism(megatron, std::nullopt, errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("/parallelism/reduce_dtype: reduce_dtype is the dtype of FSDP's, FSDP2's or DeepSpeed's"),
            std::string::npos) << errors[0];
  errors.clear();
  const core::Json zero1 = {{"data", 8}, {"zero_stage", 1}, {"backward_prefetch", "post"}};
  parse_parallelism(zero1, std::nullopt, errors);
  EXPECT_EQ(errors, Lines{"/parallelism/backward_prefetch: backward_prefetch is FSDP1's option: it needs zero_stage 3 "
                          "with zero_impl \"fsdp\", found zero_stage 1 (megatron-distributed-optimizer)"});
}

// recompute_early_stop: the stacks whose checkpoint is non-reentrant stop early by default; it means
// something only with recompute "full", and Megatron's reentrant CheckpointFunction never does.
TEST(ParseParallelism, RecomputeEarlyStopFollowsTheStacksCheckpoint) {
  Lines errors;
  const core::Json full = {{"recompute", "full"}};
  EXPECT_TRUE(parse_parallelism(full, core::Stack::TORCHTITAN, errors).recompute_early_stop);
  EXPECT_TRUE(parse_parallelism(full, core::Stack::FSDP, errors).recompute_early_stop);
  EXPECT_TRUE(parse_parallelism(full, core::Stack::DDP, errors).recompute_early_stop);
  EXPECT_FALSE(parse_parallelism(full, core::Stack::COMPOSER, errors).recompute_early_stop);
  EXPECT_FALSE(parse_parallelism(full, core::Stack::DEEPSPEED, errors).recompute_early_stop);
  EXPECT_FALSE(parse_parallelism(full, core::Stack::MEGATRON, errors).recompute_early_stop);
  EXPECT_FALSE(parse_parallelism(full, std::nullopt, errors).recompute_early_stop);
  EXPECT_FALSE(parse_parallelism({{"recompute", "selective"}}, core::Stack::TORCHTITAN, errors).recompute_early_stop);
  core::Json given = full;
  given["recompute_early_stop"] = false;
  EXPECT_FALSE(parse_parallelism(given, core::Stack::TORCHTITAN, errors).recompute_early_stop);
  given["recompute_early_stop"] = true;
  const ParallelismConfig composer = parse_parallelism(given, core::Stack::COMPOSER, errors);
  EXPECT_TRUE(composer.recompute_early_stop);
  EXPECT_EQ(composer.to_json()["recompute_early_stop"], true);
  EXPECT_FALSE(parse_parallelism({{"recompute", "none"}}, std::nullopt, errors).to_json().contains("recompute_early_stop"));
  EXPECT_EQ(errors, Lines{});
  parse_parallelism(given, core::Stack::MEGATRON, errors);
  parse_parallelism({{"recompute", "selective-op"}, {"recompute_early_stop", true}}, core::Stack::TORCHTITAN, errors);
  EXPECT_EQ(errors,
            (Lines{"/parallelism/recompute_early_stop: training.stack \"megatron\" re-runs each recomputed layer whole "
                   "(Megatron-LM's reentrant CheckpointFunction, tensor_parallel.checkpoint): recompute_early_stop needs a "
                   "PyTorch stack's non-reentrant checkpoint",
                   "/parallelism/recompute_early_stop: recompute_early_stop applies to a full recomputation (PyTorch's "
                   "non-reentrant checkpoint of each layer): it needs recompute \"full\", found \"selective-op\""}));
}

// gradient_buffers: FSDP's and FSDP2's stacks free the gradients after each step by default (their
// zero_grad(set_to_none=True)); Megatron's, DeepSpeed's and DDP's buffers persist, and an absent
// stack keeps today's persistent accounting. Written back whenever given or "per-step", so that a
// resolved scenario reads back the same under any stack.
TEST(ParseParallelism, GradientBuffersFollowTheStack) {
  Lines errors;
  const core::Json none = core::Json::object();
  const std::vector<std::pair<std::optional<core::Stack>, bool>> defaults = {
      {core::Stack::TORCHTITAN, true}, {core::Stack::FSDP, true},      {core::Stack::COMPOSER, true}, {core::Stack::DDP, false},
      {core::Stack::DEEPSPEED, false}, {core::Stack::MEGATRON, false}, {std::nullopt, false}};
  for (const auto& [stack, per_step] : defaults) {
    EXPECT_EQ(parse_parallelism(none, stack, errors).gradients_per_step, per_step) << (stack ? core::to_string(*stack) : "none");
  }
  EXPECT_FALSE(parse_parallelism(none, std::nullopt, errors).to_json().contains("gradient_buffers"));
  EXPECT_EQ(parse_parallelism(none, core::Stack::TORCHTITAN, errors).to_json()["gradient_buffers"], "per-step");
  const ParallelismConfig kept = parse_parallelism({{"gradient_buffers", "persistent"}}, core::Stack::TORCHTITAN, errors);
  EXPECT_FALSE(kept.gradients_per_step);
  EXPECT_EQ(kept.to_json()["gradient_buffers"], "persistent");
  EXPECT_TRUE(parse_parallelism({{"gradient_buffers", "per-step"}}, core::Stack::DDP, errors).gradients_per_step);
  EXPECT_EQ(errors, Lines{});
  parse_parallelism({{"gradient_buffers", "per-step"}}, core::Stack::DEEPSPEED, errors);
  parse_parallelism({{"data", 8}, {"zero_stage", 2}, {"gradient_buffers", "per-step"}}, std::nullopt, errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("DeepSpeed's gradient partitions"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("zero_impl \"megatron-distributed-optimizer\" keeps its gradients"), std::string::npos) << errors[1];
}

}  // namespace
}  // namespace trainsim::models
