#include "models/stage_program.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

using core::CollectiveOp;
using core::CopyDirection;
using core::MemorySpace;
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
  PrunedParameters pruned;  // the pruned part of params
  ParameterCount sent;      // elements its gradient reductions and parameter gathers send (pruning.hpp)
  ParameterCount index;     // index bytes sent with them
  std::vector<WeightMatrix> matrices;  // its weight matrices (PowerSGD only; else empty)
};

// A data-parallel gradient bucket, reduced once the backward of the unit that completes it has run
// for the chunk's last micro-batch.
struct Bucket {
  double parameters = 0;
  bool expert = false;
  int id = 0;         // index into StageEmitter::buckets_by_id_
  double sent = 0;    // elements sent (parameters, less the pruned zeros under sparse communication)
  double index = 0;   // index bytes sent with them
  std::vector<WeightMatrix> matrices;  // PowerSGD: the weight matrices of its parameters
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

constexpr size_t NO_SLOT = SIZE_MAX;

// Builds a stage's ready pool (pipeline_execution "async") while the schedule is emitted in its ideal
// order: each pass and its send form a block; receives are loose tasks.
class PoolEmitter {
 public:
  PoolEmitter(core::Program& program, bool active) : program_(program), active_(active) {
    if (active_) program_.pool.begin = static_cast<uint32_t>(program_.tasks.size());
  }

  // Assigns the tasks emitted since the last call to `block` (LOOSE_TASK: loose).
  void mark(uint32_t block) {
    if (!active_) return;
    core::ReadyPool& pool = program_.pool;
    const size_t emitted = program_.tasks.size() - pool.begin;
    if (pool.block_of.size() < emitted) pool.block_of.resize(emitted, pending_block_);
    pending_block_ = block;
  }

  // Starts the block of timed slot `slot`. Queues: B 0, W 1, F 2 (backward first on ties, as
  // schedule.hpp's async_pipeline_order); a forward opens a micro-batch, the pass that frees its
  // activations (B, or W when the backward is split) closes it.
  void open_block(size_t slot, const PassSlot& s, uint32_t trigger) {
    core::PoolBlock b;
    b.trigger = trigger;
    b.queue = s.pass == Pass::BACKWARD ? 0 : s.pass == Pass::BACKWARD_WEIGHT ? 1 : 2;
    split_ = split_ || s.pass == Pass::BACKWARD_WEIGHT;
    b.in_flight = s.pass == Pass::FORWARD ? 1 : 0;
    if (block_of_slot_.size() <= slot) block_of_slot_.resize(slot + 1, core::LOOSE_TASK);
    block_of_slot_[slot] = static_cast<uint32_t>(program_.pool.blocks.size());
    program_.pool.blocks.push_back(b);
    passes_.push_back(s);
    std::vector<size_t>& slots = slots_[static_cast<size_t>(s.pass)];
    if (slots.size() <= static_cast<size_t>(s.micro_batch)) slots.resize(static_cast<size_t>(s.micro_batch) + 1, NO_SLOT);
    slots[static_cast<size_t>(s.micro_batch)] = slot;
    mark(block_of_slot_[slot]);
  }

  uint32_t block_of_slot(size_t slot) const {
    return slot < block_of_slot_.size() ? block_of_slot_[slot] : core::LOOSE_TASK;
  }

  // The timed slot of the pass `pass` of micro-batch `mb` emitted so far, or NO_SLOT.
  size_t slot_of(Pass pass, int mb) const {
    const std::vector<size_t>& slots = slots_[static_cast<size_t>(pass)];
    return static_cast<size_t>(mb) < slots.size() ? slots[static_cast<size_t>(mb)] : NO_SLOT;
  }

  void close(int in_flight_limit) {
    if (!active_) return;
    mark(core::LOOSE_TASK);
    core::ReadyPool& pool = program_.pool;
    pool.end = static_cast<uint32_t>(program_.tasks.size());
    pool.in_flight_limit = static_cast<uint32_t>(in_flight_limit);
    for (size_t b = 0; b < pool.blocks.size(); ++b) {
      const Pass closing = split_ ? Pass::BACKWARD_WEIGHT : Pass::BACKWARD;
      if (passes_[b].pass == closing) pool.blocks[b].in_flight = -1;
    }
  }

 private:
  core::Program& program_;
  bool active_;
  bool split_ = false;
  uint32_t pending_block_ = core::LOOSE_TASK;  // the block of the tasks emitted since the last mark
  std::vector<uint32_t> block_of_slot_;
  std::vector<PassSlot> passes_;                 // by block
  std::array<std::vector<size_t>, 3> slots_;     // by pass, by micro-batch: its timed slot
};

class StageEmitter {
 public:
  StageEmitter(const BuildPlan& plan, core::Workload& workload, int stage)
      : plan_(plan), par_(*plan.parallelism), workload_(workload), stage_(stage) {
    result_.program.name = fmt::format("stage {}", stage);
    build_units();
    build_buckets();
    forward_seen_.assign(units_.size(), false);
  }

