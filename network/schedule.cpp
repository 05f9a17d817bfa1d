#include "network/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "network/schedule_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::network {
namespace detail {

namespace {
constexpr uint32_t NONE = UINT32_MAX;
}  // namespace

ScheduleBuilder::ScheduleBuilder(core::CollectiveOp op, Algorithm algorithm, int ranks, uint32_t chunks,
                                 double chunk_bytes, bool track_dependencies)
    : ranks_(ranks), track_(track_dependencies), chunk_bytes_(chunk_bytes) {
  schedule_.op = op;
  schedule_.algorithm = algorithm;
  schedule_.ranks = ranks;
  schedule_.chunks = chunks;
  if (track_) latest_.assign((static_cast<size_t>(ranks) + 1) * chunks, NONE);
}

size_t ScheduleBuilder::slot(int32_t member, uint32_t chunk) const {
  const size_t m = member == IN_NETWORK ? static_cast<size_t>(ranks_) : static_cast<size_t>(member);
  return m * schedule_.chunks + chunk;
}

uint32_t ScheduleBuilder::add(int32_t src, int32_t dst, uint32_t chunk, ChunkAction action, uint32_t step) {
  TRAINSIM_CHECK(
      src != dst && src >= IN_NETWORK && dst >= IN_NETWORK && src < ranks_ && dst < ranks_ && chunk < schedule_.chunks,
      fmt::format("bad transfer {} -> {} of chunk {} in a schedule of {} ranks and {} chunks", src, dst, chunk, ranks_,
                  schedule_.chunks));
  const uint32_t index = static_cast<uint32_t>(schedule_.transfers.size());
  Transfer t{src, dst, chunk, action, chunk_bytes_, step, static_cast<uint32_t>(schedule_.deps.size()), 0};
  if (track_) {
    for (uint32_t d = latest_[slot(src, chunk)]; d != NONE; d = previous_[d]) {
      schedule_.deps.push_back(d);
      ++t.dep_count;
    }
    uint32_t& latest = latest_[slot(dst, chunk)];
    previous_.push_back(action == ChunkAction::REDUCE ? latest : NONE);
    latest = index;
  }
  schedule_.transfers.push_back(t);
  schedule_.steps = std::max(schedule_.steps, step + 1);
  return index;
}

TransferSchedule ScheduleBuilder::finish() { return std::move(schedule_); }

}  // namespace detail

namespace {

using core::CollectiveOp;

bool schedule_applies(Algorithm a, CollectiveOp op, const GroupView& group, const GroupPlacement& placement) {
  return a != Algorithm::AUTO && algorithm_applies(a, op, placement, group.topology->cluster());
}

void check_group(const GroupView& group) {
  TRAINSIM_CHECK(group.topology != nullptr && !group.ranks.empty(), "a group needs a topology and members");
  for (size_t i = 0; i < group.ranks.size(); ++i) {
    TRAINSIM_CHECK(group.ranks[i] >= 0 && group.ranks[i] < group.topology->gpu_count() &&
                       (i == 0 || group.ranks[i - 1] < group.ranks[i]),
                   fmt::format("group members must be sorted, distinct GPUs of the cluster; member {} is GPU {}", i,
                               group.ranks[i]));
  }
}

}  // namespace

namespace detail {

GroupPlacement checked_placement(CollectiveOp op, Algorithm algorithm, const GroupView& group) {
  check_group(group);
  const GroupPlacement placement = GroupPlacement::of(group.ranks, group.topology->cluster());
  TRAINSIM_CHECK(schedule_applies(algorithm, op, group, placement),
                 fmt::format("algorithm {} does not apply to {} on {} ranks over {} nodes", to_string(algorithm),
                             core::to_string(op), placement.ranks, placement.nodes));
  return placement;
}


}  // namespace detail

std::vector<Algorithm> algorithms_for(CollectiveOp op, const GroupView& group) {
  check_group(group);
  const GroupPlacement placement = GroupPlacement::of(group.ranks, group.topology->cluster());
  std::vector<Algorithm> out;
  for (Algorithm a : ALL_ALGORITHMS) {
    if (schedule_applies(a, op, group, placement)) out.push_back(a);
  }
  return out;
}

TransferSchedule make_schedule(CollectiveOp op, Algorithm algorithm, core::Bytes size, const GroupView& group) {
  const GroupPlacement placement = detail::checked_placement(op, algorithm, group);
  if (group.size() == 1) return detail::ScheduleBuilder(op, algorithm, 1, 1, size.value()).finish();
  switch (algorithm) {
    case Algorithm::RING:
      return detail::ring_schedule(op, size, group);
    case Algorithm::TREE:
      if (tree_is_hierarchical(op, placement)) {
        return detail::hierarchical_schedule(op, size, group, Algorithm::TREE);
      }
      return detail::tree_schedule(op, size, group);
    case Algorithm::HALVING_DOUBLING:
      return detail::halving_doubling_schedule(op, size, group);
    case Algorithm::DIRECT:
      return detail::direct_schedule(op, size, group);
    case Algorithm::HIERARCHICAL:
      return detail::hierarchical_schedule(op, size, group);
    case Algorithm::IN_NETWORK:
    case Algorithm::NVLS:
      return detail::switch_schedule(op, algorithm, size, group);
    case Algorithm::AUTO:
      break;
  }
  TRAINSIM_CHECK(false, "AUTO is resolved by choose_algorithm");
  return {};
}

Algorithm choose_algorithm(CollectiveOp op, core::Bytes size, const GroupView& group, const ClusterConfig& cluster,
                           const core::NetworkProfile& profile) {
  check_group(group);
  const GroupPlacement placement = GroupPlacement::of(group.ranks, cluster);
  const Algorithm chosen = collective_cost(op, size, placement, cluster, profile).algorithm;
  if (schedule_applies(chosen, op, group, placement)) return chosen;
  return algorithms_for(op, group).front();
}

std::vector<FlowEdge> flow_plan(const TransferSchedule& schedule) {
  const std::vector<Transfer>& transfers = schedule.transfers;
  std::vector<uint32_t> order(transfers.size());
  std::iota(order.begin(), order.end(), 0u);
  const auto key = [&](uint32_t i) { return std::tuple(transfers[i].src, transfers[i].dst, transfers[i].step); };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  std::vector<FlowEdge> edges;
  for (size_t i = 0; i < order.size(); ++i) {
    const Transfer& t = transfers[order[i]];
    const bool new_edge = edges.empty() || edges.back().src != t.src || edges.back().dst != t.dst;
    if (new_edge) edges.push_back(FlowEdge{t.src, t.dst, 0, 0});
    FlowEdge& e = edges.back();
    e.bytes += t.bytes;
    if (new_edge || transfers[order[i - 1]].step != t.step) ++e.steps;
  }
  return edges;
}

}  // namespace trainsim::network
