// stage_data_parallel.cpp: ZeRO-3 / FSDP gathers, gradient reductions, parameter prefetch.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models::emit {

// ZeRO-3: the all-gathers of the unit at position `index` of the current pass (forward or
// backward order). Issued `prefetch` units ahead of their use (gather_parameters), each waits for
// the compute of the unit `prefetch` + 1 places before it, whose buffer it reuses:
//   FSDP1 (docs.pytorch.org FullyShardedDataParallel, "FSDP Notes": prefetch nuances): forward
//     all-gathers run on a separate stream, implicitly one ahead, with limit_all_gathers allowing
//     two in flight; backward_prefetch=BACKWARD_PRE issues the next unit's all-gather before the
//     current unit's gradient computation, i.e. ahead of its reduce-scatter on the same stream.
//   FSDP2 (torch.distributed.fsdp.fully_shard docs; pytorch#128884): implicit forward prefetch of
//     one unit, backward prefetch of one unit in reverse post-forward order.
//   DeepSpeed ZeRO-3 fetches per parameter from its hooks (stage_deepspeed.cpp); with offloaded
//     parameters (ZeRO-Infinity) it keeps this unit-level fetch, in messages of at most
//     stage3_prefetch_bucket_size elements.
//   FSDP and FSDP2 do not reshard the root's parameters after forward (FSDP1 _post_forward_reshard;
//     fully_shard's reshard_after_forward: "the root FSDP state has its value specially set to
//     False"): the embedding and the output head, the root's own parameters when the layers are
//     the wrapped units, are not gathered again for backward.
//   SHARD_GRAD_OP (FSDP1) and reshard_after_forward=False (FSDP2) keep every unit as the root:
//     no unit is gathered again for backward; each micro-batch's backward frees them after its
//     reduce-scatter (FSDP1 _should_free_in_backward: gradients are synchronized every micro-batch).
//     FSDP2 under a pipeline keeps them to the step's last backward (gather_once_per_step): only
//     the first micro-batch's forward gathers.
void StageEmitter::gather_unit(const Unit& u, size_t index, Phase phase, int mb) {
  const bool root = u.kind != UnitKind::LAYER;
  if (plan_.gather_once_per_step && mb > 0) return;
  if (phase == Phase::BACKWARD && !plan_.reshard_after_forward) return;
  if (phase == Phase::BACKWARD && root && plan_.zero_impl != ZeroImpl::DEEPSPEED) return;
  std::vector<uint32_t> deps;
  const size_t reuse = static_cast<size_t>(pass_prefetch_) + 1;
  if (index >= reuse) {
    deps.push_back(unit_done_[index - reuse]);
  } else if (pass_start_) {
    // The first gathers of a pass reuse the buffers of the previous pass's last units: they wait
    // for its last compute (FSDP issues them from the pass's pre-hooks, under the same limit).
    deps.push_back(*pass_start_);
  }
  std::vector<uint32_t>& ids = unit_gathers_[index];
  if (plan_.offload_params) {
    // ZeRO-Infinity: the rank's shard comes from host memory or NVMe before it is gathered.
    const double shard = (plan_.reduce_dense ? u.params.dense / par_.dense_shards() : u.params.dense) +
                         (plan_.reduce_expert ? u.params.expert / par_.expert_replicas() : u.params.expert);
    const CopyDirection d = offload().parameters == OffloadTarget::NVME ? CopyDirection::NVME_TO_DEVICE
                                                                        : CopyDirection::HOST_TO_DEVICE;
    const uint32_t fetch = copy(d, shard * plan_.weight_bytes, phase, u.layer, mb, "fetch parameters", deps);
    deps = {fetch};
    if (!plan_.sharded_params) ids.push_back(fetch);
  }
  auto gather = [&](double params, double sent, double index_bytes, uint16_t group) {
    const int messages = plan_.gather_message_elements > 0
                             ? std::max(1, static_cast<int>(std::ceil(params / plan_.gather_message_elements)))
                             : 1;
    for (int k = 0; k < messages; ++k) {
      Task t = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, phase, u.layer, mb, "parameter all_gather");
      t.collective = CollectiveOp::ALL_GATHER;
      t.group = group;
      t.bytes = sent / messages * plan_.weight_bytes + index_bytes / messages;
      ids.push_back(prog().add(t, deps));
      count_data(t.bytes, params / messages * plan_.weight_bytes);
    }
  };
  if (!plan_.sharded_params) return;
  if (plan_.reduce_dense && u.params.dense > 0) gather(u.params.dense, u.sent.dense, u.index.dense, plan_.groups.data);
  if (plan_.reduce_expert && u.params.expert > 0) {
    gather(u.params.expert, u.sent.expert, u.index.expert, plan_.groups.expert_data);
  }
}

