// Pairwise-exchange algorithms (HALVING_DOUBLING, DIRECT) and switch reductions (IN_NETWORK, NVLS).

#include "network/schedule_builder.hpp"

namespace trainsim::network::detail {
namespace {

using core::CollectiveOp;

// The d chunks that member i holds before it exchanges at distance d: they agree with i on every bit
// from log2(d) up.
uint32_t block_of(int i, int d) { return static_cast<uint32_t>(i & ~(d - 1)); }

}  // namespace

// Thakur, Rabenseifner & Gropp 2005, section 4.1: at distance d = n/2, n/4, .., 1 each member keeps
// the half of its chunks its own index selects and sends the partner (i ^ d) the other half, which
// is the partner's half.
uint32_t halving_reduce_scatter(ScheduleBuilder& b, uint32_t first_step) {
  const int n = b.ranks();
  uint32_t step = first_step;
  for (int d = n / 2; d >= 1; d /= 2, ++step) {
    for (int i = 0; i < n; ++i) {
      const int partner = i ^ d;
      for (uint32_t t = 0; t < static_cast<uint32_t>(d); ++t)
        b.add(i, partner, block_of(partner, d) + t, ChunkAction::REDUCE, step);
    }
  }
  return step - first_step;
}

// Section 4.2 (recursive doubling): at distance d = 1, 2, .., n/2 each member sends the partner the
// d chunks it holds, doubling them.
uint32_t doubling_all_gather(ScheduleBuilder& b, uint32_t first_step) {
  const int n = b.ranks();
  uint32_t step = first_step;
  for (int d = 1; d < n; d *= 2, ++step) {
    for (int i = 0; i < n; ++i) {
      for (uint32_t t = 0; t < static_cast<uint32_t>(d); ++t)
        b.add(i, i ^ d, block_of(i, d) + t, ChunkAction::COPY, step);
    }
  }
  return step - first_step;
}

TransferSchedule halving_doubling_schedule(CollectiveOp op, core::Bytes size, const GroupView& group) {
  const int n = group.size();
  ScheduleBuilder b(op, Algorithm::HALVING_DOUBLING, n, static_cast<uint32_t>(n), size.value() / n);
  uint32_t step = 0;
  if (op != CollectiveOp::ALL_GATHER) step += halving_reduce_scatter(b, step);
  if (op != CollectiveOp::REDUCE_SCATTER) doubling_all_gather(b, step);
  return b.finish();
}

// One step. all_to_all: chunk i*n + j is the block member i sends member j (size/n bytes).
// all_gather: member i sends its chunk i to everyone; reduce_scatter: member i sends chunk j to j.
TransferSchedule direct_schedule(CollectiveOp op, core::Bytes size, const GroupView& group) {
  const int n = group.size();
  const uint32_t un = static_cast<uint32_t>(n);
  const bool a2a = op == CollectiveOp::ALL_TO_ALL;
  ScheduleBuilder b(op, Algorithm::DIRECT, n, a2a ? un * un : un, size.value() / n, !a2a);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const uint32_t ui = static_cast<uint32_t>(i);
      const uint32_t uj = static_cast<uint32_t>(j);
      if (a2a) {
        b.add(i, j, ui * un + uj, ChunkAction::COPY, 0);
      } else if (op == CollectiveOp::ALL_GATHER) {
        b.add(i, j, ui, ChunkAction::COPY, 0);
      } else {
        b.add(i, j, uj, ChunkAction::REDUCE, 0);
      }
    }
  }
  return b.finish();
}

