#include "models/workload_builder.hpp"

#include <algorithm>
#include <cmath>

#include "models/zero3_buffers.hpp"
#include "models/schedule.hpp"
#include "models/stage_program.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

// What the W pass of a split backward keeps from B: each GEMM's input and output gradient,
// count·m·(k + n) elements at the activations' element size.
double weight_gradient_bytes(const std::vector<OpCost>& ops, double element_bytes) {
  double elements = 0;
  for (const OpCost& op : ops) {
    if (op.op_class != core::OpClass::GEMM) continue;
    elements += static_cast<double>(op.gemm.count) * static_cast<double>(op.gemm.m) *
                (static_cast<double>(op.gemm.k) + static_cast<double>(op.gemm.n));
  }
  return elements * element_bytes;
}

using core::Axis;

// Weight matrices of a layer that DeepSpeed ZeRO-3 partitions (at or above persistence_threshold).
double gathered_weights(const std::vector<OpCost>& ops, const DeepSpeedZeroConfig& ds) {
  double n = 0;
  for (const OpCost& op : ops) {
    const double w = zero3_weight_elements(op);
    n += w > 0 && w >= ds.persistence_threshold ? 1 : 0;
  }
  return n;
}

GroupIds add_groups(const ParallelismConfig& p, const ModelSpec& m, core::Workload& w) {
  auto add = [&](core::GroupKind g) {
    w.groups.push_back(std::move(g));
    return static_cast<uint16_t>(w.groups.size() - 1);
  };
  GroupIds ids;
  ids.tensor = add({"tensor", Axis::TENSOR, {}, {}});
  ids.context = add({"context", Axis::CONTEXT, {}, {}});
  // Under parallel folding with expert_tensor 1 the expert group also spans the stage's tensor and
  // context ranks, and the expert-data group is what remains of the data axis.
  const bool span = p.experts_span_tensor();
  std::vector<Axis> expert_group_extra;
  if (span && p.tensor > 1) expert_group_extra.push_back(Axis::TENSOR);
  if (span && p.context > 1) expert_group_extra.push_back(Axis::CONTEXT);
  ids.expert = add({"expert", Axis::EXPERT, {}, expert_group_extra});
  std::vector<Axis> dense_extra, expert_extra;
  if (w.layout.size(Axis::EXPERT) > 1) dense_extra.push_back(Axis::EXPERT);
  if (p.context > 1) {
    dense_extra.push_back(Axis::CONTEXT);
    if (!span) expert_extra.push_back(Axis::CONTEXT);
  }
  if (p.hybrid_shard()) {
    // HSDP: "data" is the shard group, shard_group adjacent data ranks (x context), and "replicate"
    // joins the ranks at the same place of every shard group.
    ids.data = add({"data", Axis::DATA, {}, dense_extra, core::AxisCut::BLOCK, p.shard_group});
    ids.replicate = add({"replicate", Axis::DATA, {}, {}, core::AxisCut::STRIDED, p.shard_group});
  } else {
    ids.data = add({"data", Axis::DATA, {}, dense_extra});
  }
  ids.expert_data = add({"expert-data", Axis::DATA, {}, expert_extra});
  if (p.pipeline > 1 && m.tied_embeddings) ids.embedding = add({"embedding", Axis::PIPELINE, {0, p.pipeline - 1}, {}});
  return ids;
}

