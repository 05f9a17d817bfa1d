#include "models/strategy.hpp"

#include "models/layer_graph.hpp"

#include <fmt/format.h>

#include <numeric>

#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  return names;
}

core::Precision parse_precision(const std::string& s) {
  const std::vector<std::string>& names = precision_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == s) return static_cast<core::Precision>(i);
  }
  TRAINSIM_CHECK(false, "precision names and core::Precision disagree");
  return core::Precision::BF16;
}

constexpr int MAX_PARALLEL = 1 << 20;

// DeepSpeed's documented default reduce_bucket_size (deepspeed.ai/docs/config-json, "ZeRO
// Optimizations for FP16 Training": reduce_bucket_size 5e8 elements).
constexpr double DEEPSPEED_REDUCE_BUCKET_ELEMENTS = 5e8;

const std::vector<std::string>& zero_impl_names() {
  static const std::vector<std::string> names = {"megatron-distributed-optimizer", "fsdp", "fsdp2", "deepspeed"};
  return names;
}

// Megatron-core's parallel folding, in the two forms trainsim lays out with its five axes
// (strategy.hpp).
void check_folding(const ParallelismConfig& p, const std::string& file, core::Diagnostics& diag) {
  const int tc = p.tensor * p.context;
  const std::string supported = fmt::format(
      "supported: expert_tensor 1 with expert = tensor x context x k (here {} x k) and k dividing data ({}), or "
      "expert_tensor = tensor ({}) with expert dividing data",
      tc, p.data, p.tensor);
  if (p.expert_tensor != 1 && p.expert_tensor != p.tensor) {
    diag.add(file, "/parallelism/expert_tensor",
             fmt::format("expert_tensor {} is not supported with tensor {} ({})", p.expert_tensor, p.tensor, supported));
    return;
  }
  const bool ok = p.expert_tensor == 1 ? p.expert % tc == 0 && p.data % (p.expert / tc) == 0 : p.data % p.expert == 0;
  if (!ok) {
    diag.add(file, "/parallelism/expert",
             fmt::format("expert {} does not fold over tensor x context x data = {} x {} x {} with expert_tensor {} ({})",
                         p.expert, p.tensor, p.context, p.data, p.expert_tensor, supported));
  }
}

// Hybrid sharding: shard groups that tile the data-parallel ranks, on a dense layout.
void check_shard_group(const ParallelismConfig& p, const std::string& file, core::Diagnostics& diag) {
  if (p.data % p.shard_group != 0) {
    diag.add(file, "/parallelism/shard_group",
             fmt::format("shard_group {} must divide data ({}): each group of shard_group data-parallel ranks holds "
                         "one sharded copy of the model",
                         p.shard_group, p.data));
  }
  if (p.expert > 1 || p.folded()) {
    diag.add(file, "/parallelism/shard_group",
             fmt::format("shard_group (hybrid sharding) is modelled for dense layouts without expert parallelism, found "
                         "expert {}",
                         p.expert));
  }
}

}  // namespace

const std::vector<std::string>& pipeline_schedule_names() {
  static const std::vector<std::string> names = {"gpipe",         "1f1b",           "interleaved-1f1b", "pipedream",
                                                 "pipedream-2bw", "zero-bubble-h1", "zero-bubble-h2"};
  return names;
}

std::string to_string(PipelineSchedule s) {
  const size_t i = static_cast<size_t>(s);
  return i < pipeline_schedule_names().size() ? pipeline_schedule_names()[i] : "?";
}

bool splits_backward(PipelineSchedule s) {
  return s == PipelineSchedule::ZERO_BUBBLE_H1 || s == PipelineSchedule::ZERO_BUBBLE_H2;
}

bool steady_state_schedule(PipelineSchedule s) {
  return s == PipelineSchedule::PIPEDREAM || s == PipelineSchedule::PIPEDREAM_2BW || s == PipelineSchedule::ZERO_BUBBLE_H2;
}

std::string to_string(PipelineExecution e) { return e == PipelineExecution::ASYNC ? "async" : "ordered"; }

std::string to_string(Recompute r) {
  switch (r) {
    case Recompute::NONE: return "none";
    case Recompute::SELECTIVE: return "selective";
    case Recompute::FULL: return "full";
    case Recompute::SELECTIVE_OP: return "selective-op";
  }
  return "?";
}

std::string to_string(ZeroImpl z) { return zero_impl_names()[static_cast<size_t>(z)]; }

double ParallelismConfig::bucket_elements() const { return bucket_size.value() / 4.0; }  // fp32 gradient bytes

std::string to_string(Attention a) { return a == Attention::FLASH ? "flash" : "unfused"; }

namespace {

// training.batch_split: {"pool name": samples, ...}, each a positive integer (the scenario reader
// checks the names and the sums against the cluster's pools).
std::vector<std::pair<std::string, int64_t>> read_batch_split(core::ObjectReader& r, const core::Json& v) {
  std::vector<std::pair<std::string, int64_t>> split;
  if (!v.is_object() || v.empty()) {
    r.problem("batch_split", fmt::format("expected an object of samples per node pool, such as {{\"h100\": 40, "
                                         "\"a100\": 24}}, found {}",
                                         core::describe_json(v)));
    return split;
  }
  for (const auto& [pool, samples] : v.items()) {
    if (!samples.is_number_integer() || samples.get<int64_t>() < 1 || samples.get<int64_t>() > MAX_GLOBAL_BATCH) {
      r.diagnostics().add(r.file(), core::append_pointer(r.pointer_of("batch_split"), pool),
                fmt::format("expected the samples per iteration of pool \"{}\", a positive integer, found {}", pool,
                            core::describe_json(samples)));
      continue;
    }
    split.emplace_back(pool, samples.get<int64_t>());
  }
  return split;
}

}  // namespace

