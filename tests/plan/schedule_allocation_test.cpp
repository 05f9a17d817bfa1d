// The scheduling LPs (sim/plan/schedule_allocation.hpp) against optima computed by hand.
#include <gtest/gtest.h>

#include "sim/plan/schedule_allocation.hpp"

namespace trainsim::plan {
namespace {

// Two pools of one GPU each (A, B); options (A, 1) and (B, 1).
AllocationProblem two_by_two(std::vector<double> job1, std::vector<double> job2) {
  AllocationProblem p;
  p.options = {{0, 1}, {1, 1}};
  p.pool_gpus = {1, 1};
  p.pool_price = {1, 4};
  for (auto* t : {&job1, &job2}) {
    AllocationJob j;
    j.throughput = *t;
    j.remaining = 100;
    j.total = 100;
    p.jobs.push_back(j);
  }
  return p;
}

double normalized(const AllocationProblem& p, const std::vector<std::vector<double>>& x, size_t j) {
  const double best = std::max(p.jobs[j].throughput[0], p.jobs[j].throughput[1]);
  return (p.jobs[j].throughput[0] * x[j][0] + p.jobs[j].throughput[1] * x[j][1]) / best;
}

TEST(ClusterScheduleAllocation, LinearProgramSolvesATextbookProblem) {
  // maximize 3x + 2y, x + y <= 4, x + 3y <= 6, x <= 3: optimum x = 3, y = 1, value 11.
  LinearProgram lp;
  const size_t x = lp.add_variable(3, 0, 3);
  const size_t y = lp.add_variable(2, 0, 1e30);
  lp.add_row({{x, 1}, {y, 1}}, -1e30, 4);
  lp.add_row({{x, 1}, {y, 3}}, -1e30, 6);
  const std::optional<std::vector<double>> s = lp.maximize();
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR((*s)[x], 3, 1e-9);
  EXPECT_NEAR((*s)[y], 1, 1e-9);
}

TEST(ClusterScheduleAllocation, InfeasibleProgramIsReported) {
  LinearProgram lp;
  const size_t x = lp.add_variable(1, 0, 1);
  lp.add_row({{x, 1}}, 2, 3);
  EXPECT_FALSE(lp.maximize().has_value());
}

// Gavel's heterogeneity-aware LAS on 2 jobs x 2 types. Job 1 does 1 it/s on A and 3 on B, job 2 1 on
// A and 2 on B (normalized by the best type: job 1 a/3 + b, job 2 a'/2 + b'). Both jobs gain most on
// B, which they must share. With both pools full (x1A + x2A = 1, x1B + x2B = 1, each job's shares
// summing to 1) and a = x1A: job 1 gets 1 - 2a/3, job 2 gets (1 + a)/2; they are equal at a = 3/7,
// where each has 5/7 of its best throughput. X = [[3/7, 4/7], [4/7, 3/7]].
TEST(ClusterScheduleAllocation, GavelLasTwoJobsTwoTypesMatchesTheHandOptimum) {
  const AllocationProblem p = two_by_two({1, 3}, {1, 2});
  const std::vector<std::vector<double>> x = allocate(Policy::GAVEL_LAS, p);
  EXPECT_NEAR(normalized(p, x, 0), 5.0 / 7, 1e-5);
  EXPECT_NEAR(normalized(p, x, 1), 5.0 / 7, 1e-5);
  EXPECT_NEAR(x[0][0], 3.0 / 7, 1e-5);
  EXPECT_NEAR(x[0][1], 4.0 / 7, 1e-5);
  EXPECT_NEAR(x[1][0], 4.0 / 7, 1e-5);
  EXPECT_NEAR(x[1][1], 3.0 / 7, 1e-5);
}

// The agnostic LAS sees GPU time only: each job gets the whole of its time (one GPU each), whatever
// the split; its worst normalized throughput is then at most the aware optimum (5/7).
TEST(ClusterScheduleAllocation, AgnosticLasGivesEqualTimeAndNoBetterThanAware) {
  const AllocationProblem p = two_by_two({1, 3}, {1, 2});
  const std::vector<std::vector<double>> x = allocate(Policy::LAS, p);
  EXPECT_NEAR(x[0][0] + x[0][1], 1, 1e-5);
  EXPECT_NEAR(x[1][0] + x[1][1], 1, 1e-5);
  EXPECT_LE(std::min(normalized(p, x, 0), normalized(p, x, 1)), 5.0 / 7 + 1e-5);
}

// The agnostic LAS is blind to the type: one job that may run on either of a 3-GPU pool and a 1-GPU
// pool gets all of its time (GPU time is plentiful), spread 3:1 as the pools' GPUs, although the
// second pool is 10x faster for it.
TEST(ClusterScheduleAllocation, AgnosticLasSpreadsTimeByPoolSize) {
  AllocationProblem p;
  p.options = {{0, 1}, {1, 1}};
  p.pool_gpus = {3, 1};
  p.pool_price = {0, 0};
  p.jobs.push_back({{1.0, 10.0}, 1, 100, 100, 0, std::nullopt});
  const std::vector<std::vector<double>> x = allocate(Policy::LAS, p);
  EXPECT_NEAR(x[0][0], 0.75, 1e-6);
  EXPECT_NEAR(x[0][1], 0.25, 1e-6);
  // The aware LAS puts it on the fast pool only.
  const std::vector<std::vector<double>> aware = allocate(Policy::GAVEL_LAS, p);
  EXPECT_NEAR(aware[0][1], 1, 1e-6);
}

// Makespan: job 1 has 300 iterations left, job 2 100; the optimum maximizes min(thr1 / 300, thr2 /
// 100). Job 1 needs thr1 >= 3 to finish within 100 s, which only all of B gives (x1B = 1); job 2 then
// has all of A (thr2 = 1, also 100 s). Any a = x1A > 0 (both pools full: thr1 = 3 - 2a, thr2 = 1 + a)
// makes job 1 later: (3 - 2a) / 300 < (1 + a) / 100 for every a > 0.
TEST(ClusterScheduleAllocation, MakespanEqualizesFinishTimes) {
  AllocationProblem p = two_by_two({1, 3}, {1, 2});
  p.jobs[0].remaining = 300;
  p.jobs[1].remaining = 100;
  const std::vector<std::vector<double>> x = allocate(Policy::MAKESPAN, p);
  EXPECT_NEAR(x[0][1], 1, 1e-5);
  EXPECT_NEAR(x[1][0], 1, 1e-5);
}

// Min-cost: A costs 1 $/h and B 4 $/h; both jobs do 1 it/s on A and 2 on B, so A does twice the work
// per dollar and without deadlines nothing runs on B. With job 1 due in 60 s with 100 iterations left
// (5/3 it/s, more than A's 1 it/s), it must get x1A + 2 x1B >= 5/3.
TEST(ClusterScheduleAllocation, MinCostUsesTheCheapWorkAndMeetsDeadlines) {
  AllocationProblem p = two_by_two({1, 2}, {1, 2});
  std::vector<std::vector<double>> x = allocate(Policy::MIN_COST, p);
  EXPECT_NEAR(x[0][1] + x[1][1], 0, 1e-6);
  EXPECT_NEAR(x[0][0] + x[1][0], 1, 1e-5);
  p.jobs[0].time_to_deadline_s = 60;
  x = allocate(Policy::MIN_COST, p);
  EXPECT_GE(x[0][0] + 2 * x[0][1], 5.0 / 3 - 1e-4);
}

// Finish-time fairness with equal jobs on one shared GPU type: both get half of it.
TEST(ClusterScheduleAllocation, FinishTimeFairnessSplitsEqualJobsEvenly) {
  AllocationProblem p;
  p.options = {{0, 1}};
  p.pool_gpus = {1};
  p.pool_price = {0};
  for (int i = 0; i < 2; ++i) p.jobs.push_back({{1.0}, 1, 100, 100, 0, std::nullopt});
  const std::vector<std::vector<double>> x = allocate(Policy::FINISH_TIME_FAIRNESS, p);
  EXPECT_NEAR(x[0][0], 0.5, 1e-3);
  EXPECT_NEAR(x[1][0], 0.5, 1e-3);
}

}  // namespace
}  // namespace trainsim::plan