BuildPlan make_plan(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p, const PruningConfig& pruning,
                    const OffloadConfig& offload, const CompressionConfig& compression,
                    GroupIds groups, std::vector<int> stage_layers) {
  BuildPlan plan;
  plan.model = &m;
  plan.parallelism = &p;
  plan.pruning = &pruning;
  plan.compression = &compression;
  plan.offload = &offload;
  plan.training = &t;
  plan.gradients_per_step = gradients_per_step_on_gpu(p, offload);
  plan.offload_params = offload.parameters != OffloadTarget::NONE;
  plan.activation_bytes = activation_element_bytes(t.precision);
  plan.master_bytes = master_weight_bytes_per_parameter(t.precision);
  plan.stages = p.pipeline;
  plan.chunks = p.virtual_stages;
  plan.positions = p.pipeline_chunks();
  plan.micro_batches = static_cast<int>(micro_batch_count(t, p));
  plan.chunk_layers = std::move(stage_layers);
  int first = 0;
  for (int n : plan.chunk_layers) {
    plan.first_layer.push_back(first);
    first += n;
  }
  plan.embedding = embedding_ops(m, t, p);
  plan.head = head_ops(m, t, p);
  apply_pruning(plan.head, pruning);

  const double e = activation_element_bytes(t.precision);
  const double b = static_cast<double>(t.micro_batch);
  const double s = static_cast<double>(t.sequence_length);
  const double tokens = b * s / p.context;
  const double h = static_cast<double>(m.hidden);
  const double kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim());
  plan.tensor_bytes = tokens * h * e;
  plan.context_bytes = 2 * b * s * kv / p.tensor * e;
  const double routed_tokens = p.experts_span_tensor() && p.sequence_parallel ? tokens / p.tensor : tokens;
  plan.all_to_all_bytes = m.top_k * routed_tokens * h * e;
  plan.pipeline_bytes = tokens * h * e / p.tensor;
  plan.loss_reduce_bytes = 3 * tokens * 4.0;

  ParallelismConfig no_recompute = p;
  no_recompute.recompute = Recompute::NONE;
  auto layer_plan = [&](LayerKind kind) {
    LayerPlan l;
    l.ops = layer_ops(m, t, p, kind);
    if (p.recompute == Recompute::SELECTIVE_OP) mark_op_sac(l.ops, m, t, p);
    l.recompute_ops = p.recompute == Recompute::FULL ? full_recompute_ops(l.ops, p.recompute_early_stop) : 0;
    apply_pruning(l.ops, pruning);
    l.pruned = pruned_parameters(layer_pruned_matrices(m, p, kind), pruning);
    l.stored_bytes = activation_bytes_per_layer(m, t, p, kind).value();
    const double whole_layer = activation_bytes_per_layer(m, t, no_recompute, kind).value();
    l.recompute_bytes = p.recompute == Recompute::FULL        ? whole_layer
                        : p.recompute == Recompute::SELECTIVE || p.recompute == Recompute::SELECTIVE_OP
                            ? whole_layer - l.stored_bytes
                            : 0.0;
    l.params = layer_parameters(m, p, kind);
    if (compression.method == CompressionMethod::POWERSGD) l.matrices = compressed_matrices(m, p, kind);
    l.weight_gradient_bytes = weight_gradient_bytes(l.ops, e);
    return l;
  };
  plan.dense_layer = layer_plan(LayerKind::DENSE);
  if (m.is_moe()) plan.moe_layer = layer_plan(LayerKind::MOE);
  plan.head_bytes = head_activation_bytes(m, t, p).value();
  plan.head_transient_bytes = head_backward_transient_bytes(m, t, p).value();
  plan.split_backward = splits_backward(p.schedule);
  plan.update_every_micro_batch = p.schedule == PipelineSchedule::PIPEDREAM;
  plan.steady_state = p.pipeline > 1 && steady_state_schedule(p.schedule);
  if (plan.split_backward) plan.head_weight_gradient_bytes = weight_gradient_bytes(plan.head, e);

  plan.embedding_params = embedding_parameters(m, t, p);
  plan.head_params = head_parameters(m, p);
  plan.embedding_pruned = pruned_parameters(embedding_pruned_matrices(m, p, pruning), pruning);
  plan.head_pruned = pruned_parameters(head_pruned_matrices(m, p, pruning), pruning);
  plan.weight_bytes = weight_bytes_per_parameter(t);
  plan.optimizer_step_bytes = optimizer_step_bytes_per_parameter(t.precision);
  // A ParallelismConfig built in code may leave zero_impl at its default; stage 3 then means FSDP,
  // as from_json resolves it.
  plan.zero_impl = p.zero_stage == 3 && p.zero_impl == ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER ? ZeroImpl::FSDP
                                                                                               : p.zero_impl;
  plan.overlap_param_gather = p.overlap_param_gather && (p.zero_stage == 1 || p.zero_stage == 2) && !p.shard_grad_op();
  plan.gradient_reduce_bytes = gradient_reduce_bytes(t, p);
  // FSDP1 (_post_backward_hook), FSDP2 (foreach_reduce) and DeepSpeed cast the 16-bit gradient to the
  // reduce dtype on the reduction's stream before the collective.
  if (p.reduce_fp32() && activation_element_bytes(t.precision) < 4) plan.gradient_cast_bytes = activation_element_bytes(t.precision) + 4;
  const double word_embedding = static_cast<double>(m.vocab) * static_cast<double>(m.hidden) / p.tensor;
  plan.embedding_gradient_bytes = word_embedding * plan.gradient_reduce_bytes;
  if (pruning.embeddings && pruning.communication != SparseCommunication::DENSE) {
    const PrunedParameters word = pruned_parameters({{static_cast<double>(m.vocab) / p.tensor, static_cast<double>(m.hidden)}}, pruning);
    plan.embedding_gradient_bytes = word.kept.dense * plan.gradient_reduce_bytes +
                                    sent_index_bytes(word, pruning).dense;
  }
  if (p.zero_stage == 3 && plan.zero_impl == ZeroImpl::DEEPSPEED) {
    plan.deepspeed = t.deepspeed.value_or(DeepSpeedZeroConfig{});
    // DeepSpeed ZeRO-3 fetches parameter by parameter from its module hooks, prefetching by
    // elements (stage_deepspeed.cpp). With offloaded parameters (ZeRO-Infinity) the unit-level
    // fetch stays: whole layers ahead by stage3_prefetch_bucket_size elements, at least the next
    // one, in messages of at most that many elements.
    plan.deepspeed_fetch = !plan.offload_params;
    plan.gather_message_elements = plan.deepspeed.prefetch_bucket_elements;
    plan.prefetch = std::max(1, static_cast<int>(plan.deepspeed.prefetch_bucket_elements /
                                                 std::max(plan.dense_layer.params.total(), plan.moe_layer.params.total())));
  } else if (p.prefetch >= 0) {
    plan.prefetch = p.prefetch;
  }
  if (p.zero_stage == 3 && plan.zero_impl == ZeroImpl::FSDP) {
    plan.backward_prefetch_post = p.backward_prefetch_post;
  }

  plan.groups = groups;
  plan.reduce_dense = p.dense_replicas() > 1;
  plan.reduce_expert = p.expert_replicas() > 1;
  plan.sharded_params = p.gathers_parameters() && plan.reduce_dense;
  plan.reshard_after_forward = p.zero_stage == 3;
  plan.reduce_once_per_step = plan.sharded_params && p.fsdp2_pipelined();
  plan.gather_once_per_step = plan.reduce_once_per_step && !plan.reshard_after_forward;

  // Ideal timing with costs proportional to layers (backward twice forward, plus the recompute; a
  // split backward's B and W one forward each, B with the recompute).
  std::vector<double> forward_cost, backward_cost, weight_cost;
  const double recompute = p.recompute == Recompute::FULL ? 1.0 : 0.0;
  for (int n : plan.chunk_layers) {
    forward_cost.push_back(n);
    backward_cost.push_back(n * ((plan.split_backward ? 1.0 : 2.0) + recompute));
    if (plan.split_backward) weight_cost.push_back(n);
  }
  std::vector<std::vector<PassSlot>> order;
  const bool pipedream = p.schedule == PipelineSchedule::PIPEDREAM || p.schedule == PipelineSchedule::PIPEDREAM_2BW;
  plan.async = p.execution == PipelineExecution::ASYNC && plan.chunks == 1 && !pipedream;
  if (plan.async) {
    // Each stage's passes form a ready pool whose order the engine picks as inputs arrive
    // (stage_schedule.cpp). Its default order (program order: what the emulator runs, and where the
    // transfers sit) is the message-driven order with these costs, the output layer counted as
    // V/(12h) layers (its logits GEMM's 2bshV FLOPs against a layer's ~24bsh²).
    std::vector<double> fwd = forward_cost, bwd = backward_cost, wgt = weight_cost;
    const double head = static_cast<double>(m.vocab) / (12.0 * static_cast<double>(m.hidden));
    fwd.back() += head;
    bwd.back() += (plan.split_backward ? 1.0 : 2.0) * head;
    if (!wgt.empty()) wgt.back() += head;
    order = async_pipeline_order(p.schedule, plan.stages, plan.micro_batches, fwd, bwd, wgt);
  } else {
    order = pipeline_order(p.schedule, plan.stages, plan.chunks, plan.micro_batches);
  }
  plan.timed = time_pipeline(order, plan.stages, forward_cost, backward_cost, weight_cost);
  const size_t cells = 2 * static_cast<size_t>(plan.micro_batches) * static_cast<size_t>(plan.positions);
  plan.forward_end.assign(cells, -1.0);
  plan.backward_end.assign(cells, -1.0);
  for (int stage = 0; stage < plan.stages; ++stage) {
    for (const TimedSlot& ts : plan.timed[static_cast<size_t>(stage)]) {
      const size_t cell = plan.cell(ts.slot.micro_batch, ts.slot.carried, ts.slot.chunk * plan.stages + stage);
      if (ts.slot.pass == Pass::FORWARD) plan.forward_end[cell] = ts.end;
      if (ts.slot.pass == Pass::BACKWARD) plan.backward_end[cell] = ts.end;
    }
  }
  return plan;
}