  StageResult run() {
    if (plan_.overlap_param_gather) emit_parameter_prefetch();
    emit_schedule();
    if (!overlap_reductions() && !plan_.sharded_params) {
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
                          plan_.embedding_gradient_bytes, 0, plan_.micro_batches - 1, "embedding gradient all_reduce",
                          *embedding_gradient_, word_embedding * plan_.gradient_reduce_bytes);
      // In a steady state the first and the last stage are (p - 1) forwards apart: their windows'
      // embedding gradients meet asynchronously and the update applies in the next window (one
      // step stale, as PipeDream-2BW's updates are), so the optimizer does not wait for it.
      if (plan_.steady_state) gradient_collectives_.pop_back();
    }
    emit_optimizer();
    result_.peak_activation_bytes = peak_;
    result_.peak_without_offload = peak_without_;
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
      const bool powersgd = plan_.compression->method == CompressionMethod::POWERSGD;
      if (pos == 0) {
        units.push_back(make_unit(UnitKind::EMBEDDING, 0, plan_.embedding_params, plan_.embedding_pruned));
        if (powersgd) units.back().matrices = embedding_matrices(*plan_.model, par_);
      }
      for (int l = 0; l < plan_.chunk_layers[static_cast<size_t>(pos)]; ++l) {
        const int layer = plan_.first_layer[static_cast<size_t>(pos)] + l;
        units.push_back(make_unit(UnitKind::LAYER, layer, plan_.layer(layer).params, plan_.layer(layer).pruned));
        units.back().matrices = plan_.layer(layer).matrices;
      }
      if (pos == plan_.positions - 1) {
        units.push_back(make_unit(UnitKind::HEAD, 0, plan_.head_params, plan_.head_pruned));
        if (powersgd) units.back().matrices = head_matrices(*plan_.model, par_);
      }
      for (const Unit& u : units) {
        result_.parameters += u.params;
        result_.pruned += u.pruned;
        stored_ += stored_elements(u.params, u.pruned, *plan_.pruning);
      }
      const int layers = plan_.chunk_layers[static_cast<size_t>(pos)];
      last_layer_.push_back(layers > 0 ? plan_.first_layer[static_cast<size_t>(pos)] + layers - 1 : -1);
    }
  }

  Unit make_unit(UnitKind kind, int layer, const ParameterCount& params, const PrunedParameters& pruned) const {
    return {kind, layer, params, pruned, sent_elements(params, pruned, *plan_.pruning),
            sent_index_bytes(pruned, *plan_.pruning), {}};
  }

  // Buckets fill in backward order (Megatron-LM's DDP; DeepSpeed's reduce buckets); buckets_[chunk][i]
  // lists those completed by the i-th unit in backward order, and bucket_units_[chunk][u] the buckets
  // holding the parameters of the u-th unit in forward order.
  void build_buckets() {
    buckets_.resize(units_.size());
    bucket_units_.resize(units_.size());
    // FSDP reduce-scatters unit by unit instead; DeepSpeed ZeRO-3 keeps its reduce buckets.
    if (plan_.sharded_params && plan_.zero_impl != ZeroImpl::DEEPSPEED) return;
    const double capacity = par_.bucket_elements();
    for (size_t c = 0; c < units_.size(); ++c) {
      const std::vector<Unit>& units = units_[c];
      std::vector<std::vector<Bucket>>& ready = buckets_[c];
      ready.assign(units.size(), {});
      bucket_units_[c].assign(units.size(), {});
      // Buckets fill by dense parameter count (the framework's bucket sizes); each carries what its
      // messages send under pruning.
      Bucket dense, expert;
      dense.expert = false;
      expert.expert = true;
      std::vector<size_t> dense_units, expert_units;  // forward indices of the open buckets' units
      auto close = [&](size_t i, Bucket& open, std::vector<size_t>& members) {
        Bucket b = open;
        b.id = static_cast<int>(buckets_by_id_.size());
        buckets_by_id_.push_back(b);
        bucket_chunk_.push_back(static_cast<int>(c));
        ready[i].push_back(b);
        for (size_t u : members) bucket_units_[c][u].push_back(b.id);
        open.parameters = open.sent = open.index = 0;
        open.matrices.clear();
        members.clear();
      };
      for (size_t i = 0; i < units.size(); ++i) {
        const size_t forward_index = units.size() - 1 - i;
        const Unit& u = units[forward_index];
        if (plan_.reduce_dense && u.params.dense > 0) {
          dense.parameters += u.params.dense;
          dense.sent += u.sent.dense;
          dense.index += u.index.dense;
          for (const WeightMatrix& w : u.matrices) {
            if (!w.expert) dense.matrices.push_back(w);
          }
          dense_units.push_back(forward_index);
        }
        if (plan_.reduce_expert && u.params.expert > 0) {
          expert.parameters += u.params.expert;
          expert.sent += u.sent.expert;
          expert.index += u.index.expert;
          for (const WeightMatrix& w : u.matrices) {
            if (w.expert) expert.matrices.push_back(w);
          }
          expert_units.push_back(forward_index);
        }
        if (dense.parameters > 0 && dense.parameters >= capacity) close(i, dense, dense_units);
        if (expert.parameters > 0 && expert.parameters >= capacity) close(i, expert, expert_units);
      }
      if (dense.parameters > 0) close(units.size() - 1, dense, dense_units);
      if (expert.parameters > 0) close(units.size() - 1, expert, expert_units);
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

  // A compute task for `fraction` of an op's forward or backward work: the one place where an op is
  // cut into pieces (tensor-parallel overlap chunks, the dgrad / wgrad halves of a GEMM's backward).
  // FLOPs and HBM bytes scale with the fraction: a chunk is that fraction of the GEMM's rows, and
  // dgrad and wgrad are each 2·m·n·k of the backward's 4·m·n·k FLOPs (their bytes are taken as half
  // each too), and the GEMM shape with them. The task waits for pending_
  // and `also`.
  uint32_t compute(const OpCost& op, Phase phase, bool backward, int layer, int mb, double fraction = 1.0,
                   std::initializer_list<uint32_t> also = {}, core::BackwardPart part = core::BackwardPart::BOTH) {
    Task t = make(TaskKind::COMPUTE, Stream::COMPUTE, phase, layer, mb, op.name);
    t.gradient = part;
    t.op_class = op.op_class;
    t.flops = (backward ? op.backward_flops + op.backward_recompute_flops : op.forward_flops).value() * fraction;
    t.bytes = (backward ? op.backward_bytes : op.forward_bytes).value() * fraction;
    // A piece runs the GEMM on a fraction of its rows: 1/t of them for a forward chunk; a backward
    // piece is half the pass (dgrad or wgrad), on all rows or, chunked, on 2·fraction of them.
    t.gemm = op.gemm;
    t.gemm.m = static_cast<float>(op.gemm.m * (backward ? std::min(1.0, 2 * fraction) : fraction));
    if (op.sparsity != core::GemmSparsity::NONE) {
      t.sparsity = op.sparsity;
      t.density = static_cast<float>(op.density);
      if (op.sparsity == core::GemmSparsity::BLOCK) t.sparse_block = static_cast<uint8_t>(plan_.pruning->block_size);
    }
    // Ops without a precision of their own (norms, elementwise, embedding) carry OpCost's BF16
    // default: they run at the training precision, except in FP8 training, where Transformer Engine
    // keeps them in BF16. (Taking the default as theirs asked a V100 in fp16 for a bf16 peak.)
    const bool own_precision = op.op_class == core::OpClass::GEMM || op.op_class == core::OpClass::ATTENTION ||
                               op.op_class == core::OpClass::FLASH_ATTENTION ||
                               workload_.precision == core::Precision::FP8;
    if (own_precision && op.precision != workload_.precision) {
      t.precision = op.precision;
      t.has_precision = true;
    }
    pending_.insert(pending_.end(), also.begin(), also.end());
    last_compute_ = prog().add(t, pending_);
    pending_.clear();
    return *last_compute_;
  }

  uint32_t collective(const Comm& c, double bytes, Phase phase, int layer, int mb, const std::string& op_name,
                      const std::vector<uint32_t>& deps) {
    Task t = make(TaskKind::COLLECTIVE, c.stream, phase, layer, mb, fmt::format("{} {}", op_name, core::to_string(c.op)));
    t.collective = c.op;
    t.group = c.group;
    t.bytes = bytes;
    return prog().add(t, deps);
  }

  // What the next task on the critical path waits for: pending_ and the last compute.
  std::vector<uint32_t> take_critical() {
    std::vector<uint32_t> deps = std::move(pending_);
    pending_.clear();
    if (last_compute_) deps.push_back(*last_compute_);
    return deps;
  }

  // A collective on the critical path: it waits for the compute that produced its input, and the
  // next compute waits for it.
  void blocking(const Comm& c, Phase phase, int layer, int mb, const std::string& op_name) {
    const std::vector<uint32_t> deps = take_critical();
    pending_ = {collective(c, c.bytes, phase, layer, mb, op_name, deps)};
  }

  // A collective off the critical path (gradient reduction): only the optimizer waits for it.
  // `dense_bytes`: what it would carry without pruning (StageResult::dense_data_bytes).
  void gradient_collective(CollectiveOp op, uint16_t group, double bytes, int layer, int mb, const std::string& name,
                           uint32_t after, double dense_bytes) {
    Task t = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, Phase::BACKWARD, layer, mb, name);
    t.collective = op;
    t.group = group;
    t.bytes = bytes;
    gradient_collectives_.push_back(prog().add(t, {after}));
    count_data(bytes, dense_bytes);
  }

  void count_data(double bytes, double dense_bytes) {
    result_.data_bytes += bytes;
    result_.dense_data_bytes += dense_bytes;
  }

  // Bytes of a gradient reduction or parameter gather of `sent` elements at `element_bytes` each plus
  // `index` bytes of sparse index.
  static double message_bytes(double sent, double index, double element_bytes) { return sent * element_bytes + index; }

  void memory(double bytes, Phase phase, int layer, int mb) {
    Task t = make(TaskKind::MEMORY, Stream::COMPUTE, phase, layer, mb, "activations");
    t.bytes = bytes;
    prog().add(t);
    live_ += bytes;
    peak_ = std::max(peak_, live_);
    live_without_ += bytes;
    peak_without_ = std::max(peak_without_, live_without_);
  }

  // Offloading. Memory changes on a copy stream take effect when the copy stream reaches them.
  void memory_on(Stream stream, MemorySpace space, double bytes, Phase phase, int layer, int mb,
                 const std::vector<uint32_t>& deps) {
    Task t = make(TaskKind::MEMORY, stream, phase, layer, mb, space == MemorySpace::HOST ? "host activations" : "activations");
    t.bytes = bytes;
    t.memory_space = space;
    prog().add(t, deps);
    if (space == MemorySpace::DEVICE) {
      live_ += bytes;
      peak_ = std::max(peak_, live_);
    }
  }

  uint32_t copy(CopyDirection d, double bytes, Phase phase, int layer, int mb, const std::string& name,
                const std::vector<uint32_t>& deps) {
    Task t = make(TaskKind::COPY, core::outbound(d) ? Stream::COPY_OUT : Stream::COPY, phase, layer, mb, name);
    t.copy = d;
    t.bytes = bytes;
    return prog().add(t, deps);
  }

  const OffloadConfig& offload() const { return *plan_.offload; }
  bool offload_activations() const { return offload().activations == OffloadTarget::CPU; }

  // Activation offload, after a layer's forward: its stored activations go to host memory (the
  // last layer of each chunk keeps them: its backward comes first).
  void offload_layer(int chunk, int layer, int mb) {
    if (!offload_activations() || layer == last_layer_[static_cast<size_t>(chunk)]) return;
    const double stored = plan_.layer(layer).stored_bytes;
    const std::vector<uint32_t> after = {*last_compute_};
    memory_on(Stream::COPY_OUT, MemorySpace::HOST, stored, Phase::FORWARD, layer, mb, after);
    const uint32_t out = copy(CopyDirection::DEVICE_TO_HOST, stored, Phase::FORWARD, layer, mb, "offload activations", after);
    memory_on(Stream::COPY_OUT, MemorySpace::DEVICE, -stored, Phase::FORWARD, layer, mb, {out});
    offloaded_[{layer, mb}] = out;
    if (!offload().overlap) pending_.push_back(out);
  }

  // Activation offload, before a backward: brings back the activations of the unit at `index` of
  // the backward order, once, after the compute issued so far (one layer ahead when overlapped).
  void reload_layer(const std::vector<const Unit*>& order, size_t index, int mb) {
    if (index >= order.size() || order[index]->kind != UnitKind::LAYER) return;
    const int layer = order[index]->layer;
    const auto out = offloaded_.find({layer, mb});
    if (out == offloaded_.end() || reloaded_.count({layer, mb}) != 0) return;
    const double stored = plan_.layer(layer).stored_bytes;
    std::vector<uint32_t> deps = {out->second};
    if (last_compute_) deps.push_back(*last_compute_);
    memory_on(Stream::COPY, MemorySpace::DEVICE, stored, Phase::BACKWARD, layer, mb, deps);
    const uint32_t in = copy(CopyDirection::HOST_TO_DEVICE, stored, Phase::BACKWARD, layer, mb, "reload activations", deps);
    memory_on(Stream::COPY, MemorySpace::HOST, -stored, Phase::BACKWARD, layer, mb, {in});
    reloaded_[{layer, mb}] = in;
  }

  // Bytes per gradient element copied to the host: 16-bit gradients when the host accumulates them
  // (gradients "cpu"), else the fp32 main gradients once, after the last micro-batch.
  double gradient_copy_bytes() const {
    return offload().gradients != OffloadTarget::NONE ? plan_.activation_bytes : gradient_bytes_per_parameter();
  }

  // A CPU optimizer step needs the gradients in host memory: those of `params` parameters (the
  // rank's share after a reduction, or its own gradients) after `after`.
  void offload_gradients(double params, int layer, int mb, uint32_t after) {
    if (params <= 0) return;
    const CopyDirection d =
        offload().gradients == OffloadTarget::NVME ? CopyDirection::DEVICE_TO_NVME : CopyDirection::DEVICE_TO_HOST;
    const uint32_t id = copy(d, params * gradient_copy_bytes(), Phase::BACKWARD, layer, mb, "offload gradients", {after});
    gradient_copies_.push_back(id);
    if (!offload().overlap) pending_.push_back(id);
  }

  // After a unit's backward: its gradients that no reduction of this micro-batch covers (ZeRO-3
  // reduces every micro-batch, the others after the chunk's last one; reductions copy their share
  // themselves).
  void offload_unit_gradients(const Unit& u, int mb, bool last_of_chunk) {
    if (!offload().step_on_host) return;
    if (offload().gradients == OffloadTarget::NONE && !last_of_chunk) return;
    const bool reduced = plan_.sharded_params || last_of_chunk;
    double params = 0;
    if (!(reduced && plan_.reduce_dense)) params += u.params.dense;
    if (!(reduced && plan_.reduce_expert)) params += u.params.expert;
    offload_gradients(params, u.layer, mb, *last_compute_);
  }

  // After a gradient reduction of `params` parameters: the rank's share goes to the host (every
  // micro-batch with gradients "cpu", else after the last).
  void offload_reduced_gradients(double params, bool expert, int layer, int mb, uint32_t reduction) {
    if (!offload().step_on_host) return;
    if (offload().gradients == OffloadTarget::NONE && mb != plan_.micro_batches - 1) return;
    const int replicas = par_.zero_stage >= 1 ? (expert ? par_.expert_replicas() : par_.dense_replicas()) : 1;
    offload_gradients(params / replicas, layer, mb, reduction);
  }

  // Transformer Engine's userbuffers overlap (Megatron-LM / NeMo --tp-comm-overlap; TE
  // CommOverlap "pipeline" / "ring_exchange" and "bulk" methods, Megatron-Bridge docs
  // "Communication Overlap"): the layer's four sequence-parallel GEMMs. Output layer and embedding
  // stay blocking (not TE userbuffers layers), and so do MoE expert GEMMs.
  bool tp_overlapped(OpKind kind) const {
    if (!par_.tp_overlap_active()) return false;
    if (kind == OpKind::QKV || kind == OpKind::PROJECTION) return true;
    return !plan_.model->is_moe() && (kind == OpKind::MLP_UP || kind == OpKind::MLP_DOWN);
  }
  bool column(OpKind kind) const { return kind == OpKind::QKV || kind == OpKind::MLP_UP; }
  Comm tensor_comm(CollectiveOp op) const { return {op, plan_.groups.tensor, Stream::TENSOR_COMM, plan_.tensor_bytes}; }

  // Forward of an overlapped GEMM in `tensor` chunks. Column-parallel: all-gather chunk k (1/t of the
  // sequence) -> GEMM chunk k, the chunks' all-gathers back to back on TENSOR_COMM, so only the first
  // one is exposed. Row-parallel: GEMM chunk k -> reduce-scatter chunk k; the next op waits for the
  // last reduce-scatter, so only that one is exposed.
  void overlapped_forward(const OpCost& op, Phase phase, int layer, int mb) {
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
  void overlapped_backward(const OpCost& op, int layer, int mb) {
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

  void ops_forward(const std::vector<OpCost>& ops, Phase phase, int layer, int mb) {
    for (const OpCost& op : ops) {
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
  // forward order. check_strategy keeps it to layers without tensor or context parallelism, whose
  // forward has no collective to re-run.
  void ops_recompute_unsaved(const std::vector<OpCost>& ops, int layer, int mb) {
    for (const OpCost& op : ops) {
      if (op.op_sac_recompute > 0) compute(op, Phase::RECOMPUTE, false, layer, mb, op.op_sac_recompute);
    }
  }

  // A zero-bubble schedule's W pass of a unit: the weight-gradient half of each GEMM, in backward
  // order, with no communication (the output gradients it needs were kept by B).
  void ops_weight_gradient(const std::vector<OpCost>& ops, int layer, int mb) {
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
      if (op->op_class != core::OpClass::GEMM) continue;
      compute(*op, Phase::BACKWARD, true, layer, mb, 0.5, {}, core::BackwardPart::WEIGHT);
    }
  }

  void ops_backward(const std::vector<OpCost>& ops, bool selective_recompute, int layer, int mb) {
    const bool split = plan_.split_backward;
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
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

  // ZeRO-3: the all-gathers of the unit at position `index` of the current pass (forward or
  // backward order). Issued `prefetch` units ahead of their use (gather_parameters), each waits for
  // the compute of the unit `prefetch` + 1 places before it, whose buffer it reuses:
  //   FSDP1 (docs.pytorch.org FullyShardedDataParallel, "FSDP Notes": prefetch nuances): forward
  //     all-gathers run on a separate stream, implicitly one ahead, with limit_all_gathers allowing
  //     two in flight; backward_prefetch=BACKWARD_PRE issues the next unit's all-gather before the
  //     current unit's gradient computation, i.e. ahead of its reduce-scatter on the same stream.
  //   FSDP2 (torch.distributed.fsdp.fully_shard docs; pytorch#128884): implicit forward prefetch of
  //     one unit, backward prefetch of one unit in reverse post-forward order.
  //   DeepSpeed ZeRO-3: messages of at most stage3_prefetch_bucket_size elements.
  //   FSDP and FSDP2 do not reshard the root's parameters after forward (FSDP1 _post_forward_reshard;
  //     fully_shard's reshard_after_forward: "the root FSDP state has its value specially set to
  //     False"): the embedding and the output head, the root's own parameters when the layers are
  //     the wrapped units, are not gathered again for backward.
  //   SHARD_GRAD_OP (FSDP1) and reshard_after_forward=False (FSDP2) keep every unit as the root:
  //     no unit is gathered again for backward; each micro-batch's backward frees them after its
  //     reduce-scatter (FSDP1 _should_free_in_backward: gradients are synchronized every micro-batch).
  void gather_unit(const Unit& u, size_t index, Phase phase, int mb) {
    const bool root = u.kind != UnitKind::LAYER;
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
      const double shard = (plan_.reduce_dense ? u.params.dense / par_.dense_replicas() : u.params.dense) +
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
  void gather_parameters(const std::vector<const Unit*>& order, size_t index, Phase phase, int mb) {
    if (!plan_.sharded_params && !plan_.offload_params) return;
    const size_t through = std::min(order.size() - 1, index + static_cast<size_t>(pass_prefetch_));
    for (; gathers_issued_ <= through; ++gathers_issued_) gather_unit(*order[gathers_issued_], gathers_issued_, phase, mb);
    const std::vector<uint32_t>& mine = unit_gathers_[index];
    pending_.insert(pending_.end(), mine.begin(), mine.end());
  }

  void unit_forward(const std::vector<const Unit*>& order, size_t index, int chunk, int mb) {
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

  void unit_backward(const std::vector<const Unit*>& order, size_t index, int mb, const std::vector<Bucket>& ready,
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
        if (par_.recompute == Recompute::FULL) ops_forward(layer.ops, Phase::RECOMPUTE, u.layer, mb);
        if (par_.recompute == Recompute::SELECTIVE_OP) ops_recompute_unsaved(layer.ops, u.layer, mb);
        ops_backward(layer.ops, par_.recompute == Recompute::SELECTIVE, u.layer, mb);
        memory(kept_for_weight_gradient(u) - (layer.stored_bytes + layer.recompute_bytes), Phase::BACKWARD, u.layer, mb);
        break;
      }
    }
    unit_done_.push_back(*last_compute_);
    // FSDP1 BACKWARD_POST (_post_backward_reshard prefetches before _reduce_grad): the next unit's
    // gather is issued once this unit's gradients are computed, ahead of its reduce-scatter.
    if (plan_.backward_prefetch_post && plan_.sharded_params && index + 1 < order.size() && gathers_issued_ == index + 1) {
      gather_unit(*order[index + 1], index + 1, Phase::BACKWARD, mb);
      ++gathers_issued_;
    }
    if (!plan_.split_backward) unit_gradients_final(u, mb, ready, last_of_chunk);
  }

  // Bytes a split backward keeps from B to W for the unit (0 without a split).
  double kept_for_weight_gradient(const Unit& u) const {
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
  void unit_weight_gradient(const Unit& u, int mb, const std::vector<Bucket>& ready, bool last_of_chunk) {
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
  void unit_gradients_final(const Unit& u, int mb, const std::vector<Bucket>& ready, bool last_of_chunk) {
    if (plan_.sharded_params) {
      // Every micro-batch: FSDP without no_sync and FSDP2 with requires_gradient_sync (their
      // defaults) reduce-scatter each backward's gradients, as DeepSpeed ZeRO-3 does (its no_sync
      // is unsupported for stages 2-3). FSDP: one reduce-scatter per unit; DeepSpeed: per reduce
      // bucket.
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

  void flush_sharded_reductions(int mb) {
    for (const Reduction& r : sharded_reductions_) {
      reduce_gradients(CollectiveOp::REDUCE_SCATTER, r.expert, r.sent, r.index, {}, r.layer, mb, *last_compute_,
                       r.dense_bytes);
      offload_reduced_gradients(r.params, r.expert, r.layer, mb, gradient_collectives_.back());
    }
    sharded_reductions_.clear();
  }

  void reduce_bucket(const Bucket& b, int layer, int mb) {
    const CollectiveOp op = par_.zero_stage >= 1 ? CollectiveOp::REDUCE_SCATTER : CollectiveOp::ALL_REDUCE;
    reduce_gradients(op, b.expert, b.sent, b.index, b.matrices, layer, mb, *last_compute_,
                     b.parameters * plan_.gradient_reduce_bytes);
    offload_reduced_gradients(b.parameters, b.expert, layer, mb, gradient_collectives_.back());
    reduced_.push_back(b);
  }

  // 1-bit Adam exchanges the momentum inside the optimizer step, after the whole backward (DeepSpeed
  // turns the backward's gradient all-reduce off once it compresses).
  bool overlap_reductions() const {
    return par_.overlap_grad_reduce && plan_.compression->method != CompressionMethod::ONEBIT_ADAM;
  }

  // A data-parallel gradient reduction of `sent` elements (+ `index` bytes of sparse index) after
  // `after`: one collective, or under gradient compression its steps (compression.hpp) one after
  // another on DATA_COMM. Only the optimizer waits for it. `dense_bytes`: its bytes without
  // pruning (StageResult::dense_data_bytes).
  void reduce_gradients(CollectiveOp op, bool expert, double sent, double index, const std::vector<WeightMatrix>& matrices,
                        int layer, int mb, uint32_t after, double dense_bytes) {
    const uint16_t group = expert ? plan_.groups.expert_data : plan_.groups.data;
    const CompressionConfig& c = *plan_.compression;
    const double plain = message_bytes(sent, index, plan_.gradient_reduce_bytes);
    if (!c.enabled()) {
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

  // `prefetch`: units whose gathers are issued ahead in this pass (BACKWARD_POST: none ahead of the
  // unit in use, unit_backward issues each after the previous unit's gradients).
  void start_pass(size_t units, int prefetch) {
    pass_prefetch_ = prefetch;
    unit_done_.clear();
    pass_start_ = last_compute_;
    gathers_issued_ = 0;
    unit_gathers_.assign(units, {});
  }

  void forward_pass(int chunk, int mb) {
    const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
    std::vector<const Unit*> order;
    for (const Unit& u : units) order.push_back(&u);
    start_pass(order.size(), plan_.prefetch);
    for (size_t i = 0; i < order.size(); ++i) unit_forward(order, i, chunk, mb);
    forward_seen_[static_cast<size_t>(chunk)] = true;
  }

  void backward_pass(int chunk, int mb, bool last_of_chunk) {
    const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
    std::vector<const Unit*> order;
    for (auto u = units.rbegin(); u != units.rend(); ++u) order.push_back(&*u);
    start_pass(order.size(), plan_.backward_prefetch_post ? 0 : plan_.prefetch);
    const auto& chunk_buckets = buckets_[static_cast<size_t>(chunk)];
    static const std::vector<Bucket> none;
    for (size_t i = 0; i < order.size(); ++i) {
      unit_backward(order, i, mb, chunk_buckets.empty() ? none : chunk_buckets[i], last_of_chunk);
    }
    flush_sharded_reductions(mb);
  }

  // A zero-bubble W pass: every unit's weight gradients, in backward order (buckets fill as in B).
  void weight_gradient_pass(int chunk, int mb, bool last_of_chunk) {
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
  void carry_in(int chunk, int mb) {
    for (const Unit& u : units_[static_cast<size_t>(chunk)]) {
      if (u.kind == UnitKind::LAYER) memory(plan_.layer(u.layer).stored_bytes, Phase::FORWARD, u.layer, mb);
      if (u.kind == UnitKind::HEAD) memory(plan_.head_bytes, Phase::FORWARD, 0, mb);
    }
  }

  std::vector<Event> schedule_events() const {
    const std::vector<TimedSlot>& timed = plan_.timed[static_cast<size_t>(stage_)];
    const int last = plan_.positions - 1;
    std::vector<Event> events;
    for (size_t i = 0; i < timed.size(); ++i) {
      const TimedSlot& ts = timed[i];
      const int pos = position(ts.slot.chunk);
      const int mb = ts.slot.micro_batch;
      const bool carried = ts.slot.carried;
      events.push_back({ts.start, 1, 0, 0, Event::PASS, i});
      if (ts.slot.pass == Pass::FORWARD) {
        if (pos > 0) {
          events.push_back({plan_.forward_end[plan_.cell(mb, false, pos - 1)], 0, 0, (pos - 1) % plan_.stages, Event::RECV, i});
        }
        if (pos < last) events.push_back({ts.end, 0, 0, stage_, Event::SEND, i});
      } else if (ts.slot.pass == Pass::BACKWARD) {
        // Gradients of a PipeDream micro-batch whose backward the neighbour runs in another window
        // cross the window boundary: not sent or received in this one.
        if (pos < last && plan_.backward_end[plan_.cell(mb, carried, pos + 1)] >= 0) {
          events.push_back({plan_.backward_end[plan_.cell(mb, carried, pos + 1)], 0, 1, (pos + 1) % plan_.stages, Event::RECV, i});
        }
        if (pos > 0 && plan_.backward_end[plan_.cell(mb, carried, pos - 1)] >= 0) {
          events.push_back({ts.end, 0, 1, stage_, Event::SEND, i});
        }
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

  bool chunk_has_moe(int chunk) const {
    const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
    return std::any_of(units.begin(), units.end(), [&](const Unit& u) {
      return u.kind == UnitKind::LAYER && plan_.model->layer_kind(u.layer) == LayerKind::MOE;
    });
  }

  // moe_a2a_overlap (Megatron-core overlap_moe_expert_parallel_comm, combined_1f1b.py): in the 1F1B
  // steady state a forward pass and a backward pass of another micro-batch run merged, layer against
  // layer, so that each one's dispatch / combine all-to-alls run under the other's computation.
  // pair[i] = i + 1 pairs the adjacent passes timed[i] and timed[i + 1] when both chunks hold MoE
  // layers. With a pipeline, Megatron's interleaved schedule merges each steady-state forward with
  // the backward after it; they are paired when the backward's input is ready by the forward's
  // ideal end, so that it cannot depend on the forward (a path from that forward's output back to
  // this stage passes through a pass of positive cost) and the merge cannot create a cyclic wait.
  // Without a pipeline (combined_1f1b_schedule_for_no_pipelining) each backward is merged with the
  // next micro-batch's forward, whose input is always ready.
  std::vector<int> overlap_pairs(const std::vector<TimedSlot>& timed) const {
    std::vector<int> pair(timed.size(), -1);
    if (!par_.moe_a2a_overlap || !plan_.model->is_moe() || par_.expert <= 1) return pair;
    const bool pipelined = plan_.positions > 1;
    const Pass lead = pipelined ? Pass::FORWARD : Pass::BACKWARD;
    for (size_t i = 0; i + 1 < timed.size(); ++i) {
      const PassSlot& x = timed[i].slot;
      const PassSlot& y = timed[i + 1].slot;
      if (x.pass != lead || y.pass == lead || (x.micro_batch == y.micro_batch && x.chunk == y.chunk)) continue;
      if (!chunk_has_moe(x.chunk) || !chunk_has_moe(y.chunk)) continue;
      if (pipelined) {
        const int pos = position(y.chunk);
        const size_t cell = static_cast<size_t>(y.micro_batch) * static_cast<size_t>(plan_.positions);
        const double input_ready = pos + 1 < plan_.positions ? plan_.backward_end[cell + static_cast<size_t>(pos + 1)]
                                                             : plan_.forward_end[cell + static_cast<size_t>(pos)];
        if (input_ready > timed[i].end) continue;
      }
      pair[i] = static_cast<int>(i + 1);
      ++i;
    }
    return pair;
  }

  // Emits a paired forward and backward (overlap_pairs) merged: each pass is emitted on its own
  // chain, then the new tasks are put in the order of Megatron-core's combined layer schedule,
  // alternating between the passes at each expert-parallel all-to-all, backward first:
  //   compute: B (up to its combine) | F attention | B experts | F experts | B attention | ...
  //   a2a:     B combine-grad        | F dispatch  | B dispatch-grad | F combine | ...
  // Streams run in issue order, so the all-to-all of one pass runs under the next segment of the
  // other. Returns the last compute task of the forward and of the backward.
  std::pair<uint32_t, uint32_t> merged_passes(const PassSlot& f, const PassSlot& b, bool b_last_of_chunk,
                                              std::optional<uint32_t> f_recv, std::optional<uint32_t> b_recv) {
    const uint32_t first = static_cast<uint32_t>(prog().tasks.size());
    const std::optional<uint32_t> before = last_compute_;
    const std::vector<uint32_t> carried = pending_;
    if (f_recv) pending_.push_back(*f_recv);
    forward_pass(f.chunk, f.micro_batch);
    const uint32_t f_end = static_cast<uint32_t>(prog().tasks.size());
    const uint32_t f_last = *last_compute_;
    std::vector<uint32_t> f_pending = std::move(pending_);
    last_compute_ = before;
    pending_ = carried;
    if (b_recv) pending_.push_back(*b_recv);
    backward_pass(b.chunk, b.micro_batch, b_last_of_chunk);
    const uint32_t b_last = *last_compute_;
    const uint32_t end = static_cast<uint32_t>(prog().tasks.size());

    // Segments: a pass's tasks up to and including each all-to-all over the expert group.
    auto segments = [&](uint32_t from, uint32_t to) {
      std::vector<std::vector<uint32_t>> out(1);
      for (uint32_t i = from; i < to; ++i) {
        out.back().push_back(i);
        const Task& t = prog().tasks[i];
        if (t.kind == TaskKind::COLLECTIVE && t.collective == CollectiveOp::ALL_TO_ALL && t.group == plan_.groups.expert) {
          out.emplace_back();
        }
      }
      return out;
    };
    const auto forward = segments(first, f_end);
    const auto backward = segments(f_end, end);
    std::vector<uint32_t> order;
    order.reserve(end - first);
    for (size_t k = 0; k < std::max(forward.size(), backward.size()); ++k) {
      if (k < backward.size()) order.insert(order.end(), backward[k].begin(), backward[k].end());
      if (k < forward.size()) order.insert(order.end(), forward[k].begin(), forward[k].end());
    }
    const std::vector<uint32_t> moved = prog().reorder_tail(first, order);
    auto remap = [&](uint32_t id) { return id >= first ? moved[id - first] : id; };
    for (uint32_t& id : gradient_collectives_) id = remap(id);
    for (uint32_t& id : gradient_copies_) id = remap(id);
    for (auto& entry : offloaded_) entry.second = remap(entry.second);
    for (auto& entry : reloaded_) entry.second = remap(entry.second);
    if (embedding_gradient_) embedding_gradient_ = remap(*embedding_gradient_);
    for (uint32_t& id : pending_) id = remap(id);
    for (uint32_t id : f_pending) pending_.push_back(remap(id));
    last_compute_ = std::max(remap(f_last), remap(b_last));
    return {remap(f_last), remap(b_last)};
  }

  // Emits passes and pipeline transfers in the order of the schedule's ideal execution.
  void emit_schedule() {
    const std::vector<TimedSlot>& timed = plan_.timed[static_cast<size_t>(stage_)];
    // The pass after which a chunk's gradients are final: its last backward, or its last W.
    const Pass final_pass = plan_.split_backward ? Pass::BACKWARD_WEIGHT : Pass::BACKWARD;
    std::vector<int> last_backward(static_cast<size_t>(plan_.chunks), -1);
    for (size_t i = 0; i < timed.size(); ++i) {
      if (timed[i].slot.pass == final_pass) last_backward[static_cast<size_t>(timed[i].slot.chunk)] = static_cast<int>(i);
      if (timed[i].slot.carried) carry_in(timed[i].slot.chunk, timed[i].slot.micro_batch);
    }
    auto final_after = [&](size_t slot) {
      return plan_.update_every_micro_batch ||
             last_backward[static_cast<size_t>(timed[slot].slot.chunk)] == static_cast<int>(slot);
    };
    // The first pass of a pair is emitted with the second, at the second's place; its send waits
    // until then.
    const std::vector<int> pair = overlap_pairs(timed);
    TRAINSIM_CHECK(!plan_.async || std::all_of(pair.begin(), pair.end(), [](int x) { return x < 0; }),
                   "merged passes in a ready pool");
    std::vector<int> paired_with(timed.size(), -1);  // by second pass: the first
    for (size_t i = 0; i < pair.size(); ++i) {
      if (pair[i] >= 0) paired_with[static_cast<size_t>(pair[i])] = static_cast<int>(i);
    }
    int deferred_send = -1;  // the slot whose send waits for its pair, or -1
    std::vector<std::optional<uint32_t>> recv_of(timed.size());
    std::vector<uint32_t> last_compute_of(timed.size(), 0);
    PoolEmitter pool(prog(), plan_.async);
    for (const Event& e : schedule_events()) {
      pool.mark(e.type == Event::RECV ? core::LOOSE_TASK : pool.block_of_slot(e.slot));
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
          if (pair[e.slot] >= 0) break;
          if (paired_with[e.slot] >= 0) {
            const size_t other = static_cast<size_t>(paired_with[e.slot]);
            const size_t fs = forward ? e.slot : other;
            const size_t bs = forward ? other : e.slot;
            std::tie(last_compute_of[fs], last_compute_of[bs]) =
                merged_passes(timed[fs].slot, timed[bs].slot,
                              last_backward[static_cast<size_t>(timed[bs].slot.chunk)] == static_cast<int>(bs),
                              recv_of[fs], recv_of[bs]);
            if (deferred_send >= 0) {
              TRAINSIM_CHECK(deferred_send == static_cast<int>(other), "a deferred send belongs to another pass");
              emit_send(timed[other].slot, last_compute_of[other]);
            }
            deferred_send = -1;
            break;
          }
          if (plan_.async) {
            // A block starts from its input alone: whatever ran before it on this stage is another
            // micro-batch's (the executor starts it after the blocks issued before it).
            pending_.clear();
            last_compute_.reset();
            const uint32_t trigger = pool_trigger(s, recv_of[e.slot], pool, last_compute_of);
            if (trigger != core::NO_TASK) pending_.push_back(trigger);
            pool.open_block(e.slot, s, trigger);
          } else if (recv_of[e.slot]) {
            pending_.push_back(*recv_of[e.slot]);
          }
          if (forward) {
            forward_pass(s.chunk, s.micro_batch);
          } else if (s.pass == Pass::BACKWARD_WEIGHT) {
            weight_gradient_pass(s.chunk, s.micro_batch, final_after(e.slot));
          } else {
            backward_pass(s.chunk, s.micro_batch, !plan_.split_backward && final_after(e.slot));
          }
          last_compute_of[e.slot] = *last_compute_;
          if (plan_.async && !pending_.empty()) pass_end();
          break;
        case Event::SEND:
          if (pair[e.slot] >= 0) {
            deferred_send = static_cast<int>(e.slot);
          } else {
            emit_send(s, last_compute_of[e.slot]);
          }
          break;
      }
    }
    pool.close(in_flight_limit(par_.schedule, plan_.stages, stage_, plan_.micro_batches));
  }

  // The task whose end brings a pass's input under pipeline_execution "async": its receive, the
  // last stage's own forward (for its backward) or B (for W), none for the first stage's forwards.
  static uint32_t pool_trigger(const PassSlot& s, std::optional<uint32_t> recv, const PoolEmitter& pool,
                               const std::vector<uint32_t>& last_compute_of) {
    if (recv) return *recv;
    if (s.pass == Pass::FORWARD) return core::NO_TASK;
    const size_t source = pool.slot_of(s.pass == Pass::BACKWARD ? Pass::FORWARD : Pass::BACKWARD, s.micro_batch);
    TRAINSIM_CHECK(source != NO_SLOT, "a pass whose input pass has not been emitted");
    return last_compute_of[source];
  }

  // The end of a block whose last tasks (a tensor-parallel collective, a blocking copy) the next
  // pass would wait for: a zero-byte memory task on the compute stream after them, so that the next
  // block, whichever it is, starts after them as it would in a fixed order.
  void pass_end() {
    Task t = make(TaskKind::MEMORY, Stream::COMPUTE, Phase::FORWARD, 0, 0, "pass end");
    prog().add(t, pending_);
    pending_.clear();
  }

  void emit_send(const PassSlot& s, uint32_t after) {
    const bool forward = s.pass == Pass::FORWARD;
    const size_t p = static_cast<size_t>(position(s.chunk));
    const Stream stream = forward ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
    const int layer = forward ? plan_.first_layer[p] + plan_.chunk_layers[p] - 1 : plan_.first_layer[p];
    Task t = make(TaskKind::SEND, stream, forward ? Phase::FORWARD : Phase::BACKWARD, layer, s.micro_batch,
                  forward ? "send activations" : "send gradients");
    t.peer_axis = core::Axis::PIPELINE;
    t.peer_offset = static_cast<int16_t>(forward ? 1 : -1);
    t.tag = forward ? PIPELINE_ACTIVATIONS_TAG : PIPELINE_GRADIENTS_TAG;
    t.bytes = plan_.pipeline_bytes;
    prog().add(t, {after});
  }

  // ZeRO-1/2 with overlap_param_gather (Megatron-LM DistributedDataParallelConfig
  // overlap_param_gather; Megatron-Bridge "Communication Overlap": the parameter all-gather is
  // chunked per bucket and overlapped with the forward, exposing about one chunk). In this
  // steady-state single-iteration model the all-gathers of the previous step's update are issued at
  // the start of the iteration on DATA_COMM, bucket by bucket in the order of their first forward
  // use (chunk 0 first, each chunk's buckets in forward order), and the first forward of each unit
  // waits for its buckets (unit_forward).
  void emit_parameter_prefetch() {
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

  // The Adam step on the locally owned parameters (under sparse storage, on the kept values), then
  // (ZeRO-1/2 without overlap_param_gather) the blocking all-gather of the updated parameters bucket
  // by bucket.
  void emit_optimizer() {
    const bool shard = par_.zero_stage >= 1;
    const double updated = stored_.dense / (shard ? par_.dense_replicas() : 1) +
                           stored_.expert / (shard ? par_.expert_replicas() : 1);
    std::vector<uint32_t> deps = gradient_collectives_;
    deps.insert(deps.end(), gradient_copies_.begin(), gradient_copies_.end());
    deps.push_back(*last_compute_);
    uint32_t step = 0;
    if (offload().step_on_host) {
      step = host_optimizer(updated, deps);
    } else if (offload().states_off_gpu()) {
      step = streamed_optimizer(updated, deps);
    } else {
      Task t = make(TaskKind::COMPUTE, Stream::COMPUTE, Phase::OPTIMIZER, 0, 0, "optimizer");
      t.op_class = core::OpClass::OPTIMIZER;
      // PipeDream steps after every micro-batch: m steps' traffic, issued together at the end.
      t.bytes = updated * plan_.optimizer_step_bytes * (plan_.update_every_micro_batch ? plan_.micro_batches : 1);
      step = prog().add(t, deps);
    }
    if (par_.zero_stage == 0 || par_.gathers_parameters() || plan_.overlap_param_gather) return;
    for (const Bucket& b : reduced_) {
      Task g = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, Phase::OPTIMIZER, 0, 0, "parameter all_gather");
      g.collective = CollectiveOp::ALL_GATHER;
      g.group = b.expert ? plan_.groups.expert_data : plan_.groups.data;
      g.bytes = message_bytes(b.sent, b.index, plan_.weight_bytes);
      prog().add(g, {step});
      count_data(g.bytes, b.parameters * plan_.weight_bytes);
    }
  }

  // Offloaded optimizers step the rank's partition in chunks of parallelism.bucket_size / 4
  // parameters (DeepSpeed's CPU-Adam and AxoNN's CPUAdam both work through the flat partition in
  // pieces).
  std::vector<double> optimizer_chunks(double parameters) const {
    const double size = par_.bucket_elements();
    std::vector<double> chunks;
    for (double left = parameters; left > 0; left -= size) chunks.push_back(std::min(left, size));
    return chunks;
  }

  // The CPU step (ZeRO-Offload / ZeRO-Infinity): per chunk, states read from NVMe, the step on the
  // host, states written back, the updated 16-bit parameters copied to the GPU (or to NVMe). Overlapped,
  // the next chunk's read is issued before this chunk's uploads and each read waits for the chunk
  // two before it to be written (two host buffers); not overlapped, each chunk waits for the
  // previous one. Returns the last task the updated parameters depend on.
  uint32_t host_optimizer(double parameters, const std::vector<uint32_t>& ready) {
    const OffloadConfig& o = offload();
    const double nvme_states = (o.optimizer_states == OffloadTarget::NVME ? moment_bytes_per_parameter() : 0.0) +
                               (o.master_weights == OffloadTarget::NVME ? plan_.master_bytes : 0.0);
    const double nvme_gradients = o.gradients == OffloadTarget::NVME ? gradient_bytes_per_parameter() : 0.0;
    const std::vector<double> chunks = optimizer_chunks(parameters);
    const size_t n = chunks.size();
    std::vector<uint32_t> reads(n), written(n), last(n);
    std::vector<bool> read_issued(n, false);
    auto read = [&](size_t k) {
      if (nvme_states + nvme_gradients <= 0 || read_issued[k]) return;
      std::vector<uint32_t> deps = ready;
      if (o.overlap && k >= 2) deps.push_back(written[k - 2]);
      if (!o.overlap && k >= 1) deps.push_back(last[k - 1]);
      reads[k] = copy(CopyDirection::NVME_TO_HOST, chunks[k] * (nvme_states + nvme_gradients), Phase::OPTIMIZER, 0, 0,
                      "read states", deps);
      read_issued[k] = true;
    };
    uint32_t result = 0;
    for (size_t k = 0; k < n; ++k) {
      read(k);
      if (o.overlap && k + 1 < n) read(k + 1);
      std::vector<uint32_t> deps = ready;
      if (read_issued[k]) deps.push_back(reads[k]);
      if (!o.overlap && k >= 1) deps.push_back(last[k - 1]);
      Task t = make(TaskKind::COMPUTE, Stream::HOST, Phase::OPTIMIZER, 0, 0, "optimizer (cpu)");
      t.op_class = core::OpClass::OPTIMIZER;
      t.bytes = chunks[k] * plan_.optimizer_step_bytes;
      t.flops = chunks[k] * ADAM_FLOPS_PER_PARAMETER;
      const uint32_t step = prog().add(t, deps);
      written[k] = last[k] = step;
      if (nvme_states > 0) {
        written[k] = last[k] =
            copy(CopyDirection::HOST_TO_NVME, chunks[k] * nvme_states, Phase::OPTIMIZER, 0, 0, "write states", {step});
      }
      const double params = chunks[k] * plan_.weight_bytes;
      std::vector<uint32_t> after = {step};
      if (!o.overlap) after.push_back(last[k]);
      if (o.parameters == OffloadTarget::NONE) {
        last[k] = copy(CopyDirection::HOST_TO_DEVICE, params, Phase::OPTIMIZER, 0, 0, "upload parameters", after);
      } else if (o.parameters == OffloadTarget::NVME) {
        last[k] = copy(CopyDirection::HOST_TO_NVME, params, Phase::OPTIMIZER, 0, 0, "write parameters", after);
      }
      result = last[k];
    }
    return result;
  }

  // The GPU step with the states in host memory or on NVMe (AxoNN's scratch pad): per chunk, the
  // states copied in, the GPU step, the states copied out. Overlapped, a chunk's states come in
  // while the one before steps (two GPU buffers); not overlapped, one after another (one buffer).
  uint32_t streamed_optimizer(double parameters, const std::vector<uint32_t>& ready) {
    const OffloadConfig& o = offload();
    double bytes[3] = {0, 0, 0};  // by OffloadTarget
    bytes[static_cast<size_t>(o.optimizer_states)] += moment_bytes_per_parameter();
    bytes[static_cast<size_t>(o.master_weights)] += plan_.master_bytes;
    const std::vector<double> chunks = optimizer_chunks(parameters);
    const size_t n = chunks.size();
    const double per_parameter = bytes[1] + bytes[2];
    result_.optimizer_buffer_bytes = (o.overlap && n > 1 ? 2 : 1) * (n > 0 ? chunks[0] : 0.0) * per_parameter;
    std::vector<uint32_t> stored(n);
    uint32_t step = 0;
    for (size_t k = 0; k < n; ++k) {
      std::vector<uint32_t> deps = ready;
      const size_t reuse = o.overlap ? 2 : 1;
      if (k >= reuse) deps.push_back(stored[k - reuse]);
      std::vector<uint32_t> loads;
      for (const OffloadTarget where : {OffloadTarget::CPU, OffloadTarget::NVME}) {
        const double b = bytes[static_cast<size_t>(where)] * chunks[k];
        if (b <= 0) continue;
        loads.push_back(copy(where == OffloadTarget::NVME ? CopyDirection::NVME_TO_DEVICE : CopyDirection::HOST_TO_DEVICE,
                             b, Phase::OPTIMIZER, 0, 0, "load states", deps));
      }
      Task t = make(TaskKind::COMPUTE, Stream::COMPUTE, Phase::OPTIMIZER, 0, 0, "optimizer");
      t.op_class = core::OpClass::OPTIMIZER;
      t.bytes = chunks[k] * plan_.optimizer_step_bytes;
      loads.insert(loads.end(), ready.begin(), ready.end());
      step = prog().add(t, loads);
      stored[k] = step;
      for (const OffloadTarget where : {OffloadTarget::CPU, OffloadTarget::NVME}) {
        const double b = bytes[static_cast<size_t>(where)] * chunks[k];
        if (b <= 0) continue;
        stored[k] = copy(where == OffloadTarget::NVME ? CopyDirection::DEVICE_TO_NVME : CopyDirection::DEVICE_TO_HOST, b,
                         Phase::OPTIMIZER, 0, 0, "store states", {step});
      }
    }
    return step;
  }

  const BuildPlan& plan_;
  const ParallelismConfig& par_;
  core::Workload& workload_;
  int stage_;
  StageResult result_;
  ParameterCount stored_;                                  // elements with stored values (what Adam updates)
  std::vector<std::vector<Unit>> units_;                  // by chunk, forward order
  std::vector<std::vector<std::vector<Bucket>>> buckets_;  // by chunk, by unit in backward order
  std::vector<std::vector<std::vector<int>>> bucket_units_;  // by chunk, by unit in forward order: bucket ids
  std::vector<Bucket> buckets_by_id_;
  std::vector<int> bucket_chunk_;                          // by bucket id
  std::vector<uint32_t> parameter_gather_;                 // by bucket id (overlap_param_gather)
  std::vector<bool> forward_seen_;                         // by chunk: its first forward was emitted
  std::unordered_map<std::string, uint32_t> names_;
  std::vector<uint32_t> pending_;              // what the next compute task waits for
  std::optional<uint32_t> last_compute_;
  std::vector<uint32_t> unit_done_;            // last compute of each unit of the current pass
  std::vector<std::vector<uint32_t>> unit_gathers_;  // ZeRO-3 gathers of each unit of the current pass
  size_t gathers_issued_ = 0;                  // units of the current pass whose gathers are issued
  int pass_prefetch_ = 1;                      // units gathered ahead in the current pass
  std::optional<uint32_t> pass_start_;         // the last compute before the current pass
  struct Reduction {
    uint16_t group = 0;
    double bytes = 0;
    double sent = 0;         // elements sent and their index bytes (bytes = sent x gradient bytes + index)
    double index = 0;
    int layer = 0;
    double dense_bytes = 0;  // without pruning
    double params = 0;       // parameters reduced (offloaded gradients: the rank's share goes to the host)
    bool expert = false;
  };
  std::vector<Reduction> sharded_reductions_;    // waiting for the end of the pass (no overlap_grad_reduce)
  std::vector<uint32_t> gradient_collectives_;
  std::vector<Bucket> reduced_;                // buckets in the order they were reduced
  std::optional<uint32_t> embedding_gradient_;  // backward compute that finalizes the tied embedding gradient
  double live_ = 0;
  double peak_ = 0;
  double live_without_ = 0;                    // device memory as if no activation were offloaded
  double peak_without_ = 0;
  std::vector<int> last_layer_;                // by chunk: its last layer (keeps its activations), or -1
  std::map<std::pair<int, int>, uint32_t> offloaded_;  // (layer, micro-batch) -> activation offload copy
  std::map<std::pair<int, int>, uint32_t> reloaded_;   // (layer, micro-batch) -> activation reload copy
  std::vector<uint32_t> gradient_copies_;      // gradient copies to the host (the CPU step waits for them)
};

}  // namespace

StageResult build_stage_program(const BuildPlan& plan, core::Workload& workload, int stage) {
  return StageEmitter(plan, workload, stage).run();
}

}  // namespace trainsim::models
