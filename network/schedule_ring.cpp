// Ring phases and the algorithms built from them: RING and HIERARCHICAL.

#include <fmt/format.h>

#include "network/schedule_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::network::detail {
namespace {

using core::CollectiveOp;

uint32_t wrap(int64_t i, int n) { return static_cast<uint32_t>(((i % n) + n) % n); }

// Sends every chunk of ring chunk `j` from `src` to `dst`.
void send_ring_chunk(ScheduleBuilder& b, const ChunkMap& map, uint32_t j, int src, int dst, ChunkAction action,
                     uint32_t step) {
  const uint32_t p = map.positions != nullptr ? static_cast<uint32_t>((*map.positions)[j]) : j;
  for (uint32_t t = 0; t < map.width; ++t)
    b.add(src, dst, map.base + p * map.stride + t * map.inner_stride, action, step);
}

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

}  // namespace

// Chunk c travels from position c+1 around the ring, each hop adding the holder's contribution, and
// ends fully reduced at position c after n-1 hops: at step s position r sends chunk r-1-s.
uint32_t ring_reduce_scatter(ScheduleBuilder& b, const std::vector<int>& ring, const ChunkMap& map,
                             uint32_t first_step) {
  const int n = static_cast<int>(ring.size());
  for (int s = 0; s + 1 < n; ++s) {
    for (int r = 0; r < n; ++r) {
      send_ring_chunk(b, map, wrap(r - 1 - s, n), ring[static_cast<size_t>(r)], ring[wrap(r + 1, n)],
                      ChunkAction::REDUCE, first_step + static_cast<uint32_t>(s));
    }
  }
  return static_cast<uint32_t>(n - 1);
}

// At step s position r forwards chunk r-s: its own first, then the one it received last step.
uint32_t ring_all_gather(ScheduleBuilder& b, const std::vector<int>& ring, const ChunkMap& map, uint32_t first_step) {
  const int n = static_cast<int>(ring.size());
  for (int s = 0; s + 1 < n; ++s) {
    for (int r = 0; r < n; ++r) {
      send_ring_chunk(b, map, wrap(r - s, n), ring[static_cast<size_t>(r)], ring[wrap(r + 1, n)], ChunkAction::COPY,
                      first_step + static_cast<uint32_t>(s));
    }
  }
  return static_cast<uint32_t>(n - 1);
}

std::vector<int> channel_ring(int k, int m, int c) {
  std::vector<int> ring;
  ring.reserve(static_cast<size_t>(k) * static_cast<size_t>(m));
  for (int a = 0; a < m; ++a) {
    for (int j = 0; j < k; ++j) ring.push_back(a * k + (c + j) % k);
  }
  return ring;
}

std::vector<int> ring_chain(const std::vector<int>& ring, bool broadcast) {
  const int n = static_cast<int>(ring.size());
  int root = 0;
  while (ring[static_cast<size_t>(root)] != 0) ++root;
  std::vector<int> parent(static_cast<size_t>(n), -1);
  for (int i = 1; i < n; ++i) {
    const int member = ring[wrap(root + i, n)];
    parent[static_cast<size_t>(member)] = broadcast ? ring[wrap(root + i - 1, n)] : ring[wrap(root + i + 1, n)];
  }
  return parent;
}

