// Checkpoint costs during a schedule (SchedulerConfig::checkpoint_costs, docs/schedule.md "Checkpoint
// costs"): schedules worked out by hand, and the matrix's figures against the resilience model's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include <fmt/format.h>

#include "sim/plan/prediction.hpp"
#include "sim/plan/schedule_sim.hpp"

namespace trainsim::plan {
namespace {

// One pool of one GPU; rounds of 100 s, restart_s 10 s; checkpoint costs on. J1 arrives at 0 with
// 1000 iterations and checkpoints every 40 s of training, each stalling it 5 s, a restart loading
// it back in 20 s; J2 arrives at 50 with 50 iterations and no checkpoint. Both do 1 it/s.
ScheduleInput checkpointed_jobs() {
  ScheduleInput in;
  in.pools = {{"p", 1, 2.0, 0, 1, std::nullopt, 0}};
  in.jobs = {{"J1", 0, 1000, 1, std::nullopt, {{0, 1, 1.0, CheckpointCost{5, 20, 40}}}},
             {"J2", 50, 50, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}}}};
  return in;
}

SchedulerConfig costs_config(Policy p) {
  SchedulerConfig c;
  c.policy = p;
  c.round_s = 100;
  c.restart_s = 10;
  c.checkpoint_costs = true;
  return c;
}

// Gavel's LAS places the jobs as in ClusterSchedule.GavelLasPreemptsForTheShortJobByHand (J1 alone in
// [0, 100) and [100, 200), J2 in [200, 300), J1 from 300 on); the checkpoints change the times:
//   [0, 100)   J1 starts: restart 10 + load 20 = 30 s; trains 40 s (960 left) to 70; checkpoint
//              [70, 75); trains 25 s to 100 (935 left).
//   [100, 200) J1 keeps its lease: trains 15 s to 115 (40 since the checkpoint), checkpoint to 120,
//              trains 40 to 160, checkpoint to 165, trains 35 to 200 (845 left).
//   [200, 300) J1 is preempted: it saved a checkpoint at 200 in its last 5 s, which had trained 5
//              iterations: 850 left. J2 starts: restart 10 s (no checkpoint to load), 50 s: done at 260.
//   [300, ...) J1 resumes: 30 s, then 850 iterations = 21 intervals of 40 + 10, a 5 s checkpoint
//              after each interval: 330 + 21 x 45 + 10 = 1285.
// Checkpoints of J1: 1 + 2 periodic, 1 at the preemption, 21 after: 25, stalling it 125 s.
TEST(ClusterScheduleCheckpoints, StallsLoadsAndAPreemptionByHand) {
  const ScheduleResult r = simulate_schedule(checkpointed_jobs(), costs_config(Policy::GAVEL_LAS));
  EXPECT_TRUE(r.checkpoint_costs);
  EXPECT_NEAR(r.jobs[1].completion_s, 260, 1e-9);
  EXPECT_NEAR(r.jobs[0].completion_s, 1285, 1e-9);
  EXPECT_NEAR(r.summary.average_jct_s, (1285 + 210) / 2.0, 1e-9);
  EXPECT_EQ(r.jobs[0].restarts, 2);
  EXPECT_EQ(r.jobs[0].checkpoints, 25);
  EXPECT_NEAR(r.jobs[0].checkpoint_stall_s, 125, 1e-9);
  EXPECT_NEAR(r.jobs[0].checkpoint_gpu_hours, 125 / 3600.0, 1e-12);
  EXPECT_EQ(r.jobs[1].checkpoints, 0);
  EXPECT_EQ(r.jobs[1].checkpoint_stall_s, 0);
  EXPECT_EQ(r.summary.checkpoints, 25);
  EXPECT_NEAR(r.summary.checkpoint_stall_s, 125, 1e-9);
  // Held: J1 [0, 200) and [300, 1285), J2 [200, 260).
  EXPECT_NEAR(r.jobs[0].gpu_hours, (200 + 985) / 3600.0, 1e-12);
  ASSERT_EQ(r.jobs[0].leases.size(), 2u);
  EXPECT_NEAR(r.jobs[0].leases[1].start_s, 300, 1e-9);
  EXPECT_NEAR(r.jobs[0].leases[1].end_s, 1285, 1e-9);
  EXPECT_EQ(r.summary.allocations, 3u);
  // The same jobs without checkpoint costs: 1120 (ClusterSchedule.GavelLasPreemptsForTheShortJobByHand).
  SchedulerConfig free = costs_config(Policy::GAVEL_LAS);
  free.checkpoint_costs = false;
  const ScheduleResult none = simulate_schedule(checkpointed_jobs(), free);
  EXPECT_NEAR(none.jobs[0].completion_s, 1120, 1e-9);
  EXPECT_FALSE(none.checkpoint_costs);
  EXPECT_EQ(none.jobs[0].checkpoints, 0);
}