// ZeRO-3 keeps the unit in use and the `prefetch` units gathered ahead resident.
// Parameters offloaded (ZeRO-Infinity) are fetched unit by unit into the same buffers.
// SHARD_GRAD_OP holds every unit unsharded from its forward to its backward: that peak is in the
// model states' weights (model_state_memory shards weights at stage 3 only), not here.
// DeepSpeed ZeRO-3: zero3_peak_live_elements of the stage's `stage_parameters` (one rank's).
core::Bytes gather_buffers(const BuildPlan& plan, double stage_parameters) {
  if (!(plan.sharded_params && plan.reshard_after_forward) && !plan.offload_params) return core::Bytes(0);
  const double largest = std::max({plan.dense_layer.params.total(), plan.moe_layer.params.total(),
                                   plan.embedding_params.total(), plan.head_params.total()});
  if (plan.deepspeed_fetch) {
    return core::Bytes(zero3_peak_live_elements(plan.deepspeed, largest, stage_parameters) * plan.weight_bytes);
  }
  return core::Bytes((1 + plan.prefetch) * largest * plan.weight_bytes);
}

}  // namespace

std::vector<int> balanced_split(int layers, int chunks) {
  TRAINSIM_CHECK(chunks >= 1 && layers >= chunks, "cannot split layers into more chunks than layers");
  std::vector<int> split(static_cast<size_t>(chunks), layers / chunks);
  for (int i = 0; i < layers % chunks; ++i) ++split[static_cast<size_t>(i)];
  return split;
}

