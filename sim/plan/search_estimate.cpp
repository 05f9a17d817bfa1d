#include "sim/plan/search_estimate.hpp"

#include <algorithm>
#include <array>

#include "models/zero3_buffers.hpp"
#include "models/accounting.hpp"
#include "models/pruning.hpp"
#include "models/schedule.hpp"
#include "models/workload_builder.hpp"
#include "network/collective_cost.hpp"
#include "sim/engine/compute_model.hpp"
#include "sim/engine/host_model.hpp"

namespace trainsim::plan {
namespace {

using core::Axis;
using core::CollectiveOp;
using models::LayerKind;

struct Context {
  const models::ModelSpec& m;
  const models::TrainingConfig& t;
  const models::ParallelismConfig& p;
  const network::ClusterConfig& c;
  const core::Profile& prof;
  const models::PruningConfig& pruning;
  std::array<int, core::AXIS_COUNT> sizes{};
  std::array<int, core::AXIS_COUNT> stride{};

  // The placement of the group along `axes` that holds rank 0 (the layout is symmetric). The first
  // axis may be cut (core::AxisCut, hybrid sharding): `count` of its coordinates, `step` apart
  // (count 0: all of them).
  network::GroupPlacement placement(std::initializer_list<Axis> axes, int count = 0, int step = 1) const {
    std::vector<int> ranks{0};
    bool first = true;
    for (Axis a : axes) {
      const int n = first && count > 0 ? count : sizes[static_cast<size_t>(a)];
      const int s = stride[static_cast<size_t>(a)] * (first ? step : 1);
      first = false;
      std::vector<int> next;
      next.reserve(ranks.size() * static_cast<size_t>(n));
      for (int r : ranks) {
        for (int i = 0; i < n; ++i) next.push_back(r + i * s);
      }
      ranks = std::move(next);
    }
    return network::GroupPlacement::of(ranks, c);
  }
  double collective(CollectiveOp op, double bytes, const network::GroupPlacement& g) const {
    if (g.ranks <= 1 || bytes <= 0) return 0;
    return network::collective_cost(op, core::Bytes(bytes), g, c, prof.network).time.value();
  }
  double op_time(const models::OpCost& op, bool backward) const {
    core::Task task;
    task.op_class = op.op_class;
    task.flops = (backward ? op.backward_flops + op.backward_recompute_flops : op.forward_flops).value();
    task.bytes = (backward ? op.backward_bytes : op.forward_bytes).value();
    task.gemm = op.gemm;
    // As the workload builder: ops without a precision of their own (norms, elementwise, embedding)
    // run at the training precision, except in FP8 training (their OpCost default is BF16, which a
    // V100 in fp16 does not have).
    const bool own = op.op_class == core::OpClass::GEMM || op.op_class == core::OpClass::ATTENTION ||
                     op.op_class == core::OpClass::FLASH_ATTENTION || t.precision == core::Precision::FP8;
    task.precision = own ? op.precision : t.precision;
    task.has_precision = true;
    task.sparsity = op.sparsity;
    task.density = static_cast<float>(op.density);
    task.sparse_block = static_cast<uint8_t>(pruning.block_size);
    // The task is priced as a forward product (its backward FLOPs in one); a backward launches two
    // kernels (engine::kernel_launches), which the host overhead bound counts.
    const core::Seconds device = engine::compute_time(task, t.precision, c.gpu_spec, prof.device);
    return engine::host_bound(device, backward ? 2 : 1, prof.device).value();
  }
};

struct LayerCost {
  double forward = 0;
  double backward = 0;   // recompute included
  double stored = 0;     // activations kept per micro-batch
  double copy = 0;       // offloaded activations: the copy out (and back) of `stored`
  double recompute = 0;  // working set re-created before the backward
  models::ParameterCount params;
  models::PrunedParameters pruned;
};

// What offloading adds after the last backward: the gradient copies it does not hide and the
// optimizer step with its copies (see the header).
double offload_tail(const models::OffloadConfig& o, double partition, double local, const models::TrainingConfig& t,
                    const network::ClusterConfig& c, const core::Task& gpu_step, double last_backward) {
  using core::CopyDirection;
  auto copy = [&](double bytes, CopyDirection d) { return engine::copy_time(core::Bytes(bytes), d, c).value(); };
  const double e = models::activation_element_bytes(t.precision);
  const double weight = models::weight_bytes_per_parameter(t);
  const double master = models::master_weight_bytes_per_parameter(t.precision);
  double tail = 0;
  if (o.step_on_host) {
    const bool grads_nvme = o.gradients == models::OffloadTarget::NVME;
    const double grads = o.gradients == models::OffloadTarget::NONE
                             ? copy(partition * models::gradient_bytes_per_parameter(), CopyDirection::DEVICE_TO_HOST)
                             : std::max(0.0, copy(local * e, grads_nvme ? CopyDirection::DEVICE_TO_NVME
                                                                        : CopyDirection::DEVICE_TO_HOST) -
                                                 last_backward);
    core::Task host = gpu_step;
    host.flops = partition * models::ADAM_FLOPS_PER_PARAMETER;
    const double cpu = engine::host_compute_time(host, c).value();
    double nvme_read = (o.optimizer_states == models::OffloadTarget::NVME ? models::moment_bytes_per_parameter() : 0) +
                       (o.master_weights == models::OffloadTarget::NVME ? master : 0);
    const double nvme_write = nvme_read;
    if (grads_nvme) nvme_read += models::gradient_bytes_per_parameter();
    const double read = nvme_read > 0 ? copy(partition * nvme_read, CopyDirection::NVME_TO_HOST) : 0;
    const double write = nvme_write > 0 ? copy(partition * nvme_write, CopyDirection::HOST_TO_NVME) : 0;
    const double upload = o.parameters == models::OffloadTarget::NONE ? copy(partition * weight, CopyDirection::HOST_TO_DEVICE)
                          : o.parameters == models::OffloadTarget::NVME ? copy(partition * weight, CopyDirection::HOST_TO_NVME)
                                                                        : 0.0;
    tail += grads + (o.overlap ? std::max({cpu, read, write, upload}) : cpu + read + write + upload);
  } else {
    // The GPU steps while the states stream in and out.
    const double gpu = engine::compute_time(gpu_step, t.precision, c.gpu_spec, core::DeviceProfile::defaults()).value();
    double host_bytes = 0, nvme_bytes = 0;
    (o.optimizer_states == models::OffloadTarget::NVME ? nvme_bytes : host_bytes) +=
        o.optimizer_states == models::OffloadTarget::NONE ? 0 : models::moment_bytes_per_parameter();
    (o.master_weights == models::OffloadTarget::NVME ? nvme_bytes : host_bytes) +=
        o.master_weights == models::OffloadTarget::NONE ? 0 : master;
    const double in = copy(partition * host_bytes, CopyDirection::HOST_TO_DEVICE) +
                      (nvme_bytes > 0 ? copy(partition * nvme_bytes, CopyDirection::NVME_TO_DEVICE) : 0);
    const double out = copy(partition * host_bytes, CopyDirection::DEVICE_TO_HOST) +
                       (nvme_bytes > 0 ? copy(partition * nvme_bytes, CopyDirection::DEVICE_TO_NVME) : 0);
    tail += o.overlap ? std::max({gpu, in, out}) : gpu + in + out;
  }
  return tail;
}

}  // namespace

Estimate estimate_layout(const models::ModelSpec& m, const models::TrainingConfig& t,
                         const models::ParallelismConfig& p, const network::ClusterConfig& cluster,
                         const core::Profile& profile, const models::PruningConfig& pruning,
                         const models::OffloadConfig& offload, const models::CompressionConfig& compression) {
  Context x{m, t, p, cluster, profile, pruning};
  x.sizes = p.layout_sizes();
  int s = 1;
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    x.stride[static_cast<size_t>(a)] = s;
    s *= x.sizes[static_cast<size_t>(a)];
  }
  const int stages = p.pipeline;
  const int chunks = p.virtual_stages;
  const int positions = p.pipeline_chunks();
  const int micro_batches = static_cast<int>(models::micro_batch_count(t, p));