TrainingConfig TrainingConfig::from_json(core::ObjectReader& r) {
  TrainingConfig t;
  t.sequence_length = r.integer("sequence_length", t.sequence_length, 1, MAX_SEQUENCE_LENGTH);
  t.global_batch = r.required_integer("global_batch", 1, MAX_GLOBAL_BATCH).value_or(t.global_batch);
  t.micro_batch = r.integer("micro_batch", t.micro_batch, 1, MAX_MICRO_BATCH);
  t.precision = parse_precision(r.choice("precision", std::string(core::to_string(t.precision)), precision_names()));
  t.attention = r.choice("attention", to_string(t.attention), {"unfused", "flash"}) == "flash" ? Attention::FLASH
                                                                                                : Attention::UNFUSED;
  t.fp8_params = r.boolean("fp8_params", t.fp8_params);
  if (t.fp8_params && t.precision != core::Precision::FP8) {
    r.problem("fp8_params", fmt::format("FP8 parameters need precision \"fp8\", found \"{}\"", core::to_string(t.precision)));
  }
  if (const core::Json* v = r.raw("tokens")) {
    // Above 1e18 the iteration count would not fit the report's integers; no real run is near it.
    if (v->is_number() && v->get<double>() > 0 && v->get<double>() <= 1e18) {
      t.tokens = v->get<double>();
    } else {
      r.problem("tokens", fmt::format("expected the total tokens to train, a positive number of at most 1e18 "
                                      "(15e12 for 15T tokens), found {}",
                                      core::describe_json(*v)));
    }
  }
  if (auto c = r.object("checkpoint")) t.checkpoint = CheckpointConfig::from_json(*c);
  if (r.has("stack")) t.stack = core::parse_stack(r.choice("stack", "megatron", core::stack_names()));
  t.compile = r.boolean("compile", t.compile);
  if (auto d = r.object("deepspeed")) t.deepspeed = DeepSpeedZeroConfig::from_json(*d);
  if (const core::Json* v = r.raw("batch_split")) t.batch_split = read_batch_split(r, *v);
  if (t.compile && t.stack == core::Stack::MEGATRON) {
    r.problem("compile", "torch.compile is a PyTorch stack's option: stack \"megatron\" runs Transformer Engine's "
                         "fused kernels (give another training.stack, or remove compile)");
  }
  r.finish();
  return t;
}

core::Json TrainingConfig::to_json() const {
  core::Json j;
  j["sequence_length"] = sequence_length;
  j["global_batch"] = global_batch;
  j["micro_batch"] = micro_batch;
  j["precision"] = std::string(core::to_string(precision));
  j["attention"] = to_string(attention);
  j["fp8_params"] = fp8_params;
  if (tokens) j["tokens"] = *tokens;
  if (checkpoint) j["checkpoint"] = checkpoint->to_json();
  if (stack) j["stack"] = core::to_string(*stack);
  if (compile) j["compile"] = compile;
  if (deepspeed) j["deepspeed"] = deepspeed->to_json();
  if (!batch_split.empty()) {
    core::Json split = core::Json::object();
    for (const auto& [pool, samples] : batch_split) split[pool] = samples;
    j["batch_split"] = std::move(split);
  }
  return j;
}

