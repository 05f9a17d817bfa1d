// Checkpoints, failures and goodput (sim/plan/resilience.hpp, models/checkpoint.hpp,
// docs/resilience.md): the closed forms against hand-computed values, the checkpoint stall of each
// mode against size / bandwidth, the flush contending with data-parallel traffic in SimGrid only, the
// seeded Monte Carlo, and the bad inputs.

#include "sim/plan/resilience.hpp"

#include <cmath>
#include <gtest/gtest.h>

#include "models/checkpoint.hpp"
#include "models/workload_builder.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/time_to_train.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/host_model.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

// Hand computation, C = 10 s, M = 3 h = 10,800 s:
//   Young: sqrt(2 x 10 x 10,800) = sqrt(216,000) = 464.758002 s
//   Daly:  x = C / 2M = 10 / 21,600 = 4.6296e-4, sqrt(x) = 0.0215166;
//          464.758002 x (1 + 0.0215166 / 3 + 4.6296e-4 / 9) - 10 = 464.758002 x 1.0072237 - 10 = 458.115242 s
TEST(Resilience, YoungAndDalyIntervalsMatchHandComputedValues) {
  EXPECT_NEAR(young_interval(10, 10800), 464.758002, 1e-5);
  EXPECT_NEAR(daly_interval(10, 10800), 458.115242, 1e-5);
  // Daly: a checkpoint costing 2M or more: checkpoint every M.
  EXPECT_DOUBLE_EQ(daly_interval(30000, 10000), 10000);
  // No cost: checkpoint continuously.
  EXPECT_DOUBLE_EQ(young_interval(0, 10800), 0);
}

// goodput = tau / (M e^(R/M) (e^((tau+C)/M) - 1)); tau = 458.115242, C = 10, R = 600, M = 10,800:
//   e^(600/10800) = 1.0571260, e^(468.115242/10800) - 1 = 0.0442960; 10,800 x 1.0571260 x 0.0442960
//   = 505.7389; 458.115242 / 505.7389 = 0.905834
TEST(Resilience, GoodputMatchesDalysExpectedWallTime) {
  EXPECT_NEAR(goodput(458.115242, 10, 600, 10800), 0.905834, 1e-6);
  // Failures vanishing: only the checkpoints cost, tau / (tau + C).
  EXPECT_NEAR(goodput(90, 10, 600, 1e12), 0.9, 1e-6);
  // Far more failures than checkpoints: the run never ends.
  EXPECT_EQ(goodput(1e6, 10, 600, 1), 0);
}

TEST(Resilience, SimulatedRunsAreSeededAndAgreeWithTheExpectation) {
  const double solve = 30 * 86400.0, tau = 458.1, cost = 10, restart = 600, mtbf = 10800;
  const SimulatedRuns a = simulate_failures(solve, tau, cost, restart, mtbf, 400, 1);
  const SimulatedRuns b = simulate_failures(solve, tau, cost, restart, mtbf, 400, 1);
  const SimulatedRuns c = simulate_failures(solve, tau, cost, restart, mtbf, 400, 2);
  EXPECT_EQ(a.mean_s, b.mean_s);
  EXPECT_EQ(a.p95_s, b.p95_s);
  EXPECT_NE(a.mean_s, c.mean_s);
  EXPECT_LE(a.min_s, a.p5_s);
  EXPECT_LE(a.p5_s, a.p50_s);
  EXPECT_LE(a.p50_s, a.p95_s);
  EXPECT_LE(a.p95_s, a.max_s);
  // 30 days with a failure every 3 h: about 250 failures per run, so the mean of 400 runs is within
  // a fraction of a percent of Daly's expectation.
  const double expected = solve / goodput(tau, cost, restart, mtbf);
  EXPECT_NEAR(a.mean_s / expected, 1.0, 0.005);
  EXPECT_NEAR(a.failures_mean, expected / mtbf, 0.03 * expected / mtbf);
  // Without failures: exactly the training plus one checkpoint per interval (the last one shorter).
  const SimulatedRuns none = simulate_failures(1000, 300, 10, 600, 1e15, 3, 1);
  EXPECT_DOUBLE_EQ(none.max_s, 1000 + 4 * 10);
  EXPECT_DOUBLE_EQ(none.failures_mean, 0);
}

