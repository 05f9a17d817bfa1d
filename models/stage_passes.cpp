// stage_passes.cpp: a unit's forward, backward and W pass; a chunk's passes.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models::emit {

void StageEmitter::unit_forward(const std::vector<const Unit*>& order, size_t index, int chunk, int mb) {
  const Unit& u = *order[index];
  gather_parameters(order, index, Phase::FORWARD, mb);
  // ZeRO-1/2 with overlap_param_gather: the first forward use of a unit waits for the all-gather
  // of every bucket holding its parameters.
  if (plan_.overlap_param_gather && !forward_seen_[static_cast<size_t>(chunk)]) {
    for (int id : bucket_units_[static_cast<size_t>(chunk)][index]) {
      pending_.push_back(parameter_gather_[static_cast<size_t>(id)]);
    }
  }
  switch (u.kind) {
    case UnitKind::EMBEDDING: ops_forward(plan_.embedding, Phase::FORWARD, 0, mb); break;
    case UnitKind::LAYER:
      ops_forward(plan_.layer(u.layer).ops, Phase::FORWARD, u.layer, mb);
      memory(plan_.layer(u.layer).stored_bytes, Phase::FORWARD, u.layer, mb);
      offload_layer(chunk, u.layer, mb);
      break;
    case UnitKind::HEAD:
      ops_forward(plan_.head, Phase::FORWARD, 0, mb);
      memory(plan_.head_bytes, Phase::FORWARD, 0, mb);
      break;
  }
  unit_done_.push_back(*last_compute_);
}

void StageEmitter::unit_backward(const std::vector<const Unit*>& order, size_t index, int mb, const std::vector<Bucket>& ready,
                                 bool last_of_chunk) {
  const Unit& u = *order[index];
  gather_parameters(order, index, Phase::BACKWARD, mb);
  if (offload_activations()) {
    reload_layer(order, index, mb);
    if (offload().overlap) reload_layer(order, index + 1, mb);
    if (u.kind == UnitKind::LAYER) {
      const auto in = reloaded_.find({u.layer, mb});
      if (in != reloaded_.end()) pending_.push_back(in->second);
    }
  }
  switch (u.kind) {
    case UnitKind::EMBEDDING: ops_backward(plan_.embedding, false, 0, mb); break;
    case UnitKind::HEAD:
      // An eager loss's fp32 gradients live through the head's backward, then go.
      if (plan_.head_transient_bytes > 0) memory(plan_.head_transient_bytes, Phase::BACKWARD, 0, mb);
      ops_backward(plan_.head, false, 0, mb);
      memory(kept_for_weight_gradient(u) - plan_.head_bytes - plan_.head_transient_bytes, Phase::BACKWARD, 0, mb);
      break;
    case UnitKind::LAYER: {
      const LayerPlan& layer = plan_.layer(u.layer);
      if (par_.recompute != Recompute::NONE) memory(layer.recompute_bytes, Phase::RECOMPUTE, u.layer, mb);
      if (par_.recompute == Recompute::FULL) {
        ops_forward(std::span(layer.ops).first(layer.recompute_ops), Phase::RECOMPUTE, u.layer, mb);
      }
      if (par_.recompute == Recompute::SELECTIVE_OP) ops_recompute_unsaved(layer.ops, u.layer, mb);
      ops_backward(layer.ops, par_.recompute == Recompute::SELECTIVE, u.layer, mb);
      memory(kept_for_weight_gradient(u) - (layer.stored_bytes + layer.recompute_bytes), Phase::BACKWARD, u.layer, mb);
      break;
    }
  }
  unit_done_.push_back(*last_compute_);
  // FSDP1 BACKWARD_POST (_post_backward_reshard prefetches before _reduce_grad): the next unit's
  // gather is issued once this unit's gradients are computed, ahead of its reduce-scatter. That is
  // the host's order; with limit_all_gathers and a host ahead of the GPU the real gather starts when
  // the unit before this one finishes (the rate limiter's event), as with BACKWARD_PRE. The exposed
  // gather is kept because the held-out Composer runs fit it better (docs/validation.md, "What the
  // composer stack is"): it stands in for an interference cost of the overlapped collectives.
  if (plan_.backward_prefetch_post && plan_.sharded_params && index + 1 < order.size() && gathers_issued_ == index + 1) {
    gather_unit(*order[index + 1], index + 1, Phase::BACKWARD, mb);
    ++gathers_issued_;
  }
  if (!plan_.split_backward) unit_gradients_final(u, mb, ready, last_of_chunk);
}

