#include "network/schedule.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "tests/network/fixtures.hpp"

namespace trainsim::network {
namespace {

using core::Bytes;
using core::CollectiveOp;

using testing::ALL_OPS;

ClusterConfig cluster(int nodes, int gpus_per_node) { return testing::every_algorithm_cluster(nodes, gpus_per_node); }

// A group: `nodes` nodes, the first `per_node` GPUs of each.
struct Placed {
  Topology topology;
  GroupView group;
};
std::unique_ptr<Placed> place(int nodes, int gpus_per_node, int per_node) {
  auto p = std::make_unique<Placed>(Placed{Topology::build(cluster(nodes, gpus_per_node)), {}});
  for (int a = 0; a < nodes; ++a) {
    for (int l = 0; l < per_node; ++l) p->group.ranks.push_back(a * gpus_per_node + l);
  }
  p->group.topology = &p->topology;
  return p;
}

using Mask = uint64_t;  // which members' contributions a copy holds (n <= 64)

Mask bit(int i) { return Mask{1} << i; }
Mask everyone(int n) { return n == 64 ? ~Mask{0} : bit(n) - 1; }

// What member m holds of chunk c before the collective (the switch holds nothing). Chunk c is
// member c % n's share of all_gather's output and reduce_scatter's result: an algorithm with several
// channels (NCCL's rings across nodes) cuts each member's share into one chunk per channel.
Mask initial(CollectiveOp op, int n, int m, uint32_t c) {
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
    case CollectiveOp::REDUCE_SCATTER:
    case CollectiveOp::REDUCE:
      return bit(m);
    case CollectiveOp::ALL_GATHER:
      return c % static_cast<uint32_t>(n) == static_cast<uint32_t>(m) ? bit(m) : 0;
    case CollectiveOp::BROADCAST:
      return m == 0 ? bit(0) : 0;
    case CollectiveOp::ALL_TO_ALL:
      return c / static_cast<uint32_t>(n) == static_cast<uint32_t>(m) ? bit(m) : 0;
  }
  return 0;
}

// The complete (final) content of chunk c.
Mask complete(CollectiveOp op, int n, uint32_t c) {
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
    case CollectiveOp::REDUCE_SCATTER:
    case CollectiveOp::REDUCE:
      return everyone(n);
    case CollectiveOp::ALL_GATHER:
      return bit(static_cast<int>(c % static_cast<uint32_t>(n)));
    case CollectiveOp::BROADCAST:
      return bit(0);
    case CollectiveOp::ALL_TO_ALL:
      return bit(static_cast<int>(c / static_cast<uint32_t>(n)));
  }
  return 0;
}

// Whether member m must end with chunk c complete.
bool must_hold(CollectiveOp op, int n, int m, uint32_t c) {
  switch (op) {
    case CollectiveOp::ALL_REDUCE:
    case CollectiveOp::ALL_GATHER:
    case CollectiveOp::BROADCAST:
      return true;
    case CollectiveOp::REDUCE_SCATTER:
      return c % static_cast<uint32_t>(n) == static_cast<uint32_t>(m);
    case CollectiveOp::REDUCE:
      return m == 0;
    case CollectiveOp::ALL_TO_ALL:
      return c % static_cast<uint32_t>(n) == static_cast<uint32_t>(m);
  }
  return false;
}

// Runs the schedule on chunk ownership in list order and checks, for every transfer, that its
// dependencies alone guarantee what the sender holds (so any order they allow moves the same data),
// that no contribution is reduced twice, that every COPY sends a complete chunk, and the final state.
void check_moves_the_right_data(const TransferSchedule& s, CollectiveOp op, int n, const std::string& what) {
  const size_t slots = static_cast<size_t>(n) + 1;  // the last one is IN_NETWORK
  const auto index = [&](int32_t m, uint32_t c) {
    return (m == IN_NETWORK ? static_cast<size_t>(n) : static_cast<size_t>(m)) * s.chunks + c;
  };
  std::vector<Mask> state(slots * s.chunks, 0);
  for (int m = 0; m < n; ++m) {
    for (uint32_t c = 0; c < s.chunks; ++c) state[index(m, c)] = initial(op, n, m, c);
  }
  std::vector<Mask> payload(s.transfers.size());
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    const Transfer& t = s.transfers[i];
    ASSERT_LT(t.chunk, s.chunks) << what;
    ASSERT_LT(t.step, s.steps) << what;
    Mask guaranteed = t.src == IN_NETWORK ? 0 : initial(op, n, t.src, t.chunk);
    for (uint32_t k = t.dep_count; k-- > 0;) {  // oldest first
      const uint32_t d = s.deps[t.dep_begin + k];
      ASSERT_LT(d, i) << what << ": transfer " << i << " depends on a later one";
      const Transfer& dep = s.transfers[d];
      ASSERT_TRUE(dep.dst == t.src && dep.chunk == t.chunk) << what << ": dependency delivers elsewhere";
      guaranteed = dep.action == ChunkAction::COPY ? payload[d] : guaranteed | payload[d];
    }
    payload[i] = state[index(t.src, t.chunk)];
    ASSERT_EQ(guaranteed, payload[i]) << what << ": transfer " << i << " may start before the sender has its data";
    Mask& into = state[index(t.dst, t.chunk)];
    if (t.action == ChunkAction::REDUCE) {
      ASSERT_EQ(into & payload[i], 0u) << what << ": transfer " << i << " reduces a contribution twice";
      into |= payload[i];
    } else {
      ASSERT_EQ(payload[i], complete(op, n, t.chunk)) << what << ": transfer " << i << " copies an incomplete chunk";
      into = payload[i];
    }
  }
  for (int m = 0; m < n; ++m) {
    for (uint32_t c = 0; c < s.chunks; ++c) {
      if (must_hold(op, n, m, c)) {
        ASSERT_EQ(state[index(m, c)], complete(op, n, c)) << what << " member " << m << " chunk " << c;
      }
    }
  }
}

