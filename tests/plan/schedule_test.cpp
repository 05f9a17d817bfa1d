// The cluster scheduler (sim/plan/schedule_sim.hpp) on schedules computed by hand, the throughput
// matrix against `run` of the same layouts, and the inputs' bad-input corpus.
#include <gtest/gtest.h>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>

#include "sim/core/text_file.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/schedule_sim.hpp"

namespace trainsim::plan {
namespace {

const std::filesystem::path SRC(TRAINSIM_SOURCE_DIR);

// One pool of one GPU at 2 $/GPU-hour; rounds of 100 s, 10 s per (re)start. J1 arrives at 0 with
// 1000 iterations, J2 at 50 with 50; both do 1 it/s.
ScheduleInput one_gpu_two_jobs() {
  ScheduleInput in;
  in.pools = {{"p", 1, 2.0, 0, 1, std::nullopt, 0}};
  in.jobs = {{"J1", 0, 1000, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}}},
             {"J2", 50, 50, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}}}};
  return in;
}

SchedulerConfig config(Policy p) {
  SchedulerConfig c;
  c.policy = p;
  c.round_s = 100;
  c.restart_s = 10;
  return c;
}

// FIFO: J1 starts at 0 (10 s restart: 90 done, 910 left), runs on; at 100 it has 910 s to go and
// finishes at 1010, inside the round [1000, 1100). J2 (arrived at 50) starts at the next round, 1100,
// and finishes at 1100 + 10 + 50 = 1160. JCTs 1010 and 1110; makespan 1160; GPU time held 1010 + 60.
TEST(ClusterSchedule, FifoCompletionTimesByHand) {
  const ScheduleResult r = simulate_schedule(one_gpu_two_jobs(), config(Policy::FIFO));
  EXPECT_DOUBLE_EQ(r.jobs[0].completion_s, 1010);
  EXPECT_DOUBLE_EQ(r.jobs[1].completion_s, 1160);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 1100);
  EXPECT_DOUBLE_EQ(r.summary.average_jct_s, (1010 + 1110) / 2.0);
  EXPECT_DOUBLE_EQ(r.summary.makespan_s, 1160);
  EXPECT_DOUBLE_EQ(r.jobs[1].waiting_s, 1110 - 60);
  EXPECT_NEAR(r.summary.gpu_hours, (1010 + 60) / 3600.0, 1e-12);
  EXPECT_NEAR(r.summary.cost_usd, 2 * (1010 + 60) / 3600.0, 1e-12);
  EXPECT_NEAR(r.summary.utilization, 1070.0 / 1160, 1e-12);
  EXPECT_EQ(r.jobs[0].restarts, 1);
  // Slowdowns: JCT over work / best throughput: 1010 / 1000 and 1110 / 50.
  EXPECT_DOUBLE_EQ(r.jobs[0].slowdown, 1.01);
  EXPECT_DOUBLE_EQ(r.jobs[1].slowdown, 22.2);
  EXPECT_DOUBLE_EQ(r.summary.max_slowdown, 22.2);
  EXPECT_NEAR(r.summary.average_slowdown, (1.01 + 22.2) / 2, 1e-12);
  // Every round starts in the first hour: one bucket holding all 1070 GPU-seconds.
  ASSERT_EQ(r.timeline.utilization.size(), 1u);
  EXPECT_NEAR(r.timeline.utilization[0], 1070.0 / 3600, 1e-12);
}