ParallelismConfig ParallelismConfig::from_json(core::ObjectReader& r, std::optional<core::Stack> stack) {
  ParallelismConfig p;
  p.tensor = static_cast<int>(r.integer("tensor", p.tensor, 1, MAX_PARALLEL));
  p.pipeline = static_cast<int>(r.integer("pipeline", p.pipeline, 1, MAX_PARALLEL));
  p.data = static_cast<int>(r.integer("data", p.data, 1, MAX_PARALLEL));
  p.context = static_cast<int>(r.integer("context", p.context, 1, MAX_PARALLEL));
  p.expert = static_cast<int>(r.integer("expert", p.expert, 1, MAX_PARALLEL));
  p.spatial = static_cast<int>(r.integer("spatial", p.spatial, 1, MAX_PARALLEL));
  if (r.has("expert_tensor")) p.expert_tensor = static_cast<int>(r.integer("expert_tensor", 1, 1, MAX_PARALLEL));
  p.sequence_parallel = r.boolean("sequence_parallel", p.sequence_parallel);
  const std::string schedule = r.choice("pipeline_schedule", to_string(p.schedule), pipeline_schedule_names());
  for (size_t i = 0; i < pipeline_schedule_names().size(); ++i) {
    if (pipeline_schedule_names()[i] == schedule) p.schedule = static_cast<PipelineSchedule>(i);
  }
  p.execution = r.choice("pipeline_execution", to_string(p.execution), {"ordered", "async"}) == "async"
                    ? PipelineExecution::ASYNC
                    : PipelineExecution::ORDERED;
  p.virtual_stages = static_cast<int>(r.integer("virtual_stages", p.virtual_stages, 1, MAX_PARALLEL));
  // Entries below 1 are reported by check_strategy(), with the chunk they concern.
  for (int64_t n : r.integer_array("stage_layers", INT32_MIN, INT32_MAX)) p.stage_layers.push_back(static_cast<int>(n));
  const std::string recompute =
      r.choice("recompute", to_string(p.recompute), {"none", "selective", "full", "selective-op"});
  p.recompute = recompute == "none"           ? Recompute::NONE
                : recompute == "selective"    ? Recompute::SELECTIVE
                : recompute == "selective-op" ? Recompute::SELECTIVE_OP
                                              : Recompute::FULL;
  // recompute_early_stop above: which checkpoint the stack's full recomputation runs.
  const bool early_stop_default =
      stack == core::Stack::TORCHTITAN || stack == core::Stack::FSDP || stack == core::Stack::DDP;
  if (r.has("recompute_early_stop") && p.recompute != Recompute::FULL) {
    r.problem("recompute_early_stop", fmt::format("recompute_early_stop applies to a full recomputation (PyTorch's "
                                                  "non-reentrant checkpoint of each layer): it needs recompute "
                                                  "\"full\", found \"{}\"",
                                                  recompute));
  }
  p.recompute_early_stop = r.boolean("recompute_early_stop", early_stop_default) && p.recompute == Recompute::FULL;
  if (p.recompute_early_stop && stack == core::Stack::MEGATRON) {
    r.problem("recompute_early_stop", "training.stack \"megatron\" re-runs each recomputed layer whole (Megatron-LM's "
                                      "reentrant CheckpointFunction, tensor_parallel.checkpoint): recompute_early_stop "
                                      "needs a PyTorch stack's non-reentrant checkpoint");
  }
  p.zero_stage = static_cast<int>(r.integer("zero_stage", p.zero_stage, 0, 3));
  p.bucket_size = r.bytes("bucket_size", p.bucket_size);
  if (p.bucket_size.value() <= 0) {
    r.problem("bucket_size", fmt::format("expected a positive size, found \"{}\"", core::format_bytes(p.bucket_size)));
    p.bucket_size = ParallelismConfig{}.bucket_size;
  }

  // Implementation defaults first, then the keys that override them.
  const bool sharded = p.zero_stage >= 1;
  const std::string default_impl = to_string(default_zero_impl(p.zero_stage, stack));
  if (r.has("zero_impl") && !sharded) {
    r.problem("zero_impl", "zero_impl needs zero_stage 1, 2 or 3 (nothing is sharded at zero_stage 0), found zero_stage 0");
  }
  const std::string impl = r.choice("zero_impl", default_impl, zero_impl_names());
  for (size_t i = 0; i < zero_impl_names().size(); ++i) {
    if (zero_impl_names()[i] == impl) p.zero_impl = static_cast<ZeroImpl>(i);
  }
  if (sharded && p.zero_stage < 2 && (p.zero_impl == ZeroImpl::FSDP || p.zero_impl == ZeroImpl::FSDP2)) {
    r.problem("zero_impl", fmt::format("\"{}\" shards parameters: it needs zero_stage 3 (FULL_SHARD) or 2 "
                                       "(SHARD_GRAD_OP), found zero_stage {}",
                                       impl, p.zero_stage));
  }
  if (p.zero_stage == 3 && p.zero_impl == ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER) {
    r.problem("zero_impl", "\"megatron-distributed-optimizer\" shards optimizer states and gradients only: it "
                           "needs zero_stage 1 or 2, found zero_stage 3 (use \"fsdp\", \"fsdp2\" or \"deepspeed\")");
  }
  const bool deepspeed = p.zero_impl == ZeroImpl::DEEPSPEED && sharded;
  if (deepspeed && !r.has("bucket_size")) p.bucket_size = core::Bytes(DEEPSPEED_REDUCE_BUCKET_ELEMENTS * 4.0);
  // DeepSpeed's overlap_comm defaults to false for stages 1-2 (deepspeed.ai/docs/config-json).
  p.overlap_grad_reduce = r.boolean("overlap_grad_reduce", !(deepspeed && p.zero_stage < 3));

  // FSDP's SHARD_GRAD_OP gathers parameters unit by unit in every forward, not after the step.
  const bool param_gather_stage = (p.zero_stage == 1 || p.zero_stage == 2) && !p.shard_grad_op();
  if (r.has("overlap_param_gather") && !param_gather_stage) {
    if (p.shard_grad_op()) {
      r.problem("overlap_param_gather",
                fmt::format("overlap_param_gather applies to the updated parameters' all-gather after the step; \"{}\" "
                            "at zero_stage 2 (SHARD_GRAD_OP) gathers them unit by unit in each forward instead",
                            impl));
    } else {
      r.problem("overlap_param_gather",
                fmt::format("overlap_param_gather applies to zero_stage 1 or 2 (all-gather of the updated parameters), "
                            "found zero_stage {}",
                            p.zero_stage));
    }
  }
  p.overlap_param_gather = r.boolean("overlap_param_gather", param_gather_stage && !deepspeed);
  if (!param_gather_stage) p.overlap_param_gather = false;

  if (r.has("prefetch") && !p.gathers_parameters()) {
    r.problem("prefetch", fmt::format("prefetch applies to zero_stage 3 or FSDP's zero_stage 2 (parameter gathers), "
                                      "found zero_stage {}",
                                      p.zero_stage));
  }
  if (r.has("prefetch") && p.gathers_parameters() && p.zero_impl == ZeroImpl::DEEPSPEED) {
    r.problem("prefetch", "DeepSpeed ZeRO-3 prefetches by parameter elements, not by units: set "
                          "training.deepspeed.prefetch_bucket_elements (its stage3_prefetch_bucket_size, default 5e7; 0 "
                          "turns prefetching off) instead of parallelism.prefetch");
  }
  if (r.has("prefetch")) p.prefetch = static_cast<int>(r.integer("prefetch", 1, 0, MAX_PARALLEL));
  if (p.zero_impl == ZeroImpl::DEEPSPEED) p.prefetch = -1;
  if (p.gathers_parameters() && p.prefetch < 0 && p.zero_impl != ZeroImpl::DEEPSPEED) p.prefetch = 1;

  const bool fsdp1 = p.zero_stage == 3 && p.zero_impl == ZeroImpl::FSDP;
  if (r.has("backward_prefetch") && !fsdp1) {
    r.problem("backward_prefetch", fmt::format("backward_prefetch is FSDP1's option: it needs zero_stage 3 with zero_impl "
                                               "\"fsdp\", found zero_stage {} ({})",
                                               p.zero_stage, p.zero_stage >= 1 ? to_string(p.zero_impl) : "no sharding"));
  }
  // Composer's FSDP config defaults backward_prefetch to BACKWARD_POST (composer/distributed/
  // fsdp_config); torch.distributed.fsdp defaults to BACKWARD_PRE.
  const std::string prefetch_default = stack == core::Stack::COMPOSER ? "post" : "pre";
  p.backward_prefetch_post = r.choice("backward_prefetch", prefetch_default, {"pre", "post"}) == "post" && fsdp1;

  // The gradient reduction's dtype (reduce_dtype above): Composer's default mixed_precision DEFAULT
  // (composer/distributed/mosaic_fsdp_utils get_mixed_precision: reduce_dtype torch.float32) and
  // torchtitan's mixed_precision_reduce "float32" (torchtitan/config job_config.py) reduce in fp32;
  // PyTorch FSDP (MixedPrecision.reduce_dtype None: the param dtype) and DeepSpeed
  // (communication_data_type None: the model's dtype) in 16 bits.
  if (r.has("reduce_dtype") && !p.framework_reduce()) {
    r.problem("reduce_dtype",
              fmt::format("reduce_dtype is the dtype of FSDP's, FSDP2's or DeepSpeed's gradient reduction: it needs "
                          "zero_stage 3, or 1-2 with zero_impl \"fsdp\", \"fsdp2\" or \"deepspeed\", found zero_stage "
                          "{}{} (Megatron-LM reduces its fp32 main gradients; optimizations.gradient_compression "
                          "\"bf16\" is its --grad-reduce-in-bf16)",
                          p.zero_stage, p.zero_stage >= 1 ? fmt::format(" with zero_impl \"{}\"", impl) : std::string()));
  }
  const bool fp32_default = stack == core::Stack::COMPOSER || stack == core::Stack::TORCHTITAN;
  p.reduce_dtype = r.choice("reduce_dtype", fp32_default ? "fp32" : "bf16", {"fp32", "bf16", "fp16"});

  // Where the gradients live (gradient_buffers above). FSDP1 and FSDP2 hold each rank's sharded
  // gradients as the parameters' .grad, which optimizer.zero_grad(set_to_none=True) frees: PyTorch's
  // default since 2.0, torchtitan's OptimizersContainer.zero_grad(), Composer's trainer (it passes
  // set_to_none=True). Megatron-LM keeps main_grad in grad buffers allocated once (its
  // DistributedDataParallel), DDP its reducer's buckets, DeepSpeed its gradient partitions.
  const bool per_step_default =
      stack == core::Stack::TORCHTITAN || stack == core::Stack::FSDP || stack == core::Stack::COMPOSER;
  p.gradient_buffers_given = r.has("gradient_buffers");
  p.gradients_per_step =
      r.choice("gradient_buffers", per_step_default ? "per-step" : "persistent", {"persistent", "per-step"}) == "per-step";
  if (p.gradients_per_step && p.gradient_buffers_given) {
    if (stack == core::Stack::MEGATRON || stack == core::Stack::DEEPSPEED) {
      r.problem("gradient_buffers",
                fmt::format("training.stack \"{}\" keeps its gradients in buffers allocated once ({}): gradient_buffers "
                            "\"per-step\" is PyTorch's optimizer.zero_grad(set_to_none=True) without them",
                            core::to_string(*stack),
                            stack == core::Stack::MEGATRON ? "Megatron-LM's grad buffers" : "DeepSpeed's gradient partitions"));
    } else if (sharded && (p.zero_impl == ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER || p.zero_impl == ZeroImpl::DEEPSPEED)) {
      r.problem("gradient_buffers",
                fmt::format("zero_impl \"{}\" keeps its gradients in buffers allocated once: gradient_buffers "
                            "\"per-step\" needs zero_impl \"fsdp\" or \"fsdp2\", or no sharding",
                            impl));
    }
  }

  if (r.has("shard_group")) {
    p.shard_group = static_cast<int>(r.integer("shard_group", 1, 1, MAX_PARALLEL));
    const bool fsdp_impl = p.zero_impl == ZeroImpl::FSDP || p.zero_impl == ZeroImpl::FSDP2;
    if (!p.gathers_parameters() || !fsdp_impl) {
      r.problem("shard_group",
                fmt::format("shard_group is FSDP's hybrid sharding (HSDP): it needs zero_stage 3 (or 2, SHARD_GRAD_OP) "
                            "with zero_impl \"fsdp\" or \"fsdp2\", found zero_stage {}{}",
                            p.zero_stage, sharded ? fmt::format(" with zero_impl \"{}\"", impl) : std::string()));
      p.shard_group = 0;
    }
  }

  // Without sequence parallelism it is accepted and ignored (tp_overlap_active(); docs/scenario.md).
  p.tp_comm_overlap = r.boolean("tp_comm_overlap", p.tp_comm_overlap);
  p.moe_a2a_overlap_given = r.has("moe_a2a_overlap");
  p.moe_a2a_overlap = r.boolean("moe_a2a_overlap", p.moe_a2a_overlap);
  r.finish();
  return p;
}

