// Tree phases (one generic builder for any rooted tree) and NCCL's double binary tree: TREE.

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "network/schedule_builder.hpp"

namespace trainsim::network::detail {
namespace {

using core::CollectiveOp;

size_t at(int i) { return static_cast<size_t>(i); }

// Members of the tree ordered by `key`, ties by member index.
std::vector<int> ordered_by(const std::vector<int>& key) {
  std::vector<int> order;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] >= 0) order.push_back(static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)]; });
  return order;
}

// NCCL's in-order binary tree over 0 .. count-1 (ncclGetBtree): the parent of x clears x's lowest
// set bit and sets the next one up, or only clears it when that leaves the range.
int btree_parent(int x, int count) {
  if (x == 0) return -1;
  const int bit = x & -x;
  const int up = (x ^ bit) | (bit << 1);
  return up < count ? up : x ^ bit;
}

}  // namespace

Tree analyse_tree(std::vector<int> parent) {
  Tree t;
  t.parent = std::move(parent);
  const size_t count = t.parent.size();
  t.depth.assign(count, -1);
  std::vector<int> path;
  for (size_t i = 0; i < count; ++i) {
    if (t.parent[i] == NOT_IN_TREE || t.depth[i] >= 0) continue;
    int j = static_cast<int>(i);
    for (; t.depth[at(j)] < 0 && t.parent[at(j)] >= 0; j = t.parent[at(j)]) path.push_back(j);
    int d = std::max(0, t.depth[at(j)]);
    t.depth[at(j)] = d;
    for (auto p = path.rbegin(); p != path.rend(); ++p) t.depth[at(*p)] = ++d;
    path.clear();
  }
  t.max_depth = std::max(0, *std::max_element(t.depth.begin(), t.depth.end()));
  std::vector<size_t> begin(at(t.max_depth) + 2, 0);
  for (int d : t.depth) {
    if (d >= 0) ++begin[at(d + 1)];
  }
  std::partial_sum(begin.begin(), begin.end(), begin.begin());
  std::vector<int> by_depth(begin.back());
  t.height.assign(count, -1);
  for (size_t i = 0; i < count; ++i) {
    if (t.depth[i] < 0) continue;
    by_depth[begin[at(t.depth[i])]++] = static_cast<int>(i);
    t.height[i] = 0;
  }
  for (auto i = by_depth.rbegin(); i != by_depth.rend(); ++i) {
    const int up = t.parent[at(*i)];
    if (up >= 0) t.height[at(up)] = std::max(t.height[at(up)], t.height[at(*i)] + 1);
  }
  return t;
}

uint32_t pipelined_steps(size_t pieces, int height) {
  return height > 0 ? static_cast<uint32_t>(pieces) + static_cast<uint32_t>(height) - 1 : 0;
}

int tree_height(const std::vector<int>& parent) { return analyse_tree(parent).max_depth; }

uint32_t pipeline_pieces(double bytes, uint32_t at_most) {
  const double wanted = std::ceil(bytes / TREE_PIPELINE_CHUNK_BYTES);
  return static_cast<uint32_t>(std::clamp(wanted, 1.0, std::max(1.0, static_cast<double>(at_most))));
}

std::vector<std::vector<uint32_t>> group_pieces(const std::vector<uint32_t>& chunks, uint32_t pieces) {
  std::vector<std::vector<uint32_t>> out(std::min<size_t>(pieces, chunks.size()));
  const size_t base = out.empty() ? 0 : chunks.size() / out.size();
  const size_t extra = out.empty() ? 0 : chunks.size() % out.size();
  size_t next = 0;
  for (size_t p = 0; p < out.size(); ++p) {
    const size_t take = base + (p < extra ? 1 : 0);
    out[p].assign(chunks.begin() + static_cast<std::ptrdiff_t>(next), chunks.begin() + static_cast<std::ptrdiff_t>(next + take));
    next += take;
  }
  return out;
}

uint32_t tree_reduce(ScheduleBuilder& b, const std::vector<int>& parent, const std::vector<std::vector<uint32_t>>& pieces,
                     uint32_t first_step) {
  const Tree tree = analyse_tree(parent);
  const std::vector<int>& height = tree.height;
  const std::vector<int> leaves_first = ordered_by(height);
  for (size_t p = 0; p < pieces.size(); ++p) {
    for (int i : leaves_first) {
      const int to = parent[static_cast<size_t>(i)];
      if (to < 0) continue;
      for (uint32_t chunk : pieces[p]) {
        b.add(i, to, chunk, ChunkAction::REDUCE,
              first_step + static_cast<uint32_t>(p) + static_cast<uint32_t>(height[static_cast<size_t>(i)]));
      }
    }
  }
  return pipelined_steps(pieces.size(), tree.max_depth);
}

uint32_t tree_broadcast(ScheduleBuilder& b, const std::vector<int>& parent,
                        const std::vector<std::vector<uint32_t>>& pieces, uint32_t first_step) {
  const Tree tree = analyse_tree(parent);
  const std::vector<int>& depth = tree.depth;
  const std::vector<int> root_first = ordered_by(depth);
  for (size_t p = 0; p < pieces.size(); ++p) {
    for (int i : root_first) {
      const int from = parent[static_cast<size_t>(i)];
      if (from < 0) continue;
      for (uint32_t chunk : pieces[p]) {
        b.add(from, i, chunk, ChunkAction::COPY,
              first_step + static_cast<uint32_t>(p) + static_cast<uint32_t>(depth[static_cast<size_t>(i)] - 1));
      }
    }
  }
  return pipelined_steps(pieces.size(), tree.max_depth);
}

