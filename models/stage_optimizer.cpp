// stage_optimizer.cpp: offload copies and the optimizer step (device, host, streamed).

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models::emit {

// Activation offload, after a layer's forward: its stored activations go to host memory (the
// last layer of each chunk keeps them: its backward comes first).
void StageEmitter::offload_layer(int chunk, int layer, int mb) {
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
void StageEmitter::reload_layer(const std::vector<const Unit*>& order, size_t index, int mb) {
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
double StageEmitter::gradient_copy_bytes() const {
  return offload().gradients != OffloadTarget::NONE ? plan_.activation_bytes : gradient_bytes_per_parameter();
}

// A CPU optimizer step needs the gradients in host memory: those of `params` parameters (the
// rank's share after a reduction, or its own gradients) after `after`.
void StageEmitter::offload_gradients(double params, int layer, int mb, uint32_t after) {
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
void StageEmitter::offload_unit_gradients(const Unit& u, int mb, bool last_of_chunk) {
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
void StageEmitter::offload_reduced_gradients(double params, bool expert, int layer, int mb, uint32_t reduction) {
  if (!offload().step_on_host) return;
  if (offload().gradients == OffloadTarget::NONE && mb != plan_.micro_batches - 1) return;
  const int replicas = par_.zero_stage >= 1 ? (expert ? par_.expert_replicas() : par_.dense_shards()) : 1;
  offload_gradients(params / replicas, layer, mb, reduction);
}

// The Adam step on the locally owned parameters (under sparse storage, on the kept values), then
// (ZeRO-1/2 without overlap_param_gather) the blocking all-gather of the updated parameters bucket
// by bucket.
void StageEmitter::emit_optimizer() {
  const bool shard = par_.zero_stage >= 1;
  const double updated = stored_.dense / (shard ? par_.dense_shards() : 1) +
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
std::vector<double> StageEmitter::optimizer_chunks(double parameters) const {
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
uint32_t StageEmitter::host_optimizer(double parameters, const std::vector<uint32_t>& ready) {
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
uint32_t StageEmitter::streamed_optimizer(double parameters, const std::vector<uint32_t>& ready) {
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

}  // namespace trainsim::models::emit