core::Json ParallelismConfig::to_json() const {
  core::Json j;
  j["tensor"] = tensor;
  j["pipeline"] = pipeline;
  j["data"] = data;
  j["context"] = context;
  j["expert"] = expert;
  if (spatial != 1) j["spatial"] = spatial;  // absent: 1 (transformers' resolved scenarios unchanged)
  if (folded()) j["expert_tensor"] = expert_tensor;  // absent: the default reading
  j["sequence_parallel"] = sequence_parallel;
  j["pipeline_schedule"] = to_string(schedule);
  if (execution != PipelineExecution::ORDERED) j["pipeline_execution"] = to_string(execution);
  j["virtual_stages"] = virtual_stages;
  if (!stage_layers.empty()) j["stage_layers"] = stage_layers;
  j["recompute"] = to_string(recompute);
  if (recompute == Recompute::FULL) j["recompute_early_stop"] = recompute_early_stop;
  j["zero_stage"] = zero_stage;
  j["bucket_size"] = core::format_bytes(bucket_size);
  j["overlap_grad_reduce"] = overlap_grad_reduce;
  if (zero_stage >= 1) j["zero_impl"] = to_string(zero_impl);
  if ((zero_stage == 1 || zero_stage == 2) && !shard_grad_op()) j["overlap_param_gather"] = overlap_param_gather;
  if (gathers_parameters() && prefetch >= 0) j["prefetch"] = prefetch;
  if (shard_group > 0) j["shard_group"] = shard_group;  // absent: one shard group (all of data)  // deepspeed's default depends on the model
  if (zero_stage == 3 && zero_impl == ZeroImpl::FSDP) j["backward_prefetch"] = backward_prefetch_post ? "post" : "pre";
  if (framework_reduce()) j["reduce_dtype"] = reduce_dtype;
  if (gradients_per_step || gradient_buffers_given) j["gradient_buffers"] = gradients_per_step ? "per-step" : "persistent";
  j["tp_comm_overlap"] = tp_comm_overlap;
  if (moe_a2a_overlap || moe_a2a_overlap_given) j["moe_a2a_overlap"] = moe_a2a_overlap;
  return j;
}