// FIFO never preempts: J1 pays its start (30 s) and the periodic stalls only. 1000 iterations = 25
// intervals of 40, a checkpoint after each but the last (the job is done): 30 + 1000 + 24 x 5 = 1150.
// J2 starts at the round after, 1200: restart 10 s + 50 s.
TEST(ClusterScheduleCheckpoints, FifoPaysThePeriodicStallsByHand) {
  const ScheduleResult r = simulate_schedule(checkpointed_jobs(), costs_config(Policy::FIFO));
  EXPECT_NEAR(r.jobs[0].completion_s, 1150, 1e-9);
  EXPECT_EQ(r.jobs[0].checkpoints, 24);
  EXPECT_NEAR(r.jobs[0].checkpoint_stall_s, 120, 1e-9);
  EXPECT_NEAR(r.jobs[1].completion_s, 1260, 1e-9);
}

// The Exp(1) draws of job `j`'s failures (docs/schedule.md, "Failures").
std::vector<double> failure_draws(uint64_t seed, size_t j, int n) {
  std::mt19937_64 g(seed + j);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(-std::log1p(-static_cast<double>(g() >> 11) * 0x1.0p-53));
  return out;
}

// A failure with checkpoint costs: one job of 60 iterations at 1 it/s on a 1-GPU node whose pool
// states a relaunch of 12 s (reliability.restart); the job checkpoints every 30 s of training (its
// own interval, not the failures' 1000 s), 2 s each, and loads one in 5 s. FIFO, rounds of 100 s,
// restart_s 10. The node's MTBF puts the first failure at 50 s held:
//   start: 10 + 5 = 15 s; trains 30 s to 45 (30 left); checkpoint [45, 47); trains 3 s to 50; fails:
//   the 3 s are lost (30 left); restart: relaunch 12 + load 5 = 17 s to 67; trains 30 s: done at 97.
// Lost: 3 s of training + the 17 s restart. Without the pool's relaunch the failure's restart is
// restart_s 10 + 5: done at 95.
TEST(ClusterScheduleCheckpoints, FailureRestartUsesThePoolsRelaunchByHand) {
  uint64_t seed = 1;
  std::vector<double> e;
  for (; seed < 10000; ++seed) {
    e = failure_draws(seed, 0, 2);
    if (50 * (e[0] + e[1]) / e[0] > 110) break;  // the second failure after the job's end
  }
  ASSERT_LT(seed, 10000u);
  ScheduleInput in;
  in.pools = {{"p", 1, 2.0, 50 / e[0], 1, 12.0, 0}};
  in.jobs = {{"J", 0, 60, 1, std::nullopt, {{0, 1, 1.0, CheckpointCost{2, 5, 30}}}}};
  SchedulerConfig c = costs_config(Policy::FIFO);
  c.failures = FailureConfig{1000, seed};
  const ScheduleResult r = simulate_schedule(in, c);
  EXPECT_EQ(r.jobs[0].failures, 1);
  EXPECT_NEAR(r.jobs[0].completion_s, 97, 1e-9);
  EXPECT_NEAR(r.jobs[0].lost_gpu_hours, 20 / 3600.0, 1e-12);
  EXPECT_EQ(r.jobs[0].checkpoints, 1);
  EXPECT_NEAR(r.jobs[0].checkpoint_stall_s, 2, 1e-9);
  EXPECT_NEAR(r.jobs[0].gpu_hours, 97 / 3600.0, 1e-12);
  in.pools[0].failure_relaunch_s.reset();
  EXPECT_NEAR(simulate_schedule(in, c).jobs[0].completion_s, 95, 1e-9);
}

