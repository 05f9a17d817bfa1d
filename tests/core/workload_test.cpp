#include "sim/core/workload.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"

namespace trainsim::core {
namespace {

TEST(ParallelLayout, TensorIsFastestPipelineSlowest) {
  // tp=8, cp=1, ep=1, dp=16, pp=8: Megatron's tp-cp-ep-dp-pp order.
  const ParallelLayout l({8, 1, 1, 16, 8});
  EXPECT_EQ(l.world_size(), 1024);
  EXPECT_EQ(l.coord(9, Axis::TENSOR), 1);
  EXPECT_EQ(l.coord(9, Axis::DATA), 1);
  EXPECT_EQ(l.coord(128, Axis::PIPELINE), 1);
  EXPECT_EQ(l.rank_of(l.coords(777)), 777);
  EXPECT_EQ(l.peer(7, Axis::TENSOR, 1), 0) << "peers wrap around";
  EXPECT_EQ(l.peer(5, Axis::PIPELINE, 1), 5 + 128);
}

TEST(GroupKind, WholeAxisAndSubset) {
  const ParallelLayout l({2, 1, 1, 2, 4});
  const GroupKind dp{"data", Axis::DATA, {}, {}};
  EXPECT_EQ(dp.ranks_of(l, 3), (std::vector<int>{1, 3}));
  const GroupKind ends{"embedding", Axis::PIPELINE, {0, 3}, {}};
  EXPECT_TRUE(ends.contains(l, 1));
  EXPECT_FALSE(ends.contains(l, 4));
  EXPECT_EQ(ends.ranks_of(l, 13), (std::vector<int>{1, 13}));
}

TEST(GroupKind, SpansSeveralAxes) {
  // tp=2, ep=2, dp=2: dense gradients reduce over data x expert, tensor coordinate fixed.
  const ParallelLayout l({2, 1, 2, 2, 1});
  const GroupKind g{"data+expert", Axis::DATA, {}, {Axis::EXPERT}};
  EXPECT_EQ(g.size(l), 4);
  EXPECT_EQ(g.ranks_of(l, 7), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(g.ranks_of(l, 0), (std::vector<int>{0, 2, 4, 6}));
}

// Hybrid sharding's groups: tp=2, cp=2, dp=8 cut in blocks of 4. Rank r has tensor coordinate r % 2,
// context (r / 2) % 2 and data r / 4. The shard group of rank 21 (tensor 1, context 0, data 5) is
// data 4..7 x context 0..1 at tensor 1: ranks 4·{4,5,6,7} + {1, 3}; its replica group is data {1, 5}
// at context 0, tensor 1: ranks 5 and 21.
TEST(GroupKind, CutAxisInBlocksOrStrides) {
  const ParallelLayout l({2, 2, 1, 8, 1});
  const GroupKind shard{"data", Axis::DATA, {}, {Axis::CONTEXT}, AxisCut::BLOCK, 4};
  const GroupKind replicate{"replicate", Axis::DATA, {}, {}, AxisCut::STRIDED, 4};
  EXPECT_EQ(shard.size(l), 8);
  EXPECT_EQ(shard.ranks_of(l, 21), (std::vector<int>{17, 19, 21, 23, 25, 27, 29, 31}));
  EXPECT_EQ(shard.ranks_of(l, 0), (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(replicate.size(l), 2);
  EXPECT_EQ(replicate.ranks_of(l, 21), (std::vector<int>{5, 21}));
  EXPECT_EQ(replicate.ranks_of(l, 2), (std::vector<int>{2, 18}));
  for (int r = 0; r < l.world_size(); ++r) {
    EXPECT_TRUE(shard.contains(l, r));
    EXPECT_TRUE(replicate.contains(l, r));
  }
  // A block that does not divide the axis is a bug in the builder, and so is a cut of an axis a
  // backend may fold (symmetric): the folded simulation would drop the other blocks' traffic.
  const GroupKind bad{"data", Axis::DATA, {}, {}, AxisCut::BLOCK, 3};
  EXPECT_THROW(bad.ranks_of(l, 0), InternalError);
  Workload w;
  w.layout = l;
  Program p;
  p.name = "stage 0";
  p.add(Task{});
  w.programs.push_back(p);
  w.program_of_rank.assign(32, 0);
  w.groups = {shard, replicate};
  EXPECT_NO_THROW(w.validate());
  w.symmetric_axes[static_cast<size_t>(Axis::DATA)] = true;
  EXPECT_THROW(w.validate(), InternalError);
  w.symmetric_axes[static_cast<size_t>(Axis::DATA)] = false;
  w.groups.push_back(bad);
  EXPECT_THROW(w.validate(), InternalError);
}

// Three tasks a <- b, c; reordered to c, a, b: deps follow their tasks, the old -> new map is returned,
// and an order that puts b before a is refused.
TEST(Program, ReorderTailRenumbersDependencies) {
  Program p;
  p.name = "stage 0";
  const uint32_t before = p.add(Task{});
  const uint32_t a = p.add(Task{}, {before});
  p.tasks[a].bytes = 1;
  const uint32_t b = p.add(Task{}, {a, before});
  p.tasks[b].bytes = 2;
  const uint32_t c = p.add(Task{});
  p.tasks[c].bytes = 3;
  const std::vector<uint32_t> moved = p.reorder_tail(1, {c, a, b});
  EXPECT_EQ(moved, (std::vector<uint32_t>{2, 3, 1}));
  EXPECT_EQ(p.tasks[1].bytes, 3);
  EXPECT_EQ(p.tasks[2].bytes, 1);
  EXPECT_EQ(p.tasks[3].bytes, 2);
  ASSERT_EQ(p.tasks[3].dep_count, 2u);
  EXPECT_EQ(p.deps_of(p.tasks[3])[0], 2u);
  EXPECT_EQ(p.deps_of(p.tasks[3])[1], 0u);
  EXPECT_EQ(p.deps_of(p.tasks[2])[0], 0u);
  EXPECT_THROW(p.reorder_tail(1, {3, 1, 2}), InternalError);  // old b (now 3) before old a (now 2)
  EXPECT_THROW(p.reorder_tail(1, {1, 1, 2}), InternalError);  // not a permutation
}

TEST(Workload, ValidateRejectsForwardDependency) {
  Workload w;
  w.layout = ParallelLayout({1, 1, 1, 1, 1});
  Program p;
  p.name = "stage 0";
  p.add(Task{});
  p.add(Task{}, {0});
  p.deps.push_back(5);
  p.tasks.back().dep_count = 2;
  w.programs.push_back(p);
  w.program_of_rank = {0};
  EXPECT_THROW(w.validate(), InternalError);
}

// A ready pool of two blocks, each a compute task and a send to the next pipeline stage, and a loose
// receive that triggers the second; every malformation validate() names is refused.
TEST(Workload, ValidateChecksReadyPools) {
  auto make = [] {
    Workload w;
    w.layout = ParallelLayout({1, 1, 1, 1, 2});
    Program p;
    p.name = "stage 0";
    Task send;
    send.kind = TaskKind::SEND;
    send.stream = Stream::PIPELINE_FORWARD;
    send.peer_offset = 1;
    Task recv = send;
    recv.kind = TaskKind::RECV;
    recv.stream = Stream::PIPELINE_BACKWARD;
    const uint32_t f = p.add(Task{});
    p.add(send, {f});
    const uint32_t r = p.add(recv);
    const uint32_t b = p.add(Task{}, {r});
    p.add(send, {b});
    p.pool.begin = 0;
    p.pool.end = 5;
    p.pool.block_of = {0, 0, LOOSE_TASK, 1, 1};
    p.pool.blocks = {PoolBlock{NO_TASK, 1, 1}, PoolBlock{r, 1, -1}};
    w.programs = {p, p};
    w.program_of_rank = {0, 1};
    return w;
  };
  EXPECT_NO_THROW(make().validate());
  Workload w = make();
  w.programs[0].pool.blocks[1].queue = 0;  // block 1's send on the channel of a block of queue 1
  EXPECT_THROW(w.validate(), InternalError);
  w = make();
  w.programs[0].tasks[4].kind = TaskKind::RECV;  // a loose receive and a block's on one channel
  w.programs[0].tasks[4].stream = Stream::PIPELINE_BACKWARD;
  EXPECT_THROW(w.validate(), InternalError);
  w = make();
  w.programs[0].tasks[0].stream = Stream::TENSOR_COMM;  // block 0 without a COMPUTE-stream task
  EXPECT_THROW(w.validate(), InternalError);
  w = make();
  w.programs[0].pool.blocks[1].trigger = 3;  // its own task
  EXPECT_THROW(w.validate(), InternalError);
  w = make();
  w.programs[0].pool.block_of[1] = 2;  // no block 2
  EXPECT_THROW(w.validate(), InternalError);
  w = make();
  w.programs[0].pool.in_flight_limit = 0;
  EXPECT_THROW(w.validate(), InternalError);
  w = make();
  w.programs[0].pool.block_of.pop_back();  // does not cover its range
  EXPECT_THROW(w.validate(), InternalError);
  // A ready pool's tasks are never reordered.
  EXPECT_THROW(make().programs[0].reorder_tail(3, {3, 4}), InternalError);
}

}  // namespace
}  // namespace trainsim::core

namespace trainsim::core {
namespace {

TEST(CollectiveOpNames, ParseIsTheInverseOfToString) {
  for (int o = 0; o < COLLECTIVE_OP_COUNT; ++o) {
    const auto op = static_cast<CollectiveOp>(o);
    CollectiveOp parsed = op == CollectiveOp::ALL_REDUCE ? CollectiveOp::ALL_TO_ALL : CollectiveOp::ALL_REDUCE;
    EXPECT_TRUE(parse_collective_op(to_string(op), parsed)) << to_string(op);
    EXPECT_EQ(parsed, op);
  }
  CollectiveOp untouched = CollectiveOp::REDUCE;
  EXPECT_FALSE(parse_collective_op("allreduce", untouched));
  EXPECT_FALSE(parse_collective_op("", untouched));
  EXPECT_EQ(untouched, CollectiveOp::REDUCE);
}

}  // namespace
}  // namespace trainsim::core