std::array<int, core::AXIS_COUNT> ParallelismConfig::layout_sizes() const {
  if (!folded()) return {tensor, context * spatial, expert, data, pipeline};
  const int k = expert_tensor == 1 ? expert / (tensor * context) : expert;
  TRAINSIM_CHECK(k >= 1 && data % k == 0, "expert does not fold over the data ranks (check_strategy)");
  return {tensor, context, k, data / k, pipeline};
}

core::Stack implied_stack(const ParallelismConfig& p) {
  if (p.zero_stage >= 1 && p.zero_impl == ZeroImpl::DEEPSPEED) return core::Stack::DEEPSPEED;
  if (p.zero_stage >= 2 && p.zero_impl == ZeroImpl::FSDP2) return core::Stack::TORCHTITAN;
  if (p.zero_stage == 3 || p.shard_grad_op()) return core::Stack::FSDP;
  return core::Stack::MEGATRON;
}

ZeroImpl default_zero_impl(int zero_stage, std::optional<core::Stack> stack) {
  // The stack's own sharding where it has one: torchtitan shards with FSDP2, DeepSpeed with its ZeRO
  // at every stage. Stage 2 under a PyTorch stack is its ZeRO-2-style FSDP: Composer's and FSDP1's
  // SHARD_GRAD_OP, torchtitan's fully_shard(reshard_after_forward=False).
  if (stack == core::Stack::DEEPSPEED) return ZeroImpl::DEEPSPEED;
  if (stack == core::Stack::TORCHTITAN && zero_stage >= 2) return ZeroImpl::FSDP2;
  if ((stack == core::Stack::COMPOSER || stack == core::Stack::FSDP) && zero_stage == 2) return ZeroImpl::FSDP;
  return zero_stage == 3 ? ZeroImpl::FSDP : ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER;
}

core::Stack resolved_stack(const TrainingConfig& t, const ParallelismConfig& p) { return t.stack.value_or(implied_stack(p)); }