// Issues the ZeRO-3 gathers of the pass up to the unit `index` + prefetch, then makes the next
// compute wait for those of unit `index`.
void StageEmitter::gather_parameters(const std::vector<const Unit*>& order, size_t index, Phase phase, int mb) {
  if ((!plan_.sharded_params && !plan_.offload_params) || plan_.deepspeed_fetch) return;
  const size_t through = std::min(order.size() - 1, index + static_cast<size_t>(pass_prefetch_));
  for (; gathers_issued_ <= through; ++gathers_issued_) gather_unit(*order[gathers_issued_], gathers_issued_, phase, mb);
  const std::vector<uint32_t>& mine = unit_gathers_[index];
  pending_.insert(pending_.end(), mine.begin(), mine.end());
}

// FSDP2 under a pipeline (BuildPlan::reduce_once_per_step) with an fp32 reduce dtype: each
// micro-batch's 16-bit gradient of the unit goes into an fp32 accumulator of the unit's unsharded
// size, on the compute stream in FSDP2's post-backward: FSDPParam.to_accumulated_grad_if_needed at
// the first micro-batch (read e, write 4 bytes per element), accumulate_unsharded_grad_if_needed
// after it (read e + 4, write 4). The reduce-scatter then sends the accumulator with no cast.
void StageEmitter::accumulate_unsharded_gradients(const Unit& u, int mb) {
  if (!plan_.reduce_once_per_step || plan_.gradient_cast_bytes <= 0 || !last_compute_) return;
  const double elements = (plan_.reduce_dense ? u.params.dense : 0.0) + (plan_.reduce_expert ? u.params.expert : 0.0);
  if (elements <= 0) return;
  Task t = make(TaskKind::COMPUTE, Stream::COMPUTE, Phase::BACKWARD, u.layer, mb, "gradient accumulate (fp32)");
  t.op_class = core::OpClass::ELEMENTWISE;
  t.bytes = elements * (plan_.activation_bytes + (mb == 0 ? 4.0 : 8.0));
  last_compute_ = prog().add(t, {*last_compute_});
}

void StageEmitter::flush_sharded_reductions(int mb) {
  for (const Reduction& r : sharded_reductions_) {
    reduce_gradients(CollectiveOp::REDUCE_SCATTER, r.expert, r.sent, r.index, {}, r.layer, mb, *last_compute_,
                     r.dense_bytes);
    if (!r.expert) replicate_gradient_shard(r, mb);
    offload_reduced_gradients(r.params, r.expert, r.layer, mb, gradient_collectives_.back());
  }
  sharded_reductions_.clear();
}

// HSDP: after the reduce-scatter over the shard group, each rank's gradient shard (1 / dense_shards()
// of the unit's) is all-reduced across the replicas, in the same dtype (FSDP1 _post_backward_hook's
// all_reduce over _inter_node_pg; FSDP2 foreach_reduce's all_reduce over the replicate mesh
// dimension). FSDP runs it on a stream of its own; here it follows the reduce-scatter on DATA_COMM.
void StageEmitter::replicate_gradient_shard(const Reduction& r, int mb) {
  if (plan_.groups.replicate < 0) return;
  const double shards = par_.dense_shards();
  gradient_collective(CollectiveOp::ALL_REDUCE, static_cast<uint16_t>(plan_.groups.replicate), r.bytes / shards, r.layer,
                      mb, "gradient shard all_reduce", gradient_collectives_.back(), r.dense_bytes / shards);
}

void StageEmitter::reduce_bucket(const Bucket& b, int layer, int mb) {
  const CollectiveOp op = par_.zero_stage >= 1 ? CollectiveOp::REDUCE_SCATTER : CollectiveOp::ALL_REDUCE;
  reduce_gradients(op, b.expert, b.sent, b.index, b.matrices, layer, mb, *last_compute_,
                   b.parameters * plan_.gradient_reduce_bytes);
  offload_reduced_gradients(b.parameters, b.expert, layer, mb, gradient_collectives_.back());
  reduced_.push_back(b);
}

// 1-bit Adam exchanges the momentum inside the optimizer step, after the whole backward (DeepSpeed
// turns the backward's gradient all-reduce off once it compresses).
bool StageEmitter::overlap_reductions() const {
  return par_.overlap_grad_reduce && plan_.compression->method != CompressionMethod::ONEBIT_ADAM;
}

