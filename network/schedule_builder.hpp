#pragma once
// Internal to network/: the one mechanism every collective algorithm builds its TransferSchedule
// with, and the phases (ring, tree, halving-doubling, direct, in-network) that algorithms compose.
//
// ScheduleBuilder derives dependencies from data flow, so no algorithm writes them by hand: a
// transfer of chunk c from member s depends on every delivery that made s's current copy of c
// (the last COPY into it and the REDUCEs since). Phases only say who sends what to whom, when.

#include <cstdint>
#include <vector>

#include "network/schedule.hpp"

namespace trainsim::network::detail {

class ScheduleBuilder {
 public:
  // `chunks` equal chunks of `chunk_bytes` each over `ranks` members (plus IN_NETWORK). Without
  // `track_dependencies` (a single step of independent sends) no transfer gets dependencies.
  ScheduleBuilder(core::CollectiveOp op, Algorithm algorithm, int ranks, uint32_t chunks, double chunk_bytes,
                  bool track_dependencies = true);

  int ranks() const { return ranks_; }
  uint32_t chunks() const { return schedule_.chunks; }
  double chunk_bytes() const { return chunk_bytes_; }
  // Appends a transfer (src and dst are member indices or IN_NETWORK); returns its index.
  uint32_t add(int32_t src, int32_t dst, uint32_t chunk, ChunkAction action, uint32_t step);
  TransferSchedule finish();

 private:
  size_t slot(int32_t member, uint32_t chunk) const;