// A small job that crosses nodes: 2 nodes of 8 A100, TP 8 inside the node, DP 2 across nodes.
core::Json small_job(const std::string& mode, const std::string& write_bandwidth = "16 GB/s") {
  return core::Json::parse(R"({
    "name": "ckpt",
    "cluster": {"gpu": "A100-SXM4-80GB", "nodes": 2, "gpus_per_node": 8,
                "network": {"topology": "ideal", "nics_per_node": 8, "nic_bandwidth": "200 Gb/s"},
                "storage": {"parallel_fs": {"write_bandwidth": ")" + write_bandwidth + R"(", "read_bandwidth": "32 GB/s"},
                            "node_local": {"write_bandwidth": "10 GB/s", "read_bandwidth": "20 GB/s"}}},
    "model": {"family": "transformer", "layers": 4, "hidden": 4096, "heads": 32, "vocab": 32000},
    "training": {"sequence_length": 2048, "global_batch": 16, "micro_batch": 1, "tokens": 1e9,
                 "checkpoint": {"mode": ")" + mode + R"(", "interval": 100}},
    "parallelism": {"tensor": 8, "data": 2}
  })");
}

Prediction predicted(const Scenario& s, const std::string& backend) { return predict(s, backend); }

// Parameters: 4 layers x 12 x 4096² (+ biases and norms) + 32000 x 4096 embedding + 2048 x 4096
// positions; 14 bytes each in bf16 mixed precision; 16 writers share it.
TEST(Resilience, CheckpointSizeIsTheModelStateOnce) {
  const Scenario s = read_scenario(small_job("sync"), "ckpt.json");
  const double params = static_cast<double>(s.model.parameter_count(2048));
  const models::CheckpointSize z =
      models::checkpoint_size(s.model, s.training, s.parallelism, models::CheckpointSharding::DATA_PARALLEL, 8);
  EXPECT_DOUBLE_EQ(z.bytes_per_parameter, 14);
  EXPECT_DOUBLE_EQ(z.total.value(), params * 14);
  EXPECT_EQ(z.writers, 16);
  EXPECT_EQ(z.writing_nodes, 2);
  EXPECT_DOUBLE_EQ(z.per_writer.value(), params * 14 / 16);
  // Model-parallel sharding: the 8 ranks of data-parallel rank 0 (node 0) write twice as much each.
  const models::CheckpointSize mp =
      models::checkpoint_size(s.model, s.training, s.parallelism, models::CheckpointSharding::MODEL_PARALLEL, 8);
  EXPECT_EQ(mp.writers, 8);
  EXPECT_EQ(mp.writing_nodes, 1);
  EXPECT_DOUBLE_EQ(mp.per_writer.value(), params * 14 / 8);
}

// Sync: the stall is a writer's shard over its share of the file system. 16 GB/s for 2 nodes: 8 GB/s
// per node, 1 GB/s per GPU (the NICs and PCIe are far faster).
TEST(Resilience, SyncStallIsSizeOverBandwidth) {
  const Scenario s = read_scenario(small_job("sync"), "ckpt.json");
  const double shard = models::checkpoint_size(s.model, s.training, s.parallelism,
                                               models::CheckpointSharding::DATA_PARALLEL, 8).per_writer.value();
  EXPECT_DOUBLE_EQ(engine::copy_bandwidth(core::CopyDirection::DEVICE_TO_STORAGE, s.cluster).value(), 1e9);
  for (const char* backend : {"analytic", "simgrid"}) {
    SCOPED_TRACE(backend);
    const Prediction p = predicted(s, backend);
    ASSERT_TRUE(p.resilience.has_value());
    EXPECT_NEAR(p.resilience->write_s, shard / 1e9, 1e-3 * shard / 1e9);
    EXPECT_DOUBLE_EQ(p.resilience->stall_s, p.resilience->write_s);
    EXPECT_EQ(p.resilience->snapshot_s, 0);
  }
}

// Async: training waits for the snapshot to host memory only (the flush is in the background; in the
// analytic backend it slows nothing).
TEST(Resilience, AsyncStallsOnlyForTheSnapshot) {
  const Scenario s = read_scenario(small_job("async"), "ckpt.json");
  const double shard = models::checkpoint_size(s.model, s.training, s.parallelism,
                                               models::CheckpointSharding::DATA_PARALLEL, 8).per_writer.value();
  const Prediction p = predicted(s, "analytic");
  ASSERT_TRUE(p.resilience.has_value());
  const ResilienceFigures& f = *p.resilience;
  const double snapshot = shard / engine::copy_bandwidth(core::CopyDirection::DEVICE_TO_HOST, s.cluster).value();
  EXPECT_NEAR(f.snapshot_s, snapshot, 1e-6 * snapshot);
  EXPECT_EQ(f.interference_s, 0);
  EXPECT_EQ(f.flush_wait_s, 0);
  EXPECT_DOUBLE_EQ(f.stall_s, f.snapshot_s);
  EXPECT_EQ(f.write_s, 0);
  EXPECT_NEAR(f.flush_s, shard / 1e9, 1e-9 * shard);
  // A sync save of the same shard stalls far longer.
  const Prediction sync = predicted(read_scenario(small_job("sync"), "ckpt.json"), "analytic");
  EXPECT_GT(sync.resilience->stall_s, 5 * f.stall_s);
}