// Gavel's LAS: J1 runs alone in [0, 100) (910 left). At 100 J2 has arrived: each job is allocated
// half the GPU; neither has had time yet, so the tie goes to arrival order and J1 runs [100, 200)
// (810 left). At 200 J2's priority (never run) beats J1's (0.5 / 1): J2 runs, 10 s restart + 50 s,
// and completes at 260. At 300 J1 is alone again, resumes (10 s) and needs 810 s: completes at 1120.
// JCTs 1120 and 210 (average 665, against FIFO's 1060); J1 restarted twice.
TEST(ClusterSchedule, GavelLasPreemptsForTheShortJobByHand) {
  const ScheduleResult r = simulate_schedule(one_gpu_two_jobs(), config(Policy::GAVEL_LAS));
  EXPECT_NEAR(r.jobs[1].completion_s, 260, 1e-9);
  EXPECT_NEAR(r.jobs[0].completion_s, 1120, 1e-9);
  EXPECT_NEAR(r.summary.average_jct_s, 665, 1e-9);
  EXPECT_EQ(r.jobs[0].restarts, 2);
  EXPECT_EQ(r.jobs[1].restarts, 1);
  EXPECT_NEAR(r.jobs[0].waiting_s, 100, 1e-9);  // the round [200, 300)
  EXPECT_EQ(r.summary.allocations, 3u);         // at 0, 100 (J2 arrived), 300 (J2 done)
  // The Gantt chart's bars: J1 held the GPU over [0, 200) and [300, 1120), J2 over [200, 260).
  ASSERT_EQ(r.jobs[0].leases.size(), 2u);
  EXPECT_DOUBLE_EQ(r.jobs[0].leases[0].end_s, 200);
  EXPECT_DOUBLE_EQ(r.jobs[0].leases[1].start_s, 300);
  EXPECT_NEAR(r.jobs[0].leases[1].end_s, 1120, 1e-9);
  ASSERT_EQ(r.jobs[1].leases.size(), 1u);
  EXPECT_NEAR(r.jobs[1].leases[0].start_s, 200, 1e-9);
  EXPECT_NEAR(r.jobs[1].leases[0].end_s, 260, 1e-9);
}

// Heterogeneity: two pools of one GPU, "slow" (1 it/s for both jobs) and "fast" (J1 4 it/s, J2 1.25
// it/s), no restart cost; both arrive at 0 with 400 iterations. FIFO, agnostic, puts J1 on the first
// pool in file order (slow: 400 s) and J2 on the fast one (400 / 1.25 = 320 s): average 360 s. J1
// gains 4x from the fast GPU and J2 only 1.25x, so the aware policy gives the fast GPU mostly to J1
// and finishes both sooner on average.
TEST(ClusterSchedule, AwareBeatsAgnosticOnTwoTypes) {
  ScheduleInput in;
  in.pools = {{"slow", 1, 0, 0, 1, std::nullopt, 0}, {"fast", 1, 0, 0, 1, std::nullopt, 0}};
  in.jobs = {{"J1", 0, 400, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}, {1, 1, 4.0, std::nullopt}}},
             {"J2", 0, 400, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}, {1, 1, 1.25, std::nullopt}}}};
  SchedulerConfig c = config(Policy::FIFO);
  c.restart_s = 0;
  const ScheduleResult fifo = simulate_schedule(in, c);
  EXPECT_DOUBLE_EQ(fifo.jobs[0].completion_s, 400);
  EXPECT_DOUBLE_EQ(fifo.jobs[1].completion_s, 320);
  c.policy = Policy::GAVEL_LAS;
  const ScheduleResult aware = simulate_schedule(in, c);
  EXPECT_LT(aware.summary.average_jct_s, fifo.summary.average_jct_s);
}

TEST(ClusterSchedule, DeadlineMissedIsCounted) {
  ScheduleInput in = one_gpu_two_jobs();
  in.jobs[1].deadline_s = 200;  // FIFO starts J2 at 1100
  const ScheduleResult r = simulate_schedule(in, config(Policy::FIFO));
  EXPECT_FALSE(r.jobs[1].met_deadline);
  EXPECT_EQ(r.summary.deadlines_missed, 1u);
}

// The 95th percentile by nearest rank: of 20 JCTs the 19th smallest.
TEST(ClusterSchedule, P95IsTheNearestRank) {
  ScheduleInput in;
  in.pools = {{"p", 20, 0, 0, 1, std::nullopt, 0}};
  for (int i = 1; i <= 20; ++i) {
    in.jobs.push_back({fmt::format("j{}", i), 0, i * 10.0, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}}});
  }
  SchedulerConfig c = config(Policy::FIFO);
  c.restart_s = 0;
  c.round_s = 1000;
  const ScheduleResult r = simulate_schedule(in, c);
  EXPECT_DOUBLE_EQ(r.summary.p95_jct_s, 190);
  EXPECT_DOUBLE_EQ(r.summary.makespan_s, 200);
}

// --- Failures during the trace ---

// The Exp(1) draws of job `j`'s failures, as docs/schedule.md specifies them: std::mt19937_64 seeded
// with seed + j, each draw -ln(1 - u), u = the 53 high bits / 2^53.
std::vector<double> failure_draws(uint64_t seed, size_t j, int n) {
  std::mt19937_64 g(seed + j);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(-std::log1p(-static_cast<double>(g() >> 11) * 0x1.0p-53));
  return out;
}