  int ranks_;
  bool track_;
  double chunk_bytes_;
  TransferSchedule schedule_;
  std::vector<uint32_t> latest_;    // per (member, chunk): the last delivery into it, or NONE
  std::vector<uint32_t> previous_;  // per transfer: the delivery into the same copy before it (REDUCE), or NONE
};

// The chunks a phase treats as its chunk j: base + p(j)*stride + t*inner_stride for t < width, p(j)
// = (*positions)[j] when given (a ring in another order than its members': the chunk of the member
// at ring position j), else j.
struct ChunkMap {
  uint32_t base = 0;
  uint32_t stride = 1;
  uint32_t width = 1;
  uint32_t inner_stride = 1;
  const std::vector<int>* positions = nullptr;
};

// Ring phases over `ring` (member indices in ring order), as NCCL runs them, n = ring size: n-1 steps
// from `first_step`; returns the steps used. Reduce-scatter leaves ring position r with the fully
// reduced chunk r; all-gather starts from position r owning chunk r and copies every chunk to all.
uint32_t ring_reduce_scatter(ScheduleBuilder& b, const std::vector<int>& ring, const ChunkMap& map,
                             uint32_t first_step);
uint32_t ring_all_gather(ScheduleBuilder& b, const std::vector<int>& ring, const ChunkMap& map, uint32_t first_step);

// A rooted tree over members: parent[i] is the parent of member i, -1 for the root (members outside
// the tree are absent: parent -2). Chunk `chunks[p]` is the tree's piece p; pieces are pipelined:
// piece p leaves a member one step after piece p-1. Reduce sends REDUCE toward the root (leaves
// first); broadcast sends COPY away from it. Returns the steps used.
inline constexpr int NOT_IN_TREE = -2;
uint32_t tree_reduce(ScheduleBuilder& b, const std::vector<int>& parent, const std::vector<uint32_t>& chunks,
                     uint32_t first_step);
uint32_t tree_broadcast(ScheduleBuilder& b, const std::vector<int>& parent, const std::vector<uint32_t>& chunks,
                        uint32_t first_step);
// The same with pieces of several chunks, all of a piece sent in one step.
uint32_t tree_reduce(ScheduleBuilder& b, const std::vector<int>& parent, const std::vector<std::vector<uint32_t>>& pieces,
                     uint32_t first_step);
uint32_t tree_broadcast(ScheduleBuilder& b, const std::vector<int>& parent,
                        const std::vector<std::vector<uint32_t>>& pieces, uint32_t first_step);

// NCCL pipelines a tree in chunks of its step size (the Simple protocol's 4 MiB buffer over 8
// steps, src/include/collectives.h and enqueue.cc): a tree phase carrying `bytes` is cut into
// ceil(bytes / 512 KiB) pieces, at least 1 and at most `at_most` (the pieces the schedule can make),
// so that small messages pay a few per-step latencies, not one per member.
inline constexpr double TREE_PIPELINE_CHUNK_BYTES = 512.0 * 1024;
uint32_t pipeline_pieces(double bytes, uint32_t at_most);
// `chunks` cut into min(pieces, chunks.size()) consecutive groups of near-equal size (the first
// ones one chunk larger).
std::vector<std::vector<uint32_t>> group_pieces(const std::vector<uint32_t>& chunks, uint32_t pieces);
// Edges from the root to the deepest member.
int tree_height(const std::vector<int>& parent);
// A rooted tree over members (parent as above) with each member's depth (edges up to the root) and
// height (edges down to its deepest descendant), -1 outside the tree; O(members) whatever the shape.
struct Tree {
  std::vector<int> parent;
  std::vector<int> depth;
  std::vector<int> height;
  int max_depth = 0;  // tree_height
};
Tree analyse_tree(std::vector<int> parent);
// Steps of `pieces` pieces pipelined through a tree of `height`: one piece leaves each member per step.
uint32_t pipelined_steps(size_t pieces, int height);
// NCCL's double binary tree over members first .. first+count-1 (src/graph/trees.cc): tree 0 is the
// in-order binary tree rooted at `first`, tree 1 its mirror (count even) or its shift by one (count
// odd), so that no member is an inner node of both. Entries outside the range are NOT_IN_TREE.
std::vector<int> binary_tree(int ranks, int first, int count, int tree);

// All-reduce of `chunks` among `members` (member indices, in tree order) over NCCL's two complementary
// binary trees, each reducing and then broadcasting half of the chunks, pipelined piece by piece.
// Returns the steps used.
uint32_t double_tree_all_reduce(ScheduleBuilder& b, const std::vector<int>& members,
                                const std::vector<uint32_t>& chunks, uint32_t first_step);

// Recursive halving reduce-scatter (member i ends with chunk i) and doubling all-gather (member i
// starts with chunk i), n = b.ranks() a power of two, one transfer per chunk; returns log2(n).
uint32_t halving_reduce_scatter(ScheduleBuilder& b, uint32_t first_step);
uint32_t doubling_all_gather(ScheduleBuilder& b, uint32_t first_step);

// make_schedule's (and flow_edges') precondition: checks that `group` is well formed and that
// `algorithm` has a schedule for `op` on it; returns the group's placement.
GroupPlacement checked_placement(core::CollectiveOp op, Algorithm algorithm, const GroupView& group);

// NCCL's ring of channel c over m nodes of k members each (members node-major): every node in order,
// entered at its member c and left from its member c-1 (mod k), so that channel c's inter-node hop
// leaves each node from a different member, hence through a different NIC.
std::vector<int> channel_ring(int k, int m, int c);
// The chain of a ring broadcast or reduce along `ring`, rooted at member 0: parent[member], -1 for
// the root. Broadcast: down the ring from the root; reduce: from the root's successor around to it.
std::vector<int> ring_chain(const std::vector<int>& ring, bool broadcast);

// The algorithms, composed from the phases above (make_schedule checks applicability first).
TransferSchedule ring_schedule(core::CollectiveOp op, core::Bytes size, const GroupView& group);
// NCCL's hierarchy: reduce-scatter inside each node, the rail shards across nodes with `across` (RING,
// or TREE for all_reduce: NCCL's tree algorithm is this very shape, trees spanning nodes), all-gather
// inside each node. The schedule is labelled HIERARCHICAL for RING across, TREE for TREE across.
TransferSchedule hierarchical_schedule(core::CollectiveOp op, core::Bytes size, const GroupView& group,
                                       Algorithm across = Algorithm::RING);
TransferSchedule tree_schedule(core::CollectiveOp op, core::Bytes size, const GroupView& group);
TransferSchedule halving_doubling_schedule(core::CollectiveOp op, core::Bytes size, const GroupView& group);
TransferSchedule direct_schedule(core::CollectiveOp op, core::Bytes size, const GroupView& group);
// IN_NETWORK or NVLS: every member sends to the switch, which reduces and sends back.
TransferSchedule switch_schedule(core::CollectiveOp op, Algorithm algorithm, core::Bytes size, const GroupView& group);

}  // namespace trainsim::network::detail
