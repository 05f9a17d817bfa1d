// stage_ops.cpp: a layer's ops, with their tensor/context/expert collectives, TP overlap and recompute.

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models::emit {

namespace {

enum class Side { FORWARD_BEFORE, FORWARD_AFTER, BACKWARD_BEFORE, BACKWARD_AFTER };

// The collectives around an op (Megatron-LM's f/g operators; Korthikanti et al. 2022, Figure 5):
// column-parallel GEMMs (QKV, MLP up, logits) all-gather their input under sequence parallelism and
// all-reduce (reduce-scatter) their input gradient; row-parallel GEMMs (projection, MLP down) and the
// vocabulary-parallel embedding all-reduce (reduce-scatter) their output and, under sequence
// parallelism, all-gather their output gradient. The routed experts' GEMMs are column- and
// row-parallel too when they are split over the tensor group (the MoE dispatch / combine
// all-to-alls sit inside that tensor-parallel pair); under parallel folding with expert_tensor 1
// they are whole and only the all-to-alls surround them. Context parallelism gathers K and V before attention and reduce-scatters
// their gradients after its backward.
// At most three collectives on a side of an op: a fixed array, not a vector (GCC 12 reports false
// -Warray-bounds / -Wstringop-overflow on a vector's growth once this is inlined into its callers).
struct Comms {
  std::array<Comm, 3> items{};
  size_t n = 0;
  const Comm* begin() const { return items.data(); }
  const Comm* end() const { return items.data() + n; }
  void push_back(const Comm& c) {
    TRAINSIM_CHECK(n < items.size(), "more than three collectives on a side of an op");
    items[n++] = c;
  }
};

Comms comms_around(const BuildPlan& plan, OpKind kind, Side side) {
  const ParallelismConfig& p = *plan.parallelism;
  const bool tp = p.tensor > 1;
  const bool sp = tp && p.sequence_parallel;
  const bool ep = p.expert > 1 && plan.model->is_moe();
  const bool cp = p.context > 1;
  const bool experts_split = p.expert_mlp_tensor() > 1;
  const bool column = kind == OpKind::QKV || kind == OpKind::MLP_UP || kind == OpKind::LOGITS ||
                      (experts_split && kind == OpKind::EXPERT_UP);
  const bool row = kind == OpKind::PROJECTION || kind == OpKind::MLP_DOWN || kind == OpKind::EMBEDDING ||
                   (experts_split && kind == OpKind::EXPERT_DOWN);
  Comms out;
  auto tensor = [&](CollectiveOp op, double bytes) {
    out.push_back({op, plan.groups.tensor, Stream::TENSOR_COMM, bytes});
  };
  auto all_to_all = [&] {
    out.push_back({CollectiveOp::ALL_TO_ALL, plan.groups.expert, Stream::EXPERT_COMM, plan.all_to_all_bytes});
  };
  auto context = [&](CollectiveOp op) {
    out.push_back({op, plan.groups.context, Stream::CONTEXT_COMM, plan.context_bytes});
  };
  const CollectiveOp reduce = sp ? CollectiveOp::REDUCE_SCATTER : CollectiveOp::ALL_REDUCE;
  switch (side) {
    case Side::FORWARD_BEFORE:
      if (sp && column) tensor(CollectiveOp::ALL_GATHER, plan.tensor_bytes);
      if (ep && kind == OpKind::EXPERT_UP) all_to_all();
      if (cp && kind == OpKind::ATTENTION) context(CollectiveOp::ALL_GATHER);
      break;
    case Side::FORWARD_AFTER:
      if (ep && kind == OpKind::EXPERT_DOWN) all_to_all();
      if (tp && row) tensor(reduce, plan.tensor_bytes);
      if (tp && kind == OpKind::LOSS) tensor(CollectiveOp::ALL_REDUCE, plan.loss_reduce_bytes);
      break;
    case Side::BACKWARD_BEFORE:
      if (sp && row) tensor(CollectiveOp::ALL_GATHER, plan.tensor_bytes);
      if (ep && kind == OpKind::EXPERT_DOWN) all_to_all();
      break;
    case Side::BACKWARD_AFTER:
      if (ep && kind == OpKind::EXPERT_UP) all_to_all();
      if (tp && column) tensor(reduce, plan.tensor_bytes);
      if (cp && kind == OpKind::ATTENTION) context(CollectiveOp::REDUCE_SCATTER);
      break;
  }
  return out;
}

}  // namespace

// Transformer Engine's userbuffers overlap (Megatron-LM / NeMo --tp-comm-overlap; TE
// CommOverlap "pipeline" / "ring_exchange" and "bulk" methods, Megatron-Bridge docs
// "Communication Overlap"): the layer's four sequence-parallel GEMMs. Output layer and embedding
// stay blocking (not TE userbuffers layers), and so do MoE expert GEMMs.
bool StageEmitter::tp_overlapped(OpKind kind) const {
  if (!par_.tp_overlap_active()) return false;
  if (kind == OpKind::QKV || kind == OpKind::PROJECTION) return true;
  return !plan_.model->is_moe() && (kind == OpKind::MLP_UP || kind == OpKind::MLP_DOWN);
}

// Forward of an overlapped GEMM in `tensor` chunks. Column-parallel: all-gather chunk k (1/t of the
// sequence) -> GEMM chunk k, the chunks' all-gathers back to back on TENSOR_COMM, so only the first
// one is exposed. Row-parallel: GEMM chunk k -> reduce-scatter chunk k; the next op waits for the
// last reduce-scatter, so only that one is exposed.
void StageEmitter::overlapped_forward(const OpCost& op, Phase phase, int layer, int mb) {
  const int n = par_.tensor;
  const double part = 1.0 / n;
  if (column(op.kind)) {
    const Comm c = tensor_comm(CollectiveOp::ALL_GATHER);
    const std::vector<uint32_t> deps = take_critical();
    std::vector<uint32_t> chunks;
    for (int k = 0; k < n; ++k) chunks.push_back(collective(c, c.bytes * part, phase, layer, mb, op.name, deps));
    for (int k = 0; k < n; ++k) compute(op, phase, false, layer, mb, part, {chunks[static_cast<size_t>(k)]});
  } else {
    const Comm c = tensor_comm(CollectiveOp::REDUCE_SCATTER);
    uint32_t last = 0;
    for (int k = 0; k < n; ++k) {
      const uint32_t gemm = compute(op, phase, false, layer, mb, part);
      last = collective(c, c.bytes * part, phase, layer, mb, op.name, {gemm});
    }
    pending_ = {last};
  }
}

// Backward of an overlapped GEMM. Row-parallel: the all-gather of the output gradient pipelined
// with the dgrad GEMM in `tensor` chunks, then the wgrad GEMM. Column-parallel (bulk overlap): the
// all-gather of the sequence-parallel input that wgrad needs runs under the dgrad GEMM, and the
// reduce-scatter of dgrad's output under the wgrad GEMM; the previous op waits for that
// reduce-scatter.
void StageEmitter::overlapped_backward(const OpCost& op, int layer, int mb) {
  const Phase phase = Phase::BACKWARD;
  const int n = par_.tensor;
  if (!column(op.kind)) {
    const Comm c = tensor_comm(CollectiveOp::ALL_GATHER);
    const std::vector<uint32_t> deps = take_critical();
    std::vector<uint32_t> chunks;
    for (int k = 0; k < n; ++k) chunks.push_back(collective(c, c.bytes / n, phase, layer, mb, op.name, deps));
    for (int k = 0; k < n; ++k) compute(op, phase, true, layer, mb, 0.5 / n, {chunks[static_cast<size_t>(k)]});
    compute(op, phase, true, layer, mb, 0.5);
  } else {
    const Comm gather = tensor_comm(CollectiveOp::ALL_GATHER);
    // Launched with the dgrad GEMM, not before: it waits for what dgrad waits for.
    std::vector<uint32_t> with_dgrad = pending_;
    if (last_compute_) with_dgrad.push_back(*last_compute_);
    const uint32_t input = collective(gather, gather.bytes, phase, layer, mb, op.name + " input", with_dgrad);
    const uint32_t dgrad = compute(op, phase, true, layer, mb, 0.5);
    const Comm reduce = tensor_comm(CollectiveOp::REDUCE_SCATTER);
    const uint32_t scatter = collective(reduce, reduce.bytes, phase, layer, mb, op.name, {dgrad});
    compute(op, phase, true, layer, mb, 0.5, {input});
    pending_ = {scatter};
  }
}

void StageEmitter::ops_forward(std::span<const OpCost> ops, Phase phase, int layer, int mb) {
  for (const OpCost& op : ops) {
    zero3_hook(op, phase, layer, mb);
    if (tp_overlapped(op.kind)) {
      overlapped_forward(op, phase, layer, mb);
      continue;
    }
    for (const Comm& c : comms_around(plan_, op.kind, Side::FORWARD_BEFORE)) blocking(c, phase, layer, mb, op.name);
    compute(op, phase, false, layer, mb);
    for (const Comm& c : comms_around(plan_, op.kind, Side::FORWARD_AFTER)) blocking(c, phase, layer, mb, op.name);
  }
}

// Per-op selective checkpointing (recompute "selective-op"): when the layer's backward begins, the
// non-reentrant checkpoint re-runs its forward, every op but the saved ones (mark_op_sac), in
// forward order, collectives included: torchtitan's save list holds aten.mm (every other call), SDPA
// and _c10d_functional.reduce_scatter_tensor, not all_gather_into_tensor nor all_reduce
// (torchtitan/distributed/activation_checkpoint.py, _save_list). So under tensor parallelism the
// sequence-parallel all-gathers before QKV and the MLP re-run (the ops after them re-run a share), as
// do the all-reduces after the row-parallel GEMMs without sequence parallelism; the reduce-scatters
// do not (saved). Context parallelism's K/V exchange belongs to the attention op: it re-runs only
// with an attention core that is re-run (unfused), never with SDPA (saved).
void StageEmitter::ops_recompute_unsaved(const std::vector<OpCost>& ops, int layer, int mb) {
  for (const OpCost& op : ops) {
    for (const Comm& c : comms_around(plan_, op.kind, Side::FORWARD_BEFORE)) {
      if (c.stream == Stream::TENSOR_COMM || op.op_sac_recompute > 0) blocking(c, Phase::RECOMPUTE, layer, mb, op.name);
    }
    if (op.op_sac_recompute > 0) {
      zero3_hook(op, Phase::RECOMPUTE, layer, mb);
      compute(op, Phase::RECOMPUTE, false, layer, mb, op.op_sac_recompute);
    }
    for (const Comm& c : comms_around(plan_, op.kind, Side::FORWARD_AFTER)) {
      if (c.op == CollectiveOp::ALL_REDUCE) blocking(c, Phase::RECOMPUTE, layer, mb, op.name);
    }
  }
}

// A zero-bubble schedule's W pass of a unit: the weight-gradient half of each GEMM, in backward
// order, with no communication (the output gradients it needs were kept by B).
void StageEmitter::ops_weight_gradient(const std::vector<OpCost>& ops, int layer, int mb) {
  for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
    if (op->op_class != core::OpClass::GEMM) continue;
    compute(*op, Phase::BACKWARD, true, layer, mb, 0.5, {}, core::BackwardPart::WEIGHT);
  }
}

