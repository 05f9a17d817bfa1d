#include "sim/engine/emulation_plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/engine/program_plan.hpp"

namespace trainsim::engine {
namespace {

uint64_t scaled_bytes(double bytes, double scale) {
  if (bytes <= 0) return 0;
  return static_cast<uint64_t>(std::ceil(bytes * scale));
}

// The MPI tag of a message to or from a stand-in: one per (axis, the sender's offset modulo the
// axis size, IR tag), above the IR's own tags (< 256), which messages between present ranks keep.
// Both ends compute the same tag: the receiver's offset is the sender's, negated.
int stand_in_tag(const core::ParallelLayout& layout, core::Axis axis, int sender_offset, int tag) {
  int code = 0;
  for (int a = 0; a < static_cast<int>(axis); ++a) code += layout.size(static_cast<core::Axis>(a));
  const int n = layout.size(axis);
  code += (sender_offset % n + n) % n;
  return 256 * (1 + code) + tag;
}

// Whether an absent rank is unmatched (no present rank stands in for it): its calls are then timed
// by the prediction.
bool unmatched(const core::Workload& workload, const EmulationSubset& subset, int rank) {
  return !subset.present(rank) && subset.stand_in(workload, rank) < 0;
}

// The calls of unmatched ranks that match a present rank's: their k-th call on a group kind, their
// k-th message on a (direction, peer, tag) channel. Indexed once per rank asked about.
class PartnerCalls {
 public:
  explicit PartnerCalls(const core::Workload& workload) : w_(workload) {}

  uint32_t collective(int rank, int group, uint32_t seq) { return find(rank, {0, group, 0}, seq); }
  uint32_t message(int rank, core::TaskKind kind, int peer, int tag, uint32_t seq) {
    return find(rank, {kind == core::TaskKind::SEND ? 1 : 2, peer, tag}, seq);
  }

 private:
  using Key = std::array<int, 3>;  // (0, group, 0) | (1 send / 2 recv, peer, tag)
  uint32_t find(int rank, const Key& key, uint32_t seq) {
    auto [it, added] = calls_.try_emplace(rank);
    if (added) {
      const core::Program& program = w_.program_of(rank);
      for (uint32_t i = 0; i < program.tasks.size(); ++i) {
        const core::Task& t = program.tasks[i];
        if (t.kind == core::TaskKind::COLLECTIVE) it->second[{0, t.group, 0}].push_back(i);
        if (t.kind == core::TaskKind::SEND || t.kind == core::TaskKind::RECV) {
          const int peer = w_.layout.peer(rank, t.peer_axis, t.peer_offset);
          it->second[{t.kind == core::TaskKind::SEND ? 1 : 2, peer, t.tag}].push_back(i);
        }
      }
    }
    const auto calls = it->second.find(key);
    TRAINSIM_CHECK(calls != it->second.end() && seq < calls->second.size(),
                   fmt::format("rank {} has no call {} matching its partner's", rank, seq));
    return calls->second[seq];
  }