// NCCL's ring: ring_channels() channels (one ring over every member per channel, channel_ring on a
// uniform group spanning nodes), each carrying its share of the buffer. Broadcast and reduce are a
// pipelined chain per channel, cut into max(1, n-1) pieces so that the pipeline fills as fast as it
// drains; the other ops cut each channel's share into n chunks.
TransferSchedule ring_schedule(CollectiveOp op, core::Bytes size, const GroupView& group) {
  const int n = group.size();
  const GroupPlacement placement = GroupPlacement::of(group.ranks, group.topology->cluster());
  const int channels = ring_channels(placement);
  const auto ring_of = [&](int c) {
    return channels == 1 ? iota(n) : channel_ring(placement.ranks_per_node, placement.nodes, c);
  };
  const uint32_t uc = static_cast<uint32_t>(channels);
  if (op == CollectiveOp::BROADCAST || op == CollectiveOp::REDUCE) {
    const uint32_t pieces = static_cast<uint32_t>(std::max(1, n - 1));
    ScheduleBuilder b(op, Algorithm::RING, n, uc * pieces, size.value() / (uc * pieces));
    for (uint32_t c = 0; c < uc; ++c) {
      std::vector<uint32_t> chunks(pieces);
      for (uint32_t p = 0; p < pieces; ++p) chunks[p] = c * pieces + p;
      const std::vector<int> parent = ring_chain(ring_of(static_cast<int>(c)), op == CollectiveOp::BROADCAST);
      if (op == CollectiveOp::BROADCAST) {
        tree_broadcast(b, parent, chunks, 0);
      } else {
        tree_reduce(b, parent, chunks, 0);
      }
    }
    return b.finish();
  }
  const uint32_t un = static_cast<uint32_t>(n);
  ScheduleBuilder b(op, Algorithm::RING, n, uc * un, size.value() / (uc * un));
  // Channel c's chunk of ring position j is the share of the member there: c*n + ring[j].
  std::vector<std::vector<int>> rings;
  for (uint32_t c = 0; c < uc; ++c) rings.push_back(ring_of(static_cast<int>(c)));
  const auto map_of = [&](uint32_t c) { return ChunkMap{c * un, 1, 1, 1, &rings[c]}; };
  uint32_t used = 0;
  if (op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::REDUCE_SCATTER) {
    for (uint32_t c = 0; c < uc; ++c) used = ring_reduce_scatter(b, rings[c], map_of(c), 0);
  }
  if (op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::ALL_GATHER) {
    for (uint32_t c = 0; c < uc; ++c) ring_all_gather(b, rings[c], map_of(c), used);
  }
  return b.finish();
}

// Chunk a*k + l belongs to local rank l of node a (member a*k + l: members are node-major). Inside
// a node the ring's chunk l is rail l's share {a*k + l : all a}; on rail l the ring's chunk a is
// chunk a*k + l.
TransferSchedule hierarchical_schedule(CollectiveOp op, core::Bytes size, const GroupView& group, Algorithm across) {
  TRAINSIM_CHECK(across == Algorithm::RING || (across == Algorithm::TREE && op == CollectiveOp::ALL_REDUCE),
                 "the phase across nodes is a ring, or a tree for all_reduce");
  const int n = group.size();
  const Topology& topology = *group.topology;
  int k = 0;
  while (k < n && topology.node_of(group.ranks[static_cast<size_t>(k)]) == topology.node_of(group.ranks[0])) ++k;
  const int m = n / k;
  TRAINSIM_CHECK(m * k == n, fmt::format("hierarchical needs the same number of members on every node, found {} "
                                         "on the first node of a group of {}",
                                         k, n));
  const uint32_t uk = static_cast<uint32_t>(k);
  const uint32_t um = static_cast<uint32_t>(m);
  ScheduleBuilder b(op, across == Algorithm::TREE ? Algorithm::TREE : Algorithm::HIERARCHICAL, n,
                    static_cast<uint32_t>(n), size.value() / n);
  const ChunkMap in_node{0, 1, um, uk};
  std::vector<std::vector<int>> nodes(um);
  std::vector<std::vector<int>> rails(uk);
  for (int i = 0; i < n; ++i) {
    nodes[static_cast<size_t>(i / k)].push_back(i);
    rails[static_cast<size_t>(i % k)].push_back(i);
  }
  // Each phase runs on all nodes (or rails) at once, so they share step numbers.
  const auto on_nodes = [&](auto phase, uint32_t step) {
    uint32_t used = 0;
    for (const std::vector<int>& node : nodes) used = phase(b, node, in_node, step);
    return used;
  };
  const auto on_rails = [&](auto phase, uint32_t step) {
    uint32_t used = 0;
    for (uint32_t l = 0; l < uk; ++l) used = phase(b, rails[l], ChunkMap{l, uk, 1, 1}, step);
    return used;
  };
  uint32_t step = 0;
  if (across == Algorithm::TREE) {
    step += on_nodes(ring_reduce_scatter, step);
    uint32_t used = 0;
    for (uint32_t l = 0; l < uk; ++l) {
      std::vector<uint32_t> shard(um);
      for (uint32_t a = 0; a < um; ++a) shard[a] = a * uk + l;
      used = double_tree_all_reduce(b, rails[l], shard, step);
    }
    step += used;
    on_nodes(ring_all_gather, step);
    return b.finish();
  }
  if (op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::REDUCE_SCATTER) {
    step += on_nodes(ring_reduce_scatter, step);
    step += on_rails(ring_reduce_scatter, step);
  }
  if (op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::ALL_GATHER) {
    step += on_rails(ring_all_gather, step);
    on_nodes(ring_all_gather, step);
  }
  return b.finish();
}

}  // namespace trainsim::network::detail
