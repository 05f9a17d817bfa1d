#pragma once
// Which ranks the executor simulates, and where their communication calls meet: resolved once per
// run, before any task executes. Internal to sim/engine (see sim/engine/executor.hpp for the symmetry
// rules it applies).

#include <array>
#include <cstdint>
#include <vector>

#include "network/cluster.hpp"
#include "network/collective_cost.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/program_plan.hpp"

namespace trainsim::engine {

struct SimulatedRank {
  int rank = 0;
  uint32_t program = 0;
  size_t end_base = 0;    // first of its task slots in the executor's end-time array
  size_t group_base = 0;  // its meeting of each group kind: group_meeting(group_base + kind)
  size_t port_base = 0;   // its meeting of each port: port_meeting(port_base + port)
};

// Where calls meet: a communicator instance (collectives) or an ordered (sender, receiver) pair
// (send/recv), the latter translated along the symmetric axes so that the sender is simulated.
struct Meeting {
  uint32_t expected = 0;         // simulated arrivals that complete a call
  uint32_t placement = NO_INDEX;  // collectives: index into RankTable::placements()
  bool same_node = false;        // send/recv
  int first_rank = 0;            // lowest rank of the communicator, or the sender
  int second_rank = 0;           // send/recv: the receiver
};

class RankTable {
 public:
  // REQUIRES: plans[p] was made from workload.programs[p]; the workload fits the cluster.
  RankTable(const core::Workload& workload, const network::ClusterConfig& cluster,
            const std::vector<ProgramPlan>& plans, bool use_symmetry);

  const std::vector<SimulatedRank>& ranks() const { return ranks_; }
  // The slot of a simulated rank in ranks(), or NO_INDEX.
  uint32_t slot_of(int rank) const { return slot_of_rank_[static_cast<size_t>(rank)]; }
  // The simulated rank that stands for `rank` (itself when simulated).
  int representative(int rank) const;
  // Whether ranks are mirrored along `axis` (only coordinates below period(axis) are simulated).
  bool symmetric(core::Axis axis) const { return symmetric_[static_cast<size_t>(axis)]; }
  // The shifts along a symmetric axis that map nodes onto nodes are the multiples of its period: 1
  // for most axes, g / stride for an axis of which a node of g GPUs holds several coordinates (see
  // executor.hpp). 1 for an axis that is not symmetric.
  int period(core::Axis axis) const { return period_[static_cast<size_t>(axis)]; }
  // The mirror images of a call among `ranks` (a communicator, or a sender and its receiver): every
  // translate of `ranks` by multiples of the period along the symmetric axes other than `own_axes`,
  // the identity first. Mirrored
  // ranks make these calls at the instant the representative makes its own; a translate along one
  // of `own_axes` is the call itself (a communicator spanning that axis).
  std::vector<std::vector<int>> images(const std::vector<int>& ranks, const std::vector<core::Axis>& own_axes) const;
  size_t end_slots() const { return end_slots_; }

  uint32_t group_meeting(size_t index) const { return group_meeting_[index]; }
  uint32_t port_meeting(size_t index) const { return port_meeting_[index]; }
  const std::vector<Meeting>& meetings() const { return meetings_; }
  const std::vector<network::GroupPlacement>& placements() const { return placements_; }

 private:
  void choose_symmetric_axes(bool use_symmetry);
  void create_ranks();
  void resolve_groups();
  void resolve_channels();
  std::pair<int, int> canonical_pair(int sender, int receiver) const;

  const core::Workload& w_;
  const network::ClusterConfig& cluster_;
  const std::vector<ProgramPlan>& plans_;
  std::array<bool, core::AXIS_COUNT> symmetric_{};
  std::array<int, core::AXIS_COUNT> period_{};
  std::vector<uint32_t> slot_of_rank_;
  std::vector<SimulatedRank> ranks_;  // ascending
  size_t end_slots_ = 0;
  std::vector<uint32_t> group_meeting_;
  std::vector<uint32_t> port_meeting_;
  std::vector<Meeting> meetings_;
  std::vector<network::GroupPlacement> placements_;
};

}  // namespace trainsim::engine