// Bytes a split backward keeps from B to W for the unit (0 without a split).
double StageEmitter::kept_for_weight_gradient(const Unit& u) const {
  if (!plan_.split_backward) return 0;
  switch (u.kind) {
    case UnitKind::EMBEDDING: return 0;
    case UnitKind::HEAD: return plan_.head_weight_gradient_bytes;
    case UnitKind::LAYER: return plan_.layer(u.layer).weight_gradient_bytes;
  }
  return 0;
}

// A zero-bubble W pass of one unit: its weight-gradient GEMMs, the memory B kept for them freed,
// then what follows final gradients (reductions, offload, the tied embedding's all-reduce).
void StageEmitter::unit_weight_gradient(const Unit& u, int mb, const std::vector<Bucket>& ready, bool last_of_chunk) {
  switch (u.kind) {
    case UnitKind::EMBEDDING: ops_weight_gradient(plan_.embedding, 0, mb); break;
    case UnitKind::HEAD: ops_weight_gradient(plan_.head, 0, mb); break;
    case UnitKind::LAYER: ops_weight_gradient(plan_.layer(u.layer).ops, u.layer, mb); break;
  }
  const double kept = kept_for_weight_gradient(u);
  if (kept != 0) memory(-kept, Phase::BACKWARD, u.kind == UnitKind::LAYER ? u.layer : 0, mb);
  if (!last_compute_) return;
  unit_gradients_final(u, mb, ready, last_of_chunk);
}

// After the last compute that writes the unit's gradients for micro-batch `mb`.
void StageEmitter::unit_gradients_final(const Unit& u, int mb, const std::vector<Bucket>& ready, bool last_of_chunk) {
  // gradient_buffers "per-step": the unit's gradients (as model_state_memory counts them: sharded by
  // ZeRO-2/3, with FSDP2's unsharded accumulator under a pipeline) come into being with its first
  // backward of the step.
  if (plan_.gradients_per_step && gradients_allocated_.insert(&u).second) {
    const double bytes = model_state_memory(u.params, *plan_.training, par_, *plan_.pruning, u.pruned).gradients.value();
    if (bytes > 0) gradient_memory(bytes, Phase::BACKWARD, u.kind == UnitKind::LAYER ? u.layer : 0, mb);
  }
  // Every micro-batch: FSDP without no_sync and FSDP2 with requires_gradient_sync (their defaults)
  // reduce-scatter each backward's gradients, as DeepSpeed ZeRO-3 does (its no_sync is unsupported
  // for stages 2-3). FSDP: one reduce-scatter per unit; DeepSpeed: per reduce bucket. FSDP2 under a
  // pipeline: after the last micro-batch's backward only (reduce_once_per_step).
  accumulate_unsharded_gradients(u, mb);
  if (plan_.sharded_params && (!plan_.reduce_once_per_step || last_of_chunk)) {
    const double grad = plan_.gradient_reduce_bytes;
    if (plan_.zero_impl == ZeroImpl::DEEPSPEED) {
      for (const Bucket& b : ready) {
        sharded_reductions_.push_back({b.expert ? plan_.groups.expert_data : plan_.groups.data,
                                     message_bytes(b.sent, b.index, grad), b.sent, b.index, u.layer, b.parameters * grad,
                                     b.parameters, b.expert});
      }
    } else {
      if (plan_.reduce_dense && u.params.dense > 0) {
        sharded_reductions_.push_back({plan_.groups.data, message_bytes(u.sent.dense, u.index.dense, grad), u.sent.dense,
                                     u.index.dense, u.layer,
                                     u.params.dense * grad, u.params.dense, false});
      }
      if (plan_.reduce_expert && u.params.expert > 0) {
        sharded_reductions_.push_back({plan_.groups.expert_data, message_bytes(u.sent.expert, u.index.expert, grad),
                                     u.sent.expert, u.index.expert, u.layer, u.params.expert * grad, u.params.expert, true});
      }
    }
    if (par_.overlap_grad_reduce) flush_sharded_reductions(mb);
  }
  offload_unit_gradients(u, mb, last_of_chunk);
  if (u.kind != UnitKind::LAYER && plan_.groups.embedding >= 0) embedding_gradient_ = *last_compute_;
  if (!plan_.sharded_params && last_of_chunk && overlap_reductions()) {
    for (const Bucket& b : ready) reduce_bucket(b, u.layer, mb);
  }
}

