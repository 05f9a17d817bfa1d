#pragma once
// Collective algorithms as data: each algorithm is a function (op, group, topology view) -> a
// TransferSchedule, and one executor (in sim/engine, per fidelity) runs them all. A schedule says who
// sends which chunk to whom, whether the receiver reduces it into its copy or overwrites with it, and
// after which other transfers each transfer may start.
//
// Fidelities (DESIGN.md): `step` runs every transfer of the schedule as a flow; `flow` runs one
// long-lived flow per (src, dst) edge carrying that edge's total bytes (flow_plan / flow_edges
// below), plus the algorithm's latency along its phases (sim/engine/schedule_flows.hpp);
// `analytic` is the closed form of collective_cost.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include "network/collective_cost.hpp"
#include "network/topology.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::network {

// The members of a communicator as the algorithms see them. REQUIRES: ranks sorted, distinct, valid
// GPU indices of the topology.
struct GroupView {
  std::vector<int> ranks;  // global GPU indices
  const Topology* topology = nullptr;

  int size() const { return static_cast<int>(ranks.size()); }
};

// An endpoint is a member index (0 .. group size - 1), or IN_NETWORK for the switch that reduces
// in-network aggregation traffic (SHARP / SwitchML style) or NVLS multicast objects.
inline constexpr int32_t IN_NETWORK = -1;

enum class ChunkAction : uint8_t {
  REDUCE,  // the receiver adds the chunk into its copy
  COPY     // the receiver replaces its copy with the chunk (it must be complete at the sender)
};

struct Transfer {
  int32_t src = 0;
  int32_t dst = 0;
  uint32_t chunk = 0;            // chunk index, 0 .. chunks - 1
  ChunkAction action = ChunkAction::COPY;
  double bytes = 0;
  uint32_t step = 0;             // the algorithm step it belongs to (latency accounting, timelines)
  uint32_t dep_begin = 0;        // transfers that must complete first: TransferSchedule::deps[begin, +count)
  uint32_t dep_count = 0;
};

struct TransferSchedule {
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  Algorithm algorithm = Algorithm::RING;
  int ranks = 1;
  uint32_t chunks = 1;           // the buffer is cut into this many equal chunks; all_to_all: n*n
                                 // chunks, chunk i*n + j being the block (size/n bytes) i sends to j
  uint32_t steps = 0;            // number of algorithm steps
  std::vector<Transfer> transfers;
  std::vector<uint32_t> deps;
};

// Which algorithms can run `op` on `group` (e.g. NVLS needs an NVSwitch node and all members in it;
// in-network aggregation needs a switched fabric; halving-doubling a power of two).
std::vector<Algorithm> algorithms_for(core::CollectiveOp op, const GroupView& group);

// The schedule of `op` on `group` for a per-rank buffer of `size` bytes (nccl-tests' convention, as
// in collective_cost.hpp). REQUIRES: algorithm in algorithms_for(op, group).
TransferSchedule make_schedule(core::CollectiveOp op, Algorithm algorithm, core::Bytes size, const GroupView& group);

// NCCL-like tuner: the algorithm with the lowest closed-form time for this size and group.
Algorithm choose_algorithm(core::CollectiveOp op, core::Bytes size, const GroupView& group,
                           const ClusterConfig& cluster, const core::NetworkProfile& profile);

// `flow` fidelity: one flow per directed edge with all its bytes; `steps` latency terms (the number
// of distinct algorithm steps in which the edge carries data). Edges are ordered by (src, dst), the
// switch (IN_NETWORK) first.
struct FlowEdge {
  int32_t src = 0;
  int32_t dst = 0;
  double bytes = 0;
  uint32_t steps = 0;
};
std::vector<FlowEdge> flow_plan(const TransferSchedule& schedule);

// `flow` fidelity without the step schedule: exactly the edges flow_plan(make_schedule(op, algorithm,
// size, group)) returns (same order, same steps, same bytes up to rounding), computed per algorithm
// in O(edges) time and memory with no per-chunk state, so that flow fidelity scales to 16,384 ranks.
// Edges per algorithm: RING, HIERARCHICAL, TREE, NVLS, IN_NETWORK O(n); HALVING_DOUBLING
// O(n log n); DIRECT O(n^2) (every pair exchanges). A group of one rank has no edges.
// REQUIRES: algorithm in algorithms_for(op, group).
//
//   const std::vector<FlowEdge> edges = flow_edges(CollectiveOp::ALL_REDUCE, Algorithm::HIERARCHICAL,
//                                                  core::Bytes(1e9), group);
std::vector<FlowEdge> flow_edges(core::CollectiveOp op, Algorithm algorithm, core::Bytes size, const GroupView& group);

}  // namespace trainsim::network
