#include "models/stage_program.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

using core::CollectiveOp;
using core::Phase;
using core::Stream;
using core::Task;
using core::TaskKind;

// What holds parameters: the embedding, a layer, or the output head.
enum class UnitKind { EMBEDDING, LAYER, HEAD };
struct Unit {
  UnitKind kind = UnitKind::LAYER;
  int layer = 0;
  ParameterCount params;
};

// A data-parallel gradient bucket, reduced once the backward of the unit that completes it has run
// for the chunk's last micro-batch.
struct Bucket {
  double parameters = 0;
  bool expert = false;
};

struct Comm {
  CollectiveOp op = CollectiveOp::ALL_REDUCE;
  uint16_t group = 0;
  Stream stream = Stream::TENSOR_COMM;
  double bytes = 0;
};

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
std::vector<Comm> comms_around(const BuildPlan& plan, OpKind kind, Side side) {
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
  std::vector<Comm> out;
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

// One entry of a stage's issue order: a pass of the schedule, or a pipeline transfer placed at the
// time of its ideal execution (see workload_builder.hpp: ordering transfers by that time on every
// rank makes each link's order agree and rules out cyclic waits).
struct Event {
  enum Type { RECV, PASS, SEND };
  double time = 0;
  int order_class = 0;  // 0 transfers, 1 passes: a transfer at time T precedes a pass starting at T
  int direction = 0;    // 0 activations, 1 gradients
  int sender = 0;
  Type type = PASS;
  size_t slot = 0;
};

class StageEmitter {
 public:
  StageEmitter(const BuildPlan& plan, core::Workload& workload, int stage)
      : plan_(plan), par_(*plan.parallelism), workload_(workload), stage_(stage) {
    result_.program.name = fmt::format("stage {}", stage);
    build_units();
    build_buckets();
  }

  StageResult run() {
    emit_schedule();
    if (!par_.overlap_grad_reduce) {
      for (size_t c = 0; c < units_.size(); ++c) {
        for (const auto& ready : buckets_[c]) {
          for (const Bucket& b : ready) reduce_bucket(b, 0, plan_.micro_batches - 1);
        }
      }
    }
    // The tied embedding's all-reduce spans the first and the last stage. Issued mid-stream it would
    // hold back the DATA_COMM tasks behind it (ZeRO-3 gathers) until the other end finishes its
    // backward, which may wait on them; issued last, as Megatron-LM's finalize_model_grads does, it
    // cannot.
    if (embedding_gradient_) {
      const double word_embedding = static_cast<double>(plan_.model->vocab) * static_cast<double>(plan_.model->hidden) /
                                    par_.tensor;
      gradient_collective(CollectiveOp::ALL_REDUCE, static_cast<uint16_t>(plan_.groups.embedding),
                          word_embedding * gradient_bytes_per_parameter(), 0, plan_.micro_batches - 1,
                          "embedding gradient all_reduce", *embedding_gradient_);
    }
    emit_optimizer();
    result_.peak_activation_bytes = peak_;
    return std::move(result_);
  }

 private:
  int position(int chunk) const { return chunk * plan_.stages + stage_; }
  core::Program& prog() { return result_.program; }

  void build_units() {
    units_.resize(static_cast<size_t>(plan_.chunks));
    for (int c = 0; c < plan_.chunks; ++c) {
      const int pos = position(c);
      std::vector<Unit>& units = units_[static_cast<size_t>(c)];
      if (pos == 0) units.push_back({UnitKind::EMBEDDING, 0, plan_.embedding_params});
      for (int l = 0; l < plan_.chunk_layers[static_cast<size_t>(pos)]; ++l) {
        const int layer = plan_.first_layer[static_cast<size_t>(pos)] + l;
        units.push_back({UnitKind::LAYER, layer, plan_.layer(layer).params});
      }
      if (pos == plan_.positions - 1) units.push_back({UnitKind::HEAD, 0, plan_.head_params});
      for (const Unit& u : units) result_.parameters += u.params;
    }
  }

  // Buckets fill in backward order (Megatron-LM's DDP); buckets_[chunk][i] lists those completed by
  // the i-th unit in backward order.
  void build_buckets() {
    buckets_.resize(units_.size());
    if (plan_.zero3) return;  // gradients are reduce-scattered unit by unit instead
    const double capacity = par_.bucket_size.value() / gradient_bytes_per_parameter();
    for (size_t c = 0; c < units_.size(); ++c) {
      const std::vector<Unit>& units = units_[c];
      std::vector<std::vector<Bucket>>& ready = buckets_[c];
      ready.assign(units.size(), {});
      double dense = 0, expert = 0;
      for (size_t i = 0; i < units.size(); ++i) {
        const Unit& u = units[units.size() - 1 - i];
        if (plan_.reduce_dense) dense += u.params.dense;
        if (plan_.reduce_expert) expert += u.params.expert;
        if (dense > 0 && dense >= capacity) {
          ready[i].push_back({dense, false});
          dense = 0;
        }
        if (expert > 0 && expert >= capacity) {
          ready[i].push_back({expert, true});
          expert = 0;
        }
      }
      if (dense > 0) ready.back().push_back({dense, false});
      if (expert > 0) ready.back().push_back({expert, true});
    }
  }

  uint32_t name_id(const std::string& name) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    const uint32_t id = workload_.intern(name);
    names_.emplace(name, id);
    return id;
  }

  Task make(TaskKind kind, Stream stream, Phase phase, int layer, int micro_batch, const std::string& name) {
    Task t;
    t.kind = kind;
    t.stream = stream;
    t.phase = phase;
    t.layer = static_cast<uint16_t>(layer);
    t.micro_batch = static_cast<uint32_t>(micro_batch);
    t.name = name_id(name);
    return t;
  }

  void compute(const OpCost& op, Phase phase, bool backward, int layer, int mb) {
    Task t = make(TaskKind::COMPUTE, Stream::COMPUTE, phase, layer, mb, op.name);
    t.op_class = op.op_class;
    t.flops = (backward ? op.backward_flops + op.backward_recompute_flops : op.forward_flops).value();
    t.bytes = (backward ? op.backward_bytes : op.forward_bytes).value();
    last_compute_ = prog().add(t, pending_);
    pending_.clear();
  }

  // A collective on the critical path: it waits for the compute that produced its input, and the
  // next compute waits for it.
  void blocking(const Comm& c, Phase phase, int layer, int mb, const std::string& op_name) {
    std::vector<uint32_t> deps = pending_;
    if (last_compute_) deps.push_back(*last_compute_);
    Task t = make(TaskKind::COLLECTIVE, c.stream, phase, layer, mb, fmt::format("{} {}", op_name, core::to_string(c.op)));
    t.collective = c.op;
    t.group = c.group;
    t.bytes = c.bytes;
    pending_ = {prog().add(t, deps)};
  }

  // A collective off the critical path (gradient reduction): only the optimizer waits for it.
  void gradient_collective(CollectiveOp op, uint16_t group, double bytes, int layer, int mb, const std::string& name,
                           uint32_t after) {
    Task t = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, Phase::BACKWARD, layer, mb, name);
    t.collective = op;
    t.group = group;
    t.bytes = bytes;
    gradient_collectives_.push_back(prog().add(t, {after}));
  }

  void memory(double bytes, Phase phase, int layer, int mb) {
    Task t = make(TaskKind::MEMORY, Stream::COMPUTE, phase, layer, mb, "activations");
    t.bytes = bytes;
    prog().add(t);
    live_ += bytes;
    peak_ = std::max(peak_, live_);
  }

  void ops_forward(const std::vector<OpCost>& ops, Phase phase, int layer, int mb) {
    for (const OpCost& op : ops) {
      for (const Comm& c : comms_around(plan_, op.kind, Side::FORWARD_BEFORE)) blocking(c, phase, layer, mb, op.name);
      compute(op, phase, false, layer, mb);
      for (const Comm& c : comms_around(plan_, op.kind, Side::FORWARD_AFTER)) blocking(c, phase, layer, mb, op.name);
    }
  }

  void ops_backward(const std::vector<OpCost>& ops, bool selective_recompute, int layer, int mb) {
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
      for (const Comm& c : comms_around(plan_, op->kind, Side::BACKWARD_BEFORE)) blocking(c, Phase::BACKWARD, layer, mb, op->name);
      if (selective_recompute && op->recomputed_selective) compute(*op, Phase::RECOMPUTE, false, layer, mb);
      compute(*op, Phase::BACKWARD, true, layer, mb);
      for (const Comm& c : comms_around(plan_, op->kind, Side::BACKWARD_AFTER)) blocking(c, Phase::BACKWARD, layer, mb, op->name);
    }
  }

  // ZeRO-3: gather the unit's parameters before each use. The gather of the i-th unit of a pass waits
  // only for the compute of unit i - 2, so it overlaps unit i - 1 (one unit of prefetch, two gathered
  // units resident).
  void gather_parameters(const Unit& u, size_t index, Phase phase, int mb) {
    if (!plan_.zero3) return;
    std::vector<uint32_t> deps;
    if (index >= 2) deps.push_back(unit_done_[index - 2]);
    auto gather = [&](double params, uint16_t group) {
      Task t = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, phase, u.layer, mb, "parameter all_gather");
      t.collective = CollectiveOp::ALL_GATHER;
      t.group = group;
      t.bytes = params * plan_.weight_bytes;
      pending_.push_back(prog().add(t, deps));
    };
    if (plan_.reduce_dense && u.params.dense > 0) gather(u.params.dense, plan_.groups.data);
    if (plan_.reduce_expert && u.params.expert > 0) gather(u.params.expert, plan_.groups.expert_data);
  }

  void unit_forward(const Unit& u, size_t index, int mb) {
    gather_parameters(u, index, Phase::FORWARD, mb);
    switch (u.kind) {
      case UnitKind::EMBEDDING: ops_forward(plan_.embedding, Phase::FORWARD, 0, mb); break;
      case UnitKind::LAYER:
        ops_forward(plan_.layer(u.layer).ops, Phase::FORWARD, u.layer, mb);
        memory(plan_.layer(u.layer).stored_bytes, Phase::FORWARD, u.layer, mb);
        break;
      case UnitKind::HEAD:
        ops_forward(plan_.head, Phase::FORWARD, 0, mb);
        memory(plan_.head_bytes, Phase::FORWARD, 0, mb);
        break;
    }
    unit_done_.push_back(*last_compute_);
  }

  void unit_backward(const Unit& u, size_t index, int mb, const std::vector<Bucket>* ready) {
    gather_parameters(u, index, Phase::BACKWARD, mb);
    switch (u.kind) {
      case UnitKind::EMBEDDING: ops_backward(plan_.embedding, false, 0, mb); break;
      case UnitKind::HEAD:
        ops_backward(plan_.head, false, 0, mb);
        memory(-plan_.head_bytes, Phase::BACKWARD, 0, mb);
        break;
      case UnitKind::LAYER: {
        const LayerPlan& layer = plan_.layer(u.layer);
        if (par_.recompute != Recompute::NONE) memory(layer.recompute_bytes, Phase::RECOMPUTE, u.layer, mb);
        if (par_.recompute == Recompute::FULL) ops_forward(layer.ops, Phase::RECOMPUTE, u.layer, mb);
        ops_backward(layer.ops, par_.recompute == Recompute::SELECTIVE, u.layer, mb);
        memory(-(layer.stored_bytes + layer.recompute_bytes), Phase::BACKWARD, u.layer, mb);
        break;
      }
    }
    unit_done_.push_back(*last_compute_);
    if (plan_.zero3) {
      const double grad = gradient_bytes_per_parameter();
      if (plan_.reduce_dense && u.params.dense > 0) {
        gradient_collective(CollectiveOp::REDUCE_SCATTER, plan_.groups.data, u.params.dense * grad, u.layer, mb,
                            "gradient reduce_scatter", *last_compute_);
      }
      if (plan_.reduce_expert && u.params.expert > 0) {
        gradient_collective(CollectiveOp::REDUCE_SCATTER, plan_.groups.expert_data, u.params.expert * grad, u.layer,
                            mb, "gradient reduce_scatter", *last_compute_);
      }
    }
    if (u.kind != UnitKind::LAYER && plan_.groups.embedding >= 0) embedding_gradient_ = *last_compute_;
    if (ready != nullptr && par_.overlap_grad_reduce) {
      for (const Bucket& b : *ready) reduce_bucket(b, u.layer, mb);
    }
  }

  void reduce_bucket(const Bucket& b, int layer, int mb) {
    const CollectiveOp op = par_.zero_stage >= 1 ? CollectiveOp::REDUCE_SCATTER : CollectiveOp::ALL_REDUCE;
    gradient_collective(op, b.expert ? plan_.groups.expert_data : plan_.groups.data,
                        b.parameters * gradient_bytes_per_parameter(), layer, mb,
                        fmt::format("gradient {}", core::to_string(op)), *last_compute_);
    reduced_.push_back(b);
  }

  void forward_pass(int chunk, int mb) {
    unit_done_.clear();
    const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
    for (size_t i = 0; i < units.size(); ++i) unit_forward(units[i], i, mb);
  }

  void backward_pass(int chunk, int mb, bool last_of_chunk) {
    unit_done_.clear();
    const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
    for (size_t i = 0; i < units.size(); ++i) {
      const auto& chunk_buckets = buckets_[static_cast<size_t>(chunk)];
      const std::vector<Bucket>* ready = last_of_chunk && !chunk_buckets.empty() ? &chunk_buckets[i] : nullptr;
      unit_backward(units[units.size() - 1 - i], i, mb, ready);
    }
  }

  std::vector<Event> schedule_events() const {
    const std::vector<TimedSlot>& timed = plan_.timed[static_cast<size_t>(stage_)];
    const int last = plan_.positions - 1;
    auto cell = [&](int mb, int pos) { return static_cast<size_t>(mb) * static_cast<size_t>(plan_.positions) + static_cast<size_t>(pos); };
    std::vector<Event> events;
    for (size_t i = 0; i < timed.size(); ++i) {
      const TimedSlot& ts = timed[i];
      const int pos = position(ts.slot.chunk);
      const int mb = ts.slot.micro_batch;
      events.push_back({ts.start, 1, 0, 0, Event::PASS, i});
      if (ts.slot.pass == Pass::FORWARD) {
        if (pos > 0) {
          events.push_back({plan_.forward_end[cell(mb, pos - 1)], 0, 0, (pos - 1) % plan_.stages, Event::RECV, i});
        }
        if (pos < last) events.push_back({ts.end, 0, 0, stage_, Event::SEND, i});
      } else {
        if (pos < last) {
          events.push_back({plan_.backward_end[cell(mb, pos + 1)], 0, 1, (pos + 1) % plan_.stages, Event::RECV, i});
        }
        if (pos > 0) events.push_back({ts.end, 0, 1, stage_, Event::SEND, i});
      }
    }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      if (a.time != b.time) return a.time < b.time;
      if (a.order_class != b.order_class) return a.order_class < b.order_class;
      if (a.direction != b.direction) return a.direction < b.direction;
      return a.sender < b.sender;
    });
    return events;
  }

  // Emits passes and pipeline transfers in the order of the schedule's ideal execution.
  void emit_schedule() {
    const std::vector<TimedSlot>& timed = plan_.timed[static_cast<size_t>(stage_)];
    std::vector<int> last_backward(static_cast<size_t>(plan_.chunks), -1);
    for (size_t i = 0; i < timed.size(); ++i) {
      if (timed[i].slot.pass == Pass::BACKWARD) last_backward[static_cast<size_t>(timed[i].slot.chunk)] = static_cast<int>(i);
    }
    std::vector<std::optional<uint32_t>> recv_of(timed.size());
    std::vector<uint32_t> last_compute_of(timed.size(), 0);
    for (const Event& e : schedule_events()) {
      const PassSlot& s = timed[e.slot].slot;
      const int pos = position(s.chunk);
      const bool forward = s.pass == Pass::FORWARD;
      const Stream stream = forward ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
      const size_t p = static_cast<size_t>(pos);
      switch (e.type) {
        case Event::RECV: {
          // Activations come from the previous position, gradients from the next one; `layer` is the
          // sender's boundary layer, so a link's SEND and RECV sequences can be compared.
          const int layer = forward ? plan_.first_layer[p] - 1 : plan_.first_layer[p] + plan_.chunk_layers[p];
          Task t = make(TaskKind::RECV, stream, forward ? Phase::FORWARD : Phase::BACKWARD, layer, s.micro_batch,
                        forward ? "recv activations" : "recv gradients");
          t.peer_axis = core::Axis::PIPELINE;
          t.peer_offset = static_cast<int16_t>(forward ? -1 : 1);
          t.tag = forward ? PIPELINE_ACTIVATIONS_TAG : PIPELINE_GRADIENTS_TAG;
          t.bytes = plan_.pipeline_bytes;
          recv_of[e.slot] = prog().add(t);
          break;
        }
        case Event::PASS:
          if (recv_of[e.slot]) pending_.push_back(*recv_of[e.slot]);
          if (forward) {
            forward_pass(s.chunk, s.micro_batch);
          } else {
            backward_pass(s.chunk, s.micro_batch, last_backward[static_cast<size_t>(s.chunk)] == static_cast<int>(e.slot));
          }
          last_compute_of[e.slot] = *last_compute_;
          break;
        case Event::SEND: {
          const int layer = forward ? plan_.first_layer[p] + plan_.chunk_layers[p] - 1 : plan_.first_layer[p];
          Task t = make(TaskKind::SEND, stream, forward ? Phase::FORWARD : Phase::BACKWARD, layer, s.micro_batch,
                        forward ? "send activations" : "send gradients");
          t.peer_axis = core::Axis::PIPELINE;
          t.peer_offset = static_cast<int16_t>(forward ? 1 : -1);
          t.tag = forward ? PIPELINE_ACTIVATIONS_TAG : PIPELINE_GRADIENTS_TAG;
          t.bytes = plan_.pipeline_bytes;
          prog().add(t, {last_compute_of[e.slot]});
          break;
        }
      }
    }
  }

  // The Adam step on the locally owned parameters, then (ZeRO-1/2) the all-gather of the updated
  // parameters bucket by bucket.
  void emit_optimizer() {
    const bool shard = par_.zero_stage >= 1;
    const double updated = result_.parameters.dense / (shard ? par_.dense_replicas() : 1) +
                           result_.parameters.expert / (shard ? par_.expert_replicas() : 1);
    Task t = make(TaskKind::COMPUTE, Stream::COMPUTE, Phase::OPTIMIZER, 0, 0, "optimizer");
    t.op_class = core::OpClass::OPTIMIZER;
    t.bytes = updated * plan_.optimizer_step_bytes;
    std::vector<uint32_t> deps = gradient_collectives_;
    deps.push_back(*last_compute_);
    const uint32_t step = prog().add(t, deps);
    if (par_.zero_stage == 0 || plan_.zero3) return;
    for (const Bucket& b : reduced_) {
      Task g = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, Phase::OPTIMIZER, 0, 0, "parameter all_gather");
      g.collective = CollectiveOp::ALL_GATHER;
      g.group = b.expert ? plan_.groups.expert_data : plan_.groups.data;
      g.bytes = b.parameters * plan_.weight_bytes;
      prog().add(g, {step});
    }
  }

  const BuildPlan& plan_;
  const ParallelismConfig& par_;
  core::Workload& workload_;
  int stage_;
  StageResult result_;
  std::vector<std::vector<Unit>> units_;                  // by chunk, forward order
  std::vector<std::vector<std::vector<Bucket>>> buckets_;  // by chunk, by unit in backward order
  std::unordered_map<std::string, uint32_t> names_;
  std::vector<uint32_t> pending_;              // what the next compute task waits for
  std::optional<uint32_t> last_compute_;
  std::vector<uint32_t> unit_done_;            // last compute of each unit of the current pass
  std::vector<uint32_t> gradient_collectives_;
  std::vector<Bucket> reduced_;                // buckets in the order they were reduced
  std::optional<uint32_t> embedding_gradient_;  // backward compute that finalizes the tied embedding gradient
  double live_ = 0;
  double peak_ = 0;
};

}  // namespace

StageResult build_stage_program(const BuildPlan& plan, core::Workload& workload, int stage) {
  return StageEmitter(plan, workload, stage).run();
}

}  // namespace trainsim::models