uint32_t tree_reduce(ScheduleBuilder& b, const std::vector<int>& parent, const std::vector<uint32_t>& chunks,
                     uint32_t first_step) {
  return tree_reduce(b, parent, group_pieces(chunks, static_cast<uint32_t>(chunks.size())), first_step);
}

uint32_t tree_broadcast(ScheduleBuilder& b, const std::vector<int>& parent, const std::vector<uint32_t>& chunks,
                        uint32_t first_step) {
  return tree_broadcast(b, parent, group_pieces(chunks, static_cast<uint32_t>(chunks.size())), first_step);
}

std::vector<int> binary_tree(int ranks, int first, int count, int tree) {
  std::vector<int> parent(static_cast<size_t>(ranks), NOT_IN_TREE);
  for (int x = 0; x < count; ++x) {
    int up = -1;
    if (tree == 0) {
      up = btree_parent(x, count);
    } else if (count % 2 == 1) {
      const int shifted = btree_parent((x - 1 + count) % count, count);
      up = shifted < 0 ? -1 : (shifted + 1) % count;
    } else {
      const int mirrored = btree_parent(count - 1 - x, count);
      up = mirrored < 0 ? -1 : count - 1 - mirrored;
    }
    parent[static_cast<size_t>(first + x)] = up < 0 ? -1 : first + up;
  }
  return parent;
}

// all_reduce: both trees span every member. broadcast and reduce: both span members 1 .. n-1 and
// hang below member 0, which sends (receives) half of the buffer to (from) each tree's root. Each
// tree carries half of the buffer in `height` pipelined pieces.
uint32_t double_tree_all_reduce(ScheduleBuilder& b, const std::vector<int>& members,
                                const std::vector<uint32_t>& chunks, uint32_t first_step) {
  const int m = static_cast<int>(members.size());
  if (m <= 1 || chunks.empty()) return 0;
  // The chunks alternate between the trees, so both carry half of the data.
  std::array<std::vector<uint32_t>, 2> halves;
  for (size_t c = 0; c < chunks.size(); ++c) halves[c % 2].push_back(chunks[c]);
  uint32_t used = 0;
  std::array<std::vector<int>, 2> parents;
  for (int t = 0; t < 2; ++t) {
    // The tree over positions 0..m-1, mapped onto the members.
    const std::vector<int> by_position = binary_tree(m, 0, m, t);
    std::vector<int>& parent = parents[static_cast<size_t>(t)];
    parent.assign(static_cast<size_t>(b.ranks()), NOT_IN_TREE);
    for (int pos = 0; pos < m; ++pos) {
      const int up = by_position[static_cast<size_t>(pos)];
      parent[static_cast<size_t>(members[static_cast<size_t>(pos)])] = up < 0 ? -1 : members[static_cast<size_t>(up)];
    }
  }
  // Each tree pipelines its half in pieces of about TREE_PIPELINE_CHUNK_BYTES (at most one chunk each).
  std::array<std::vector<std::vector<uint32_t>>, 2> pieces;
  for (size_t t = 0; t < 2; ++t) {
    const auto count = static_cast<uint32_t>(halves[t].size());
    pieces[t] = group_pieces(halves[t], pipeline_pieces(count * b.chunk_bytes(), count));
    if (!pieces[t].empty()) used = std::max(used, tree_reduce(b, parents[t], pieces[t], first_step));
  }
  uint32_t broadcast = 0;
  for (size_t t = 0; t < 2; ++t) {
    if (!pieces[t].empty()) broadcast = std::max(broadcast, tree_broadcast(b, parents[t], pieces[t], first_step + used));
  }
  return used + broadcast;
}

TransferSchedule tree_schedule(CollectiveOp op, core::Bytes size, const GroupView& group) {
  const int n = group.size();
  const bool rooted = op != CollectiveOp::ALL_REDUCE;
  std::vector<std::vector<int>> trees;
  for (int t = 0; t < 2; ++t) {
    std::vector<int> parent = rooted ? binary_tree(n, 1, n - 1, t) : binary_tree(n, 0, n, t);
    if (rooted) {
      for (int& p : parent) p = p == -1 ? 0 : p;
      parent[0] = -1;
    }
    trees.push_back(std::move(parent));
  }
  const uint32_t pieces = pipeline_pieces(
      size.value() / 2, static_cast<uint32_t>(std::max({1, tree_height(trees[0]), tree_height(trees[1])})));
  ScheduleBuilder b(op, Algorithm::TREE, n, 2 * pieces, size.value() / (2 * pieces));
  std::vector<std::vector<uint32_t>> chunks(2, std::vector<uint32_t>(pieces));
  for (uint32_t t = 0; t < 2; ++t) std::iota(chunks[t].begin(), chunks[t].end(), t * pieces);
  uint32_t step = 0;
  if (op != CollectiveOp::BROADCAST) {
    uint32_t used = 0;
    for (size_t t = 0; t < 2; ++t) used = std::max(used, tree_reduce(b, trees[t], chunks[t], step));
    step += used;
  }
  if (op != CollectiveOp::REDUCE) {
    for (size_t t = 0; t < 2; ++t) tree_broadcast(b, trees[t], chunks[t], step);
  }
  return b.finish();
}

}  // namespace trainsim::network::detail