// One job of 60 iterations at 1 it/s on a pool of one 1-GPU node of the given MTBF (2 $/GPU-hour).
ScheduleInput failing_job(double node_mtbf_s) {
  ScheduleInput in;
  in.pools = {{"p", 1, 2.0, node_mtbf_s, 1, std::nullopt, 0}};
  in.jobs = {{"J", 0, 60, 1, std::nullopt, {{0, 1, 1.0, std::nullopt}}}};
  return in;
}

// FIFO, rounds of 100 s, 10 s restarts, checkpoints every 30 s of training, failures seeded.
SchedulerConfig failing_config(uint64_t seed) {
  SchedulerConfig c = config(Policy::FIFO);
  c.failures = FailureConfig{30, seed};
  return c;
}

// One job of 60 iterations at 1 it/s on a 1-GPU node, FIFO, rounds of 100 s, 10 s restarts,
// checkpoints every 30 s of training. The node's MTBF is set so that the first failure comes after
// 50 s held (exposure e1 = 50 / MTBF): restart [0, 10), training [10, 40) (checkpoint at 30 s of
// training), [40, 50) then the failure: those 10 s of work are lost, restart [50, 60), and the 30
// iterations left run [60, 90). The second failure would come at 50 (e1 + e2) / e1 s, after 90 for
// this seed. Lost: 10 s of work + the 10 s restart; held 90 s.
TEST(ClusterScheduleFailures, OneFailureByHand) {
  const uint64_t seed = 7;
  const std::vector<double> e = failure_draws(seed, 0, 2);
  ASSERT_GT(50 * (e[0] + e[1]) / e[0], 90.0) << "the seed's second failure must come after the job's end";
  const ScheduleInput in = failing_job(50 / e[0]);
  SchedulerConfig c = failing_config(seed);
  const ScheduleResult r = simulate_schedule(in, c);
  EXPECT_TRUE(r.failures);
  EXPECT_EQ(r.jobs[0].failures, 1);
  EXPECT_NEAR(r.jobs[0].completion_s, 90, 1e-9);
  EXPECT_NEAR(r.jobs[0].lost_gpu_hours, 20 / 3600.0, 1e-12);
  EXPECT_NEAR(r.jobs[0].gpu_hours, 90 / 3600.0, 1e-12);
  EXPECT_EQ(r.jobs[0].restarts, 1);  // the start; the failure's restart is counted as a failure
  EXPECT_EQ(r.summary.failures, 1);
  EXPECT_NEAR(r.summary.lost_gpu_hours, 20 / 3600.0, 1e-12);
  // Without failures: restart [0, 10), 60 s of work: done at 70.
  c.failures.reset();
  const ScheduleResult none = simulate_schedule(in, c);
  EXPECT_FALSE(none.failures);
  EXPECT_DOUBLE_EQ(none.jobs[0].completion_s, 70);
  EXPECT_EQ(none.jobs[0].failures, 0);
}

// Two failures, the second during the first one's restart, which starts over: with the MTBF making
// the first failure at 50 s held and a seed whose second draw is small (e2 / e1 < 0.2: the second
// comes within the 10 s restart after 50), the job restarts at 50 + 50 e2 / e1 for 10 s more.
TEST(ClusterScheduleFailures, FailureDuringARestartStartsItOver) {
  uint64_t seed = 0;
  std::vector<double> e;
  for (seed = 1; seed < 10000; ++seed) {
    e = failure_draws(seed, 0, 3);
    if (e[1] / e[0] < 0.2 && 50 * (e[0] + e[1] + e[2]) / e[0] > 200) break;
  }
  ASSERT_LT(seed, 10000u);
  const double second = 50 * (e[0] + e[1]) / e[0];  // during the restart [50, 60)
  const ScheduleResult r = simulate_schedule(failing_job(50 / e[0]), failing_config(seed));
  EXPECT_EQ(r.jobs[0].failures, 2);
  // Restart until second + 10, then the 30 iterations left (10 of 40 were lost).
  EXPECT_NEAR(r.jobs[0].completion_s, second + 10 + 30, 1e-9);
  // Lost: 10 s of work, the interrupted restart (second - 50) and the full one after it.
  EXPECT_NEAR(r.jobs[0].lost_gpu_hours, (10 + (second - 50) + 10) / 3600.0, 1e-12);
}