  const network::GroupPlacement tensor_group = x.placement({Axis::TENSOR});
  const network::GroupPlacement context_group = x.placement({Axis::CONTEXT});
  const network::GroupPlacement expert_group =
      p.experts_span_tensor() ? x.placement({Axis::TENSOR, Axis::CONTEXT, Axis::EXPERT}) : x.placement({Axis::EXPERT});
  // Hybrid sharding: the dense group is the shard group (shard_group adjacent data ranks x context),
  // and the gradient shards are all-reduced over the replica group (one rank of each shard group).
  const network::GroupPlacement data_group = p.hybrid_shard()
                                                 ? x.placement({Axis::DATA, Axis::EXPERT, Axis::CONTEXT}, p.shard_group)
                                                 : x.placement({Axis::DATA, Axis::EXPERT, Axis::CONTEXT});
  const network::GroupPlacement replica_group =
      x.placement({Axis::DATA}, p.shard_replicas(), p.hybrid_shard() ? p.shard_group : 1);
  const network::GroupPlacement expert_data_group =
      p.experts_span_tensor() ? x.placement({Axis::DATA}) : x.placement({Axis::DATA, Axis::CONTEXT});

  const double e = models::activation_element_bytes(t.precision);
  const double tokens = static_cast<double>(t.micro_batch) * static_cast<double>(t.sequence_length) / p.context;
  const double h = static_cast<double>(m.hidden);
  const double tensor_bytes = tokens * h * e;
  const double context_bytes = 2.0 * static_cast<double>(t.micro_batch) * static_cast<double>(t.sequence_length) *
                               static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim()) / p.tensor * e;
  const double routed = p.experts_span_tensor() && p.sequence_parallel ? tokens / p.tensor : tokens;
  const double all_to_all_bytes = m.top_k * routed * h * e;

  // One tensor-parallel "exchange": an all-reduce, or an all-gather + reduce-scatter pair. Its first
  // collective (the all-gather, or the all-reduce) is what selective-op's recompute repeats.
  const double tp_first = p.sequence_parallel ? x.collective(CollectiveOp::ALL_GATHER, tensor_bytes, tensor_group)
                                              : x.collective(CollectiveOp::ALL_REDUCE, tensor_bytes, tensor_group);
  const double tp_pair =
      p.sequence_parallel ? tp_first + x.collective(CollectiveOp::REDUCE_SCATTER, tensor_bytes, tensor_group) : tp_first;
  const double cp_gather = x.collective(CollectiveOp::ALL_GATHER, context_bytes, context_group);
  const double cp_scatter = x.collective(CollectiveOp::REDUCE_SCATTER, context_bytes, context_group);
  const double a2a = x.collective(CollectiveOp::ALL_TO_ALL, all_to_all_bytes, expert_group);

  models::ParallelismConfig no_recompute = p;
  no_recompute.recompute = models::Recompute::NONE;
  auto layer_cost = [&](LayerKind kind) {
    LayerCost l;
    double forward_compute = 0, selective = 0, backward_compute = 0, unsaved = 0, not_rerun = 0;
    std::vector<models::OpCost> ops = models::layer_ops(m, t, p, kind);
    if (p.recompute == models::Recompute::SELECTIVE_OP) models::mark_op_sac(ops, m, t, p);
    const size_t rerun = models::full_recompute_ops(ops, p.recompute_early_stop);
    models::apply_pruning(ops, pruning);
    for (size_t i = 0; i < ops.size(); ++i) {
      const models::OpCost& op = ops[i];
      const double f = x.op_time(op, false);
      forward_compute += f;
      // What an early-stopped full recompute leaves out (the program's LayerPlan::recompute_ops): the
      // trailing ops, and the tensor-parallel collective after a row-parallel MLP down-projection.
      if (i >= rerun) not_rerun += f + (op.kind == models::OpKind::MLP_DOWN ? tp_pair - tp_first : 0.0);
      if (op.recomputed_selective) selective += f;
      if (op.op_sac_recompute > 0) unsaved += f * op.op_sac_recompute;
      // The collectives the per-op policy re-runs with its forward (models/stage_ops.cpp,
      // ops_recompute_unsaved): the tensor all-gathers (or all-reduces without sequence parallelism)
      // of the two column/row pairs, the context gather with an unfused attention core.
      if (op.op_sac_recompute > 0 && op.kind == models::OpKind::ATTENTION) unsaved += cp_gather;
      backward_compute += x.op_time(op, true);
    }
    if (p.recompute == models::Recompute::SELECTIVE_OP) {
      unsaved += 2 * tp_first;
    }
    const double comm = 2 * tp_pair + (kind == LayerKind::MOE ? 2 * a2a : 0.0);
    l.forward = forward_compute + comm + cp_gather;
    l.backward = backward_compute + comm + cp_scatter;
    if (p.recompute == models::Recompute::FULL) l.backward += l.forward - not_rerun;
    if (p.recompute == models::Recompute::SELECTIVE) l.backward += selective;
    if (p.recompute == models::Recompute::SELECTIVE_OP) l.backward += unsaved;
    l.stored = models::activation_bytes_per_layer(m, t, p, kind).value();
    if (offload.activations != models::OffloadTarget::NONE) {
      l.copy = engine::copy_time(core::Bytes(l.stored), core::CopyDirection::DEVICE_TO_HOST, cluster).value();
      l.forward += offload.overlap ? std::max(0.0, l.copy - l.forward) : l.copy;
      l.backward += offload.overlap ? std::max(0.0, l.copy - l.backward) : l.copy;
    }
    const double whole = models::activation_bytes_per_layer(m, t, no_recompute, kind).value();
    l.recompute = p.recompute == models::Recompute::FULL        ? whole
                  : p.recompute == models::Recompute::SELECTIVE || p.recompute == models::Recompute::SELECTIVE_OP
                      ? whole - l.stored
                      : 0.0;
    l.params = models::layer_parameters(m, p, kind);
    l.pruned = models::pruned_parameters(models::layer_pruned_matrices(m, p, kind), pruning);
    return l;
  };
  const LayerCost dense = layer_cost(LayerKind::DENSE);
  const LayerCost moe = m.is_moe() ? layer_cost(LayerKind::MOE) : dense;

  double embedding_f = 0, embedding_b = 0, head_f = 0, head_b = 0;
  for (const models::OpCost& op : models::embedding_ops(m, t, p)) {
    embedding_f += x.op_time(op, false);
    embedding_b += x.op_time(op, true);
  }
  std::vector<models::OpCost> head_ops = models::head_ops(m, t, p);
  models::apply_pruning(head_ops, pruning);
  for (const models::OpCost& op : head_ops) {
    head_f += x.op_time(op, false);
    head_b += x.op_time(op, true);
  }
  embedding_f += tp_pair;
  head_f += tp_pair;
  head_b += tp_pair;
  const double head_stored = models::head_activation_bytes(m, t, p).value();
  const double head_transient = models::head_backward_transient_bytes(m, t, p).value();
  const models::ParameterCount embedding_params = models::embedding_parameters(m, t, p);
  const models::ParameterCount head_params = models::head_parameters(m, p);
  const models::PrunedParameters embedding_pruned =
      models::pruned_parameters(models::embedding_pruned_matrices(m, p, pruning), pruning);
  const models::PrunedParameters head_pruned =
      models::pruned_parameters(models::head_pruned_matrices(m, p, pruning), pruning);
  // Bytes of a gradient reduction or parameter gather of `params` of which `pr` are pruned
  // (optimizations.pruning's communication).
  auto message = [&](const models::ParameterCount& params, const models::PrunedParameters& pr, double element_bytes) {
    const models::ParameterCount sent = models::sent_elements(params, pr, pruning);
    const models::ParameterCount index = models::sent_index_bytes(pr, pruning);
    return std::array<double, 2>{sent.dense * element_bytes + index.dense, sent.expert * element_bytes + index.expert};
  };

  // Pipeline transfers: the stage stride decides whether neighbours share a node.
  const int stage_stride = x.stride[static_cast<size_t>(Axis::PIPELINE)];
  const double p2p = stages > 1 ? network::p2p_time(core::Bytes(tensor_bytes / p.tensor),
                                                    stage_stride < cluster.gpus_per_node, cluster, profile.network)
                                        .value()
                                : 0.0;

  const std::vector<int> split = models::balanced_split(m.layers, positions);
  // Parameters gathered unit by unit (ZeRO-3, or FSDP's SHARD_GRAD_OP: the forward's gather only).
  const bool zero3 = p.gathers_parameters() && p.dense_replicas() > 1;
  const bool backward_gather = p.zero_stage == 3;
  const bool framework_zero = p.zero_stage >= 1 && p.zero_impl != models::ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER;
  const double grad_bytes = framework_zero ? e : models::gradient_bytes_per_parameter();
  const double weight_bytes = models::weight_bytes_per_parameter(t);

  std::vector<double> forward(static_cast<size_t>(positions)), backward(static_cast<size_t>(positions));
  std::vector<double> stored(static_cast<size_t>(positions)), recompute(static_cast<size_t>(positions));
  const bool offload_activations = offload.activations != models::OffloadTarget::NONE;
  double moving = 0;  // offloaded activations: two layers in flight
  std::vector<models::ParameterCount> stage_params(static_cast<size_t>(stages));
  std::vector<models::PrunedParameters> stage_pruned(static_cast<size_t>(stages));
  // PowerSGD's weight matrices of each stage (empty otherwise).
  std::vector<std::vector<models::WeightMatrix>> stage_matrices(static_cast<size_t>(stages));
  const bool powersgd = compression.method == models::CompressionMethod::POWERSGD;
  double largest_unit = std::max({dense.params.total(), moe.params.total(), embedding_params.total(),
                                  head_params.total()});
  int first = 0;
  for (int pos = 0; pos < positions; ++pos) {
    double f = 0, b = 0, st = 0, rc = 0;
    models::ParameterCount params;
    models::PrunedParameters pruned;
    for (int layer = first; layer < first + split[static_cast<size_t>(pos)]; ++layer) {
      const LayerCost& l = m.layer_kind(layer) == LayerKind::MOE ? moe : dense;
      f += l.forward;
      b += l.backward;
      // Offloaded, only the chunk's last layer keeps its activations on the GPU.
      const bool last = layer == first + split[static_cast<size_t>(pos)] - 1;
      st += offload_activations && !last ? 0.0 : l.stored;
      if (offload_activations) moving = std::max(moving, 2 * l.stored);
      rc = std::max(rc, l.recompute);
      params += l.params;
      pruned += l.pruned;
      if (powersgd) {
        for (const models::WeightMatrix& w : models::compressed_matrices(m, p, m.layer_kind(layer))) {
          stage_matrices[static_cast<size_t>(pos % stages)].push_back(w);
        }
      }
    }
    first += split[static_cast<size_t>(pos)];
    if (powersgd && pos == 0) {
      for (const models::WeightMatrix& w : models::embedding_matrices(m, p)) stage_matrices[0].push_back(w);
    }
    if (powersgd && pos == positions - 1) {
      for (const models::WeightMatrix& w : models::head_matrices(m, p)) {
        stage_matrices[static_cast<size_t>(pos % stages)].push_back(w);
      }
    }
    if (pos == 0) {
      f += embedding_f;
      b += embedding_b;
      params += embedding_params;
      pruned += embedding_pruned;
    }
    if (pos == positions - 1) {
      f += head_f;
      b += head_b;
      st += head_stored;
      rc = std::max(rc, head_transient);  // the loss's backward, with every activation still held
      params += head_params;
      pruned += head_pruned;
    }
    if (pos > 0) f += p2p;
    if (pos < positions - 1) b += p2p;
    if (zero3) {
      // Gathered before the forward and again before the backward (not under SHARD_GRAD_OP),
      // reduce-scattered after it. The first unit's gather of each pass cannot be prefetched (it
      // waits for the previous pass's buffers): one layer's gather is exposed per pass, every
      // micro-batch.
      const double sent = models::sent_elements(params, pruned, pruning).total();
      const double index = models::sent_index_bytes(pruned, pruning).total();
      const double gather = x.collective(CollectiveOp::ALL_GATHER, sent * weight_bytes + index, data_group);
      // Gradient compression at ZeRO-3 is quantization (models::check_compression): narrower elements.
      const double scatter_bytes =
          compression.quantization() ? std::min(grad_bytes, compression.quantized_bytes()) : grad_bytes;
      const double scatter =
          x.collective(CollectiveOp::REDUCE_SCATTER, sent * scatter_bytes + index, data_group) +
          x.collective(CollectiveOp::ALL_REDUCE, (sent * scatter_bytes + index) / p.dense_shards(), replica_group);
      const double first_unit = gather / std::max(1, split[static_cast<size_t>(pos)]);
      // FSDP2 under a pipeline reduce-scatters once per step (and, under SHARD_GRAD_OP, gathers once),
      // from an accumulator updated after every micro-batch's backward (models/stage_data_parallel.cpp,
      // accumulate_unsharded_gradients): spread over the micro-batches here.
      const bool once = p.fsdp2_pipelined();
      const double scatter_share = once ? 1.0 / micro_batches : 1.0;
      const double gather_share = once && !backward_gather ? scatter_share : 1.0;
      double accumulate_time = 0;
      if (once && p.reduce_fp32() && e < 4) {
        core::Task accumulate;
        accumulate.op_class = core::OpClass::ELEMENTWISE;
        // read the 16-bit gradient and the fp32 sum, write the sum (the first micro-batch's cast: e + 4)
        accumulate.bytes = params.total() * (e + 8);
        accumulate_time = engine::compute_time(accumulate, t.precision, cluster.gpu_spec, profile.device).value();
      }
      f = std::max(f, gather * gather_share) + first_unit * gather_share;
      b = (backward_gather ? std::max(b, gather + scatter * scatter_share) + first_unit
                           : std::max(b, scatter * scatter_share)) +
          accumulate_time;
    }
    if (offload.parameters != models::OffloadTarget::NONE) {
      // ZeRO-Infinity fetches the rank's shard of every unit before each pass.
      const double shard = zero3 ? params.total() / p.dense_shards() : params.total();
      const core::CopyDirection d = offload.parameters == models::OffloadTarget::NVME ? core::CopyDirection::NVME_TO_DEVICE
                                                                                      : core::CopyDirection::HOST_TO_DEVICE;
      const double fetch = engine::copy_time(core::Bytes(shard * weight_bytes), d, cluster).value();
      const double first_unit = fetch / std::max(1, split[static_cast<size_t>(pos)]);
      f = std::max(f, fetch) + first_unit;
      b = std::max(b, fetch) + first_unit;
    }
    forward[static_cast<size_t>(pos)] = f;
    backward[static_cast<size_t>(pos)] = b;
    stored[static_cast<size_t>(pos)] = st;
    recompute[static_cast<size_t>(pos)] = rc;
    stage_params[static_cast<size_t>(pos % stages)] += params;
    stage_pruned[static_cast<size_t>(pos % stages)] += pruned;
  }

  // The schedule is timed on at most 2 x pipeline micro-batches (a multiple of pipeline, as the
  // interleaved schedule needs): past the warm-up every further micro-batch adds the busiest
  // stage's work (and, under GPipe, which keeps every micro-batch's activations, its activations).
  const int timed_micro_batches = std::min(micro_batches, 2 * stages);
  const double extra = micro_batches - timed_micro_batches;
  double busiest = 0;
  std::vector<double> stage_stored(static_cast<size_t>(stages), 0.0);
  {
    std::vector<double> work(static_cast<size_t>(stages), 0.0);
    for (int pos = 0; pos < positions; ++pos) {
      work[static_cast<size_t>(pos % stages)] += forward[static_cast<size_t>(pos)] + backward[static_cast<size_t>(pos)];
      stage_stored[static_cast<size_t>(pos % stages)] += stored[static_cast<size_t>(pos)];
    }
    busiest = *std::max_element(work.begin(), work.end());
  }
  // A split backward (zero-bubble) is timed as B and W halves of it.
  const bool split_backward = models::splits_backward(p.schedule);
  std::vector<double> input = backward, weight;
  if (split_backward) {
    for (double& b : input) b /= 2;
    weight = input;
  }
  const auto timed = models::time_pipeline(models::pipeline_order(p.schedule, stages, chunks, timed_micro_batches),
                                           stages, forward, input, weight);
  const bool steady = models::steady_state_schedule(p.schedule) && stages > 1;
  const int last_micro_batch = timed_micro_batches - 1;
  Estimate out;
  for (int stage = 0; stage < stages; ++stage) {
    double end = 0, live = 0, peak = 0, first_forward = 0, last_backward = 0;
    const auto& slots = timed[static_cast<size_t>(stage)];
    for (const models::TimedSlot& ts : slots) {
      const size_t pos = static_cast<size_t>(ts.slot.chunk * stages + stage);
      end = std::max(end, ts.end - (steady ? slots.front().start : 0.0));  // steady state: the rank's span
      if (ts.slot.carried) live += stored[pos];  // PipeDream: held when the window opens
      if (split_backward && ts.slot.pass == models::Pass::BACKWARD) {
        peak = std::max(peak, live + recompute[pos]);
        continue;
      }
      if (ts.slot.pass == models::Pass::FORWARD) {
        live += stored[pos];
        peak = std::max(peak, live);
        if (ts.slot.micro_batch == 0) first_forward += ts.end - ts.start;
      } else {
        peak = std::max(peak, live + recompute[pos]);
        live -= stored[pos];
        if (ts.slot.micro_batch == last_micro_batch) last_backward += ts.end - ts.start;
      }
    }
    end += extra * busiest;
    if (p.schedule == models::PipelineSchedule::GPIPE) peak += extra * stage_stored[static_cast<size_t>(stage)];
    const models::ParameterCount& params = stage_params[static_cast<size_t>(stage)];
    const models::PrunedParameters& pruned = stage_pruned[static_cast<size_t>(stage)];
    double tail = 0;
    double error_feedback = 0;
    if (!zero3) {
      const CollectiveOp op = p.zero_stage >= 1 ? CollectiveOp::REDUCE_SCATTER : CollectiveOp::ALL_REDUCE;
      const std::array<double, 2> grads = message(params, pruned, grad_bytes);
      const double plain = x.collective(op, grads[0], data_group) + x.collective(op, grads[1], expert_data_group);
      double reduce = plain;
      if (compression.enabled()) {
        // The stage's whole reduction as one compressed reduction per group: its collectives and
        // compute tasks one after another (models::compressed_reduction), as the builder emits them.
        const models::ParameterCount sent = models::sent_elements(params, pruned, pruning);
        const models::ParameterCount index = models::sent_index_bytes(pruned, pruning);
        auto compressed = [&](double elements, double index_bytes, bool expert, const network::GroupPlacement& g) {
          if (g.ranks <= 1 || elements <= 0) return 0.0;
          models::GradientReduction r;
          r.elements = elements;
          r.index_bytes = index_bytes;
          r.element_bytes = grad_bytes;
          r.replicas = g.ranks;
          r.op = op;
          for (const models::WeightMatrix& w : stage_matrices[static_cast<size_t>(stage)]) {
            if (w.expert == expert) r.matrices.push_back(w);
          }
          error_feedback += models::error_feedback_bytes(compression, r);
          double time = 0;
          for (const models::CompressionStep& step : models::compressed_reduction(compression, r)) {
            if (step.collective) {
              time += x.collective(step.op, step.bytes, g);
              continue;
            }
            core::Task task;
            models::set_compute_fields(step, task);
            time += engine::compute_time(task, t.precision, cluster.gpu_spec, profile.device).value();
          }
          return time;
        };
        reduce = compressed(sent.dense, index.dense, false, data_group) +
                 compressed(sent.expert, index.expert, true, expert_data_group);
      }
      const double bucket = x.collective(op, std::min(params.total(), p.bucket_elements()) * grad_bytes, data_group) *
                            (plain > 0 ? reduce / plain : 1.0);
      const bool overlapped = p.overlap_grad_reduce && compression.method != models::CompressionMethod::ONEBIT_ADAM;
      tail += overlapped ? std::max(bucket, reduce - last_backward) : reduce;
      if (p.zero_stage >= 1) {
        const std::array<double, 2> weights = message(params, pruned, weight_bytes);
        const double gather = x.collective(CollectiveOp::ALL_GATHER, weights[0], data_group) +
                              x.collective(CollectiveOp::ALL_GATHER, weights[1], expert_data_group);
        tail += p.overlap_param_gather ? std::max(0.0, gather - first_forward) : gather;
      }
    }
    const models::ParameterCount updated = models::stored_elements(params, pruned, pruning);
    const double sharded = p.zero_stage >= 1 ? updated.dense / p.dense_shards() + updated.expert / p.expert_replicas()
                                             : updated.total();
    core::Task step;
    step.op_class = core::OpClass::OPTIMIZER;
    step.bytes = sharded * models::optimizer_step_bytes_per_parameter(t.precision);
    tail += offload.active() ? offload_tail(offload, sharded, params.total(), t, cluster, step, last_backward)
                             : engine::compute_time(step, t.precision, cluster.gpu_spec, profile.device).value();
    out.iteration_time_s = std::max(out.iteration_time_s, end + tail);

    const models::MemoryBreakdown state =
        models::split_model_states(models::model_state_memory(params, t, p, pruning, pruned), params, t, p, offload).gpu;
    // SHARD_GRAD_OP's unsharded parameters are in state.weights (sharded at stage 3 only).
    const bool fetched = (zero3 && backward_gather) || offload.parameters != models::OffloadTarget::NONE;
    // DeepSpeed ZeRO-3 on the GPU holds up to its live cap (models/stage_deepspeed.cpp), FSDP its
    // prefetched units.
    const bool deepspeed_fetch = p.zero_stage == 3 && p.zero_impl == models::ZeroImpl::DEEPSPEED &&
                                 offload.parameters == models::OffloadTarget::NONE;
    const double gathered = deepspeed_fetch ? models::zero3_peak_live_elements(
                                                  t.deepspeed.value_or(models::DeepSpeedZeroConfig{}), largest_unit, params.total())
                                            : (1 + std::max(1, p.prefetch)) * largest_unit;
    const double buffers = fetched ? gathered * weight_bytes : 0.0;
    // gradient_buffers "per-step" (gradients on the GPU): with one micro-batch they grow through the
    // backward as the activations it frees shrink, so the peak is the larger of the two (at the loss
    // or at the step's end); with more, the first backward allocates them under the later
    // micro-batches' activations, as persistent ones.
    const bool per_step = models::gradients_per_step_on_gpu(p, offload) && micro_batches == 1;
    const double dynamic = per_step ? std::max(peak + moving, state.gradients.value()) : peak + moving + state.gradients.value();
    const double memory = state.weights.value() + state.optimizer_states.value() + buffers + dynamic + error_feedback;
    out.peak_memory_bytes = std::max(out.peak_memory_bytes, memory);
  }
  return out;
}

}  // namespace trainsim::plan
