#include "models/pool_workload.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// Appends the per-program figures of `part` (one program) to `whole`.
void append_program(BuiltWorkload& whole, const BuiltWorkload& part, uint8_t pool) {
  core::Program program = part.workload.programs.front();
  program.name = fmt::format("{}, pool {}", program.name, pool);
  program.node_pool = pool;
  whole.workload.programs.push_back(std::move(program));
  append(whole.memory, part.memory);
  append(whole.pruning, part.pruning);
  append(whole.compression, part.compression);
  append(whole.host_states, part.host_states);
  append(whole.nvme_states, part.nvme_states);
  append(whole.peak_without_offload, part.peak_without_offload);
}

}  // namespace

BuiltWorkload build_pool_split_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                                        const std::vector<ReplicaShare>& shares, const PruningConfig& pruning,
                                        const OffloadConfig& offload, const CompressionConfig& compression) {
  TRAINSIM_CHECK(p.pipeline == 1 && p.expert_tensor == 0 && p.zero_stage < 3 && !shares.empty() && shares.size() < 256,
                 "build_pool_split_workload: one stage, no folding, no ZeRO-3, 1 to 255 pools");
  int replicas = 0;
  for (const ReplicaShare& s : shares) {
    TRAINSIM_CHECK(s.replicas >= 1 && s.micro_batches >= 1, "every pool has replicas and micro-batches");
    replicas += s.replicas;
  }
  TRAINSIM_CHECK(replicas == p.data, fmt::format("the pools hold {} replicas, the layout {}", replicas, p.data));

  BuiltWorkload whole;
  double model_flops = 0;
  double hardware_flops = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    // Every replica of pool i runs shares[i].micro_batches micro-batches: the uniform job whose
    // global batch gives each replica that many.
    TrainingConfig ti = t;
    ti.global_batch = shares[i].micro_batches * t.micro_batch * p.data;
    BuiltWorkload part = build_workload(m, ti, p, pruning, offload, compression);
    TRAINSIM_CHECK(part.workload.programs.size() == 1, "one program per pool");
    const double share = static_cast<double>(shares[i].replicas) / p.data;
    model_flops += part.flops.model.value() * share;
    hardware_flops += part.flops.hardware.value() * share;
    if (i == 0) {
      whole.workload = part.workload;
      whole.workload.programs.clear();
      whole.stage_layers = part.stage_layers;
      whole.balanced_split = part.balanced_split;
      whole.schedule = part.schedule;
    }
    whole.micro_batches = std::max(whole.micro_batches, part.micro_batches);
    append_program(whole, part, static_cast<uint8_t>(i));
  }
  whole.flops = {core::Flops(model_flops), core::Flops(hardware_flops)};
  whole.samples_per_iteration = t.global_batch;
  whole.tokens_per_iteration = t.global_batch * t.sequence_length;

  core::Workload& w = whole.workload;
  std::vector<uint32_t> pool_of_replica;
  for (size_t i = 0; i < shares.size(); ++i) pool_of_replica.insert(pool_of_replica.end(), shares[i].replicas, static_cast<uint32_t>(i));
  for (int r = 0; r < w.layout.world_size(); ++r) {
    w.program_of_rank[static_cast<size_t>(r)] = pool_of_replica[static_cast<size_t>(w.layout.coord(r, core::Axis::DATA))];
  }
  w.symmetric_axes[static_cast<size_t>(core::Axis::DATA)] = false;
  w.validate();
  return whole;
}

void place_stages_on_pools(BuiltWorkload& built, const std::vector<int>& stage_pool) {
  std::vector<core::Program>& programs = built.workload.programs;
  TRAINSIM_CHECK(stage_pool.size() == programs.size(),
                 fmt::format("{} stage pools for {} programs", stage_pool.size(), programs.size()));
  for (size_t s = 0; s < programs.size(); ++s) {
    TRAINSIM_CHECK(stage_pool[s] >= 0 && stage_pool[s] < 256, "a pool index below 256");
    programs[s].node_pool = static_cast<uint8_t>(stage_pool[s]);
  }
}

}  // namespace trainsim::models