// --- Several clusters (schedule --vs) ---

// One job of 1 reference hour on 8 GPUs, measured on an A100 node, on two clusters under FIFO with
// rounds of 360 s and 30 s restarts. Cluster A has only that node: the job starts at 0 and ends
// after the restart and its hour, 30 + 3600 = 3630 s. Cluster B lists an H100 node first: FIFO takes
// the first pool with room, and the hour shrinks by the A100's iteration rate over the H100's (each
// from cluster B's own matrix, the trace read again against its pools).
TEST(ClusterScheduleClusters, SameJobsOnEachClusterByHand) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / fmt::format("clusters-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const core::Json trace_doc = core::Json::parse(R"({"reference_pool": "a100", "jobs": [
      {"name": "j", "scenario": {"model": "gpt3-125m", "training": {"sequence_length": 1024, "global_batch": 32}},
       "work": {"reference_hours": 1}, "gpus": [8]}]})");
  std::ofstream((dir / "jobs.json").string()) << trace_doc.dump();
  const core::Json a100 = {{"name", "a100"}, {"gpu", "A100-SXM4-80GB"}, {"nodes", 1}};
  const core::Json h100 = {{"name", "h100"}, {"gpu", "H100-SXM5-80GB"}, {"nodes", 1}};
  const core::Json scheduler = {{"round_s", 360}, {"restart_s", 30}};
  const ClusterSpec a = read_cluster_spec({{"pools", {a100}}, {"scheduler", scheduler}}, "a.json");
  const ClusterSpec b = read_cluster_spec({{"pools", {h100, a100}}, {"scheduler", scheduler}}, "b.json");
  const JobTrace trace = load_job_trace((dir / "jobs.json").string(), a);
  MatrixOptions mo;
  mo.refine = 2;
  const std::vector<ClusterRuns> runs = schedule_clusters({a, b}, trace, mo, {Policy::FIFO, Policy::GAVEL_LAS});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].cluster.file, "a.json");
  EXPECT_EQ(runs[1].cluster.file, "b.json");
  EXPECT_EQ(runs[1].jobs, 1u);
  EXPECT_EQ(runs[1].job_classes, 1u);
  EXPECT_EQ(runs[1].matrix_entries, 2u);  // one class on two pools at 8 GPUs
  ASSERT_EQ(runs[0].results.size(), 2u);
  EXPECT_EQ(runs[0].results[0].policy, Policy::FIFO);
  EXPECT_EQ(runs[0].results[1].policy, Policy::GAVEL_LAS);
  EXPECT_NEAR(runs[0].results[0].jobs[0].completion_s, 3630, 1e-6);
  const std::vector<JobOption>& options = runs[1].input.jobs[0].options;
  ASSERT_EQ(options.size(), 2u);
  EXPECT_EQ(options[0].pool, 0u);  // h100
  const double hour_on_h100 = 3600 * options[1].iterations_per_s / options[0].iterations_per_s;
  EXPECT_LT(hour_on_h100, 3600);
  EXPECT_NEAR(runs[1].results[0].jobs[0].completion_s, 30 + hour_on_h100, 1e-6);
  EXPECT_EQ(runs[1].results[0].jobs[0].leases.at(0).pool, 0u);
  // The same as simulating cluster B's input directly.
  SchedulerConfig fifo = b.scheduler;
  fifo.policy = Policy::FIFO;
  EXPECT_EQ(simulate_schedule(runs[1].input, fifo).jobs[0].completion_s, runs[1].results[0].jobs[0].completion_s);
  std::filesystem::remove_all(dir);
}

// --- The throughput matrix ---