// The flush leaves through the node's compute NICs: in SimGrid the data-parallel all-reduce across
// the two nodes shares them and slows down; the analytic backend has no contention.
TEST(Resilience, FlushSharingTheNicsSlowsDataParallelTrafficInSimgridOnly) {
  // A file system as fast as the NICs, so that the flush competes for them.
  const Scenario s = read_scenario(small_job("async", "1 TB/s"), "ckpt.json");
  models::BuiltWorkload plain = models::build_workload(s.model, s.training, s.parallelism, s.pruning, s.offload);
  models::BuiltWorkload flushing = models::build_workload(s.model, s.training, s.parallelism, s.pruning, s.offload);
  models::add_checkpoint_traffic(flushing.workload, models::CheckpointTraffic::FLUSH, core::Bytes(20e9));
  const auto data = static_cast<size_t>(core::Axis::DATA);
  for (const char* backend : {"analytic", "simgrid"}) {
    SCOPED_TRACE(backend);
    auto run = [&](const core::Workload& w) {
      const auto b = std::string(backend) == "simgrid" ? engine::make_simgrid_backend() : engine::make_analytic_backend();
      return b->run(w, s.cluster, s.profile, engine::SimulationOptions{});
    };
    const engine::SimulationResult without = run(plain.workload);
    const engine::SimulationResult with = run(flushing.workload);
    ASSERT_GT(without.comm_time[data].value(), 0);
    if (std::string(backend) == "simgrid") {
      EXPECT_GT(with.comm_time[data].value(), 1.2 * without.comm_time[data].value());
    } else {
      EXPECT_DOUBLE_EQ(with.comm_time[data].value(), without.comm_time[data].value());
    }
  }
  // And the report's interference follows: positive in SimGrid, zero in the analytic backend. With
  // 1 GB/s per GPU the flush (0.83 s) spans the whole iteration (0.14 s), the all-reduce included;
  // with 1 TB/s it is over (33 ms) before the backward's all-reduce starts and costs nothing.
  const Scenario slow = read_scenario(small_job("async"), "ckpt.json");
  EXPECT_GT(predicted(slow, "simgrid").resilience->interference_s, 0);
  EXPECT_EQ(predicted(slow, "analytic").resilience->interference_s, 0);
  EXPECT_EQ(predicted(s, "simgrid").resilience->interference_s, 0);
}

TEST(Resilience, MultilevelRestartsFromNodeLocalStorage) {
  const Prediction async = predicted(read_scenario(small_job("async"), "ckpt.json"), "analytic");
  const Prediction multi = predicted(read_scenario(small_job("multilevel"), "ckpt.json"), "analytic");
  // The same stall; the load reads node-local copies (20 GB/s) instead of each node's 16 GB/s share.
  EXPECT_DOUBLE_EQ(multi.resilience->stall_s, async.resilience->stall_s);
  EXPECT_LT(multi.resilience->load_s, async.resilience->load_s);
  // The node-local write: each node's share at its drives' 10 GB/s, in the background.
  const double per_node = multi.resilience->size.per_node().value();
  EXPECT_DOUBLE_EQ(multi.resilience->local_write_s, per_node / 10e9);
  EXPECT_EQ(async.resilience->local_write_s, 0);
  // Drives 1000x slower: the local write outlasts the 100-iteration interval, and the next snapshot
  // waits for it (the host buffer holds one snapshot), as for a flush that outlasts the interval.
  core::Json slow_drives = small_job("multilevel");
  slow_drives["cluster"]["storage"]["node_local"]["write_bandwidth"] = "10 MB/s";
  const Prediction slow = predicted(read_scenario(slow_drives, "ckpt.json"), "analytic");
  const ResilienceFigures& f = *slow.resilience;
  ASSERT_GT(f.local_write_s, f.interval_s);
  EXPECT_DOUBLE_EQ(f.local_write_s, per_node / 10e6);
  EXPECT_DOUBLE_EQ(f.flush_wait_s, f.local_write_s - f.interval_s);
  EXPECT_DOUBLE_EQ(f.stall_s, f.snapshot_s + f.interference_s + f.flush_wait_s);
  EXPECT_DOUBLE_EQ(report_json(read_scenario(slow_drives, "ckpt.json"), slow)["checkpoint"]["local_write_s"].get<double>(),
                   f.local_write_s);
}