// NCCL's CollNet all_reduce (collnet_applies): n chunks as in hierarchical_schedule; a ring
// reduce-scatter inside each node leaves local member l with the node's sum of its rail's chunks
// {a*k + l}, which it sends to the switch (step k-1) and gets back reduced over every node (step k);
// a ring all-gather inside each node follows.
TransferSchedule collnet_schedule(core::Bytes size, const GroupView& group, const GroupPlacement& placement) {
  const int n = group.size();
  const int k = placement.ranks_per_node;
  const int m = placement.nodes;
  const uint32_t uk = static_cast<uint32_t>(k);
  const uint32_t um = static_cast<uint32_t>(m);
  ScheduleBuilder b(CollectiveOp::ALL_REDUCE, Algorithm::IN_NETWORK, n, static_cast<uint32_t>(n), size.value() / n);
  const ChunkMap in_node{0, 1, um, uk};
  std::vector<std::vector<int>> nodes(um);
  for (int i = 0; i < n; ++i) nodes[static_cast<size_t>(i / k)].push_back(i);
  uint32_t step = 0;
  for (const std::vector<int>& node : nodes) ring_reduce_scatter(b, node, in_node, step);
  step += uk - 1;
  for (uint32_t up = 0; up < 2; ++up) {
    for (int i = 0; i < n; ++i) {
      const uint32_t l = static_cast<uint32_t>(i % k);
      for (uint32_t a = 0; a < um; ++a) {
        if (up == 0) {
          b.add(i, IN_NETWORK, a * uk + l, ChunkAction::REDUCE, step);
        } else {
          b.add(IN_NETWORK, i, a * uk + l, ChunkAction::COPY, step);
        }
      }
    }
    ++step;
  }
  for (const std::vector<int>& node : nodes) ring_all_gather(b, node, in_node, step);
  return b.finish();
}

// Step 0 up to the switch, step 1 back down. all_reduce, broadcast and reduce move the whole buffer
// as one chunk; reduce_scatter and all_gather cut it into one chunk per member. CollNet's all_reduce
// (collnet_applies) is collnet_schedule.
TransferSchedule switch_schedule(CollectiveOp op, Algorithm algorithm, core::Bytes size, const GroupView& group) {
  const int n = group.size();
  if (algorithm == Algorithm::IN_NETWORK) {
    const GroupPlacement placement = GroupPlacement::of(group.ranks, group.topology->cluster());
    if (collnet_applies(op, placement)) return collnet_schedule(size, group, placement);
  }
  const bool sharded = op == CollectiveOp::REDUCE_SCATTER || op == CollectiveOp::ALL_GATHER;
  const uint32_t chunks = sharded ? static_cast<uint32_t>(n) : 1;
  ScheduleBuilder b(op, algorithm, n, chunks, size.value() / chunks);
  for (int i = 0; i < n; ++i) {
    const uint32_t own = static_cast<uint32_t>(i);
    switch (op) {
      case CollectiveOp::ALL_GATHER:
        b.add(i, IN_NETWORK, own, ChunkAction::COPY, 0);
        break;
      case CollectiveOp::BROADCAST:
        if (i == 0) b.add(i, IN_NETWORK, 0, ChunkAction::COPY, 0);
        break;
      default:
        for (uint32_t c = 0; c < chunks; ++c) b.add(i, IN_NETWORK, c, ChunkAction::REDUCE, 0);
        break;
    }
  }
  for (int i = 0; i < n; ++i) {
    const uint32_t own = static_cast<uint32_t>(i);
    switch (op) {
      case CollectiveOp::REDUCE_SCATTER:
        b.add(IN_NETWORK, i, own, ChunkAction::COPY, 1);
        break;
      case CollectiveOp::ALL_GATHER:
        for (uint32_t c = 0; c < chunks; ++c) {
          if (c != own) b.add(IN_NETWORK, i, c, ChunkAction::COPY, 1);
        }
        break;
      case CollectiveOp::BROADCAST:
        if (i != 0) b.add(IN_NETWORK, i, 0, ChunkAction::COPY, 1);
        break;
      case CollectiveOp::REDUCE:
        if (i == 0) b.add(IN_NETWORK, i, 0, ChunkAction::COPY, 1);
        break;
      default:
        b.add(IN_NETWORK, i, 0, ChunkAction::COPY, 1);
        break;
    }
  }
  return b.finish();
}

}  // namespace trainsim::network::detail