// The matrix's checkpoint figures are the resilience model's for the entry's layout on its pool
// (`run --backend analytic` of that scenario), and a round too short for a restart and a checkpoint
// is an input error naming the job.
TEST(ClusterScheduleCheckpoints, MatrixFiguresAreTheResilienceModels) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / fmt::format("ckpt-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const core::Json trace_doc = core::Json::parse(R"({"jobs": [
      {"name": "j", "scenario": {"model": "gpt3-125m", "training": {"sequence_length": 1024, "global_batch": 32,
        "checkpoint": {"interval": 50, "mode": "sync"}}}, "work": {"iterations": 1000}, "gpus": [8]},
      {"name": "plain", "scenario": {"model": "gpt3-125m", "training": {"sequence_length": 1024, "global_batch": 32}},
       "work": {"iterations": 1000}, "gpus": [8]}]})");
  std::ofstream((dir / "jobs.json").string()) << trace_doc.dump();
  const core::Json pool = core::Json::parse(R"({"name": "a100", "gpu": "A100-SXM4-80GB", "nodes": 1,
      "storage": {"parallel_fs": {"write_bandwidth": "1 GB/s", "read_bandwidth": "1 GB/s"}}})");
  const ClusterSpec cluster = read_cluster_spec(
      {{"pools", {pool}}, {"scheduler", {{"round_s", 360}, {"restart_s", 30}, {"checkpoint_costs", true}}}}, "c.json");
  EXPECT_TRUE(cluster.scheduler.checkpoint_costs);
  const JobTrace trace = load_job_trace((dir / "jobs.json").string(), cluster);
  MatrixOptions mo;
  mo.refine = 2;
  const ThroughputMatrix m(cluster, trace, mo);
  ASSERT_EQ(m.options_of(0).size(), 1u);
  ASSERT_TRUE(m.options_of(0)[0].checkpoint.has_value());
  EXPECT_FALSE(m.options_of(1)[0].checkpoint.has_value());  // no training.checkpoint: free
  const MatrixEntry& e = m.entries().at(0);
  const Prediction p = predict(e.scenario, "analytic");
  ASSERT_TRUE(p.resilience.has_value());
  const CheckpointCost& c = *m.options_of(0)[0].checkpoint;
  EXPECT_EQ(c.stall_s, p.resilience->stall_s);
  EXPECT_EQ(c.load_s, p.resilience->load_s);
  EXPECT_DOUBLE_EQ(c.interval_s, 50 * p.iteration_time_s());
  // A sync save and a load of the whole checkpoint at 1 GB/s: seconds, not free.
  EXPECT_GT(c.stall_s, 0.1);
  EXPECT_GT(c.load_s, 0.1);
  const ScheduleInput in = schedule_input(cluster, trace, m);
  ASSERT_TRUE(in.jobs[0].options[0].checkpoint.has_value());
  EXPECT_EQ(in.pools[0].warmup_s, 0);
  EXPECT_FALSE(in.pools[0].failure_relaunch_s.has_value());  // the pool states no reliability.restart
  const ScheduleResult r = simulate_schedule(in, cluster.scheduler);
  EXPECT_GT(r.jobs[0].checkpoints, 0);
  // A round that a restart and a checkpoint do not fit in.
  ClusterSpec tight = cluster;
  tight.scheduler.round_s = 30 + c.load_s + c.stall_s;
  try {
    schedule_input(tight, trace, m);
    ADD_FAILURE() << "accepted";
  } catch (const core::InputError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("/jobs/0"), std::string::npos) << what;
    EXPECT_NE(what.find("job \"j\" on 8 x a100"), std::string::npos) << what;
    EXPECT_NE(what.find("scheduler.round_s"), std::string::npos) << what;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::plan
