// stage_deepspeed.cpp: DeepSpeed ZeRO-3's parameter coordinator, hook by hook.
//
// DeepSpeed registers hooks on every submodule (parameter_offload.py) and fetches parameters there,
// not unit by unit as FSDP does (models/deepspeed_config.hpp has the coordinator's rules and
// sources). Here every op of the IR is a submodule with a hook: its forward, its recompute and its
// backward each fire one, in the order the emitter runs them. A parameter is a weight matrix of a
// layer's GEMM op (the QKV, projection, MLP, router and expert weights), used by that op's hooks;
// the embedding's and the output head's parameters are one parameter each, used by every hook of
// their unit. Parameters under persistence_threshold (norms, biases; DeepSpeed's
// param_persistence_threshold) are never partitioned, so never gathered.
//
// What overlaps what:
//   - a hook that first uses a parameter is a host task (stream HOST) of DEEPSPEED_FETCH_HOST_CALLS
//     launches per parameter it fetches; the host runs ahead of the GPU until it has
//     DEEPSPEED_HOST_LEAD_FETCHES parameter waits outstanding (DeepSpeed synchronizes on the oldest
//     fetch event), so each such host task waits for what the GPU waited for that many fetching
//     hooks earlier;
//   - an all-gather issued at a hook (demand fetch or prefetch, zero3_fetch_schedule) waits for the
//     last host hook task at or before it, and runs on DATA_COMM in issue order;
//   - the op waits for the all-gathers of the parameters it uses first in the pass.
// The gradient reduce-scatters stay per reduce bucket (unit_gradients_final), after the gathers
// issued before them on DATA_COMM (DeepSpeed reduces on a stream of its own; here they queue).
// Not modelled: parameters kept from the forward for the backward when their reuse distance is
// under stage3_max_reuse_distance (the last layers before the head), hooks of container modules
// (they would prefetch further, up to max_live_parameters), and parameter offload (ZeRO-Infinity
// keeps the unit-level fetch of stage_data_parallel.cpp).

#include <algorithm>
#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"
#include "sim/core/stack.hpp"