// Bytes each member sends (the switch excluded).
std::vector<double> sent_per_member(const TransferSchedule& s) {
  std::vector<double> sent(static_cast<size_t>(s.ranks), 0);
  for (const Transfer& t : s.transfers) {
    if (t.src != IN_NETWORK) sent[static_cast<size_t>(t.src)] += t.bytes;
  }
  return sent;
}

// Group shapes: one node of n GPUs, n nodes of one GPU, and the hierarchical shapes.
struct Shape {
  int nodes;
  int per_node;
};
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int n = 1; n <= 64; ++n) {
    out.push_back({1, n});
    if (n > 1) out.push_back({n, 1});
  }
  for (int k : {2, 4, 8}) {
    for (int m = 2; m * k <= 64; ++m) out.push_back({m, k});
  }
  return out;
}

TEST(Schedule, EveryAlgorithmMovesTheRightDataForEveryOpAndGroup) {
  std::map<Algorithm, int> checked;
  for (const Shape& shape : shapes()) {
    const auto p = place(shape.nodes, shape.per_node, shape.per_node);
    const int n = p->group.size();
    for (CollectiveOp op : ALL_OPS) {
      for (Algorithm a : algorithms_for(op, p->group)) {
        const std::string what =
            fmt::format("{} {} on {} nodes x {}", core::to_string(op), to_string(a), shape.nodes, shape.per_node);
        const TransferSchedule s = make_schedule(op, a, Bytes(1 << 20), p->group);
        EXPECT_EQ(s.algorithm, a);
        EXPECT_EQ(s.ranks, n);
        check_moves_the_right_data(s, op, n, what);
        if (HasFatalFailure()) return;
        ++checked[a];
      }
    }
  }
  // Every algorithm was exercised, on many groups.
  for (Algorithm a : ALL_ALGORITHMS) {
    if (a != Algorithm::AUTO) {
      EXPECT_GE(checked[a], 20) << to_string(a);
    }
  }
}

TEST(Schedule, ApplicabilityFollowsTheGroupAndTheCluster) {
  const auto node = place(1, 8, 8);
  const auto six = place(1, 6, 6);
  const auto nodes = place(4, 8, 8);
  const auto all = [](std::initializer_list<Algorithm> l) { return std::vector<Algorithm>(l); };
  EXPECT_EQ(
      algorithms_for(CollectiveOp::ALL_REDUCE, node->group),
      all({Algorithm::RING, Algorithm::TREE, Algorithm::HALVING_DOUBLING, Algorithm::HIERARCHICAL, Algorithm::NVLS}));
  EXPECT_EQ(algorithms_for(CollectiveOp::ALL_REDUCE, six->group),
            all({Algorithm::RING, Algorithm::TREE, Algorithm::HIERARCHICAL, Algorithm::NVLS}));
  EXPECT_EQ(algorithms_for(CollectiveOp::ALL_GATHER, nodes->group),
            all({Algorithm::RING, Algorithm::HALVING_DOUBLING, Algorithm::HIERARCHICAL, Algorithm::IN_NETWORK}));
  EXPECT_EQ(algorithms_for(CollectiveOp::ALL_TO_ALL, nodes->group), all({Algorithm::DIRECT}));
  EXPECT_EQ(algorithms_for(CollectiveOp::BROADCAST, node->group), all({Algorithm::RING, Algorithm::TREE}));
  // Without NVLS or in-network reduction in the cluster, neither is offered.
  ClusterConfig plain = cluster(4, 8);
  plain.intra_node.nvls = false;
  plain.network.in_network_reduction = false;
  const Topology t = Topology::build(plain);
  GroupView g{{0, 1, 2, 3, 8, 9, 10, 11}, &t};
  EXPECT_EQ(algorithms_for(CollectiveOp::ALL_REDUCE, g),
            all({Algorithm::RING, Algorithm::TREE, Algorithm::HALVING_DOUBLING, Algorithm::HIERARCHICAL}));
}