// `prefetch`: units whose gathers are issued ahead in this pass (BACKWARD_POST: none ahead of the
// unit in use, unit_backward issues each after the previous unit's gradients).
void StageEmitter::start_pass(size_t units, int prefetch) {
  pass_prefetch_ = prefetch;
  unit_done_.clear();
  pass_start_ = last_compute_;
  gathers_issued_ = 0;
  unit_gathers_.assign(units, {});
}

void StageEmitter::forward_pass(int chunk, int mb) {
  const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
  std::vector<const Unit*> order;
  for (const Unit& u : units) order.push_back(&u);
  start_pass(order.size(), plan_.prefetch);
  zero3_start_pass(order, false);
  for (size_t i = 0; i < order.size(); ++i) unit_forward(order, i, chunk, mb);
  forward_seen_[static_cast<size_t>(chunk)] = true;
}

void StageEmitter::backward_pass(int chunk, int mb, bool last_of_chunk) {
  const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
  std::vector<const Unit*> order;
  for (auto u = units.rbegin(); u != units.rend(); ++u) order.push_back(&*u);
  start_pass(order.size(), plan_.backward_prefetch_post ? 0 : plan_.prefetch);
  zero3_start_pass(order, true);
  const auto& chunk_buckets = buckets_[static_cast<size_t>(chunk)];
  static const std::vector<Bucket> none;
  for (size_t i = 0; i < order.size(); ++i) {
    unit_backward(order, i, mb, chunk_buckets.empty() ? none : chunk_buckets[i], last_of_chunk);
  }
  flush_sharded_reductions(mb);
}

// A zero-bubble W pass: every unit's weight gradients, in backward order (buckets fill as in B).
void StageEmitter::weight_gradient_pass(int chunk, int mb, bool last_of_chunk) {
  const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
  const auto& chunk_buckets = buckets_[static_cast<size_t>(chunk)];
  static const std::vector<Bucket> none;
  size_t i = 0;
  for (auto u = units.rbegin(); u != units.rend(); ++u, ++i) {
    unit_weight_gradient(*u, mb, chunk_buckets.empty() ? none : chunk_buckets[i], last_of_chunk);
  }
}

// PipeDream's window opens holding the activations of the carried micro-batches, whose forwards
// ran in the previous window.
void StageEmitter::carry_in(int chunk, int mb) {
  for (const Unit& u : units_[static_cast<size_t>(chunk)]) {
    if (u.kind == UnitKind::LAYER) memory(plan_.layer(u.layer).stored_bytes, Phase::FORWARD, u.layer, mb);
    if (u.kind == UnitKind::HEAD) memory(plan_.head_bytes, Phase::FORWARD, 0, mb);
  }
}

}  // namespace trainsim::models::emit