void StageEmitter::ops_backward(const std::vector<OpCost>& ops, bool selective_recompute, int layer, int mb) {
  const bool split = plan_.split_backward;
  for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
    zero3_hook(*op, Phase::BACKWARD, layer, mb);
    if (split) {
      // B: a GEMM's data-gradient half; every op without weights whole.
      for (const Comm& c : comms_around(plan_, op->kind, Side::BACKWARD_BEFORE)) blocking(c, Phase::BACKWARD, layer, mb, op->name);
      if (selective_recompute && op->recomputed_selective) compute(*op, Phase::RECOMPUTE, false, layer, mb);
      compute(*op, Phase::BACKWARD, true, layer, mb, op->op_class == core::OpClass::GEMM ? 0.5 : 1.0, {},
              core::BackwardPart::INPUT);
      for (const Comm& c : comms_around(plan_, op->kind, Side::BACKWARD_AFTER)) blocking(c, Phase::BACKWARD, layer, mb, op->name);
      continue;
    }
    if (tp_overlapped(op->kind)) {
      overlapped_backward(*op, layer, mb);
      continue;
    }
    for (const Comm& c : comms_around(plan_, op->kind, Side::BACKWARD_BEFORE)) blocking(c, Phase::BACKWARD, layer, mb, op->name);
    if (selective_recompute && op->recomputed_selective) compute(*op, Phase::RECOMPUTE, false, layer, mb);
    compute(*op, Phase::BACKWARD, true, layer, mb);
    for (const Comm& c : comms_around(plan_, op->kind, Side::BACKWARD_AFTER)) blocking(c, Phase::BACKWARD, layer, mb, op->name);
  }
}

}  // namespace trainsim::models::emit
