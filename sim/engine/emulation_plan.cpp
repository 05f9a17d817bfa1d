#include "sim/engine/emulation_plan.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/engine/program_plan.hpp"

namespace trainsim::engine {
namespace {

uint64_t scaled_bytes(double bytes, double scale) {
  if (bytes <= 0) return 0;
  return static_cast<uint64_t>(std::ceil(bytes * scale));
}

}  // namespace

void check_emulation_world(const core::Workload& workload, int mpi_ranks, const std::string& file) {
  const int need = workload.layout.world_size();
  if (mpi_ranks == need) return;
  throw core::InputError(
      file, "",
      fmt::format("the scenario has {} ranks (its parallel layout), mpirun started {}: emulation runs one MPI "
                  "process per rank; start it with mpirun -np {}",
                  need, mpi_ranks, need));
}

EmulationPlan plan_emulation(const core::Workload& workload, int rank, const network::ClusterConfig& cluster,
                             const core::DeviceProfile& device, const EmulationOptions& options,
                             const std::string& file) {
  if (!(options.scale_compute > 0) || !std::isfinite(options.scale_compute)) {
    throw core::InputError("--scale-compute", "", fmt::format("expected a positive factor, found {}", options.scale_compute));
  }
  if (!(options.scale_bytes > 0) || !std::isfinite(options.scale_bytes)) {
    throw core::InputError("--scale-bytes", "", fmt::format("expected a positive factor, found {}", options.scale_bytes));
  }
  const core::ParallelLayout& layout = workload.layout;
  TRAINSIM_CHECK(rank >= 0 && rank < layout.world_size(), fmt::format("rank {} outside the layout", rank));
  const core::Program& program = workload.program_of(rank);
  const ProgramPlan pp = plan_program(program, workload, cluster, device);

  EmulationPlan plan;
  plan.rank = rank;
  plan.world_size = layout.world_size();
  plan.groups.resize(workload.groups.size());
  for (size_t g = 0; g < workload.groups.size(); ++g) {
    const core::GroupKind& kind = workload.groups[g];
    EmulatedGroup& out = plan.groups[g];
    out.name = kind.name;
    if (!kind.contains(layout, rank)) continue;
    out.ranks = kind.ranks_of(layout, rank);
    const auto self = std::find(out.ranks.begin(), out.ranks.end(), rank);
    bool ok = self != out.ranks.end() && std::is_sorted(out.ranks.begin(), out.ranks.end()) &&
              std::adjacent_find(out.ranks.begin(), out.ranks.end()) == out.ranks.end();
    for (size_t i = 0; ok && i < out.ranks.size(); ++i) {
      const int q = out.ranks[i];
      ok = q >= 0 && q < layout.world_size() && kind.contains(layout, q) && kind.ranks_of(layout, q) == out.ranks;
    }
    if (!ok) {
      throw core::InputError(file, "",
                             fmt::format("group '{}' cannot be mapped onto an MPI communicator: its members do not "
                                         "agree on its ranks (seen from rank {})",
                                         kind.name, rank));
    }
    out.color = out.ranks.front();
    out.key = static_cast<int>(self - out.ranks.begin());
  }

  std::vector<uint32_t> channel_calls;
  plan.tasks.reserve(program.tasks.size());
  for (uint32_t i = 0; i < program.tasks.size(); ++i) {
    const core::Task& t = program.tasks[i];
    EmulatedTask e;
    e.task = i;
    e.stream = t.stream;
    e.deps.assign(program.deps_of(t), program.deps_of(t) + t.dep_count);
    switch (t.kind) {
      case core::TaskKind::COMPUTE:
      case core::TaskKind::COPY:
        e.kind = EmulatedKind::WAIT;
        e.seconds = pp.duration[i] * options.scale_compute;
        plan.wait_seconds += e.seconds;
        break;
      case core::TaskKind::MEMORY:
        e.kind = EmulatedKind::NOOP;
        ++plan.noop_count;
        break;
      case core::TaskKind::COLLECTIVE: {
        e.kind = EmulatedKind::COLLECTIVE;
        e.group = t.group;
        e.op = t.collective;
        e.bytes = scaled_bytes(t.bytes, options.scale_bytes);
        e.seq = pp.seq[i];
        if (plan.groups[t.group].color < 0) {
          throw core::InputError(file, "",
                                 fmt::format("group '{}' cannot be mapped onto an MPI communicator: rank {} calls a "
                                             "collective on it but is not one of its members",
                                             workload.groups[t.group].name, rank));
        }
        break;
      }
      case core::TaskKind::SEND:
      case core::TaskKind::RECV: {
        e.kind = t.kind == core::TaskKind::SEND ? EmulatedKind::SEND : EmulatedKind::RECV;
        e.peer = layout.peer(rank, t.peer_axis, t.peer_offset);
        e.tag = t.tag;
        e.bytes = scaled_bytes(t.bytes, options.scale_bytes);
        const EmulatedChannel c{e.kind == EmulatedKind::SEND, e.peer, e.tag};
        auto same = [&](const EmulatedChannel& d) { return d.send == c.send && d.peer == c.peer && d.tag == c.tag; };
        const auto it = std::find_if(plan.channels.begin(), plan.channels.end(), same);
        e.channel = static_cast<uint32_t>(it - plan.channels.begin());
        if (it == plan.channels.end()) {
          plan.channels.push_back(c);
          channel_calls.push_back(0);
        }
        e.seq = channel_calls[e.channel]++;
        break;
      }
    }
    plan.tasks.push_back(std::move(e));
  }
  return plan;
}

}  // namespace trainsim::engine

namespace trainsim::engine {

core::Workload scaled_workload(const core::Workload& workload, const network::ClusterConfig& cluster,
                               const core::DeviceProfile& device, const EmulationOptions& options) {
  core::Workload out = workload;
  for (core::Program& program : out.programs) {
    const ProgramPlan pp = plan_program(program, workload, cluster, device);
    for (size_t i = 0; i < program.tasks.size(); ++i) {
      core::Task& t = program.tasks[i];
      switch (t.kind) {
        case core::TaskKind::COMPUTE:
        case core::TaskKind::COPY:
          t.seconds = pp.duration[i] * options.scale_compute;
          break;
        case core::TaskKind::COLLECTIVE:
        case core::TaskKind::SEND:
        case core::TaskKind::RECV:
          t.bytes = static_cast<double>(scaled_bytes(t.bytes, options.scale_bytes));
          break;
        case core::TaskKind::MEMORY:
          break;
      }
    }
  }
  return out;
}

}  // namespace trainsim::engine
