#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "network/schedule.hpp"
#include "tests/network/fixtures.hpp"
#include "sim/core/error.hpp"

namespace trainsim::network {
namespace {

using core::Bytes;
using core::CollectiveOp;

using testing::ALL_OPS;

ClusterConfig cluster(int nodes, int gpus_per_node, TopologyKind kind) {
  return testing::every_algorithm_cluster(nodes, gpus_per_node, kind);
}

struct Group {
  std::string name;
  std::vector<int> ranks;
  bool hierarchical = false;  // uniform, several nodes, several members on each
};

// The groups of `n` members a cluster of nodes x g GPUs can hold: the first n GPUs (the last node
// partly filled when g does not divide n), one GPU per node (a data-parallel group), and k members
// on each of n/k nodes, every other GPU of every other node where there is room (not contiguous).
std::vector<Group> groups_of(int n, int nodes, int g) {
  std::vector<Group> out;
  if (n <= nodes * g) {
    Group first{fmt::format("first {}", n), {}, n > g && n % g == 0 && g > 1};
    for (int r = 0; r < n; ++r) first.ranks.push_back(r);
    out.push_back(first);
  }
  if (n > 1 && n <= nodes && g > 1) {
    Group strided{"one per node", {}, false};
    for (int a = 0; a < n; ++a) strided.ranks.push_back(a * g + g - 1);
    out.push_back(strided);
  }
  for (int k = 2; k < g; k *= 2) {
    const int m = n / k;
    if (n % k != 0 || m > nodes) continue;
    const int node_step = 2 * m <= nodes ? 2 : 1;
    const int gpu_step = 2 * k <= g ? 2 : 1;
    Group spread{fmt::format("{} per node", k), {}, m > 1};
    for (int a = 0; a < m; ++a) {
      for (int l = 0; l < k; ++l) spread.ranks.push_back(a * node_step * g + l * gpu_step + (gpu_step - 1));
    }
    out.push_back(spread);
  }
  return out;
}

void expect_same_edges(const std::vector<FlowEdge>& got, const std::vector<FlowEdge>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const FlowEdge& g = got[i];
    const FlowEdge& w = want[i];
    ASSERT_TRUE(g.src == w.src && g.dst == w.dst && g.steps == w.steps)
        << what << ": edge " << i << " is " << g.src << " -> " << g.dst << " in " << g.steps << " steps, flow_plan has "
        << w.src << " -> " << w.dst << " in " << w.steps;
    ASSERT_LE(std::abs(g.bytes - w.bytes), 1e-9 * std::abs(w.bytes)) << what << ": edge " << i;
  }
}

// flow_edges is flow_plan(make_schedule(..)) without the schedule: same edges, order, steps and
// bytes, for every op, algorithm, group size 1..64, placement, and sizes that n does not divide.
TEST(FlowEdges, EqualFlowPlanOfTheScheduleForEveryOpAlgorithmAndGroup) {
  struct Cluster {
    std::string name;
    ClusterConfig config;
  };
  const Cluster clusters[] = {{"one nvswitch node of 8", cluster(1, 8, TopologyKind::FAT_TREE)},
                              {"fat-tree 64 x 8", cluster(64, 8, TopologyKind::FAT_TREE)},
                              {"rail-optimized 32 x 4", cluster(32, 4, TopologyKind::RAIL_OPTIMIZED)},
                              {"torus 16 x 4", cluster(16, 4, TopologyKind::TORUS)},
                              {"ideal 64 x 1", cluster(64, 1, TopologyKind::IDEAL)}};
  std::map<std::string, int> checked;
  for (const Cluster& c : clusters) {
    const Topology topology = Topology::build(c.config);
    for (int n = 1; n <= 64; ++n) {
      for (const Group& group : groups_of(n, c.config.nodes, c.config.gpus_per_node)) {
        const GroupView view{group.ranks, &topology};
        for (CollectiveOp op : ALL_OPS) {
          for (Algorithm a : algorithms_for(op, view)) {
            for (double size : {7.0, 1000003.0, 1e7, 5e7, 3e9}) {  // 1e7, 5e7: pieces of several chunks
              const std::string what = fmt::format("{} {} on {}, {} ({} members), {} bytes", core::to_string(op),
                                                   to_string(a), c.name, group.name, n, size);
              expect_same_edges(flow_edges(op, a, Bytes(size), view), flow_plan(make_schedule(op, a, Bytes(size), view)),
                                what);
              if (HasFatalFailure()) return;
            }
            const bool nccl_tree = a == Algorithm::TREE && op == CollectiveOp::ALL_REDUCE && group.hierarchical;
            ++checked[nccl_tree ? "tree across nodes" : to_string(a)];
          }
        }
      }
    }
  }
  for (Algorithm a : ALL_ALGORITHMS) {
    if (a != Algorithm::AUTO) {
      EXPECT_GE(checked[to_string(a)], 50) << to_string(a);
    }
  }
  EXPECT_GE(checked["tree across nodes"], 20);
}

TEST(FlowEdges, GroupsOfOneHaveNoEdgesAndInapplicableAlgorithmsAreRejected) {
  const Topology topology = Topology::build(cluster(4, 8, TopologyKind::FAT_TREE));
  const GroupView one{{5}, &topology};
  for (CollectiveOp op : ALL_OPS) {
    for (Algorithm a : algorithms_for(op, one)) EXPECT_TRUE(flow_edges(op, a, Bytes(1e6), one).empty());
  }
  const GroupView six{{0, 1, 2, 3, 4, 5}, &topology};
  EXPECT_THROW(flow_edges(CollectiveOp::ALL_REDUCE, Algorithm::HALVING_DOUBLING, Bytes(1e6), six), core::InternalError);
  EXPECT_THROW(flow_edges(CollectiveOp::ALL_TO_ALL, Algorithm::RING, Bytes(1e6), six), core::InternalError);
  const GroupView uneven{{0, 1, 2, 8}, &topology};
  EXPECT_THROW(flow_edges(CollectiveOp::ALL_REDUCE, Algorithm::HIERARCHICAL, Bytes(1e6), uneven), core::InternalError);
}

// 16,384 ranks, 8 per node on a rail-optimized fat tree, where the step schedule does not fit in
// memory. NCCL's hierarchy (k = 8 per node, m = 2048 nodes) moves, per member and buffer S: in the
// node a ring reduce_scatter and all_gather of (k-1)/k*S each, on its rail an all_reduce of the
// shard S/k, 2(m-1)/m*S/k by ring and, by the double binary tree (reduce up, broadcast down), the
// shard once per direction on each non-root tree edge: 2(m-1)*S/k per rail. Either way the bytes sum
// to n times the bus factor 2(n-1)/n*S (nccl-tests doc/PERFORMANCE.md).
TEST(FlowEdges, ScaleTo16384RanksWithLinearlyManyEdges) {
  const int k = 8;
  const int m = 2048;
  const int n = k * m;
  const Topology topology = Topology::build(cluster(m, k, TopologyKind::RAIL_OPTIMIZED));
  GroupView all{std::vector<int>(static_cast<size_t>(n)), &topology};
  for (int i = 0; i < n; ++i) all.ranks[static_cast<size_t>(i)] = i;
  const double size = 1e9;
  const double bus_total = n * core::bus_bandwidth_factor(CollectiveOp::ALL_REDUCE, n) * size;
  const auto total = [](const std::vector<FlowEdge>& edges) {
    double sum = 0;
    for (const FlowEdge& e : edges) sum += e.bytes;
    return sum;
  };
  const auto same_node = [&](const FlowEdge& e) { return e.src / k == e.dst / k; };

  const std::vector<FlowEdge> ring = flow_edges(CollectiveOp::ALL_REDUCE, Algorithm::HIERARCHICAL, Bytes(size), all);
  EXPECT_EQ(ring.size(), 2u * n);  // each member's successor in its node and on its rail
  const double in_node = n * 2.0 * (k - 1) / k * size;
  const double on_rails = n * 2.0 * (m - 1) / m * (size / k);
  double ring_in_node = 0;
  for (const FlowEdge& e : ring) {
    if (same_node(e)) ring_in_node += e.bytes;
    EXPECT_EQ(e.steps, same_node(e) ? 2u * (k - 1) : 2u * (m - 1));
  }
  EXPECT_NEAR(ring_in_node, in_node, 1e-9 * in_node);
  EXPECT_NEAR(total(ring), in_node + on_rails, 1e-9 * bus_total);
  EXPECT_NEAR(total(ring), bus_total, 1e-9 * bus_total);

  const std::vector<FlowEdge> tree = flow_edges(CollectiveOp::ALL_REDUCE, Algorithm::TREE, Bytes(size), all);
  // n in the nodes; on each rail at most 2(m-1) tree edges (two trees), each used both ways.
  EXPECT_LE(tree.size(), static_cast<size_t>(n + 4 * (n - k)));
  EXPECT_LE(tree.size(), 5u * n);
  double tree_in_node = 0;
  for (const FlowEdge& e : tree) {
    if (same_node(e)) {
      tree_in_node += e.bytes;
      EXPECT_EQ(e.steps, 2u * (k - 1));
    } else {
      EXPECT_EQ(e.src % k, e.dst % k);  // on a rail
    }
  }
  EXPECT_NEAR(tree_in_node, in_node, 1e-9 * in_node);
  const double trees = k * 2.0 * (m - 1) * (size / k);
  EXPECT_NEAR(total(tree) - tree_in_node, trees, 1e-9 * bus_total);
  EXPECT_NEAR(total(tree), bus_total, 1e-9 * bus_total);
}

}  // namespace
}  // namespace trainsim::network