  const core::Workload& w_;
  std::map<int, std::map<Key, std::vector<uint32_t>>> calls_;
};

}  // namespace

// The factors shrink a scenario to the machine the emulation runs on: above 1 they would wait longer
// than the scenario's own compute (1e300 waited forever) and allocate buffers larger than its own
// messages (host memory the scenario's GPUs do not have).
void check_emulation_options(const EmulationOptions& options) {
  if (!(options.scale_compute > 0 && options.scale_compute <= 1)) {
    throw core::InputError("--scale-compute", "",
                           fmt::format("expected a factor in (0, 1] (1: the scenario's own compute times), found {}",
                                       options.scale_compute));
  }
  if (!(options.scale_bytes > 0 && options.scale_bytes <= 1)) {
    throw core::InputError("--scale-bytes", "",
                           fmt::format("expected a factor in (0, 1] (1: the scenario's own message sizes), found {}",
                                       options.scale_bytes));
  }
}

void check_emulation_world(const EmulationSubset& subset, int mpi_ranks, const std::string& file) {
  const int need = static_cast<int>(subset.ranks().size());
  if (mpi_ranks == need) return;
  if (subset.all()) {
    throw core::InputError(
        file, "",
        fmt::format("the scenario has {} ranks (its parallel layout), mpirun started {}: emulation runs one MPI "
                    "process per rank; start it with mpirun -np {}",
                    need, mpi_ranks, need));
  }
  throw core::InputError(file, "",
                         fmt::format("--ranks {} selects {} of the scenario's ranks, mpirun started {}: emulation runs "
                                     "one MPI process per selected rank; start it with mpirun -np {}",
                                     subset.spec(), need, mpi_ranks, need));
}

std::vector<int> emulation_partners(const core::Workload& workload, const EmulationSubset& subset, int rank) {
  std::set<int> out;
  if (subset.all()) return {};
  const core::Program& program = workload.program_of(rank);
  std::set<int> kinds;
  for (const core::Task& t : program.tasks) {
    if (t.kind == core::TaskKind::COLLECTIVE && workload.groups[t.group].contains(workload.layout, rank)) {
      kinds.insert(t.group);
    }
    if (t.kind == core::TaskKind::SEND || t.kind == core::TaskKind::RECV) {
      const int peer = workload.layout.peer(rank, t.peer_axis, t.peer_offset);
      if (unmatched(workload, subset, peer)) out.insert(peer);
    }
  }
  for (int g : kinds) {
    for (int m : workload.groups[static_cast<size_t>(g)].ranks_of(workload.layout, rank)) {
      if (unmatched(workload, subset, m)) out.insert(m);
    }
  }
  return {out.begin(), out.end()};
}

EmulationPlan plan_emulation(const core::Workload& workload, int rank, const network::ClusterConfig& cluster,
                             const core::DeviceProfile& device, const EmulationOptions& options,
                             const std::string& file, const Reduction* reduction) {
  check_emulation_options(options);
  const core::ParallelLayout& layout = workload.layout;
  TRAINSIM_CHECK(rank >= 0 && rank < layout.world_size(), fmt::format("rank {} outside the layout", rank));
  const EmulationSubset everyone(layout);
  const EmulationSubset& subset = reduction != nullptr ? reduction->subset : everyone;
  TRAINSIM_CHECK(subset.present(rank), fmt::format("rank {} is not emulated", rank));
  const core::Program& program = workload.program_of(rank);
  const ProgramPlan pp = plan_program(program, workload, cluster, device);

  EmulationPlan plan;
  plan.rank = rank;
  plan.world_size = layout.world_size();
  plan.groups.resize(workload.groups.size());
  std::vector<std::vector<int>> full(workload.groups.size());  // every member of this rank's groups
  for (size_t g = 0; g < workload.groups.size(); ++g) {
    const core::GroupKind& kind = workload.groups[g];
    EmulatedGroup& out = plan.groups[g];
    out.name = kind.name;
    if (!kind.contains(layout, rank)) continue;
    full[g] = kind.ranks_of(layout, rank);
    const std::vector<int>& members = full[g];
    const auto self = std::find(members.begin(), members.end(), rank);
    bool ok = self != members.end() && std::is_sorted(members.begin(), members.end()) &&
              std::adjacent_find(members.begin(), members.end()) == members.end();
    for (size_t i = 0; ok && i < members.size(); ++i) {
      const int q = members[i];
      ok = q >= 0 && q < layout.world_size() && kind.contains(layout, q) && kind.ranks_of(layout, q) == members;
    }
    if (!ok) {
      throw core::InputError(file, "",
                             fmt::format("group '{}' cannot be mapped onto an MPI communicator: its members do not "
                                         "agree on its ranks (seen from rank {})",
                                         kind.name, rank));
    }
    out.members = static_cast<int>(members.size());
    std::copy_if(members.begin(), members.end(), std::back_inserter(out.ranks),
                 [&](int q) { return subset.present(q); });
    if (out.ranks.size() == members.size() || out.ranks.size() >= 2) {
      out.color = out.ranks.front();
      out.key = static_cast<int>(std::find(out.ranks.begin(), out.ranks.end(), rank) - out.ranks.begin());
    }
  }

  PartnerCalls partners(workload);
  auto arrival = [&](int partner, uint32_t task) { return reduction->predicted.ready(partner, task); };
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
        if (!workload.groups[t.group].contains(layout, rank)) {
          throw core::InputError(file, "",
                                 fmt::format("group '{}' cannot be mapped onto an MPI communicator: rank {} calls a "
                                             "collective on it but is not one of its members",
                                             workload.groups[t.group].name, rank));
        }
        const EmulatedGroup& g = plan.groups[t.group];
        const int n = g.members;
        const int k = static_cast<int>(g.ranks.size());
        if (k < n) {
          const core::Bytes size(static_cast<double>(e.bytes));
          if (k >= 2) {
            e.bytes = scaled_bytes(static_cast<double>(e.bytes),
                                   core::bus_bandwidth_factor(e.op, n) / core::bus_bandwidth_factor(e.op, k));
          } else {
            e.modelled = true;
            e.seconds = reduction->model
                            .collective_time(e.op, size, network::GroupPlacement::of(full[t.group], cluster))
                            .value();
          }
          for (int m : full[t.group]) {
            if (unmatched(workload, subset, m)) {
              e.not_before = std::max(e.not_before, arrival(m, partners.collective(m, t.group, e.seq)));
            }
          }
        }
        break;
      }
      case core::TaskKind::SEND:
      case core::TaskKind::RECV: {
        e.kind = t.kind == core::TaskKind::SEND ? EmulatedKind::SEND : EmulatedKind::RECV;
        e.peer = layout.peer(rank, t.peer_axis, t.peer_offset);
        e.tag = t.tag;
        e.bytes = scaled_bytes(t.bytes, options.scale_bytes);
        const int stand_in = subset.present(e.peer) ? e.peer : subset.stand_in(workload, e.peer);
        if (stand_in == e.peer) {
          e.stand_in = e.peer;
          e.mpi_tag = e.tag;
        } else if (stand_in >= 0 && stand_in != rank) {
          e.stand_in = stand_in;
          const int sender_offset = e.kind == EmulatedKind::SEND ? t.peer_offset : -t.peer_offset;
          e.mpi_tag = stand_in_tag(layout, t.peer_axis, sender_offset, e.tag);
        } else {
          e.modelled = true;
          e.seconds = reduction->model
                          .p2p_time_between(core::Bytes(static_cast<double>(e.bytes)),
                                            cluster.node_of(rank) == cluster.node_of(e.peer), rank, e.peer)
                          .value();
          if (stand_in < 0) {
            const core::TaskKind matching = t.kind == core::TaskKind::SEND ? core::TaskKind::RECV : core::TaskKind::SEND;
            e.not_before = arrival(e.peer, partners.message(e.peer, matching, rank, e.tag, pp.seq[i]));
          }
          break;
        }
        const EmulatedChannel c{e.kind == EmulatedKind::SEND, e.stand_in, e.mpi_tag};
        auto same = [&](const EmulatedChannel& d) { return d.send == c.send && d.peer == c.peer && d.tag == c.tag; };
        const auto it = std::find_if(plan.channels.begin(), plan.channels.end(), same);
        e.channel = static_cast<uint32_t>(it - plan.channels.begin());
        if (it == plan.channels.end()) {
          plan.channels.push_back(c);
          channel_calls.push_back(0);
        }
        e.seq = channel_calls[e.channel]++;
        plan.max_mpi_tag = std::max(plan.max_mpi_tag, e.mpi_tag);
        break;
      }
    }
    if (e.kind == EmulatedKind::COLLECTIVE || e.kind == EmulatedKind::SEND || e.kind == EmulatedKind::RECV) {
      ++(e.modelled ? plan.modelled_calls : plan.measured_calls);
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
