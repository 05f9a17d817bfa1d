#include "models/schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
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

namespace trainsim::models {
namespace {

// Hand-drawn timelines, 4 stages x 8 micro-batches, one character per time unit: forward of
// micro-batch k is the digit k, its backward (B under a split) the letter 'a' + k, its weight-gradient
// pass W the letter 'A' + k, '.' idle. Each row is one stage.
std::vector<std::string> draw(const std::vector<std::vector<TimedSlot>>& timed) {
  double end = 0;
  for (const auto& rank : timed) end = std::max(end, rank.back().end);
  std::vector<std::string> rows;
  for (const auto& rank : timed) {
    std::string row(static_cast<size_t>(end), '.');
    for (const TimedSlot& t : rank) {
      const int mb = t.slot.micro_batch;
      const char c = t.slot.pass == Pass::FORWARD    ? static_cast<char>('0' + mb)
                     : t.slot.pass == Pass::BACKWARD ? static_cast<char>('a' + mb)
                                                     : static_cast<char>('A' + mb);
      for (auto i = static_cast<size_t>(t.start); i < static_cast<size_t>(t.end); ++i) row[i] = c;
    }
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::vector<TimedSlot>> timed_4x8(PipelineSchedule s, double f, double b, double w) {
  const std::vector<double> fwd(4, f), bwd(4, b), wgt(4, w);
  return time_pipeline(pipeline_order(s, 4, 1, 8), 4, fwd, bwd, splits_backward(s) ? wgt : std::vector<double>{});
}

using Rows = std::vector<std::string>;

TEST(HandDrawn, GpipeAndOneFOneBBubbleIsPMinusOneOverMPlusPMinusOne) {
  // F = 1, B = 2F: 24 busy units in (m + p - 1)·3 = 33 (Narayanan et al. 2021, §2.2: (p-1)/(m+p-1)).
  const auto gpipe = timed_4x8(PipelineSchedule::GPIPE, 1, 2, 0);
  EXPECT_EQ(draw(gpipe), (Rows{"01234567.........aabbccddeeffgghh",
                               ".01234567......aabbccddeeffgghh..",
                               "..01234567...aabbccddeeffgghh....",
                               "...01234567aabbccddeeffgghh......"}));
  const auto ofob = timed_4x8(PipelineSchedule::ONE_F_ONE_B, 1, 2, 0);
  EXPECT_EQ(draw(ofob), (Rows{"0123......aa4bb5cc6dd7ee.ff.gg.hh",
                              ".012....aa3bb4cc5dd6ee7ff.gg.hh..",
                              "..01..aa2bb3cc4dd5ee6ff7gg.hh....",
                              "...0aa1bb2cc3dd4ee5ff6gg7hh......"}));
  for (const auto* t : {&gpipe, &ofob}) {
    const ScheduleStats s = schedule_stats(*t, false);
    EXPECT_DOUBLE_EQ(s.iteration, 33);
    EXPECT_DOUBLE_EQ(s.bubble_fraction, 3.0 / 11.0);  // (p-1)/(m+p-1)
  }
  // Activations held: all 8 under GPipe; p - stage under 1F1B (Narayanan et al. 2021, §2.2.1).
  EXPECT_EQ(schedule_stats(gpipe, false).peak_in_flight, (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(schedule_stats(ofob, false).peak_in_flight, (std::vector<int>{4, 3, 2, 1}));
}

TEST(HandDrawn, PipeDreamSteadyStateHasNoFlush) {
  // One window of the steady state: f, g, h are the previous iteration's micro-batches 5-7, whose
  // backward this window runs. Each stage is busy for its whole span of m·(F + B) = 24 units.
  for (PipelineSchedule sched : {PipelineSchedule::PIPEDREAM, PipelineSchedule::PIPEDREAM_2BW}) {
    const auto t = timed_4x8(sched, 1, 2, 0);
    EXPECT_EQ(draw(t), (Rows{"0ff1gg2hh3aa4bb5cc6dd7ee...",
                             ".0gg1hh2aa3bb4cc5dd6ee7ff..",
                             "..0hh1aa2bb3cc4dd5ee6ff7gg.",
                             "...0aa1bb2cc3dd4ee5ff6gg7hh"}));
    const ScheduleStats s = schedule_stats(t, true);
    EXPECT_DOUBLE_EQ(s.iteration, 24);
    EXPECT_DOUBLE_EQ(s.bubble_fraction, 0);
    EXPECT_EQ(s.peak_in_flight, (std::vector<int>{4, 3, 2, 1}));
  }
  // Weight stashing: PipeDream keeps one version per micro-batch in flight (p - stage), 2BW two.
  EXPECT_EQ(weight_versions(PipelineSchedule::PIPEDREAM, 4, 0, 8), 4);
  EXPECT_EQ(weight_versions(PipelineSchedule::PIPEDREAM, 4, 3, 8), 1);
  EXPECT_EQ(weight_versions(PipelineSchedule::PIPEDREAM_2BW, 4, 0, 8), 2);
  EXPECT_EQ(weight_versions(PipelineSchedule::PIPEDREAM_2BW, 4, 3, 8), 1);
  EXPECT_EQ(weight_versions(PipelineSchedule::ONE_F_ONE_B, 4, 0, 8), 1);
}

TEST(HandDrawn, ZeroBubbleH1IsAThirdOfOneFOneBsBubble) {
  // Qi et al. 2024, §3.1 and Figure 3, F = B = W: ZB-H1's bubble is (p-1)(F + B - W) = 3 against
  // 1F1B's (p-1)(F + B + W) = 9, with at most p micro-batches in flight (1F1B's peak).
  const auto t = timed_4x8(PipelineSchedule::ZERO_BUBBLE_H1, 1, 1, 1);
  EXPECT_EQ(draw(t), (Rows{"0123...aA4bB5cC6dD7eEfFgGhH",
                           ".012..a3bA4cB5dC6eD7fEgFhGH",
                           "..01.a2b3cA4dB5eC6fD7gEhFGH",
                           "...0a1b2c3dA4eB5fC6gD7hEFGH"}));
  const ScheduleStats s = schedule_stats(t, false);
  EXPECT_DOUBLE_EQ(s.iteration, 27);
  EXPECT_DOUBLE_EQ(s.bubble_fraction, 3.0 / 27.0);
  EXPECT_EQ(s.peak_in_flight, (std::vector<int>{4, 4, 4, 4}));
  const auto ofob = timed_4x8(PipelineSchedule::ONE_F_ONE_B, 1, 2, 0);
  EXPECT_DOUBLE_EQ((s.iteration - 24) / (schedule_stats(ofob, false).iteration - 24), 1.0 / 3.0);
}

TEST(HandDrawn, ZeroBubbleH2HasNoBubble) {
  // ZB-H2 (§3.1): 2p - 1 micro-batches in flight; every stage busy from its first F to its last W.
  const auto t = timed_4x8(PipelineSchedule::ZERO_BUBBLE_H2, 1, 1, 1);
  EXPECT_EQ(draw(t), (Rows{"0123456aAb7cBdCeDfEgFGhH...",
                           ".01234a5b6cAd7eBfCgDEhFGH..",
                           "..012a3b4c5d6eAf7gBChDEFGH.",
                           "...0a1b2c3d4e5f6gA7hBCDEFGH"}));
  const ScheduleStats s = schedule_stats(t, true);
  EXPECT_DOUBLE_EQ(s.iteration, 24);
  EXPECT_DOUBLE_EQ(s.bubble_fraction, 0);
  EXPECT_EQ(s.peak_in_flight, (std::vector<int>{7, 7, 7, 7}));
}

TEST(HandDrawn, AsyncRunsWhatArrivesFirst) {
  // pipeline_execution "async" (AxoNN): a free stage runs the pass whose input arrived first,
  // backward (then W) first on ties, forwards only below the schedule's in-flight limit. The engine
  // makes the same choices at run time (tests/engine/ready_pool_test.cpp draws the first two rows
  // from a simulation; tests/integration/pipeline_oracle_test.cpp compares them pass by pass).
  auto timed = [](PipelineSchedule s, double f, double b, double w) {
    const std::vector<double> fwd(4, f), bwd(4, b), wgt(4, w);
    const std::vector<double> weights = splits_backward(s) ? wgt : std::vector<double>{};
    return time_pipeline(async_pipeline_order(s, 4, 8, fwd, bwd, weights), 4, fwd, bwd, weights);
  };
  // 1F1B's limit (p - stage): 1F1B's own timeline.
  const auto ofob = timed(PipelineSchedule::ONE_F_ONE_B, 1, 2, 0);
  EXPECT_EQ(draw(ofob), draw(timed_4x8(PipelineSchedule::ONE_F_ONE_B, 1, 2, 0)));
  // GPipe's limit (m): forwards while activations keep coming; the last stage's F0 ends at 4 when
  // F1's activations arrive: a tie, B0 first. Stage 2 ends F3 at 6, when both B0's gradient and
  // F4's activations arrive: B0 first again. Stage 3 then runs F1-F3, which arrived during its B0.
  const auto gpipe = timed(PipelineSchedule::GPIPE, 1, 2, 0);
  EXPECT_EQ(draw(gpipe), (Rows{"01234567..aa...bb.ccdd...eeffgghh",
                               ".0123456aa7..bb.ccdd...eeffgghh..",
                               "..0123aa456bb7ccdd...eeffgghh....",
                               "...0aa123bbccdd4567eeffgghh......"}));
  EXPECT_EQ(schedule_stats(gpipe, false).peak_in_flight, (std::vector<int>{8, 7, 6, 4}));
  // Zero-bubble limits (F = B = W): what arrives first is not what the hand-made schedules run, and
  // the bubble is larger than theirs (27): 30 under ZB-H1's limit p, 29 under ZB-H2's 2p - 1.
  const auto h1 = timed(PipelineSchedule::ZERO_BUBBLE_H1, 1, 1, 1);
  EXPECT_EQ(draw(h1), (Rows{"0123...aA4.bB5cC6dD7eE.fFgG.hH",
                            ".0123.aA..b4BcC5dD6eE7fFgG.hH.",
                            "..012a3A.bBcC4dD5eE6fF7gG.hH..",
                            "...0a1A2b3cBdCD4eE5fF6gG7hH..."}));
  EXPECT_EQ(schedule_stats(h1, false).peak_in_flight, (std::vector<int>{4, 4, 4, 3}));
  const auto h2 = timed(PipelineSchedule::ZERO_BUBBLE_H2, 1, 1, 1);
  EXPECT_EQ(draw(h2), (Rows{"0123456aA7..bBcC..dDeEfFgG.hH",
                            ".01234a5A67bBcC..dDeEfFgG.hH.",
                            "..012a3A45b6cB7CdDeEfFgG.hH..",
                            "...0a1A2b3cB4d5C6eDf7gEFhGH.."}));
  EXPECT_EQ(schedule_stats(h2, false).peak_in_flight, (std::vector<int>{7, 7, 6, 4}));
}

TEST(HandDrawn, ZeroBubbleBubblesAtOtherSizes) {
  // The closed forms hold beyond 4 x 8: ZB-H1 (p-1)(F+B-W), ZB-H2 zero once m >= 2p.
  for (auto [p, m] : {std::pair{8, 16}, std::pair{16, 32}, std::pair{16, 64}}) {
    const std::vector<double> one(static_cast<size_t>(p), 1.0);
    const auto h1 = time_pipeline(pipeline_order(PipelineSchedule::ZERO_BUBBLE_H1, p, 1, m), p, one, one, one);
    EXPECT_DOUBLE_EQ(schedule_stats(h1, false).iteration, 3.0 * m + (p - 1)) << p << " x " << m;
    const auto h2 = time_pipeline(pipeline_order(PipelineSchedule::ZERO_BUBBLE_H2, p, 1, m), p, one, one, one);
    EXPECT_DOUBLE_EQ(schedule_stats(h2, true).bubble_fraction, 0.0) << p << " x " << m;
    for (int peak : schedule_stats(h2, true).peak_in_flight) EXPECT_LE(peak, 2 * p - 1);
    for (int peak : schedule_stats(h1, false).peak_in_flight) EXPECT_LE(peak, p);
  }
}

TEST(AsyncOrder, RunsWhatArrivedFirstWithinTheInFlightLimit) {
  // Equal stages: message-driven execution under 1F1B's limit finds 1F1B's timing; a slow last stage
  // (3x) makes the others run forwards as their inputs come, up to p - stage in flight.
  const std::vector<double> fwd(4, 1.0), bwd(4, 2.0);
  const auto order = async_pipeline_order(PipelineSchedule::ONE_F_ONE_B, 4, 8, fwd, bwd, {});
  expect_complete(order, 1, 8);
  EXPECT_DOUBLE_EQ(schedule_stats(time_pipeline(order, 4, fwd, bwd), false).iteration, 33);
  const std::vector<double> slow_f{1, 1, 1, 3}, slow_b{2, 2, 2, 6};
  const auto timed = time_pipeline(async_pipeline_order(PipelineSchedule::ONE_F_ONE_B, 4, 8, slow_f, slow_b, {}), 4,
                                   slow_f, slow_b);
  const auto fixed = time_pipeline(pipeline_order(PipelineSchedule::ONE_F_ONE_B, 4, 1, 8), 4, slow_f, slow_b);
  EXPECT_LE(schedule_stats(timed, false).iteration, schedule_stats(fixed, false).iteration);
  for (int s = 0; s < 4; ++s) EXPECT_LE(schedule_stats(timed, false).peak_in_flight[static_cast<size_t>(s)], 4 - s);
}

}  // namespace
}  // namespace trainsim::models