// Three bundled jobs on three GPU types: every entry's throughput equals the analytic prediction of
// the scenario it names (the best layout on that pool and count), read back as `run` reads a file.
TEST(ClusterScheduleMatrix, EntriesEqualRunOfTheirLayouts) {
  const ClusterSpec c = load_cluster_spec((SRC / "tests/data/schedule/cluster-3types.json").string());
  const JobTrace t = load_job_trace((SRC / "tests/data/schedule/jobs-3.json").string(), c);
  const ThroughputMatrix m(c, t, {});
  ASSERT_EQ(m.classes().size(), 3u);
  size_t checked = 0;
  std::set<std::string> gpus;
  for (const MatrixEntry& e : m.entries()) {
    if (!e.feasible) continue;
    const core::Json written = e.scenario.to_json(Scenario::ProfileOut::AS_GIVEN);
    const Scenario s = read_scenario(core::parse_json_text(written.dump(), "matrix.json"), e.scenario.file);
    const Prediction p = predict(s, "analytic");
    EXPECT_EQ(p.iteration_time_s(), e.iteration_time_s) << m.classes()[e.job_class].name << " " << e.layout;
    EXPECT_EQ(s.cluster.world_size(), e.gpus);
    EXPECT_EQ(s.cluster.gpu, c.pools[e.pool].config.gpu);
    gpus.insert(s.cluster.gpu);
    ++checked;
  }
  EXPECT_GE(checked, 9u);
  EXPECT_EQ(gpus.size(), 3u);
  // The work conversions: tokens / (global batch 256 x 2048), samples / 2048, iterations as given.
  EXPECT_DOUBLE_EQ(m.work_iterations(0), 2e9 / (256.0 * 2048));
  EXPECT_DOUBLE_EQ(m.work_iterations(1), 1.2e8 / 2048);
  EXPECT_DOUBLE_EQ(m.work_iterations(2), 20000);
}

// --- The inputs ---

// The bad-input corpus of `schedule`: tests/data/bad/schedule/NAME.cluster.json is read with the good
// trace, NAME.jobs.json with the good cluster; NAME.expected holds the exact message ({file}: the
// case's path).
std::string read_text(const std::filesystem::path& p) {
  std::string text = core::read_text_file(p.string(), core::MAX_STREAM_BYTES, "expected message");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

TEST(ClusterScheduleInputs, BadInputCorpusGivesItsMessages) {
  const std::string good_cluster = (SRC / "tests/data/schedule/cluster-3types.json").string();
  const std::string good_jobs = (SRC / "tests/data/schedule/jobs-3.json").string();
  size_t cases = 0;
  for (const auto& e : std::filesystem::directory_iterator(SRC / "tests/data/bad/schedule")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(name);
    const bool cluster_case = name.ends_with(".cluster.json");
    const std::string stem = name.substr(0, name.find('.'));
    std::string expected = read_text(e.path().parent_path() / (stem + ".expected"));
    for (size_t at; (at = expected.find("{file}")) != std::string::npos;) expected.replace(at, 6, e.path().string());
    try {
      const ClusterSpec c = load_cluster_spec(cluster_case ? e.path().string() : good_cluster);
      const JobTrace t = load_job_trace(cluster_case ? good_jobs : e.path().string(), c);
      const ThroughputMatrix m(c, t, {});
      ADD_FAILURE() << "accepted";
    } catch (const core::InputError& err) {
      EXPECT_EQ(std::string(err.what()), expected);
    }
    ++cases;
  }
  EXPECT_GE(cases, 5u);
}

// A synthetic trace: same seed, same jobs; the Poisson arrivals' mean gap near 1 / rate.
TEST(ClusterScheduleInputs, SyntheticTraceIsSeededAndPoisson) {
  SyntheticTraceOptions o;
  o.jobs = 4000;
  o.arrivals_per_hour = 10;
  o.mix = {{core::Json::object({{"model", "gpt3-125m"}}), "x.json", 1, "a"}, {core::Json::object(), "y.json", 3, "b"}};
  const std::vector<Job> a = generate_jobs(o);
  const std::vector<Job> b = generate_jobs(o);
  ASSERT_EQ(a.size(), 4000u);
  size_t mix_b = 0, one_gpu = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].work, b[i].work);
    mix_b += a[i].name.starts_with("b-");
    one_gpu += a[i].gpus.front() == 1;
  }
  const double mean_gap = a.back().arrival_s / 3999;
  EXPECT_NEAR(mean_gap, 360, 360 * 0.05);  // 4000 draws: the mean within 5% (sd 1.6%)
  EXPECT_NEAR(static_cast<double>(mix_b) / 4000, 0.75, 0.03);
  EXPECT_NEAR(static_cast<double>(one_gpu) / 4000, 0.7, 0.03);
  o.seed = 2;
  EXPECT_NE(generate_jobs(o).back().arrival_s, a.back().arrival_s);
}

}  // namespace
}  // namespace trainsim::plan
