#pragma once
// Energy, power and carbon of a prediction (docs/energy.md), from the simulated timeline of either
// backend: what each GPU does at every instant of the iteration (sim/core/power.hpp: GEMM-bound,
// memory-bound, communicating, waiting) times what it draws doing it, plus the hosts, NICs and
// switches (cluster.power), times the facility's PUE.
//
// One rank per workload program is recorded (ranks of one program run the same tasks at the same
// times: symmetry), and stands for every rank of its program. Each rank's iteration is its window
// [start, start + T) (T the iteration time; start 0, or in a steady-state schedule the start of its
// first compute task, as the engine's breakdown): an instant of it is
//   GEMM-bound     a GEMM or FlashAttention task runs on the compute stream
//   memory-bound   another compute task runs (element-wise, norms, embedding, optimizer, ...)
//   communicating  no compute task runs, a collective, send or receive does
//   waiting        none of them (bubble, waiting for a peer, host copies or CPU work only)
// Per iteration:
//   gpu_j        sum over ranks of sum over activities of seconds x GpuPower::draw_w (each rank's
//                GPU's: on several GPU types its pool's, RankPowerTimeline::gpu)
//   non_gpu_j    T x ClusterPower::non_gpu_w (hosts, NICs, switches: constant while the job runs)
//   per_iteration_j = (gpu_j + non_gpu_j) x PUE          average_power_w = per_iteration_j / T
//   peak_power_w = (max over the iteration of the sum of the GPUs' draws + non_gpu_w) x PUE, each
//                  rank's window wrapped onto [0, T) (the iterations repeat)
// Over a run (training.tokens): run energy = per_iteration_j x iterations (the early phases of
// time_to_train at the average power); with failures (training.checkpoint) the time the failures
// and checkpoints add (Daly's model, time_to_train.hpp) at the same average power: an upper bound,
// as restarts and checkpoint stalls draw less than training. Cost = MWh x 1000 x price_per_kwh;
// tCO2eq = MWh x grid_gco2_per_kwh / 1000.
//
// Example (a 2-rank job, tests/plan/energy_test.cpp):
//   RankPowerTimeline r{1, 0, {{0, 1, PowerActivity::GEMM_BOUND}, {1, 2, PowerActivity::COMMUNICATION}}};
//   EnergyFigures e = iteration_energy({r}, 2.0, gpu_power, cluster_power, 1, 8);

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/core/power.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::plan {

struct Scenario;
struct TimeToTrain;

// A busy interval of a rank, in simulated seconds.
struct ActivitySpan {
  double start_s = 0;
  double end_s = 0;
  core::PowerActivity activity = core::PowerActivity::WAITING;
};

// One recorded rank standing for `ranks` ranks, its busy spans and where its iteration starts.
struct RankPowerTimeline {
  int ranks = 1;
  double window_start_s = 0;
  std::vector<ActivitySpan> spans;  // any order, may overlap
  // The ranks' GPU when it is not the cluster's: on a cluster of several GPU types, its pool's
  // (cluster.pools); absent, iteration_energy's `gpu`.
  std::optional<core::GpuPower> gpu;
};

struct EnergyFigures {
  double iteration_time_s = 0;
  // Per iteration, summed over all GPUs: seconds and joules (before PUE) by core::PowerActivity.
  std::array<double, core::POWER_ACTIVITY_COUNT> gpu_s{};
  std::array<double, core::POWER_ACTIVITY_COUNT> gpu_j{};
  double gpu_j_total = 0;
  double non_gpu_j = 0;        // hosts, NICs, switches, before PUE
  double pue = 1;
  double per_iteration_j = 0;  // facility: (GPUs + the rest) x PUE
  double average_power_w = 0;  // facility
  double peak_power_w = 0;     // facility
  double gpu_power_cap_w = 0;  // the GPUs' cap, 0 without one

  // A whole run (training.tokens): add_run_energy.
  struct Run {
    double mwh = 0;                     // failure-free
    std::optional<double> with_failures_mwh;
    std::optional<double> cost_usd;     // of the expected energy (with failures when known)
    std::optional<double> tco2;         // idem
  };
  std::optional<Run> run;
};

// The window of a rank split into what it does each instant: seconds by activity (adding up to
// `iteration_time_s`), the busiest activity winning where spans overlap; spans are clipped to the
// window. And the same as pieces wrapped onto [0, iteration_time_s) for the peak.
struct ActivityPiece {
  double start_s = 0;
  double end_s = 0;
  core::PowerActivity activity = core::PowerActivity::WAITING;
};
std::vector<ActivityPiece> activity_pieces(const RankPowerTimeline& rank, double iteration_time_s);

// REQUIRES: iteration_time_s > 0, every rank's `ranks` >= 1.
EnergyFigures iteration_energy(const std::vector<RankPowerTimeline>& ranks, double iteration_time_s,
                               const core::GpuPower& gpu, const core::ClusterPower& cluster, int nodes,
                               int nics_per_node);

// The ranks whose timelines iteration_energy needs: the first rank of each program of `w`.
std::vector<int> energy_ranks(const core::Workload& w);
// The recorded ranks' timelines from a simulation run with energy_ranks(w) among its timeline ranks.
std::vector<RankPowerTimeline> power_timelines(const core::Workload& w, const engine::SimulationResult& result);

// Adds the run figures (see above) from the run's time to train; with_failures when t has them.
void add_run_energy(EnergyFigures& e, const TimeToTrain& t, const core::ClusterPower& cluster);

// The report's "energy" object: per_iteration_j, average_power_w, peak_power_w, pue, gpu (joules and
// seconds by activity, GPUs summed, before PUE), non_gpu_j; with a run: run_mwh, with_failures_mwh,
// cost, tco2 (those known).
core::Json energy_json(const EnergyFigures& e);
// The table's lines (each ends with "\n").
std::string energy_table(const EnergyFigures& e, const Scenario& s);

}  // namespace trainsim::plan