namespace {

// Why `stack` cannot run the layout: what it runs instead, and whether the refusal is about the
// sharding (then the message names the layout's ZeRO stage and implementation). nullptr: it can.
struct StackRefusal {
  const char* runs;
  bool sharding;
};

std::optional<StackRefusal> stack_refusal(core::Stack stack, const ParallelismConfig& p) {
  const bool sharded = p.zero_stage >= 1;
  const bool zero3 = p.zero_stage == 3;
  const bool fsdp_sharded = p.gathers_parameters();  // FULL_SHARD, or FSDP's SHARD_GRAD_OP
  const bool expert = p.expert > 1 || p.folded();
  switch (stack) {
    case core::Stack::MEGATRON:
      if (zero3 || (sharded && p.zero_impl != ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER)) {
        return StackRefusal{"ZeRO stages one and two with its distributed optimizer only", true};
      }
      // megatron/core/pipeline_parallel/schedules.py, get_forward_backward_func: without interleaving
      // (1F1B) or with it; no GPipe, PipeDream or zero-bubble schedule.
      if (p.pipeline > 1 && p.schedule != PipelineSchedule::ONE_F_ONE_B &&
          p.schedule != PipelineSchedule::INTERLEAVED_1F1B) {
        return StackRefusal{"pipeline_schedule \"1f1b\" or \"interleaved-1f1b\" under pipeline parallelism "
                            "(Megatron-core's forward_backward_pipelining_without / with_interleaving)",
                            false};
      }
      return std::nullopt;
    case core::Stack::TORCHTITAN:
      if (sharded && !(fsdp_sharded && p.zero_impl == ZeroImpl::FSDP2)) {
        return StackRefusal{"fully_shard (zero_impl \"fsdp2\" at stage three, or two without resharding after forward) "
                            "or no sharding",
                            true};
      }
      if (expert) return StackRefusal{"FSDP x TP x PP x CP: expert parallelism is not available", false};
      // torch.distributed.pipelining's schedules (GPipe, 1F1B, Interleaved1F1B, LoopedBFS,
      // InterleavedZeroBubble = ZB1P, ZBVZeroBubble) all flush every step: no PipeDream weight stashing,
      // no ZB-H2 bypass of the optimizer step's synchronization.
      if (p.pipeline > 1 && (p.schedule == PipelineSchedule::PIPEDREAM || p.schedule == PipelineSchedule::PIPEDREAM_2BW ||
                             p.schedule == PipelineSchedule::ZERO_BUBBLE_H2)) {
        return StackRefusal{"torch.distributed.pipelining's schedules (pipeline_schedule \"gpipe\", \"1f1b\", "
                            "\"interleaved-1f1b\", \"zero-bubble-h1\"), which flush every step",
                            false};
      }
      return std::nullopt;
    case core::Stack::COMPOSER:
    case core::Stack::FSDP:
      if (sharded && !(fsdp_sharded && p.zero_impl == ZeroImpl::FSDP)) {
        return StackRefusal{"PyTorch FSDP (zero_impl \"fsdp\": FULL_SHARD at stage three, SHARD_GRAD_OP at two) or DDP",
                            true};
      }
      if (stack == core::Stack::COMPOSER && (p.tensor > 1 || p.pipeline > 1 || p.context > 1 || expert)) {
        return StackRefusal{
            "data parallelism only (FSDP or DDP): tensor, pipeline, context and expert parallelism are not available", false};
      }
      if (p.pipeline > 1 || p.context > 1 || expert) {
        return StackRefusal{"FSDP x TP (2-D) only: pipeline, context and expert parallelism are not available", false};
      }
      return std::nullopt;
    case core::Stack::DEEPSPEED:
      if (sharded && p.zero_impl != ZeroImpl::DEEPSPEED) return StackRefusal{"its own ZeRO (zero_impl \"deepspeed\")", true};
      // deepspeed/runtime/pipe/engine.py, PipelineEngine.__init__: "ZeRO-2 and ZeRO-3 are incompatible
      // with pipeline parallelism" (asserts zero_optimization_stage() < ZeroStageEnum.gradients).
      if (p.pipeline > 1 && p.zero_stage >= 2) {
        return StackRefusal{"ZeRO stage zero or one under pipeline parallelism (its PipelineEngine: \"ZeRO-2 and ZeRO-3 "
                            "are incompatible with pipeline parallelism\")",
                            true};
      }
      // deepspeed/runtime/pipe/schedule.py: TrainSchedule, its one training schedule, is 1F1B over one
      // model chunk per stage (2 x (micro-batches + stages - 1) steps, forwards and backwards alternating).
      if (p.pipeline > 1 && (p.schedule != PipelineSchedule::ONE_F_ONE_B || p.virtual_stages > 1)) {
        return StackRefusal{"pipeline_schedule \"1f1b\" with one model chunk per stage (its TrainSchedule) under "
                            "pipeline parallelism",
                            false};
      }
      if (p.context > 1 || expert) {
        return StackRefusal{"ZeRO x PP (x Megatron-DeepSpeed TP): context and expert parallelism are not available", false};
      }
      return std::nullopt;
    case core::Stack::DDP:
      if (sharded) return StackRefusal{"no sharding (DistributedDataParallel)", true};
      if (p.tensor > 1 || p.pipeline > 1 || p.context > 1 || expert) {
        return StackRefusal{"data parallelism only: tensor, pipeline, context and expert parallelism are not available",
                            false};
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

bool stack_runs(core::Stack stack, const ParallelismConfig& p) { return !stack_refusal(stack, p); }

bool some_stack_runs(const ParallelismConfig& p) {
  return std::ranges::any_of(core::stack_names(),
                             [&](const std::string& name) { return stack_runs(core::parse_stack(name), p); });
}

std::string stack_unsupported(core::Stack stack, const ParallelismConfig& p) {
  const std::optional<StackRefusal> r = stack_refusal(stack, p);
  if (!r) return "";
  std::string message = fmt::format("stack \"{}\" runs {}", core::to_string(stack), r->runs);
  if (r->sharding) {
    message += p.zero_stage >= 1 ? fmt::format(", found zero_stage {} with zero_impl \"{}\"", p.zero_stage, to_string(p.zero_impl))
                                 : std::string(", found zero_stage 0");
  }
  return message;
}

namespace {
bool a2a_overlap_allowed(const ModelSpec& model, const ParallelismConfig& par) {
  return model.is_moe() && par.expert > 1 && (par.pipeline == 1 || par.schedule == PipelineSchedule::INTERLEAVED_1F1B) &&
         par.recompute != Recompute::FULL && !splits_backward(par.schedule) &&
         par.execution == PipelineExecution::ORDERED;
}
}  // namespace

void resolve_defaults(const ModelSpec& model, ParallelismConfig& par) {
  if (model.is_layer_graph()) return;
  if (!par.moe_a2a_overlap_given) par.moe_a2a_overlap = a2a_overlap_allowed(model, par);
}

int64_t micro_batch_count(const TrainingConfig& t, const ParallelismConfig& p) {
  const int64_t per_step = p.sequences_per_step(t);
  TRAINSIM_CHECK(per_step > 0 && t.global_batch % per_step == 0, "global batch not divisible (check_strategy)");
  return t.global_batch / per_step;
}

namespace {
// What the schedules added for issue 14 cannot run with (each message says why).
void check_schedule(const TrainingConfig& training, const ParallelismConfig& par, core::Diagnostics& diag,
                    const std::string& file) {
  const std::string name = to_string(par.schedule);
  if (splits_backward(par.schedule)) {
    if (par.tp_overlap_active()) {
      diag.add(file, "/parallelism/tp_comm_overlap",
               fmt::format("pipeline_schedule \"{}\" splits each backward into B and W passes, which the chunked "
                           "userbuffers overlap of tp_comm_overlap is not modelled with: set tp_comm_overlap false",
                           name));
    }
    if (par.moe_a2a_overlap) {
      diag.add(file, "/parallelism/moe_a2a_overlap",
               fmt::format("moe_a2a_overlap merges whole backward passes with forwards; pipeline_schedule \"{}\" "
                           "splits them into B and W: set moe_a2a_overlap false",
                           name));
    }
    if (par.zero_stage == 3) {
      diag.add(file, "/parallelism/zero_stage",
               fmt::format("pipeline_schedule \"{}\" with zero_stage 3 is not modelled (FSDP would reduce-scatter "
                           "each unit after its W pass and gather again for B): use zero_stage 0-2",
                           name));
    }
  }
  const bool pipedream = par.schedule == PipelineSchedule::PIPEDREAM || par.schedule == PipelineSchedule::PIPEDREAM_2BW;
  if (pipedream && par.zero_stage >= 1) {
    diag.add(file, "/parallelism/zero_stage",
             fmt::format("pipeline_schedule \"{}\" stashes whole weight versions; sharding them (zero_stage {}) is not "
                         "modelled: use zero_stage 0",
                         name, par.zero_stage));
  }
  const int64_t per_step = par.sequences_per_step(training);
  if (pipedream && per_step > 0 && training.global_batch % per_step == 0 &&
      training.global_batch / per_step < par.pipeline) {
    diag.add(file, "/training/global_batch",
             fmt::format("pipeline_schedule \"{}\" models one window of its steady state, which needs at least "
                         "pipeline ({}) micro-batches per iteration, found {} (global_batch {} / {})",
                         name, par.pipeline, training.global_batch / per_step, training.global_batch, per_step));
  }
  if (par.execution == PipelineExecution::ASYNC) {
    if (pipedream || par.schedule == PipelineSchedule::INTERLEAVED_1F1B) {
      diag.add(file, "/parallelism/pipeline_execution",
               fmt::format("pipeline_execution \"async\" issues gpipe, 1f1b, zero-bubble-h1 or zero-bubble-h2 passes "
                           "in message-arrival order; it does not apply to \"{}\"",
                           name));
    }
    if (par.moe_a2a_overlap) {
      diag.add(file, "/parallelism/pipeline_execution",
               "pipeline_execution \"async\" cannot merge forward and backward passes (moe_a2a_overlap): set "
               "moe_a2a_overlap false");
    }
  }
}
}  // namespace

void check_strategy(const ModelSpec& model, const TrainingConfig& training, const ParallelismConfig& par,
                    int world_size, const std::string& file, core::Diagnostics& diag) {
  if (model.is_layer_graph()) {
    check_layer_graph_strategy(*model.graph, training, par, world_size, file, diag);
    return;
  }
  auto problem = [&](std::string pointer, std::string message) {
    diag.add(file, std::move(pointer), std::move(message));
  };
  if (training.stack) {
    if (std::string why = stack_unsupported(*training.stack, par); !why.empty()) problem("/training/stack", why);
  }
  // Like DeepSpeed's own stage3_* keys, it is accepted at any ZeRO stage of the deepspeed stack (and
  // matters at stage 3 only), so that search can vary the stage.
  if (training.deepspeed && resolved_stack(training, par) != core::Stack::DEEPSPEED) {
    problem("/training/deepspeed",
            fmt::format("training.deepspeed sets how DeepSpeed ZeRO-3 fetches parameters: it needs the deepspeed stack "
                        "(training.stack \"deepspeed\", or zero_impl \"deepspeed\"), found stack \"{}\"",
                        core::to_string(resolved_stack(training, par))));
  }
  if (par.spatial != 1) {
    problem("/parallelism/spatial", fmt::format("spatial parallelism splits the samples of a layer-graph model (a CNN, "
                                                "docs/cnn.md); a transformer needs spatial 1, found {} (context "
                                                "splits its sequences)",
                                                par.spatial));
  }
  if (par.recompute == Recompute::SELECTIVE_OP && model.is_moe()) {
    // Its policy is modelled op by op for dense layers (with their tensor and context collectives:
    // stage_ops.cpp, ops_recompute_unsaved); an MoE layer's grouped expert GEMMs have a rule of their own.
    problem("/parallelism/recompute",
            "recompute \"selective-op\" is modelled for dense transformer layers only (this model has MoE "
            "layers): use \"selective\" or \"full\"");
  }
  const int t = par.tensor;
  if (model.heads % t != 0) {
    problem("/parallelism/tensor", fmt::format("tensor parallelism {} must divide heads ({})", t, model.heads));
  }
  if (model.kv_heads % t != 0) {
    problem("/parallelism/tensor", fmt::format("tensor parallelism {} must divide kv_heads ({})", t, model.kv_heads));
  }
  // Every MLP split over the tensor group: the dense layers', the shared experts' and, unless
  // folded with expert_tensor 1, the routed experts'.
  const bool has_dense_layers = model.moe_layer_count() < model.layers;
  if (has_dense_layers && model.dense_ffn() % t != 0) {
    problem("/parallelism/tensor",
            fmt::format("tensor parallelism {} must divide {} ({})", t, model.is_moe() ? "dense_ffn_hidden" : "ffn_hidden",
                        model.dense_ffn()));
  }
  if (model.is_moe() && model.shared_experts > 0 && model.shared_ffn() % t != 0) {
    problem("/parallelism/tensor", fmt::format("tensor parallelism {} must divide the shared experts' inner size "
                                               "(shared_experts x shared_expert_ffn_hidden = {})",
                                               t, model.shared_ffn()));
  }
  if (model.is_moe() && model.ffn_hidden % par.expert_mlp_tensor() != 0) {
    problem(par.folded() ? "/parallelism/expert_tensor" : "/parallelism/tensor",
            fmt::format("{} {} must divide ffn_hidden ({}), which the expert MLPs split",
                        par.folded() ? "expert_tensor" : "tensor parallelism", par.expert_mlp_tensor(), model.ffn_hidden));
  }
  if (training.sequence_length % par.context != 0) {
    problem("/parallelism/context", fmt::format("context parallelism {} must divide sequence_length ({})", par.context,
                                                training.sequence_length));
  } else if (par.sequence_parallel && t > 1 && (training.sequence_length / par.context) % t != 0) {
    problem("/parallelism/tensor",
            fmt::format("tensor parallelism {} must divide the sequence length per context rank ({}) with "
                        "sequence_parallel",
                        t, training.sequence_length / par.context));
  }
  if (model.is_moe() && t > 1 && !par.sequence_parallel) {
    problem("/parallelism/sequence_parallel",
            fmt::format("an MoE model with tensor parallelism {} needs sequence_parallel true (as in Megatron-LM), "
                        "found false",
                        t));
  }

  const int chunks = par.pipeline_chunks();
  if (chunks > model.layers) {
    problem("/parallelism/pipeline",
            fmt::format("pipeline x virtual_stages ({} x {} = {} model chunks) must not exceed layers ({})",
                        par.pipeline, par.virtual_stages, chunks, model.layers));
  }
  if (!par.stage_layers.empty()) {
    if (static_cast<int>(par.stage_layers.size()) != chunks) {
      problem("/parallelism/stage_layers",
              fmt::format("stage_layers has {} entries, expected pipeline x virtual_stages = {} x {} = {}",
                          par.stage_layers.size(), par.pipeline, par.virtual_stages, chunks));
    }
    for (size_t i = 0; i < par.stage_layers.size(); ++i) {
      if (par.stage_layers[i] < 1) {
        problem(core::append_pointer("/parallelism/stage_layers", i),
                fmt::format("every model chunk needs at least 1 layer, found {}", par.stage_layers[i]));
      }
    }
    const int64_t sum = std::accumulate(par.stage_layers.begin(), par.stage_layers.end(), int64_t{0});
    if (sum != model.layers) {
      problem("/parallelism/stage_layers",
              fmt::format("stage_layers sum to {}, expected the model's layers ({})", sum, model.layers));
    }
  }
  if (par.virtual_stages > 1 && splits_backward(par.schedule)) {
    problem("/parallelism/virtual_stages",
            fmt::format("pipeline_schedule \"{}\" has no interleaved form here (zero-bubble with model chunks, ZB-V, "
                        "is not modelled): use virtual_stages 1, found {}",
                        to_string(par.schedule), par.virtual_stages));
  } else if (par.virtual_stages > 1 && par.schedule != PipelineSchedule::INTERLEAVED_1F1B) {
    problem("/parallelism/virtual_stages",
            fmt::format("virtual_stages {} requires pipeline_schedule \"interleaved-1f1b\", found \"{}\"",
                        par.virtual_stages, to_string(par.schedule)));
  }
  // Megatron-core TransformerConfig's checks for overlap_moe_expert_parallel_comm.
  if (par.moe_a2a_overlap) {
    if (!model.is_moe() || par.expert < 2) {
      problem("/parallelism/moe_a2a_overlap",
              fmt::format("moe_a2a_overlap overlaps expert-parallel all-to-alls: it needs an MoE model and expert > 1, "
                          "found {} and expert {}",
                          model.is_moe() ? "an MoE model" : "a dense model", par.expert));
    }
    if (par.pipeline > 1 && par.schedule != PipelineSchedule::INTERLEAVED_1F1B) {
      problem("/parallelism/moe_a2a_overlap",
              fmt::format("moe_a2a_overlap with pipeline {} needs pipeline_schedule \"interleaved-1f1b\" (as in "
                          "Megatron-core), found \"{}\"",
                          par.pipeline, to_string(par.schedule)));
    }
    if (par.recompute == Recompute::FULL) {
      problem("/parallelism/moe_a2a_overlap",
              "moe_a2a_overlap does not run with recompute \"full\" (Megatron-core rejects it): use \"selective\" or "
              "\"none\"");
    }
  }
  check_schedule(training, par, diag, file);
  if (par.virtual_stages > 1 && par.pipeline == 1) {
    problem("/parallelism/virtual_stages",
            fmt::format("virtual_stages {} requires pipeline > 1, found pipeline 1", par.virtual_stages));
  }

  if (par.world_size() != world_size && !par.folded()) {
    problem("/parallelism",
            fmt::format("tensor x pipeline x data x context x expert = {} x {} x {} x {} x {} = {} must equal the "
                        "cluster's GPU count ({})",
                        par.tensor, par.pipeline, par.data, par.context, par.expert, par.world_size(), world_size));
  }
  if (par.world_size() != world_size && par.folded()) {
    problem("/parallelism",
            fmt::format("tensor x pipeline x data x context = {} x {} x {} x {} = {} must equal the cluster's GPU "
                        "count ({}) (with expert_tensor, expert parallelism folds over these ranks)",
                        par.tensor, par.pipeline, par.data, par.context, par.world_size(), world_size));
  }
  if (par.folded()) check_folding(par, file, diag);

  const int64_t per_step = par.sequences_per_step(training);
  if (training.global_batch % per_step != 0) {
    problem("/training/global_batch",
            par.folded()
                ? fmt::format("global_batch {} must be divisible by micro_batch x data = {} x {} = {}",
                              training.global_batch, training.micro_batch, par.data, per_step)
                : fmt::format("global_batch {} must be divisible by micro_batch x data x expert = {} x {} x {} = {}",
                              training.global_batch, training.micro_batch, par.data, par.expert, per_step));
  } else if (par.virtual_stages > 1 && par.pipeline > 1 && (training.global_batch / per_step) % par.pipeline != 0) {
    problem("/training/global_batch",
            fmt::format("interleaved-1f1b with virtual_stages {} needs the micro-batch count (global_batch {} / {} = "
                        "{}) to be a multiple of pipeline ({})",
                        par.virtual_stages, training.global_batch, per_step, training.global_batch / per_step,
                        par.pipeline));
  }

  if (par.shard_group > 0) check_shard_group(par, file, diag);

  if (par.expert > 1 && !model.is_moe()) {
    problem("/parallelism/expert",
            fmt::format("expert parallelism {} needs an MoE model (experts > 1), found experts {}", par.expert,
                        model.experts));
  } else if (model.experts % par.expert != 0) {
    problem("/parallelism/expert",
            fmt::format("expert parallelism {} must divide experts ({})", par.expert, model.experts));
  }
}

}  // namespace trainsim::models
