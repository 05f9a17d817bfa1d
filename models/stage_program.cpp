#include "models/stage_program.hpp"

#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace emit {

StageEmitter::StageEmitter(const BuildPlan& plan, core::Workload& workload, int stage)
    : plan_(plan), par_(*plan.parallelism), workload_(workload), stage_(stage) {
  result_.program.name = fmt::format("stage {}", stage);
  build_units();
  build_buckets();
  forward_seen_.assign(units_.size(), false);
}

StageResult StageEmitter::run() {
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
  // gradient_buffers "per-step": optimizer.zero_grad(set_to_none=True) frees them after the step.
  if (live_gradients_ > 0) gradient_memory(-live_gradients_, Phase::OPTIMIZER, 0, plan_.micro_batches - 1);
  result_.peak_activation_bytes = peak_;
  result_.peak_without_offload = peak_without_;
  result_.gradients_at_peak = gradients_at_peak_;
  return std::move(result_);
}

void StageEmitter::build_units() {
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

Unit StageEmitter::make_unit(UnitKind kind, int layer, const ParameterCount& params, const PrunedParameters& pruned) const {
  return {kind, layer, params, pruned, sent_elements(params, pruned, *plan_.pruning),
          sent_index_bytes(pruned, *plan_.pruning), {}};
}

// Buckets fill in backward order (Megatron-LM's DDP; DeepSpeed's reduce buckets); buckets_[chunk][i]
// lists those completed by the i-th unit in backward order, and bucket_units_[chunk][u] the buckets
// holding the parameters of the u-th unit in forward order.
void StageEmitter::build_buckets() {
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

uint32_t StageEmitter::name_id(const std::string& name) {
  auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  const uint32_t id = workload_.intern(name);
  names_.emplace(name, id);
  return id;
}

Task StageEmitter::make(TaskKind kind, Stream stream, Phase phase, int layer, int micro_batch, const std::string& name) {
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
uint32_t StageEmitter::compute(const OpCost& op, Phase phase, bool backward, int layer, int mb, double fraction,
                               std::initializer_list<uint32_t> also, core::BackwardPart part) {
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

uint32_t StageEmitter::collective(const Comm& c, double bytes, Phase phase, int layer, int mb, const std::string& op_name,
                                  const std::vector<uint32_t>& deps) {
  Task t = make(TaskKind::COLLECTIVE, c.stream, phase, layer, mb, fmt::format("{} {}", op_name, core::to_string(c.op)));
  t.collective = c.op;
  t.group = c.group;
  t.bytes = bytes;
  return prog().add(t, deps);
}

// What the next task on the critical path waits for: pending_ and the last compute.
std::vector<uint32_t> StageEmitter::take_critical() {
  std::vector<uint32_t> deps = std::move(pending_);
  pending_.clear();
  if (last_compute_) deps.push_back(*last_compute_);
  return deps;
}

// A collective on the critical path: it waits for the compute that produced its input, and the
// next compute waits for it.
void StageEmitter::blocking(const Comm& c, Phase phase, int layer, int mb, const std::string& op_name) {
  const std::vector<uint32_t> deps = take_critical();
  pending_ = {collective(c, c.bytes, phase, layer, mb, op_name, deps)};
}

// A collective off the critical path (gradient reduction): only the optimizer waits for it.
// `dense_bytes`: what it would carry without pruning (StageResult::dense_data_bytes).
void StageEmitter::gradient_collective(CollectiveOp op, uint16_t group, double bytes, int layer, int mb, const std::string& name,
                                       uint32_t after, double dense_bytes) {
  Task t = make(TaskKind::COLLECTIVE, Stream::DATA_COMM, Phase::BACKWARD, layer, mb, name);
  t.collective = op;
  t.group = group;
  t.bytes = bytes;
  gradient_collectives_.push_back(prog().add(t, {after}));
  count_data(bytes, dense_bytes);
}

void StageEmitter::count_data(double bytes, double dense_bytes) {
  result_.data_bytes += bytes;
  result_.dense_data_bytes += dense_bytes;
}

void StageEmitter::memory(double bytes, Phase phase, int layer, int mb) {
  device_memory("activations", bytes, phase, layer, mb);
}

void StageEmitter::gradient_memory(double bytes, Phase phase, int layer, int mb) {
  live_gradients_ += bytes;
  device_memory("gradients", bytes, phase, layer, mb);
}

void StageEmitter::device_memory(const char* name, double bytes, Phase phase, int layer, int mb) {
  Task t = make(TaskKind::MEMORY, Stream::COMPUTE, phase, layer, mb, name);
  t.bytes = bytes;
  prog().add(t);
  live_ += bytes;
  live_without_ += bytes;
  note_peaks();
}

void StageEmitter::note_peaks() {
  if (live_ > peak_) {
    peak_ = live_;
    gradients_at_peak_ = live_gradients_;
  }
  peak_without_ = std::max(peak_without_, live_without_);
}

// Offloading. Memory changes on a copy stream take effect when the copy stream reaches them.
void StageEmitter::memory_on(Stream stream, MemorySpace space, double bytes, Phase phase, int layer, int mb,
                             const std::vector<uint32_t>& deps) {
  Task t = make(TaskKind::MEMORY, stream, phase, layer, mb, space == MemorySpace::HOST ? "host activations" : "activations");
  t.bytes = bytes;
  t.memory_space = space;
  prog().add(t, deps);
  if (space == MemorySpace::DEVICE) {
    live_ += bytes;
    note_peaks();
  }
}

uint32_t StageEmitter::copy(CopyDirection d, double bytes, Phase phase, int layer, int mb, const std::string& name,
                            const std::vector<uint32_t>& deps) {
  Task t = make(TaskKind::COPY, core::outbound(d) ? Stream::COPY_OUT : Stream::COPY, phase, layer, mb, name);
  t.copy = d;
  t.bytes = bytes;
  return prog().add(t, deps);
}

}  // namespace emit

StageResult build_stage_program(const BuildPlan& plan, core::Workload& workload, int stage) {
  return emit::StageEmitter(plan, workload, stage).run();
}

}  // namespace trainsim::models
