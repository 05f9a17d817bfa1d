#include "sim/plan/config_export.hpp"

#include <fmt/format.h>

#include <cmath>

#include "models/workload_builder.hpp"
#include "sim/plan/import_source.hpp"

namespace trainsim::plan {
namespace {

using models::PipelineSchedule;
using models::Recompute;
using models::ZeroImpl;

// Collects the file's lines and what it cannot say.
class Writer {
 public:
  explicit Writer(ExportResult& r) : r_(r) {}
  void lose(std::string key, std::string message) { r_.lost.push_back({std::move(key), std::move(message)}); }
  void need(std::string override_) { r_.import_overrides.push_back(std::move(override_)); }

 private:
  ExportResult& r_;
};

bool is_offload(const models::OffloadConfig& o, const char* preset) {
  core::Json a = o.to_json(), b = models::offload_preset(preset).to_json();
  a.erase("preset");
  b.erase("preset");
  return a == b;
}

// The header of the formats that take comments (Megatron arguments, TOML): the scenario, the cluster
// to import with, the losses. JSON formats get none: transformers and DeepSpeed read strict JSON.
std::string header(const Scenario& s, const ExportResult& r, ConfigFormat f, const char* comment) {
  std::string out = fmt::format("{} {} for scenario \"{}\", written by `trainsim export --to {}`{}.\n", comment, describe(f), s.name,
                                to_string(f), s.file.empty() ? "" : " from " + s.file);
  out += fmt::format("{} The cluster ({} x {} {}) is not part of it: import with --cluster-from SCENARIO.\n", comment, s.cluster.nodes,
                     s.cluster.gpus_per_node, s.cluster.gpu);
  for (const std::string& o : r.import_overrides) out += fmt::format("{} Import with --set {} (not expressible here).\n", comment, o);
  if (!r.lost.empty()) {
    out += fmt::format("{} Not expressed (importing this file gives another scenario there):\n", comment);
    for (const ExportLoss& l : r.lost) out += fmt::format("{}   {}: {}\n", comment, l.key, l.message);
  }
  return out;
}

std::string stack_name(const Scenario& s) { return core::to_string(models::resolved_stack(s.training, s.parallelism)); }

// Common to every format: the optimizations no framework file holds.
void lose_optimizations(const Scenario& s, Writer& w, bool offload_expressed) {
  if (s.pruning.method != models::PruningMethod::NONE) w.lose("optimizations.pruning", "pruned weights are not a framework setting");
  if (s.compression.method != models::CompressionMethod::NONE) {
    w.lose("optimizations.gradient_compression", "gradient compression is not a setting of this format");
  }
  if (s.offload.active() && !offload_expressed) w.lose("optimizations.offload", fmt::format("{} has no form here", s.offload.describe()));
  if (s.training.checkpoint) w.lose("training.checkpoint", "checkpoints and storage are not modelled from this format");
  if (s.parallelism.execution == models::PipelineExecution::ASYNC) w.lose("parallelism.pipeline_execution", "async has no form here");
}

std::string megatron(const Scenario& s, ExportResult& r) {
  Writer w(r);
  const models::ModelSpec& m = s.model;
  const models::TrainingConfig& t = s.training;
  const models::ParallelismConfig& p = s.parallelism;
  std::vector<std::string> a;
  const auto arg = [&](const std::string& name, const std::string& value = "") { a.push_back(value.empty() ? "--" + name : fmt::format("--{} {}", name, value)); };
  // The model.
  arg("num-layers", std::to_string(m.layers));
  arg("hidden-size", std::to_string(m.hidden));
  arg("num-attention-heads", std::to_string(m.heads));
  if (m.kv_heads != m.heads) {
    arg("group-query-attention");
    arg("num-query-groups", std::to_string(m.kv_heads));
  }
  if (m.head_dim_given > 0) arg("kv-channels", std::to_string(m.head_dim_given));
  arg("ffn-hidden-size", std::to_string(m.dense_ffn()));
  if (m.activation == models::Activation::SWIGLU) {
    arg("swiglu");
    arg("normalization", "RMSNorm");
    arg("disable-bias-linear");
  }
  arg("position-embedding-type", m.learned_positions ? "learned_absolute" : "rope");
  if (!m.tied_embeddings) arg("untie-embeddings-and-output-weights");
  if (m.embedding_norm) w.lose("model.embedding_norm", "Megatron-LM has no norm after the word embedding (BLOOM's); left out");
  int64_t divisible = 128;
  while (divisible > 1 && m.vocab % (divisible * p.tensor) != 0) divisible /= 2;
  if (m.vocab % (divisible * p.tensor) != 0) {
    w.lose("model.vocab", fmt::format("Megatron pads the vocabulary to a multiple of the tensor size {}: {} becomes {}", p.tensor, m.vocab,
                                      (m.vocab + p.tensor - 1) / p.tensor * p.tensor));
  }
  arg("vocab-size", std::to_string(m.vocab));
  arg("make-vocab-size-divisible-by", std::to_string(divisible));
  if (m.is_moe()) {
    arg("num-experts", std::to_string(m.experts));
    arg("moe-router-topk", std::to_string(m.top_k));
    arg("moe-ffn-hidden-size", std::to_string(m.ffn_hidden));
    if (m.shared_experts > 0) {
      arg("moe-shared-expert-intermediate-size", std::to_string(m.shared_ffn()));
      if (m.shared_experts > 1) w.lose("model.shared_experts", fmt::format("Megatron gives the shared experts' total size: one shared expert of {}", m.shared_ffn()));
    }
    if (m.first_dense_layers > 0 || m.moe_layer_freq > 1) {
      std::string list;
      for (int l = 0; l < m.layers; ++l) list += (l == 0 ? "" : ",") + std::string(m.layer_kind(l) == models::LayerKind::MOE ? "1" : "0");
      arg("moe-layer-freq", m.first_dense_layers == 0 ? std::to_string(m.moe_layer_freq) : "[" + list + "]");
    }
  }
  // Training.
  arg("seq-length", std::to_string(t.sequence_length));
  arg("max-position-embeddings", std::to_string(t.sequence_length));
  arg("micro-batch-size", std::to_string(t.micro_batch));
  arg("global-batch-size", std::to_string(t.global_batch));
  switch (t.precision) {
    case core::Precision::BF16: arg("bf16"); break;
    case core::Precision::FP16: arg("fp16"); break;
    case core::Precision::FP8:
      arg("bf16");
      arg("fp8-format", "hybrid");
      break;
    case core::Precision::TF32: w.lose("training.precision", "tf32 has no Megatron-LM argument: written as fp32 (no precision argument)"); break;
    case core::Precision::FP32: break;
  }
  if (t.fp8_params) arg("fp8-param-gather");
  arg("attention-backend", t.attention == models::Attention::FLASH ? "flash" : "unfused");
  if (t.tokens) {
    const double samples = *t.tokens / static_cast<double>(t.sequence_length);
    if (std::floor(samples) == samples) {
      arg("train-samples", fmt::format("{:.0f}", samples));
    } else {
      const double iters = std::ceil(*t.tokens / static_cast<double>(t.global_batch * t.sequence_length));
      arg("train-iters", fmt::format("{:.0f}", iters));
      w.lose("training.tokens", fmt::format("{:g} tokens are not whole sequences: written as {:.0f} iterations", *t.tokens, iters));
    }
  }
  if (t.compile) w.lose("training.compile", "torch.compile is not a Megatron-LM setting");
  if (const std::string st = stack_name(s); st != "megatron") {
    w.lose("training.stack", fmt::format("the job runs on {}: Megatron-LM's arguments describe a Megatron job", st));
  }
  // Parallelism.
  arg("tensor-model-parallel-size", std::to_string(p.tensor));
  arg("pipeline-model-parallel-size", std::to_string(p.pipeline));
  arg("context-parallel-size", std::to_string(p.context));
  if (p.expert > 1 || p.folded()) {
    arg("expert-model-parallel-size", std::to_string(p.expert));
    if (p.folded()) arg("expert-tensor-parallel-size", std::to_string(p.expert_tensor));
    else w.lose("parallelism.expert_tensor", "trainsim's default reading (expert ranks beside the data ranks) has no Megatron-core form; "
                                             "Megatron folds the experts over the data ranks");
  }
  if (p.sequence_parallel) arg("sequence-parallel");
  if (p.schedule == PipelineSchedule::INTERLEAVED_1F1B) {
    arg("num-virtual-stages-per-pipeline-rank", std::to_string(p.virtual_stages));
  } else if (p.schedule != PipelineSchedule::ONE_F_ONE_B && p.pipeline > 1) {
    w.lose("parallelism.pipeline_schedule", fmt::format("{} is not a Megatron-LM schedule: written as 1F1B", models::to_string(p.schedule)));
  }
  if (!p.stage_layers.empty() && p.stage_layers != models::balanced_split(m.layers, p.pipeline_chunks())) {
    const std::vector<int>& s_l = p.stage_layers;
    const bool middle_even = p.virtual_stages == 1 && p.pipeline > 2 &&
                             std::all_of(s_l.begin() + 1, s_l.end() - 1, [&](int n) { return n == s_l[1]; });
    if (middle_even) {
      if (s_l.front() != s_l[1]) arg("decoder-first-pipeline-num-layers", std::to_string(s_l.front()));
      if (s_l.back() != s_l[1]) arg("decoder-last-pipeline-num-layers", std::to_string(s_l.back()));
    } else {
      w.lose("parallelism.stage_layers", "Megatron-LM sets the first and last stages' layers only, the others even: left out");
    }
  } else if (p.stage_layers.empty() && m.layers % p.pipeline_chunks() != 0) {
    w.lose("parallelism.stage_layers", fmt::format("Megatron-LM needs the {} layers to divide evenly over {} chunks", m.layers, p.pipeline_chunks()));
  }
  if (p.gradients_per_step) {
    w.lose("parallelism.gradient_buffers", "\"per-step\": Megatron-LM keeps its gradients in grad buffers allocated once");
  }
  if (p.recompute == Recompute::FULL) {
    arg("recompute-granularity", "full");
    arg("recompute-method", "uniform");
    arg("recompute-num-layers", "1");
    if (p.recompute_early_stop) {
      w.lose("parallelism.recompute_early_stop", "Megatron-LM re-runs each recomputed layer whole (its reentrant "
                                                 "CheckpointFunction): the early stop is left out");
    }
  } else if (p.recompute == Recompute::SELECTIVE) {
    arg("recompute-granularity", "selective");
  } else if (p.recompute == Recompute::SELECTIVE_OP) {
    w.lose("parallelism.recompute", "selective-op is PyTorch's per-op checkpointing (torchtitan), not Megatron's: left out");
  }
  if (p.zero_stage >= 1 && p.zero_impl == ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER) {
    arg("use-distributed-optimizer");
    if (p.zero_stage == 2) {
      w.lose("parallelism.zero_stage", "2: Megatron's distributed optimizer shards the optimizer states (ZeRO-1); written as "
                                       "--use-distributed-optimizer, which imports as zero_stage 1");
    }
    if (p.overlap_param_gather) arg("overlap-param-gather");
  } else if (p.zero_stage >= 1) {
    w.lose("parallelism.zero_stage", fmt::format("{} with zero_impl {} is not Megatron-LM's: left out", p.zero_stage, models::to_string(p.zero_impl)));
  }
  if (p.overlap_grad_reduce) arg("overlap-grad-reduce");
  const double elements = p.bucket_size.value() / 4;
  if (std::floor(elements) == elements) arg("ddp-bucket-size", fmt::format("{:.0f}", elements));
  else w.lose("parallelism.bucket_size", "not a whole number of fp32 gradients");
  if (p.tp_comm_overlap) arg("tp-comm-overlap");
  if (m.is_moe() && p.expert > 1 && p.moe_a2a_overlap) arg("overlap-moe-expert-parallel-comm");
  lose_optimizations(s, w, false);

  // One argument per line, continued with a backslash: the lines paste after `pretrain_gpt.py \` in
  // a launch script.
  std::string body;
  for (size_t i = 0; i < a.size(); ++i) body += a[i] + (i + 1 < a.size() ? " \\\n" : "\n");
  return header(s, r, ConfigFormat::MEGATRON, "#") +
         "# Data, tokenizer, optimizer and logging arguments are yours to add; the data-parallel size is the world\n"
         "# size / (tensor x pipeline x context).\n" + body;
}

std::string torchtitan(const Scenario& s, ExportResult& r) {
  Writer w(r);
  const models::ModelSpec& m = s.model;
  const models::TrainingConfig& t = s.training;
  const models::ParallelismConfig& p = s.parallelism;
  // The flavor with the model's shape.
  core::Json shape = m.to_json();
  shape.erase("name");
  shape.erase("source");
  std::string name = "custom", flavor = "custom";
  for (const import_detail::TorchtitanFlavor& f : import_detail::torchtitan_flavors()) {
    core::Diagnostics ignore;
    core::Json other = models::ModelSpec::from_json(import_detail::flavor_model(f), "", "", ignore).to_json();
    other.erase("name");
    other.erase("source");
    if (other == shape) {
      name = f.name;
      flavor = f.flavor;
    }
  }
  if (name == "custom") w.lose("model", "the shape is no torchtitan flavor: write it with --to hf and import both (--hf)");
  std::string out = fmt::format("[job]\ndescription = \"{}\"\n\n[model]\nname = \"{}\"\nflavor = \"{}\"\n", s.name, name, flavor);
  if (t.precision == core::Precision::FP8) out += "converters = [\"float8\"]\n";
  // Batches: without a pipeline each step takes micro_batch sequences per rank; with one, the
  // rank's local batch is split into micro-batches of pipeline_parallel_microbatch_size.
  const int64_t replicas = p.data * (p.folded() ? 1 : p.expert);
  const int64_t local = p.pipeline > 1 ? t.global_batch / replicas : t.micro_batch;
  out += fmt::format("\n[training]\nlocal_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\n", local, t.global_batch, t.sequence_length);
  if (t.tokens) {
    const double steps = *t.tokens / static_cast<double>(t.global_batch * t.sequence_length);
    out += fmt::format("steps = {:.0f}\n", std::ceil(steps));
    if (std::floor(steps) != steps) w.lose("training.tokens", fmt::format("not whole steps: written as {:.0f}", std::ceil(steps)));
  }
  switch (t.precision) {
    case core::Precision::BF16:
    case core::Precision::FP8: out += "mixed_precision_param = \"bfloat16\"\n"; break;
    case core::Precision::FP32: out += "mixed_precision_param = \"float32\"\n"; break;
    default: w.lose("training.precision", fmt::format("{} is not a torchtitan precision: written as bfloat16", core::to_string(t.precision)));
      out += "mixed_precision_param = \"bfloat16\"\n";
  }
  if (s.parallelism.framework_reduce()) {
    out += fmt::format("mixed_precision_reduce = \"{}\"\n", s.parallelism.reduce_fp32() ? "float32" : "bfloat16");
  }
  const bool cpu_offload = s.offload.optimizer_states == models::OffloadTarget::CPU && s.offload.gradients == models::OffloadTarget::CPU &&
                           s.offload.parameters == models::OffloadTarget::CPU && s.offload.activations == models::OffloadTarget::NONE;
  if (cpu_offload) out += "enable_cpu_offload = true\n";
  if (t.fp8_params) w.lose("training.fp8_params", "written as [float8] enable_fsdp_float8_all_gather");
  // Parallelism.
  int64_t replicate = 1, shard = p.data;
  if (p.hybrid_shard()) {
    replicate = p.data / p.shard_group;
    shard = p.shard_group;
  }
  if (p.zero_stage == 0) {
    replicate = p.data;
    shard = 1;
    if (p.context > 1) w.lose("parallelism.zero_stage", "0: torchtitan shards over the context ranks (FSDP) whenever context > 1");
  } else if (!(p.zero_stage >= 2 && p.zero_impl == ZeroImpl::FSDP2)) {
    w.lose("parallelism.zero_stage", fmt::format("{} with zero_impl {}: torchtitan shards with fully_shard (fsdp2, stage 3, or "
                                                 "2 without resharding after forward)",
                                                 p.zero_stage, models::to_string(p.zero_impl)));
  } else if (p.data == 1 && p.context == 1) {
    w.lose("parallelism.zero_stage", fmt::format("{} over one rank: torchtitan applies no FSDP there", p.zero_stage));
  }
  out += fmt::format("\n[parallelism]\ndata_parallel_replicate_degree = {}\ndata_parallel_shard_degree = {}\n", replicate, shard);
  // Stated, as the default policy depends on the pipeline: stage 2 keeps units gathered.
  if (p.zero_stage >= 2) out += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", p.zero_stage == 2 ? "never" : "always");
  out += fmt::format("tensor_parallel_degree = {}\npipeline_parallel_degree = {}\ncontext_parallel_degree = {}\n", p.tensor, p.pipeline, p.context);
  if (p.sequence_parallel != (p.tensor > 1)) w.lose("parallelism.sequence_parallel", "torchtitan's tensor parallelism always splits the norms' sequences");
  if (p.tp_overlap_active()) out += "enable_async_tensor_parallel = true\n";
  if (p.expert > 1) {
    out += fmt::format("expert_parallel_degree = {}\nexpert_tensor_parallel_degree = {}\n", p.expert, p.expert_mlp_tensor());
    if (!p.folded()) w.lose("parallelism.expert_tensor", "torchtitan folds the experts over the data ranks");
  }
  if (p.pipeline > 1) {
    if (p.schedule == PipelineSchedule::ONE_F_ONE_B) out += "pipeline_parallel_schedule = \"1F1B\"\n";
    else if (p.schedule == PipelineSchedule::GPIPE) out += "pipeline_parallel_schedule = \"GPipe\"\n";
    else if (p.schedule == PipelineSchedule::INTERLEAVED_1F1B && m.layers % p.pipeline_chunks() == 0) {
      out += fmt::format("pipeline_parallel_schedule = \"Interleaved1F1B\"\npipeline_parallel_layers_per_stage = {}\n", m.layers / p.pipeline_chunks());
    } else {
      w.lose("parallelism.pipeline_schedule", fmt::format("{} has no torchtitan form here: written as 1F1B", models::to_string(p.schedule)));
      out += "pipeline_parallel_schedule = \"1F1B\"\n";
    }
    out += fmt::format("pipeline_parallel_microbatch_size = {}\n", t.micro_batch);
    if (!p.stage_layers.empty() && p.stage_layers != models::balanced_split(m.layers, p.pipeline_chunks())) {
      w.lose("parallelism.stage_layers", "torchtitan splits by pipeline_parallel_split_points, which the importer leaves out");
    }
  }
  const bool selective = p.recompute == Recompute::SELECTIVE || p.recompute == Recompute::SELECTIVE_OP;
  out += fmt::format("\n[activation_checkpoint]\nmode = \"{}\"\n", selective ? "selective" : models::to_string(p.recompute));
  if (selective) out += "selective_ac_option = \"op\"\n";
  if (p.recompute == Recompute::SELECTIVE) {
    w.lose("parallelism.recompute", "selective (Megatron's attention core) has no torchtitan form: written as the per-op "
                                    "policy (selective-op)");
  }
  if (p.recompute == Recompute::FULL && !p.recompute_early_stop) {
    w.lose("parallelism.recompute_early_stop", "false: torchtitan's full checkpointing is non-reentrant and stops early");
  }
  if (!p.gradients_per_step) {
    w.lose("parallelism.gradient_buffers", "\"persistent\": torchtitan's optimizers free the gradients after each step "
                                           "(zero_grad with set_to_none)");
  }
  out += fmt::format("\n[compile]\nenable = {}\n", t.compile ? "true" : "false");
  if (t.fp8_params) out += "\n[float8]\nenable_fsdp_float8_all_gather = true\n";
  if (t.attention != models::Attention::FLASH) w.lose("training.attention", "torchtitan runs scaled_dot_product_attention (flash)");
  if (const std::string st = stack_name(s); st != "torchtitan") w.lose("training.stack", fmt::format("the job runs on {}, not torchtitan", st));
  if (p.overlap_grad_reduce != true) w.lose("parallelism.overlap_grad_reduce", "torchtitan always overlaps the gradient reduction");
  lose_optimizations(s, w, cpu_offload);
  return header(s, r, ConfigFormat::TORCHTITAN, "#") + out;
}

std::string deepspeed(const Scenario& s, ExportResult& r) {
  Writer w(r);
  const models::TrainingConfig& t = s.training;
  const models::ParallelismConfig& p = s.parallelism;
  const int64_t replicas = p.data * (p.folded() ? 1 : p.expert);
  core::Json c = core::Json::object();
  c["train_batch_size"] = t.global_batch;
  c["train_micro_batch_size_per_gpu"] = t.micro_batch;
  c["gradient_accumulation_steps"] = t.global_batch / (t.micro_batch * replicas);
  c["bf16"] = {{"enabled", t.precision == core::Precision::BF16}};
  c["fp16"] = {{"enabled", t.precision == core::Precision::FP16}};
  if (t.precision == core::Precision::FP8 || t.precision == core::Precision::TF32) {
    w.lose("training.precision", fmt::format("{} is not a DeepSpeed precision: written as fp32", core::to_string(t.precision)));
  }
  core::Json z = {{"stage", p.zero_stage}};
  if (p.zero_stage >= 1 && p.zero_impl != ZeroImpl::DEEPSPEED) {
    w.lose("parallelism.zero_impl", fmt::format("{} is not DeepSpeed's ZeRO", models::to_string(p.zero_impl)));
  }
  if (p.zero_stage >= 1) {
    z["overlap_comm"] = p.overlap_grad_reduce;
    z["reduce_bucket_size"] = p.bucket_elements();
  }
  if (p.zero_stage == 3 && p.zero_impl == ZeroImpl::DEEPSPEED) {
    const models::DeepSpeedZeroConfig d = t.deepspeed.value_or(models::DeepSpeedZeroConfig{});
    z["stage3_prefetch_bucket_size"] = d.prefetch_bucket_elements;
    z["stage3_max_live_parameters"] = d.max_live_parameters;
    z["stage3_param_persistence_threshold"] = d.persistence_threshold;
  } else if (p.zero_stage == 3 && p.prefetch >= 0) {
    w.lose("parallelism.prefetch", "counted in layers here, in elements in DeepSpeed: left to its default");
  }
  bool offload_expressed = !s.offload.active();
  if (is_offload(s.offload, "zero-offload")) {
    z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    offload_expressed = true;
  } else if (is_offload(s.offload, "zero-infinity")) {
    z["offload_optimizer"] = {{"device", "nvme"}};
    z["offload_param"] = {{"device", "nvme"}};
    offload_expressed = true;
  }
  c["zero_optimization"] = z;
  if (p.reduce_fp32()) c["communication_data_type"] = "fp32";
  if (p.gradients_per_step) {
    w.lose("parallelism.gradient_buffers", "\"per-step\": DeepSpeed keeps its gradient partitions in buffers allocated once");
  }
  if (p.recompute == Recompute::FULL) {
    c["activation_checkpointing"] = {{"partition_activations", false},
                                     {"cpu_checkpointing", s.offload.activations == models::OffloadTarget::CPU}};
    if (p.recompute_early_stop) {
      w.lose("parallelism.recompute_early_stop", "deepspeed.checkpointing re-runs each layer whole (reentrant): the "
                                                 "early stop is left out");
    }
  } else if (p.recompute != Recompute::NONE) {
    w.lose("parallelism.recompute", fmt::format("{} recompute is not DeepSpeed's (it checkpoints whole layers)", models::to_string(p.recompute)));
  }
  if (p.tensor > 1 || p.pipeline > 1) {
    w.need(fmt::format("parallelism.tensor={}", p.tensor));
    w.need(fmt::format("parallelism.pipeline={}", p.pipeline));
  }
  if (p.context > 1 || p.expert > 1) w.lose("parallelism", "DeepSpeed's ZeRO has no context or expert parallelism here");
  w.need(fmt::format("training.sequence_length={}", t.sequence_length));
  if (t.attention == models::Attention::FLASH) w.need("training.attention=flash");
  if (const std::string st = stack_name(s); st != "deepspeed") w.lose("training.stack", fmt::format("the job runs on {}, not DeepSpeed", st));
  lose_optimizations(s, w, offload_expressed);
  return c.dump(2) + "\n";
}

std::string hugging_face(const Scenario& s, ExportResult& r) {
  Writer w(r);
  const models::ModelSpec& m = s.model;
  core::Json c = core::Json::object();
  c["_name_or_path"] = m.name;
  if (m.activation == models::Activation::GELU) {
    if (!m.learned_positions) w.lose("model.learned_positions", "GPT-2 has learned positions");
    if (m.kv_heads != m.heads || m.head_dim_given > 0) w.lose("model.kv_heads", "GPT-2 has multi-head attention with head_dim hidden / heads");
    if (m.is_moe()) w.lose("model.experts", "GPT-2 has no experts");
    if (m.embedding_norm) w.lose("model.embedding_norm", "GPT-2 has no embedding norm");
    c["model_type"] = "gpt2";
    c["architectures"] = {"GPT2LMHeadModel"};
    c["n_embd"] = m.hidden;
    c["n_layer"] = m.layers;
    c["n_head"] = m.heads;
    c["n_inner"] = m.ffn_hidden;
    c["n_positions"] = s.training.sequence_length;
    c["vocab_size"] = m.vocab;
    c["activation_function"] = "gelu_new";
    c["tie_word_embeddings"] = m.tied_embeddings;
  } else {
    if (m.learned_positions) w.lose("model.learned_positions", "Llama-style models use rotary positions");
    const bool mixtral = m.is_moe() && m.shared_experts == 0 && m.moe_layer_count() == m.layers;
    const char* type = !m.is_moe() ? "llama" : mixtral ? "mixtral" : "qwen2_moe";
    c["model_type"] = type;
    c["architectures"] = {!m.is_moe() ? "LlamaForCausalLM" : mixtral ? "MixtralForCausalLM" : "Qwen2MoeForCausalLM"};
    c["hidden_size"] = m.hidden;
    c["num_hidden_layers"] = m.layers;
    c["num_attention_heads"] = m.heads;
    c["num_key_value_heads"] = m.kv_heads;
    if (m.head_dim_given > 0) c["head_dim"] = m.head_dim_given;
    c["vocab_size"] = m.vocab;
    c["hidden_act"] = "silu";
    c["max_position_embeddings"] = s.training.sequence_length;
    c["tie_word_embeddings"] = m.tied_embeddings;
    if (!m.is_moe()) {
      c["intermediate_size"] = m.ffn_hidden;
    } else if (mixtral) {
      c["intermediate_size"] = m.ffn_hidden;
      c["num_local_experts"] = m.experts;
      c["num_experts_per_tok"] = m.top_k;
    } else {
      c["moe_intermediate_size"] = m.ffn_hidden;
      c["intermediate_size"] = m.dense_ffn();
      c["num_experts"] = m.experts;
      c["num_experts_per_tok"] = m.top_k;
      c["decoder_sparse_step"] = 1;
      core::Json dense = core::Json::array();
      for (int l = 0; l < m.layers; ++l) {
        if (m.layer_kind(l) == models::LayerKind::DENSE) dense.push_back(l);
      }
      c["mlp_only_layers"] = dense;
      if (m.shared_experts > 0) c["shared_expert_intermediate_size"] = m.shared_ffn();
      if (m.shared_experts > 1) w.lose("model.shared_experts", fmt::format("Qwen2-MoE has one shared expert: of {} (the same MLP)", m.shared_ffn()));
    }
  }
  return c.dump(2) + "\n";
}

}  // namespace

ExportResult export_scenario(const Scenario& s, ConfigFormat format) {
  if (s.model.is_layer_graph()) {
    throw core::InputError(s.file, "/model", fmt::format("{} is a model of layers (docs/cnn.md): {} cannot describe it", s.model.name, describe(format)));
  }
  if (!s.cluster.pools.empty()) {
    // The per-pool batch split (training.batch_split) and the pools' placement are trainsim's own.
    throw core::InputError(s.file, "/cluster/pools",
                           fmt::format("a job on several GPU types (its batch or layer split over the pools): {} describes "
                                       "a job on one GPU type",
                                       describe(format)));
  }
  ExportResult r;
  switch (format) {
    case ConfigFormat::MEGATRON: r.text = megatron(s, r); break;
    case ConfigFormat::TORCHTITAN: r.text = torchtitan(s, r); break;
    case ConfigFormat::DEEPSPEED: r.text = deepspeed(s, r); break;
    case ConfigFormat::HUGGING_FACE: r.text = hugging_face(s, r); break;
  }
  return r;
}

}  // namespace trainsim::plan