// A data-parallel gradient reduction of `sent` elements (+ `index` bytes of sparse index) after
// `after`: one collective, or under gradient compression its steps (compression.hpp) one after
// another on DATA_COMM. Only the optimizer waits for it. `dense_bytes`: its bytes without
// pruning (StageResult::dense_data_bytes).
void StageEmitter::reduce_gradients(CollectiveOp op, bool expert, double sent, double index, const std::vector<WeightMatrix>& matrices,
                                    int layer, int mb, uint32_t after, double dense_bytes) {
  const uint16_t group = expert ? plan_.groups.expert_data : plan_.groups.data;
  const CompressionConfig& c = *plan_.compression;
  const double plain = message_bytes(sent, index, plan_.gradient_reduce_bytes);
  if (!c.enabled()) {
    if (plan_.gradient_cast_bytes > 0 && !plan_.reduce_once_per_step) {
      // The 16-bit gradient cast to the fp32 reduce dtype first (BuildPlan::gradient_cast_bytes;
      // FSDP2 under a pipeline reduces its fp32 accumulator, accumulate_unsharded_gradients).
      CompressionStep cast;
      cast.collective = false;
      cast.bytes = sent * plan_.gradient_cast_bytes;
      cast.name = "gradient cast (fp32)";
      Task t = make(TaskKind::COMPUTE, Stream::DATA_COMM, Phase::BACKWARD, layer, mb, cast.name);
      set_compute_fields(cast, t);
      after = prog().add(t, {after});
    }
    gradient_collective(op, group, plain, layer, mb, fmt::format("gradient {}", core::to_string(op)), after,
                        dense_bytes);
    return;
  }
  GradientReduction r;
  r.elements = sent;
  r.index_bytes = index;
  r.element_bytes = plan_.gradient_reduce_bytes;
  r.replicas = expert ? par_.expert_replicas() : par_.dense_replicas();
  r.op = op;
  r.matrices = matrices;
  StageCompression& figures = result_.compression;
  figures.uncompressed_bytes += plain;
  figures.uncompressed_wire_bytes += wire_bytes(op, plain, r.replicas);
  if (mb == plan_.micro_batches - 1) figures.error_feedback_bytes += error_feedback_bytes(c, r);
  const Phase phase = c.method == CompressionMethod::ONEBIT_ADAM ? Phase::OPTIMIZER : Phase::BACKWARD;
  uint32_t previous = after;
  double sent_bytes = 0;
  for (const CompressionStep& step : compressed_reduction(c, r)) {
    Task t = make(step.collective ? TaskKind::COLLECTIVE : TaskKind::COMPUTE, Stream::DATA_COMM, phase, layer, mb,
                  step.name);
    t.bytes = step.bytes;
    if (step.collective) {
      t.collective = step.op;
      t.group = group;
      sent_bytes += step.bytes;
      figures.bytes += step.bytes;
      figures.wire_bytes += wire_bytes(step.op, step.bytes, r.replicas);
    } else {
      set_compute_fields(step, t);
      ++figures.compute_tasks;
    }
    previous = prog().add(t, {previous});
  }
  gradient_collectives_.push_back(previous);
  count_data(sent_bytes, dense_bytes);
}

// ZeRO-1/2 with overlap_param_gather (Megatron-LM DistributedDataParallelConfig
// overlap_param_gather; Megatron-Bridge "Communication Overlap": the parameter all-gather is
// chunked per bucket and overlapped with the forward, exposing about one chunk). In this
// steady-state single-iteration model the all-gathers of the previous step's update are issued at
// the start of the iteration on DATA_COMM, bucket by bucket in the order of their first forward
// use (chunk 0 first, each chunk's buckets in forward order), and the first forward of each unit
// waits for its buckets (unit_forward).
void StageEmitter::emit_parameter_prefetch() {
  parameter_gather_.assign(buckets_by_id_.size(), 0);
  for (size_t c = 0; c < units_.size(); ++c) {
    for (size_t k = buckets_by_id_.size(); k-- > 0;) {
      if (bucket_chunk_[k] != static_cast<int>(c)) continue;
      const Bucket& b = buckets_by_id_[k];
      Task g = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, Phase::FORWARD, 0, 0, "parameter all_gather");
      g.collective = CollectiveOp::ALL_GATHER;
      g.group = b.expert ? plan_.groups.expert_data : plan_.groups.data;
      g.bytes = message_bytes(b.sent, b.index, plan_.weight_bytes);
      parameter_gather_[k] = prog().add(g);
      count_data(g.bytes, b.parameters * plan_.weight_bytes);
    }
  }
}

}  // namespace trainsim::models::emit
