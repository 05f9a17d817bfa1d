// flow_edges: the edges flow_plan finds in each schedule of schedule_*.cpp, in closed form.
//
// Every phase those schedules compose uses each of its edges in consecutive steps: a ring hop once a
// step for n-1 steps, a pipelined tree edge once a piece from the step its piece 0 gets there, an
// exchange once. So a phase contributes, per edge, its bytes and one run of steps; EdgeList merges the
// runs of all phases into flow_plan's edges, counting a step shared by two phases once (the two trees
// of a double tree can use one edge in the same steps). Step numbers follow the builders exactly:
// phases start where the previous one ended, and phases that run at once (all nodes, all rails, both
// trees) share them.

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>
#include <vector>

#include "network/schedule.hpp"
#include "network/schedule_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::network {
namespace {

using core::CollectiveOp;

size_t at(int i) { return static_cast<size_t>(i); }

// One phase's use of the edge src -> dst: `bytes` in the steps [first, last).
struct Run {
  int32_t src;
  int32_t dst;
  uint32_t first;
  uint32_t last;
  double bytes;
};

class EdgeList {
 public:
  explicit EdgeList(int ranks) : ranks_(ranks) {}

  void add(int32_t src, int32_t dst, double bytes, uint32_t first_step, uint32_t steps) {
    runs_.push_back(Run{src, dst, first_step, first_step + steps, bytes});
  }

  // The edges ordered by (src, dst), IN_NETWORK first. A counting sort by source keeps this linear
  // but for the sort of each source's own runs (its out-degree times the phases using it).
  std::vector<FlowEdge> finish() {
    std::vector<size_t> begin(at(ranks_) + 2, 0);
    for (const Run& r : runs_) ++begin[at(r.src + 2)];
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    std::vector<Run> sorted(runs_.size());
    for (const Run& r : runs_) sorted[begin[at(r.src + 1)]++] = r;  // begin[b] moves to the end of bucket b
    const auto by_dst = [](const Run& a, const Run& b) { return std::tie(a.dst, a.first) < std::tie(b.dst, b.first); };
    for (size_t s = 0, first = 0; s + 1 < begin.size(); first = begin[s], ++s) {
      const auto from = sorted.begin() + static_cast<std::ptrdiff_t>(first);
      const auto to = sorted.begin() + static_cast<std::ptrdiff_t>(begin[s]);
      if (!std::is_sorted(from, to, by_dst)) std::sort(from, to, by_dst);
    }
    std::vector<FlowEdge> edges;
    uint32_t counted = 0;  // the steps of edges.back() before this one are counted
    for (const Run& r : sorted) {
      if (edges.empty() || edges.back().src != r.src || edges.back().dst != r.dst) {
        edges.push_back(FlowEdge{r.src, r.dst, 0, 0});
        counted = 0;
      }
      FlowEdge& e = edges.back();
      e.bytes += r.bytes;
      const uint32_t from = std::max(r.first, counted);
      if (r.last > from) {
        e.steps += r.last - from;
        counted = r.last;
      }
    }
    return edges;
  }