namespace trainsim::models {

double zero3_weight_elements(const OpCost& op) {
  if (op.op_class != core::OpClass::GEMM) return 0;
  switch (op.kind) {
    case OpKind::QKV:
    case OpKind::PROJECTION:
    case OpKind::MLP_UP:
    case OpKind::MLP_DOWN:
    case OpKind::ROUTER:
    case OpKind::EXPERT_UP:
    case OpKind::EXPERT_DOWN:
      // accounting.cpp's gemm(): `count` weight sets of k x n.
      return static_cast<double>(op.gemm.count) * static_cast<double>(op.gemm.k) * static_cast<double>(op.gemm.n);
    default: return 0;
  }
}

namespace emit {

namespace {

// The hooks of a unit's ops in a pass, in the order ops_forward / ops_recompute_unsaved /
// ops_backward run them (stage_passes.cpp).
// `recomputed`: the leading ops a full recompute re-runs (LayerPlan::recompute_ops).
std::vector<const OpCost*> unit_hooks(const std::vector<OpCost>& ops, bool backward, Recompute recompute, bool layer,
                                      size_t recomputed = 0) {
  std::vector<const OpCost*> hooks;
  if (!backward) {
    for (const OpCost& op : ops) hooks.push_back(&op);
    return hooks;
  }
  if (layer && recompute == Recompute::FULL) {
    for (size_t i = 0; i < recomputed; ++i) hooks.push_back(&ops[i]);
  }
  if (layer && recompute == Recompute::SELECTIVE_OP) {
    for (const OpCost& op : ops) {
      if (op.op_sac_recompute > 0) hooks.push_back(&op);
    }
  }
  for (auto op = ops.rbegin(); op != ops.rend(); ++op) hooks.push_back(&*op);
  return hooks;
}

}  // namespace

// Adds a unit's hooks and parameters to the pass's trace.
void StageEmitter::zero3_add_unit(const Unit& u, const std::vector<const OpCost*>& hooks) {
  Zero3Pass& z = zero3_;
  const size_t first_hook = z.hook_ops.size();
  for (const OpCost* op : hooks) {
    z.hook_ops.push_back(op);
    z.trace.uses.emplace_back();
  }
  // What a parameter of `elements` of the unit's dense or expert parameters sends (its share of the
  // unit's sent elements and index bytes, which differ from its parameters under pruning).
  auto add = [&](double elements, bool expert, const std::vector<size_t>& users) {
    const double params = expert ? u.params.expert : u.params.dense;
    if (elements < plan_.deepspeed.persistence_threshold || params <= 0 || users.empty()) return;
    if (expert ? !plan_.reduce_expert : !plan_.reduce_dense) return;
    const double share = elements / params;
    const double sent = expert ? u.sent.expert : u.sent.dense;
    const double index = expert ? u.index.expert : u.index.dense;
    const int id = static_cast<int>(z.parameters.size());
    z.parameters.push_back({elements, share * (sent * plan_.weight_bytes + index), expert, u.layer});
    z.trace.elements.push_back(elements);
    for (size_t h : users) z.trace.uses[first_hook + h].push_back(id);
  };
  if (u.kind != UnitKind::LAYER) {
    std::vector<size_t> all(hooks.size());
    for (size_t h = 0; h < hooks.size(); ++h) all[h] = h;
    add(u.params.dense, false, all);
    add(u.params.expert, true, all);
    return;
  }
  // Parameters in order of first use: the order in which this unit's hooks first reach their ops.
  std::vector<const OpCost*> seen;
  for (size_t h = 0; h < hooks.size(); ++h) {
    const OpCost* op = hooks[h];
    if (zero3_weight_elements(*op) <= 0 || std::find(seen.begin(), seen.end(), op) != seen.end()) continue;
    seen.push_back(op);
    std::vector<size_t> users;
    for (size_t k = h; k < hooks.size(); ++k) {
      if (hooks[k] == op) users.push_back(k);
    }
    const bool expert = op->kind == OpKind::EXPERT_UP || op->kind == OpKind::EXPERT_DOWN;
    add(zero3_weight_elements(*op), expert, users);
  }
}

// Builds the pass's trace from the units in pass order and schedules its fetches.
void StageEmitter::zero3_start_pass(const std::vector<const Unit*>& order, bool backward) {
  if (!plan_.deepspeed_fetch) return;
  zero3_ = Zero3Pass{};
  zero3_next_hook_ = 0;
  for (const Unit* u : order) {
    switch (u->kind) {
      case UnitKind::EMBEDDING:
        zero3_add_unit(*u, unit_hooks(plan_.embedding, backward, par_.recompute, false));
        break;
      case UnitKind::HEAD: zero3_add_unit(*u, unit_hooks(plan_.head, backward, par_.recompute, false)); break;
      case UnitKind::LAYER:
        zero3_add_unit(*u, unit_hooks(plan_.layer(u->layer).ops, backward, par_.recompute, true,
                                      plan_.layer(u->layer).recompute_ops));
        break;
    }
  }
  const Zero3Schedule schedule = zero3_fetch_schedule(zero3_.trace, plan_.deepspeed);
  zero3_.issues.assign(zero3_.hook_ops.size(), {});
  zero3_.first_use.assign(zero3_.parameters.size(), -1);
  for (size_t p = 0; p < zero3_.parameters.size(); ++p) {
    zero3_.issues[static_cast<size_t>(schedule.issued_at[p])].push_back(static_cast<int>(p));
  }
  for (size_t h = 0; h < zero3_.trace.uses.size(); ++h) {
    for (int p : zero3_.trace.uses[h]) {
      if (zero3_.first_use[static_cast<size_t>(p)] < 0) zero3_.first_use[static_cast<size_t>(p)] = static_cast<int>(h);
    }
  }
  zero3_gathers_.assign(zero3_.parameters.size(), {});
}

// The host side of a hook that fetches `fetched` parameters: it waits until the GPU has reached the
// fetching hook DEEPSPEED_HOST_LEAD_FETCHES back (the fetch-event throttle).
uint32_t StageEmitter::zero3_host_hook(int fetched, Phase phase, int layer, int mb) {
  Task t = make(TaskKind::COMPUTE, Stream::HOST, phase, layer, mb, "zero3 fetch hook");
  t.seconds = fetched * DEEPSPEED_FETCH_HOST_CALLS * core::EAGER_HOST_PER_LAUNCH_S;
  std::vector<uint32_t> deps;
  if (zero3_reached_.size() == static_cast<size_t>(DEEPSPEED_HOST_LEAD_FETCHES)) deps = zero3_reached_.front();
  zero3_host_ = prog().add(t, deps);
  return *zero3_host_;
}

// The hook before `op`'s compute: the host task when it fetches, the all-gathers it issues, and the
// op's wait for the parameters it uses first.
void StageEmitter::zero3_hook(const OpCost& op, Phase phase, int layer, int mb) {
  if (!plan_.deepspeed_fetch || zero3_.hook_ops.empty()) return;
  const size_t h = zero3_next_hook_++;
  TRAINSIM_CHECK(h < zero3_.hook_ops.size() && zero3_.hook_ops[h] == &op,
                 fmt::format("ZeRO-3 hook {} ({}) out of step with the pass's trace", h, op.name));
  int fetched = 0;
  for (int p : zero3_.trace.uses[h]) fetched += zero3_.first_use[static_cast<size_t>(p)] == static_cast<int>(h) ? 1 : 0;
  if (fetched > 0) zero3_host_hook(fetched, phase, layer, mb);
  std::vector<uint32_t> issue_deps;
  if (zero3_host_) {
    issue_deps.push_back(*zero3_host_);
  } else if (pass_start_) {
    issue_deps.push_back(*pass_start_);
  }
  for (int p : zero3_.issues[h]) {
    const Zero3Parameter& param = zero3_.parameters[static_cast<size_t>(p)];
    Task t = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, phase, param.layer, mb, "parameter all_gather");
    t.collective = CollectiveOp::ALL_GATHER;
    t.group = param.expert ? plan_.groups.expert_data : plan_.groups.data;
    t.bytes = param.bytes;
    zero3_gathers_[static_cast<size_t>(p)].push_back(prog().add(t, issue_deps));
    count_data(t.bytes, param.elements * plan_.weight_bytes);
  }
  if (fetched == 0) return;
  std::vector<uint32_t> reached;
  if (last_compute_) reached.push_back(*last_compute_);
  for (int p : zero3_.trace.uses[h]) {
    if (zero3_.first_use[static_cast<size_t>(p)] != static_cast<int>(h)) continue;
    const std::vector<uint32_t>& g = zero3_gathers_[static_cast<size_t>(p)];
    pending_.insert(pending_.end(), g.begin(), g.end());
    reached.insert(reached.end(), g.begin(), g.end());
  }
  zero3_reached_.push_back(std::move(reached));
  if (zero3_reached_.size() > static_cast<size_t>(DEEPSPEED_HOST_LEAD_FETCHES)) zero3_reached_.erase(zero3_reached_.begin());
}

}  // namespace emit
}  // namespace trainsim::models