double estimate_task_count(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                           const OffloadConfig& offload, const CompressionConfig& compression) {
  if (m.is_layer_graph()) return estimate_layer_graph_task_count(m, t, p);
  const double micro_batches = static_cast<double>(micro_batch_count(t, p));
  const bool tp = p.tensor > 1;
  const bool gathered = p.gathers_parameters() && p.dense_replicas() > 1;
  const double gather_passes = p.zero_stage == 3 ? 2 : 1;  // SHARD_GRAD_OP: the forward's only
  // Tasks of one layer for one micro-batch, forward + backward + recompute.
  auto per_layer = [&](LayerKind kind) {
    const double ops = static_cast<double>(layer_ops(m, t, p, kind).size());
    double n = 2 * ops + 2;                                   // compute forward and backward, memory alloc / free
    if (splits_backward(p.schedule)) {                        // W: each GEMM's weight gradient, a memory free
      for (const OpCost& op : layer_ops(m, t, p, kind)) n += op.op_class == core::OpClass::GEMM ? 1 : 0;
      n += 1;
    }
    if (p.recompute == Recompute::FULL) n += ops + 1;         // the forward again (+ its allocation)
    if (p.recompute == Recompute::SELECTIVE) n += 1;          // the attention core again
    if (p.recompute == Recompute::SELECTIVE_OP) {             // the ops not saved again (+ allocation)
      std::vector<OpCost> marked = layer_ops(m, t, p, kind);
      mark_op_sac(marked, m, t, p);
      for (const OpCost& op : marked) n += op.op_sac_recompute > 0 ? 1 : 0;
      n += 1;
    }
    double comms = 0;                                         // collectives of one pass
    if (tp) comms += 2;                                       // all-reduce, or all-gather + reduce-scatter
    if (tp && p.sequence_parallel) comms += 2;
    if (p.tp_overlap_active()) n += 4.0 * p.tensor + ops;     // chunked GEMMs + collectives; split backward
    if (p.context > 1) comms += 1;                            // K/V all-gather (reduce-scatter back)
    if (kind == LayerKind::MOE && p.expert > 1) comms += 2;   // dispatch and combine all-to-all
    n += comms * (p.recompute == Recompute::FULL ? 3 : 2);
    if (gathered) {
      // Gathers forward and backward, reduce-scatter. DeepSpeed: one gather and one host hook per
      // weight matrix at or above the persistence threshold (stage_deepspeed.cpp); with offloaded
      // parameters, messages of stage3_prefetch_bucket_size elements.
      const double params = layer_parameters(m, p, kind).total();
      double messages = 1.0;
      if (p.zero_impl == ZeroImpl::DEEPSPEED) {
        const DeepSpeedZeroConfig ds = t.deepspeed.value_or(DeepSpeedZeroConfig{});
        messages = offload.parameters != OffloadTarget::NONE
                       ? std::max(1.0, std::ceil(params / std::max(1.0, ds.prefetch_bucket_elements)))
                       : 2.0 * gathered_weights(layer_ops(m, t, p, kind), ds);
      }
      n += 1 + gather_passes * messages + (p.hybrid_shard() ? 1 : 0);  // HSDP: the shard's all-reduce
      if (compression.quantization()) n += 2;                // compress and decompress every reduce-scatter
    }
    if (offload.activations != OffloadTarget::NONE) n += 6;  // out and back, with their memory tasks
    if (offload.gradients != OffloadTarget::NONE) n += 1;    // gradients to the host
    if (offload.parameters != OffloadTarget::NONE) n += 2;   // parameter fetches
    return n;
  };
  const double moe_layers = m.is_moe() ? m.moe_layer_count() : 0;
  const double dense_layers = m.layers - moe_layers;
  double per_micro_batch = dense_layers * per_layer(LayerKind::DENSE) +
                           (moe_layers > 0 ? moe_layers * per_layer(LayerKind::MOE) : 0);
  const double edge_ops = static_cast<double>(embedding_ops(m, t, p).size() + head_ops(m, t, p).size());
  per_micro_batch += 2 * edge_ops + (tp ? 8 : 0) + 4.0 * p.pipeline_chunks();
  // Gradient buckets, parameter gathers and the optimizer: a few tasks per layer and stage.
  // Gradient compression adds its steps per bucket (PowerSGD: about 15 per bucket of a layer or so).
  const double compression_tasks = compression.method == CompressionMethod::POWERSGD ? 15.0
                                   : compression.enabled()                         ? 4.0
                                                                                   : 0.0;
  const double per_iteration = (4.0 + compression_tasks) * m.layers + 8.0 * p.pipeline;
  return micro_batches * per_micro_batch + per_iteration;
}