 private:
  int ranks_;
  std::vector<Run> runs_;
};

// ring_reduce_scatter or ring_all_gather over `count` members in ring order, member(i) the i-th: each
// sends its successor `step_bytes` (the phase's chunk width) in each of count-1 steps.
template <class Member>
uint32_t ring_phase(EdgeList& edges, int count, const Member& member, double step_bytes, uint32_t first_step) {
  if (count <= 1) return 0;
  const uint32_t steps = static_cast<uint32_t>(count - 1);
  for (int i = 0; i < count; ++i) edges.add(member(i), member((i + 1) % count), steps * step_bytes, first_step, steps);
  return steps;
}
// The same over the members base, base + stride, ..
uint32_t ring_phase(EdgeList& edges, int base, int stride, int count, double step_bytes, uint32_t first_step) {
  return ring_phase(edges, count, [&](int i) { return base + i * stride; }, step_bytes, first_step);
}


// tree_reduce (toward the root) or tree_broadcast (away from it) of `pieces` pieces of `piece_bytes`
// over `tree`, position x being member base + x*stride: piece p crosses the edge of member x in
// step first_step + p + height(x) (reduce) or + depth(x) - 1 (broadcast). Returns the steps used.
uint32_t tree_phase(EdgeList& edges, const detail::Tree& tree, bool reduce, int base, int stride, uint32_t pieces,
                    double piece_bytes, uint32_t first_step) {
  for (size_t x = 0; x < tree.parent.size(); ++x) {
    const int up = tree.parent[x];
    if (up < 0) continue;
    const int32_t member = base + static_cast<int>(x) * stride;
    const int32_t parent = base + up * stride;
    if (reduce) {
      edges.add(member, parent, pieces * piece_bytes, first_step + static_cast<uint32_t>(tree.height[x]), pieces);
    } else {
      edges.add(parent, member, pieces * piece_bytes, first_step + static_cast<uint32_t>(tree.depth[x] - 1), pieces);
    }
  }
  return detail::pipelined_steps(pieces, tree.max_depth);
}

bool reduces(CollectiveOp op) { return op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::REDUCE_SCATTER; }
bool gathers(CollectiveOp op) { return op == CollectiveOp::ALL_REDUCE || op == CollectiveOp::ALL_GATHER; }

// ring_schedule: `channels` rings (channel_ring, or members in order for one), each with 1/channels
// of the buffer; broadcast and reduce a chain per channel cut into max(1, n-1) pieces, the other ops
// n chunks per channel. The channels run in the same steps.
std::vector<FlowEdge> ring_edges(CollectiveOp op, double size, const GroupPlacement& placement) {
  const int n = placement.ranks;
  const int channels = ring_channels(placement);
  EdgeList edges(n);
  std::vector<int> ring(at(n));
  std::iota(ring.begin(), ring.end(), 0);
  for (int c = 0; c < channels; ++c) {
    if (channels > 1) ring = detail::channel_ring(placement.ranks_per_node, placement.nodes, c);
    if (op == CollectiveOp::BROADCAST || op == CollectiveOp::REDUCE) {
      const uint32_t pieces = static_cast<uint32_t>(std::max(1, n - 1));
      tree_phase(edges, detail::analyse_tree(detail::ring_chain(ring, op == CollectiveOp::BROADCAST)),
                 op == CollectiveOp::REDUCE, 0, 1, pieces, size / (channels * pieces), 0);
      continue;
    }
    const double chunk = size / (static_cast<double>(channels) * n);
    const auto member = [&](int i) { return ring[at(i)]; };
    uint32_t step = 0;
    if (reduces(op)) step += ring_phase(edges, n, member, chunk, step);
    if (gathers(op)) ring_phase(edges, n, member, chunk, step);
  }
  return edges.finish();
}

// hierarchical_schedule: n chunks of size/n; node a holds members a*k .. a*k+k-1 and rail l members
// l, l+k, ..; the rings inside the nodes move m chunks a step, those on the rails one.
std::vector<FlowEdge> hierarchical_edges(CollectiveOp op, double size, int k, int m, Algorithm across) {
  const int n = k * m;
  const double chunk = size / n;
  EdgeList edges(n);
  const auto on_nodes = [&](uint32_t first_step) {
    uint32_t used = 0;
    for (int a = 0; a < m; ++a) used = ring_phase(edges, a * k, 1, k, m * chunk, first_step);
    return used;
  };
  const auto on_rails = [&](uint32_t first_step) {
    uint32_t used = 0;
    for (int l = 0; l < k; ++l) used = ring_phase(edges, l, k, m, chunk, first_step);
    return used;
  };
  uint32_t step = 0;
  if (across == Algorithm::TREE) {
    step += on_nodes(step);
    // double_tree_all_reduce on every rail: the rail's m chunks alternate between the two trees over
    // its positions, the same trees on every rail.
    if (m > 1) {
      // Tree t carries `chunks[t]` chunks, pipelined in pieces of about TREE_PIPELINE_CHUNK_BYTES
      // (schedule_builder.hpp); only the total and the piece count matter here.
      const std::array<uint32_t, 2> chunks{static_cast<uint32_t>((m + 1) / 2), static_cast<uint32_t>(m / 2)};
      std::array<uint32_t, 2> pieces{};
      for (size_t t = 0; t < 2; ++t) pieces[t] = chunks[t] > 0 ? detail::pipeline_pieces(chunks[t] * chunk, chunks[t]) : 0;
      const std::array<detail::Tree, 2> trees{detail::analyse_tree(detail::binary_tree(m, 0, m, 0)),
                                              detail::analyse_tree(detail::binary_tree(m, 0, m, 1))};
      for (bool reduce : {true, false}) {
        uint32_t used = 0;
        for (int l = 0; l < k; ++l) {
          for (size_t t = 0; t < 2; ++t) {
            if (pieces[t] > 0) {
              used = std::max(used, tree_phase(edges, trees[t], reduce, l, k, pieces[t], chunks[t] * chunk / pieces[t], step));
            }
          }
        }
        step += used;
      }
    }
    on_nodes(step);
    return edges.finish();
  }
  if (reduces(op)) {
    step += on_nodes(step);
    step += on_rails(step);
  }
  if (gathers(op)) {
    step += on_rails(step);
    on_nodes(step);
  }
  return edges.finish();
}

// tree_schedule: two binary trees, each carrying half of the buffer in pipeline_pieces(size / 2,
// max(1, heights)) pieces; for
// broadcast and reduce both span members 1 .. n-1 and hang below member 0.
std::vector<FlowEdge> tree_edges(CollectiveOp op, double size, int n) {
  const bool rooted = op != CollectiveOp::ALL_REDUCE;
  std::array<detail::Tree, 2> trees;
  for (int t = 0; t < 2; ++t) {
    std::vector<int> parent = rooted ? detail::binary_tree(n, 1, n - 1, t) : detail::binary_tree(n, 0, n, t);
    if (rooted) {
      for (int& p : parent) p = p == -1 ? 0 : p;
      parent[0] = -1;
    }
    trees[at(t)] = detail::analyse_tree(std::move(parent));
  }
  const uint32_t pieces =
      detail::pipeline_pieces(size / 2, static_cast<uint32_t>(std::max({1, trees[0].max_depth, trees[1].max_depth})));
  const double piece_bytes = size / (2 * pieces);
  EdgeList edges(n);
  uint32_t step = 0;
  if (op != CollectiveOp::BROADCAST) {
    uint32_t used = 0;
    for (const detail::Tree& tree : trees) used = std::max(used, tree_phase(edges, tree, true, 0, 1, pieces, piece_bytes, step));
    step += used;
  }
  if (op != CollectiveOp::REDUCE) {
    for (const detail::Tree& tree : trees) tree_phase(edges, tree, false, 0, 1, pieces, piece_bytes, step);
  }
  return edges.finish();
}

// halving_doubling_schedule: at distance d member i sends i^d d chunks of size/n, one step per d.
std::vector<FlowEdge> halving_doubling_edges(CollectiveOp op, double size, int n) {
  EdgeList edges(n);
  const double chunk = size / n;
  uint32_t step = 0;
  if (op != CollectiveOp::ALL_GATHER) {
    for (int d = n / 2; d >= 1; d /= 2, ++step) {
      for (int i = 0; i < n; ++i) edges.add(i, i ^ d, d * chunk, step, 1);
    }
  }
  if (op != CollectiveOp::REDUCE_SCATTER) {
    for (int d = 1; d < n; d *= 2, ++step) {
      for (int i = 0; i < n; ++i) edges.add(i, i ^ d, d * chunk, step, 1);
    }
  }
  return edges.finish();
}

// direct_schedule: one block of size/n per ordered pair in one step, already in (src, dst) order.
std::vector<FlowEdge> direct_edges(double size, int n) {
  std::vector<FlowEdge> edges;
  edges.reserve(at(n) * at(n - 1));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j) edges.push_back(FlowEdge{i, j, size / n, 1});
    }
  }
  return edges;
}