// nccl-tests doc/PERFORMANCE.md: a rank of a bandwidth-optimal all_reduce sends 2(n-1)/n of the
// buffer, of all_gather and reduce_scatter (n-1)/n, of all_to_all (n-1)/n, of broadcast and reduce 1
// (the root). These are properties of ring, halving-doubling (Thakur et al. 2005), hierarchical
// ((k-1)/k*S + 2(m-1)/m*S/k + (k-1)/k*S = 2(n-1)/n*S) and direct, where every member sends exactly
// that; and of the ring chain and the double binary tree for broadcast and reduce, whose busiest
// member sends the whole buffer once. Tree all_reduce (about S per member up and S down) and the
// switch algorithms (S once) are not bus-factor algorithms.
TEST(Schedule, BytesSentPerRankEqualTheBusBandwidthFactor) {
  struct Case {
    Algorithm algorithm;
    bool every_member;  // all send the same (else: the busiest does)
  };
  const Case cases[] = {{Algorithm::RING, true},
                        {Algorithm::HALVING_DOUBLING, true},
                        {Algorithm::HIERARCHICAL, true},
                        {Algorithm::DIRECT, true},
                        {Algorithm::TREE, false}};
  for (const Shape& shape : shapes()) {
    const auto p = place(shape.nodes, shape.per_node, shape.per_node);
    const int n = p->group.size();
    if (n == 1) continue;
    for (CollectiveOp op : ALL_OPS) {
      const std::vector<Algorithm> applicable = algorithms_for(op, p->group);
      for (const Case& c : cases) {
        if (std::find(applicable.begin(), applicable.end(), c.algorithm) == applicable.end()) continue;
        const bool rooted = op == CollectiveOp::BROADCAST || op == CollectiveOp::REDUCE;
        if (c.algorithm == Algorithm::TREE && !rooted) continue;
        for (double size : {1e3, 1e9, 7.5e9}) {
          const std::vector<double> sent = sent_per_member(make_schedule(op, c.algorithm, Bytes(size), p->group));
          const double expected = core::bus_bandwidth_factor(op, n) * size;
          const std::string what = fmt::format("{} {} n={} ({} nodes) S={}", core::to_string(op),
                                               to_string(c.algorithm), n, shape.nodes, size);
          if (c.every_member && !rooted) {
            for (double s : sent) ASSERT_NEAR(s, expected, 1e-9 * size) << what;
          } else {
            ASSERT_NEAR(*std::max_element(sent.begin(), sent.end()), expected, 1e-9 * size) << what;
          }
        }
      }
    }
  }
}

TEST(Schedule, SwitchAlgorithmsSendAndReceiveTheBufferOnce) {
  for (const Algorithm algorithm : {Algorithm::NVLS, Algorithm::IN_NETWORK}) {
    const auto p = algorithm == Algorithm::NVLS ? place(1, 8, 8) : place(8, 1, 1);
    const TransferSchedule s = make_schedule(CollectiveOp::ALL_REDUCE, algorithm, Bytes(1e6), p->group);
    std::vector<double> received(8, 0);
    for (const Transfer& t : s.transfers) {
      EXPECT_TRUE(t.src == IN_NETWORK || t.dst == IN_NETWORK);
      if (t.dst != IN_NETWORK) received[static_cast<size_t>(t.dst)] += t.bytes;
    }
    for (double b : sent_per_member(s)) EXPECT_DOUBLE_EQ(b, 1e6);
    for (double b : received) EXPECT_DOUBLE_EQ(b, 1e6);
    EXPECT_EQ(s.steps, 2u);
  }
}

// Ring all_reduce: 2(n-1) steps, each member sends only to its successor, 2(n-1) chunks of S/n.
TEST(FlowPlan, RingAllReduceIsOneEdgePerNeighbourWithEveryStep) {
  for (int n : {2, 3, 8, 13}) {
    const auto p = place(1, n, n);
    const TransferSchedule s = make_schedule(CollectiveOp::ALL_REDUCE, Algorithm::RING, Bytes(1e6), p->group);
    EXPECT_EQ(s.steps, 2u * (n - 1));
    const std::vector<FlowEdge> plan = flow_plan(s);
    ASSERT_EQ(plan.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const FlowEdge& e = plan[static_cast<size_t>(i)];
      EXPECT_EQ(e.src, i);
      EXPECT_EQ(e.dst, (i + 1) % n);
      EXPECT_NEAR(e.bytes, 2.0 * (n - 1) / n * 1e6, 1e-6);
      EXPECT_EQ(e.steps, 2u * (n - 1));
    }
  }
}

