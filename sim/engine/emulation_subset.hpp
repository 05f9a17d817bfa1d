#pragma once
// Which ranks of a job the MPI processes of `trainsim emulate --ranks SPEC` stand for (scale
// reduction, docs/emulate.md "Scale reduction"), and which present rank stands in for an absent one.
//
// A subset is a box of the parallel layout: on every axis a contiguous range of coordinates
// [lo, lo + span). MPI rank i runs the i-th present rank in ascending order.
//   all       every rank (span = the axis size everywhere)
//   node:N    the ranks of node N (ranks N*g .. N*g+g-1, g = gpus_per_node); they must form a box,
//             which they do whenever the node boundary falls on axis boundaries (tensor x context x
//             ... filled fastest first, as the layout places ranks)
//   stage:S   the ranks of pipeline stage S: every tensor, context, expert and data coordinate
//
// Stand-ins follow the workload's declared symmetry (Workload::symmetric_axes, the symmetry the
// SimGrid and analytic backends use to simulate one representative per class of ranks): ranks that
// differ only along symmetric axes run the same program, and a translate of a call along those axes
// is the same call made by the translated ranks at the same time. Translating by multiples of the
// box's span on each symmetric axis on which an absent rank lies outside the box (span must divide
// the axis size) maps it onto exactly one present rank: its stand-in. An absent rank that lies
// outside the box on an axis that is not symmetric (another pipeline stage) has no stand-in.

#include <array>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

class EmulationSubset {
 public:
  // Every rank of `layout`.
  explicit EmulationSubset(const core::ParallelLayout& layout);

  // Parses `spec` (above). Throws InputError (file "--ranks") for an unknown form, a node or stage
  // out of range, or a node whose ranks do not form a box of the layout.
  // REQUIRES: layout.world_size() == cluster.world_size().
  static EmulationSubset parse(const std::string& spec, const core::ParallelLayout& layout,
                               const network::ClusterConfig& cluster);

  const std::string& spec() const { return spec_; }
  bool all() const { return ranks_.size() == static_cast<size_t>(layout_.world_size()); }
  // Present ranks, ascending; MPI rank i runs ranks()[i].
  const std::vector<int>& ranks() const { return ranks_; }
  bool present(int rank) const;
  // The MPI rank that runs `rank`, or -1 when it is absent.
  int mpi_rank_of(int rank) const;
  int lo(core::Axis a) const { return lo_[static_cast<size_t>(a)]; }
  int span(core::Axis a) const { return span_[static_cast<size_t>(a)]; }

  // The present rank that stands in for `rank` (itself when present), or -1 when none does (see
  // above). REQUIRES: `workload` has this subset's layout.
  int stand_in(const core::Workload& workload, int rank) const;

 private:
  EmulationSubset(const core::ParallelLayout& layout, std::array<int, core::AXIS_COUNT> lo,
                  std::array<int, core::AXIS_COUNT> span, std::string spec);

  core::ParallelLayout layout_;
  std::array<int, core::AXIS_COUNT> lo_{};
  std::array<int, core::AXIS_COUNT> span_{};
  std::string spec_;
  std::vector<int> ranks_;
};

}  // namespace trainsim::engine