BuiltWorkload build_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                             const PruningConfig& pruning, const OffloadConfig& offload,
                             const CompressionConfig& compression) {
  if (m.is_layer_graph()) return build_layer_graph_workload(m, t, p);
  BuiltWorkload built;
  built.balanced_split = p.stage_layers.empty();
  built.stage_layers = built.balanced_split ? balanced_split(m.layers, p.pipeline_chunks()) : p.stage_layers;
  built.micro_batches = static_cast<int>(micro_batch_count(t, p));
  built.flops = iteration_flops(m, t, p);
  built.samples_per_iteration = t.global_batch;
  built.tokens_per_iteration = t.global_batch * t.sequence_length;

  core::Workload& w = built.workload;
  w.layout = core::ParallelLayout(p.layout_sizes());
  w.precision = t.precision;
  // Hybrid sharding cuts the data axis into shard groups: no backend may fold it (Workload::validate).
  w.symmetric_axes = {true, true, true, !p.hybrid_shard(), false};
  w.steady_state = p.pipeline > 1 && steady_state_schedule(p.schedule);
  const BuildPlan plan = make_plan(m, t, p, pruning, offload, compression, add_groups(p, m, w), built.stage_layers);
  built.gradients_per_step = plan.gradients_per_step;
  built.schedule = schedule_stats(plan.timed, w.steady_state);

  for (int stage = 0; stage < p.pipeline; ++stage) {
    StageResult r = build_stage_program(plan, w, stage);
    const MemoryBreakdown states = model_state_memory(r.parameters, t, p, pruning, r.pruned);
    if (pruning.enabled()) {
      StagePruning sp;
      sp.pruned_parameters = r.pruned.pruned.total();
      sp.dense_memory = model_state_memory(r.parameters, t, p);
      sp.data_bytes = r.data_bytes;
      sp.dense_data_bytes = r.dense_data_bytes;
      built.pruning.push_back(sp);
    }
    const StateSplit split = split_model_states(states, r.parameters, t, p, offload);
    MemoryBreakdown mem = split.gpu;
    mem.activations = core::Bytes(r.peak_activation_bytes);
    // gradient_buffers "per-step": the gradients are in the running sum (allocated by each unit's
    // first backward, freed after the step); the breakdown gives those live at its peak.
    core::Bytes held_gradients = states.gradients;
    if (plan.gradients_per_step) {
      mem.gradients = core::Bytes(r.gradients_at_peak);
      mem.activations = core::Bytes(r.peak_activation_bytes - r.gradients_at_peak);
      held_gradients = core::Bytes(0);
    }
    mem.buffers = gather_buffers(plan, r.parameters.total()) + core::Bytes(r.optimizer_buffer_bytes);
    mem.error_feedback = core::Bytes(r.compression.error_feedback_bytes);
    if (compression.enabled()) built.compression.push_back(r.compression);
    mem.stashed_weights = mem.weights * static_cast<double>(weight_versions(p.schedule, p.pipeline, stage, built.micro_batches) - 1);
    r.program.static_memory = mem.weights + (plan.gradients_per_step ? core::Bytes(0) : mem.gradients) +
                              mem.optimizer_states + mem.buffers + mem.error_feedback + mem.stashed_weights;
    r.program.static_host_memory = split.host.total();
    built.peak_without_offload.push_back(states.weights + held_gradients + states.optimizer_states +
                                         (plan.sharded_params ? gather_buffers(plan, r.parameters.total()) : core::Bytes(0)) + mem.error_feedback +
                                         core::Bytes(r.peak_without_offload));
    built.host_states.push_back(split.host);
    built.nvme_states.push_back(split.nvme);
    w.programs.push_back(std::move(r.program));
    built.memory.push_back(mem);
  }
  w.program_of_rank.resize(static_cast<size_t>(w.layout.world_size()));
  for (int rank = 0; rank < w.layout.world_size(); ++rank) {
    w.program_of_rank[static_cast<size_t>(rank)] = static_cast<uint32_t>(w.layout.coord(rank, Axis::PIPELINE));
  }
  w.validate();
  return built;
}

}  // namespace trainsim::models