// Halving-doubling on 8: partners at distances 4, 2, 1 (each one step) and back; the edge to the
// partner at distance d carries d/8 of the buffer in each phase.
TEST(FlowPlan, HalvingDoublingHasLogarithmicallyManyEdges) {
  const auto p = place(1, 8, 8);
  const TransferSchedule s = make_schedule(CollectiveOp::ALL_REDUCE, Algorithm::HALVING_DOUBLING, Bytes(8e6), p->group);
  EXPECT_EQ(s.steps, 6u);
  const std::vector<FlowEdge> plan = flow_plan(s);
  ASSERT_EQ(plan.size(), 8u * 3);
  for (const FlowEdge& e : plan) {
    const int d = e.src ^ e.dst;
    ASSERT_TRUE(d == 1 || d == 2 || d == 4);
    EXPECT_DOUBLE_EQ(e.bytes, 2 * d * 1e6);
    EXPECT_EQ(e.steps, 2u);
  }
}

// NCCL's double binary tree: every member is an inner node of at most one tree, except member 0
// for odd n (NCCL's shifted second tree makes the first tree's last inner node, n-1, wrap to 0).
TEST(Schedule, DoubleBinaryTreesAreComplementary) {
  for (int n = 2; n <= 64; ++n) {
    const auto p = place(1, n, n);
    const TransferSchedule s = make_schedule(CollectiveOp::ALL_REDUCE, Algorithm::TREE, Bytes(1e6), p->group);
    std::vector<std::set<int>> children_in_tree(2 * static_cast<size_t>(n));
    for (const Transfer& t : s.transfers) {
      if (t.action != ChunkAction::REDUCE) continue;
      const size_t tree = t.chunk < s.chunks / 2 ? 0 : 1;
      children_in_tree[tree * static_cast<size_t>(n) + static_cast<size_t>(t.dst)].insert(t.src);
    }
    for (int m = 0; m < n; ++m) {
      const size_t inner = (children_in_tree[static_cast<size_t>(m)].empty() ? 0 : 1) +
                           (children_in_tree[static_cast<size_t>(n + m)].empty() ? 0 : 1);
      EXPECT_LE(inner, n % 2 == 1 && m == 0 ? 2u : 1u) << "n=" << n << " member " << m;
      for (size_t t = 0; t < 2; ++t)
        EXPECT_LE(children_in_tree[t * static_cast<size_t>(n) + static_cast<size_t>(m)].size(), 2u);
    }
  }
}

TEST(ChooseAlgorithm, FollowsTheClosedFormAndMapsMultiNodeRingsToTheHierarchy) {
  core::NetworkProfile profile;
  profile.intra_node = {0.8, core::Seconds(4e-6)};
  profile.inter_node = {0.9, core::Seconds(8e-6)};
  ClusterConfig plain = cluster(4, 8);
  plain.intra_node.nvls = false;
  plain.network.in_network_reduction = false;
  const Topology t = Topology::build(plain);
  GroupView all{{}, &t};
  for (int i = 0; i < 32; ++i) all.ranks.push_back(i);
  EXPECT_EQ(choose_algorithm(CollectiveOp::ALL_REDUCE, Bytes(1e9), all, plain, profile), Algorithm::HIERARCHICAL);
  EXPECT_EQ(choose_algorithm(CollectiveOp::ALL_TO_ALL, Bytes(1e9), all, plain, profile), Algorithm::DIRECT);
  const GroupView node{{0, 1, 2, 3, 4, 5, 6, 7}, &t};
  EXPECT_EQ(choose_algorithm(CollectiveOp::ALL_REDUCE, Bytes(1e9), node, plain, profile), Algorithm::RING);
  // With NVLS, a large all_reduce in the node goes through the switch: S/B beats 2(n-1)/n*S/B.
  const ClusterConfig nvls = cluster(4, 8);
  const Topology with_nvls = Topology::build(nvls);
  const GroupView nvls_node{{0, 1, 2, 3, 4, 5, 6, 7}, &with_nvls};
  EXPECT_EQ(choose_algorithm(CollectiveOp::ALL_REDUCE, Bytes(1e9), nvls_node, nvls, profile), Algorithm::NVLS);
}

}  // namespace
}  // namespace trainsim::network
