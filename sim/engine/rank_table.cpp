#include "sim/engine/rank_table.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::engine {

using core::Axis;

RankTable::RankTable(const core::Workload& workload, const network::ClusterConfig& cluster,
                     const std::vector<ProgramPlan>& plans, bool use_symmetry)
    : w_(workload), cluster_(cluster), plans_(plans) {
  choose_symmetric_axes(use_symmetry);
  create_ranks();
  resolve_groups();
  resolve_channels();
}

// Declared symmetric, and translating along the axis maps nodes onto nodes: any shift when the axis's
// rank stride is a multiple of the node size or its whole span fits in a node; shifts by multiples
// of g / stride when a node holds g / stride consecutive coordinates of an axis whose span covers
// whole nodes (data-parallel ranks 4 apart on nodes of 8: a shift by 2 moves node n onto node n+1,
// a shift by 1 would split it).
void RankTable::choose_symmetric_axes(bool use_symmetry) {
  period_.fill(1);
  if (!use_symmetry) return;
  const int64_t g = cluster_.gpus_per_node;
  int64_t stride = 1;
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    const int64_t size = w_.layout.sizes()[a];
    int64_t period = 0;  // none
    if (stride % g == 0 || g % (stride * size) == 0) {
      period = 1;
    } else if (g % stride == 0 && (stride * size) % g == 0) {
      period = g / stride;
    }
    symmetric_[a] = w_.symmetric_axes[a] && period > 0 && period < size;
    if (symmetric_[a]) period_[a] = static_cast<int>(period);
    stride *= size;
  }
  for (const core::GroupKind& k : w_.groups) {
    TRAINSIM_CHECK(k.members.empty() || !symmetric_[static_cast<size_t>(k.axis)],
                   fmt::format("group kind \"{}\" takes a subset of the {} axis, which the workload declares "
                               "symmetric",
                               k.name, core::to_string(k.axis)));
  }
}

int RankTable::representative(int rank) const {
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    if (!symmetric_[a]) continue;
    const Axis axis = static_cast<Axis>(a);
    const int coord = w_.layout.coord(rank, axis);
    rank = w_.layout.peer(rank, axis, coord % period_[a] - coord);
  }
  return rank;
}

std::vector<std::vector<int>> RankTable::images(const std::vector<int>& ranks,
                                                const std::vector<core::Axis>& own_axes) const {
  std::vector<std::vector<int>> out{ranks};
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    const Axis axis = static_cast<Axis>(a);
    if (!symmetric_[a] || std::find(own_axes.begin(), own_axes.end(), axis) != own_axes.end()) continue;
    const size_t n = out.size();
    for (int shift = period_[a]; shift < w_.layout.size(axis); shift += period_[a]) {
      for (size_t i = 0; i < n; ++i) {
        std::vector<int> image = out[i];
        for (int& r : image) r = w_.layout.peer(r, axis, shift);
        out.push_back(std::move(image));
      }
    }
  }
  return out;
}

void RankTable::create_ranks() {
  const int world = w_.layout.world_size();
  slot_of_rank_.assign(static_cast<size_t>(world), NO_INDEX);
  size_t ports = 0;
  for (int r = 0; r < world; ++r) {
    const int rep = representative(r);
    TRAINSIM_CHECK(w_.program_of_rank[static_cast<size_t>(r)] == w_.program_of_rank[static_cast<size_t>(rep)],
                   fmt::format("ranks {} and {} are symmetric but run different programs", r, rep));
    if (rep != r) continue;
    SimulatedRank sr;
    sr.rank = r;
    sr.program = w_.program_of_rank[static_cast<size_t>(r)];
    sr.end_base = end_slots_;
    sr.group_base = ranks_.size() * w_.groups.size();
    sr.port_base = ports;
    end_slots_ += w_.programs[sr.program].tasks.size();
    ports += plans_[sr.program].ports.size();
    slot_of_rank_[static_cast<size_t>(r)] = static_cast<uint32_t>(ranks_.size());
    ranks_.push_back(sr);
  }
  group_meeting_.assign(ranks_.size() * w_.groups.size(), NO_INDEX);
  port_meeting_.assign(ports, NO_INDEX);
}

void RankTable::resolve_groups() {
  const uint64_t world = static_cast<uint64_t>(w_.layout.world_size());
  std::unordered_map<uint64_t, uint32_t> instance_of;
  for (const SimulatedRank& sr : ranks_) {
    for (uint16_t kind : plans_[sr.program].group_kinds) {
      const std::vector<int> members = w_.groups[kind].ranks_of(w_.layout, sr.rank);
      const int lowest = *std::min_element(members.begin(), members.end());
      const auto [it, added] = instance_of.try_emplace(kind * world + static_cast<uint64_t>(lowest),
                                                       static_cast<uint32_t>(meetings_.size()));
      if (added) {
        Meeting m;
        for (int member : members) m.expected += slot_of(member) != NO_INDEX ? 1 : 0;
        const network::GroupPlacement placement = network::GroupPlacement::of(members, cluster_);
        const auto known = std::find(placements_.begin(), placements_.end(), placement);
        m.placement = static_cast<uint32_t>(known - placements_.begin());
        if (known == placements_.end()) placements_.push_back(placement);
        m.first_rank = lowest;
        meetings_.push_back(m);
      }
      group_meeting_[sr.group_base + kind] = it->second;
    }
  }
}

// Translates (sender, receiver) along the symmetric axes until the sender is a representative: a
// mirrored pair behaves as its translate.
std::pair<int, int> RankTable::canonical_pair(int sender, int receiver) const {
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    if (!symmetric_[a]) continue;
    const Axis axis = static_cast<Axis>(a);
    const int coord = w_.layout.coord(sender, axis);
    const int shift = coord % period_[a] - coord;
    sender = w_.layout.peer(sender, axis, shift);
    receiver = w_.layout.peer(receiver, axis, shift);
  }
  return {sender, receiver};
}

void RankTable::resolve_channels() {
  const uint64_t world = static_cast<uint64_t>(w_.layout.world_size());
  std::unordered_map<uint64_t, uint32_t> channel_of;
  for (const SimulatedRank& sr : ranks_) {
    const std::vector<Port>& ports = plans_[sr.program].ports;
    for (size_t p = 0; p < ports.size(); ++p) {
      const int peer = w_.layout.peer(sr.rank, ports[p].axis, ports[p].offset);
      const auto [sender, receiver] = ports[p].send ? canonical_pair(sr.rank, peer) : canonical_pair(peer, sr.rank);
      const uint64_t channel =
          (static_cast<uint64_t>(sender) * world + static_cast<uint64_t>(receiver)) * 256 + ports[p].tag;
      const auto [it, added] = channel_of.try_emplace(channel, static_cast<uint32_t>(meetings_.size()));
      if (added) {
        Meeting m;
        m.expected = 2;
        m.same_node = cluster_.node_of(sender) == cluster_.node_of(receiver);
        m.first_rank = sender;
        m.second_rank = receiver;
        meetings_.push_back(m);
      }
      port_meeting_[sr.port_base + p] = it->second;
    }
  }
}

}  // namespace trainsim::engine