// collnet_schedule: the node rings move m chunks of size/n a step (k-1 steps each way), and each
// member sends its rail's m chunks up in step k-1 and gets them back in step k.
std::vector<FlowEdge> collnet_edges(double size, int k, int m) {
  const int n = k * m;
  const double chunk = size / n;
  EdgeList edges(n);
  const uint32_t ring = static_cast<uint32_t>(k - 1);
  for (int a = 0; a < m; ++a) {
    ring_phase(edges, a * k, 1, k, m * chunk, 0);
    ring_phase(edges, a * k, 1, k, m * chunk, ring + 2);
  }
  for (int i = 0; i < n; ++i) {
    edges.add(i, IN_NETWORK, m * chunk, ring, 1);
    edges.add(IN_NETWORK, i, m * chunk, ring + 1, 1);
  }
  return edges.finish();
}

// switch_schedule: step 0 up to the switch, step 1 back down; all_gather and reduce_scatter in n
// chunks of size/n, the other ops in one chunk.
std::vector<FlowEdge> switch_edges(CollectiveOp op, double size, int n) {
  EdgeList edges(n);
  const double shard = size / n;
  for (int i = 0; i < n; ++i) {
    switch (op) {
      case CollectiveOp::ALL_GATHER:
        edges.add(i, IN_NETWORK, shard, 0, 1);
        break;
      case CollectiveOp::BROADCAST:
        if (i == 0) edges.add(i, IN_NETWORK, size, 0, 1);
        break;
      default:  // every chunk of the buffer
        edges.add(i, IN_NETWORK, size, 0, 1);
        break;
    }
  }
  for (int i = 0; i < n; ++i) {
    switch (op) {
      case CollectiveOp::REDUCE_SCATTER:
        edges.add(IN_NETWORK, i, shard, 1, 1);
        break;
      case CollectiveOp::ALL_GATHER:
        edges.add(IN_NETWORK, i, (n - 1) * shard, 1, 1);
        break;
      case CollectiveOp::BROADCAST:
        if (i != 0) edges.add(IN_NETWORK, i, size, 1, 1);
        break;
      case CollectiveOp::REDUCE:
        if (i == 0) edges.add(IN_NETWORK, i, size, 1, 1);
        break;
      default:
        edges.add(IN_NETWORK, i, size, 1, 1);
        break;
    }
  }
  return edges.finish();
}

}  // namespace

