#include "models/schedule.hpp"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace trainsim::models {
namespace {

int forwards_before_first_backward(const std::vector<PassSlot>& order) {
  int n = 0;
  for (const PassSlot& s : order) {
    if (s.pass == Pass::BACKWARD) break;
    ++n;
  }
  return n;
}

// Every (pass, micro-batch, chunk) exactly once per rank.
void expect_complete(const std::vector<std::vector<PassSlot>>& order, int chunks, int micro_batches) {
  for (const auto& rank : order) {
    std::set<std::tuple<int, int, int>> seen;
    for (const PassSlot& s : rank) seen.insert({static_cast<int>(s.pass), s.micro_batch, s.chunk});
    EXPECT_EQ(seen.size(), rank.size());
    EXPECT_EQ(static_cast<int>(rank.size()), 2 * chunks * micro_batches);
  }
}

TEST(PipelineOrder, GpipeRunsAllForwardsFirst) {
  const auto order = pipeline_order(PipelineSchedule::GPIPE, 4, 1, 8);
  expect_complete(order, 1, 8);
  for (const auto& rank : order) EXPECT_EQ(forwards_before_first_backward(rank), 8);
}

TEST(PipelineOrder, OneFOneBWarmsUpWithTheStagesBehind) {
  // Narayanan et al. 2021, §2.2.1: stage r runs p - r - 1 warm-up forwards, then alternates.
  const auto order = pipeline_order(PipelineSchedule::ONE_F_ONE_B, 4, 1, 8);
  expect_complete(order, 1, 8);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(forwards_before_first_backward(order[static_cast<size_t>(r)]), 4 - r);
  const auto few = pipeline_order(PipelineSchedule::ONE_F_ONE_B, 4, 1, 2);
  EXPECT_EQ(forwards_before_first_backward(few[0]), 2);
}

TEST(PipelineOrder, InterleavedFollowsMegatronChunkOrder) {
  // Megatron-LM schedules.py (forward_backward_pipelining_with_interleaving): warm-up
  // (p - r - 1)·2 + (v - 1)·p; get_model_chunk_id(k) = (k mod p·v) / p, reversed for backward.
  const int p = 4, v = 2, m = 8;
  const auto order = pipeline_order(PipelineSchedule::INTERLEAVED_1F1B, p, v, m);
  expect_complete(order, v, m);
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(forwards_before_first_backward(order[static_cast<size_t>(r)]), (p - r - 1) * 2 + (v - 1) * p + 1);
  }
  const std::vector<PassSlot>& first = order[0];
  // Forward chunks: 0 0 0 0 1 1 1 1 0 0 ...; micro-batches 0 1 2 3 0 1 2 3 4 5 ...
  EXPECT_EQ(first[4].chunk, 1);
  EXPECT_EQ(first[4].micro_batch, 0);
  EXPECT_EQ(first[8].chunk, 0);
  EXPECT_EQ(first[8].micro_batch, 4);
  // The first backward runs the last chunk of micro-batch 0.
  const PassSlot& b = first[static_cast<size_t>(forwards_before_first_backward(first))];
  EXPECT_EQ(b.chunk, v - 1);
  EXPECT_EQ(b.micro_batch, 0);
}

TEST(TimePipeline, EveryScheduleCompletesAndRespectsDependencies) {
  for (PipelineSchedule s : {PipelineSchedule::GPIPE, PipelineSchedule::ONE_F_ONE_B, PipelineSchedule::INTERLEAVED_1F1B}) {
    const int p = 4, v = s == PipelineSchedule::INTERLEAVED_1F1B ? 3 : 1, m = 8;
    const std::vector<double> fwd(static_cast<size_t>(p * v), 1.0), bwd(static_cast<size_t>(p * v), 2.0);
    const auto timed = time_pipeline(pipeline_order(s, p, v, m), p, fwd, bwd);
    for (const auto& rank : timed) {
      ASSERT_EQ(static_cast<int>(rank.size()), 2 * v * m);
      for (size_t i = 1; i < rank.size(); ++i) EXPECT_GE(rank[i].start, rank[i - 1].end);
    }
    // 1F1B and GPipe take (m + p - 1) forward-backward steps: (m + p - 1)·3 with these costs.
    if (v == 1) {
      EXPECT_EQ(timed[0].back().end, (m + p - 1) * 3.0);
    }
  }
}

TEST(TimePipeline, RejectsAnImpossibleOrder) {
  // Backward before its own forward on a single stage cannot run.
  const std::vector<std::vector<PassSlot>> order = {{{Pass::BACKWARD, 0, 0}, {Pass::FORWARD, 0, 0}}};
  EXPECT_THROW(time_pipeline(order, 1, {1.0}, {2.0}), core::InternalError);
}

}  // namespace
}  // namespace trainsim::models
