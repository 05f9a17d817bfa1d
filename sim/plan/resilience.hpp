#pragma once
// Failures and checkpoints in closed form (docs/resilience.md): the optimum checkpoint interval,
// the expected share of wall time that trains (goodput), and a seeded Monte Carlo of whole runs.
//
// Notation (all in seconds): C the cost of one checkpoint to training (its stall), M the mean time
// between failures of the job (a node's MTBF / nodes: any node failing stops the job), R the
// restart after a failure (relaunch + checkpoint load + warm-up), tau the training time between two
// checkpoints, Ts the failure-free training time. Failures are a Poisson process (exponential
// times between them) that can strike while training, checkpointing or restarting; a failure loses
// the work since the last completed checkpoint.
//
//   Young (1974):  tau = sqrt(2 C M)
//   Daly (2006, "A higher order estimate of the optimum checkpoint interval for restart dumps",
//   FGCS 22, eq. 37), the interval trainsim uses for "auto":
//                  tau = sqrt(2 C M) [1 + 1/3 sqrt(C / 2M) + 1/9 (C / 2M)] - C   for C < 2M
//                  tau = M                                                     for C >= 2M
//   Daly's expected wall time (eq. 10), exact for this model:
//                  Tw = M e^(R/M) (e^((tau + C)/M) - 1) Ts / tau
//   goodput = Ts / Tw = tau / (M e^(R/M) (e^((tau + C)/M) - 1))
//
// Example: C = 10 s, M = 3 h: young_interval = 464.76 s, daly_interval = 458.12 s; with R = 600 s and
// tau = 458.12 s, goodput = 0.9058.

#include <cstdint>
#include <optional>
#include <vector>

#include "models/checkpoint.hpp"

namespace trainsim::plan {

// REQUIRES: cost_s >= 0, mtbf_s > 0.
double young_interval(double cost_s, double mtbf_s);
double daly_interval(double cost_s, double mtbf_s);
// REQUIRES: tau_s > 0, cost_s >= 0, restart_s >= 0, mtbf_s > 0. In (0, 1]; 0 when the expected
// time overflows (failures far more frequent than the checkpoints: the run never ends).
double goodput(double tau_s, double cost_s, double restart_s, double mtbf_s);

// Percentiles of the wall time of `runs` simulated training runs (nearest rank: the p-th percentile
// of n sorted values is value ceil(p/100 x n), counting from 1), and their mean.
struct SimulatedRuns {
  int runs = 0;
  uint64_t seed = 0;
  double mean_s = 0, min_s = 0, p5_s = 0, p50_s = 0, p95_s = 0, max_s = 0;
  double failures_mean = 0;  // failures per run (during restarts included)
};

// The default --seed of `run --simulate-failures`.
inline constexpr uint64_t DEFAULT_FAILURE_SEED = 1;

// Simulates `runs` runs of `solve_s` seconds of training cut into checkpoint intervals of tau_s
// (each followed by a checkpoint of cost_s; the last, possibly shorter, too), failure times drawn
// from an exponential distribution of mean mtbf_s with std::mt19937_64 seeded with `seed` (inverse
// transform on 53-bit uniforms, so the numbers are the same on every platform). A failure loses the
// interval in progress and costs restart_s (a failure during a restart starts it over). Event-driven:
// O(failures) per run, whatever the interval count. REQUIRES: runs >= 1, solve_s > 0, tau_s > 0,
// cost_s >= 0, restart_s >= 0, mtbf_s > 0, goodput(...) > 0.
SimulatedRuns simulate_failures(double solve_s, double tau_s, double cost_s, double restart_s, double mtbf_s, int runs,
                                uint64_t seed);

// A prediction's checkpoint and failure figures (training.checkpoint given; the report's
// "checkpoint", "reliability" and "goodput"; docs/resilience.md says how each is obtained).
struct ResilienceFigures {
  models::CheckpointSize size;
  models::CheckpointMode mode = models::CheckpointMode::ASYNC;
  double snapshot_s = 0;      // async, multilevel: the blocking copy of a writer's shard to host memory
  double write_s = 0;         // sync: the blocking write of a writer's shard to the file system
  double flush_s = 0;         // async, multilevel: a writer's background flush, alone on its route
  double local_write_s = 0;   // multilevel: the node's shard to its node-local drives, in the background
                              // (per node / node_local.write_bandwidth; crosses no link training uses)
  double interference_s = 0;  // async, multilevel: training time lost to the flush sharing links, per checkpoint
  double flush_wait_s = 0;    // async, multilevel: the flush (multilevel: or the local write) outlasting
                              // the interval: the next snapshot waits
  double stall_s = 0;         // what one checkpoint costs training (C): the sum of the four above
  double load_s = 0;          // restart: reading the checkpoint back
  int64_t interval_steps = 0;
  double interval_s = 0;      // interval_steps x the iteration time (tau)
  double young_s = 0;         // Young's optimum for stall_s and job_mtbf_s
  double daly_s = 0;          // Daly's (the "auto" interval)
  double node_mtbf_s = 0;
  double job_mtbf_s = 0;      // node_mtbf_s / nodes
  double relaunch_s = 0;      // cluster.reliability.restart
  double warmup_s = 0;
  double recovery_s = 0;      // R = relaunch + load + warm-up
  double goodput = 0;
  double amortized_s_per_iteration() const { return stall_s / static_cast<double>(interval_steps); }
};

}  // namespace trainsim::plan