TEST(Resilience, ReportHasCheckpointGoodputAndTimeToTrainWithFailures) {
  const Scenario s = read_scenario(small_job("async"), "ckpt.json");
  Prediction p = predicted(s, "analytic");
  simulate_failures(s, p, 50, 7);
  const core::Json r = report_json(s, p);
  EXPECT_GT(r["memory"]["checkpoint_bytes"].get<double>(), 0);
  EXPECT_EQ(r["checkpoint"]["interval_steps"], 100);
  EXPECT_GT(r["goodput"].get<double>(), 0.5);
  EXPECT_LE(r["goodput"].get<double>(), 1.0);
  const core::Json& t = r["time_to_train"];
  EXPECT_NEAR(t["with_failures"]["days"].get<double>(), t["days"].get<double>() / r["goodput"].get<double>(), 1e-9);
  EXPECT_EQ(t["simulated_failures"]["runs"], 50);
  EXPECT_EQ(t["simulated_failures"]["seed"], 7);
  // Same seed, same report.
  Prediction q = predicted(s, "analytic");
  simulate_failures(s, q, 50, 7);
  EXPECT_EQ(report_json(s, q)["time_to_train"], t);
}

std::string input_error(const core::Json& doc) {
  try {
    const Scenario s = read_scenario(doc, "ckpt.json");
    predict(s, "analytic");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Resilience, BadInputsAreClearErrors) {
  core::Json doc = small_job("async");
  doc["cluster"]["reliability"] = {{"node_mtbf", "0 h"}};
  EXPECT_NE(input_error(doc).find("/cluster/reliability/node_mtbf: expected a positive duration"), std::string::npos)
      << input_error(doc);
  doc["cluster"]["reliability"] = {{"node_mtbf", "-5 h"}};
  EXPECT_NE(input_error(doc).find("/cluster/reliability/node_mtbf"), std::string::npos) << input_error(doc);
  doc["cluster"]["reliability"] = {{"failures_per_gpu_hour", 0}};
  EXPECT_NE(input_error(doc).find("/cluster/reliability/failures_per_gpu_hour: expected a failure rate per GPU-hour "
                                  "from 1.43e-07 to 7.5"),
            std::string::npos)
      << input_error(doc);
  // The bounds of docs/hardening.md: a node MTBF from 1 min to 100 years, given or derived.
  for (double rate : {1e308, 1e-308, 8.0}) {
    doc["cluster"]["reliability"] = {{"failures_per_gpu_hour", rate}};
    EXPECT_NE(input_error(doc).find("/cluster/reliability/failures_per_gpu_hour: expected a failure rate"),
              std::string::npos)
        << rate << ": " << input_error(doc);
  }
  doc["cluster"]["reliability"] = {{"node_mtbf", "59 s"}};
  EXPECT_NE(input_error(doc).find("/cluster/reliability/node_mtbf: expected a node MTBF of at least 1 min"),
            std::string::npos)
      << input_error(doc);

  doc = small_job("async");
  doc["cluster"]["storage"]["parallel_fs"].erase("read_bandwidth");
  EXPECT_NE(input_error(doc).find("/cluster/storage/parallel_fs/read_bandwidth: missing"), std::string::npos)
      << input_error(doc);
  doc = small_job("async");
  doc["cluster"].erase("storage");
  EXPECT_NE(input_error(doc).find("/training/checkpoint: needs cluster.storage.parallel_fs"), std::string::npos)
      << input_error(doc);

  doc = small_job("async");
  doc["training"]["checkpoint"]["interval"] = "1 us";
  EXPECT_NE(input_error(doc).find("/training/checkpoint/interval: 1e-06 s is shorter than one iteration"),
            std::string::npos)
      << input_error(doc);
  doc["training"]["checkpoint"]["interval"] = 0;
  EXPECT_NE(input_error(doc).find("/training/checkpoint/interval: expected a positive number of steps"),
            std::string::npos)
      << input_error(doc);
}

}  // namespace
}  // namespace trainsim::cli