std::vector<FlowEdge> flow_edges(CollectiveOp op, Algorithm algorithm, core::Bytes size, const GroupView& group) {
  const GroupPlacement placement = detail::checked_placement(op, algorithm, group);
  const int n = group.size();
  if (n == 1) return {};
  const double bytes = size.value();
  switch (algorithm) {
    case Algorithm::RING:
      return ring_edges(op, bytes, placement);
    case Algorithm::TREE:
      if (tree_is_hierarchical(op, placement)) {
        return hierarchical_edges(op, bytes, placement.ranks_per_node, placement.nodes, Algorithm::TREE);
      }
      return tree_edges(op, bytes, n);
    case Algorithm::HALVING_DOUBLING:
      return halving_doubling_edges(op, bytes, n);
    case Algorithm::DIRECT:
      return direct_edges(bytes, n);
    case Algorithm::HIERARCHICAL:
      // Members are sorted, so node-major, and the placement is uniform (checked_placement).
      return hierarchical_edges(op, bytes, placement.ranks_per_node, placement.nodes, Algorithm::RING);
    case Algorithm::IN_NETWORK:
      if (collnet_applies(op, placement)) return collnet_edges(bytes, placement.ranks_per_node, placement.nodes);
      return switch_edges(op, bytes, n);
    case Algorithm::NVLS:
      return switch_edges(op, bytes, n);
    case Algorithm::AUTO:
      break;
  }
  TRAINSIM_CHECK(false, "AUTO is resolved by choose_algorithm");
  return {};
}

}  // namespace trainsim::network
