#pragma once
// Per-stage power caps that cut energy without lengthening the iteration (Perseus-style: Chung et
// al., SOSP 2024, slow the computation off the critical path; docs/energy.md).
//
// The stages of a pipeline rarely compute for equally long (the first and last carry the embedding
// and the head, layer counts differ), and in a synchronous pipeline the stage that computes longest
// sets the pace: the others wait. A stage s whose iteration holds G_s seconds of GEMM-bound and M_s of
// memory-bound compute can run its tensor cores at the clock
//     f_s = clamp(G_s / (C_max - M_s), min_clock, 1),    C_max = max over stages of (G + M)
// and still compute no longer than the critical stage (memory-bound work does not slow with the
// clock, core/power.hpp). Under the DVFS cube law the clock f needs the power cap
//     cap_s = idle + (TDP - idle) x f_s^3
// and the stage's GEMM work draws cap_s for G_s / f_s seconds instead of TDP for G_s: less energy,
// since power falls faster than time grows, and less waiting. plan_stage_power simulates the planned
// caps (analytic backend: a task's time is its compute time / f) and keeps them when the iteration
// time grows by at most `tolerance`; otherwise it backs the clocks off toward 1 (bisection of
// f_s(a) = 1 - a (1 - f_s)) until it does.
//
// Example: stages with G = 3 s, M = 0.5 s and G = 4 s, M = 0.5 s: C_max = 4.5, f_0 = 3 / 4 = 0.75,
// f_1 = 1; with TDP 700 W and idle 100 W, cap_0 = 100 + 600 x 0.421875 = 353.125 W.

#include <string>
#include <vector>

#include "sim/core/power.hpp"
#include "sim/plan/energy.hpp"

namespace trainsim::plan {

struct Scenario;

// The lowest clock the planner sets: 0.5 of the maximum (H100 SXM's lowest power limit, 200 W of
// 700 W, allows ((200 - 87.5) / 612.5)^(1/3) = 0.57 by the cube law; A100's 100 W of 400 W, 0.50).
inline constexpr double MIN_STAGE_CLOCK = 0.5;

// One stage's compute per iteration, per rank.
struct StageCompute {
  double gemm_s = 0;
  double memory_s = 0;
};

// f_s for each stage (see above). REQUIRES: min_clock in (0, 1].
std::vector<double> stage_clocks(const std::vector<StageCompute>& stages, double min_clock = MIN_STAGE_CLOCK);
// The cap that sets clock f on `gpu` (idle + (TDP - idle) f^3), as a GpuPower; f = 1: `gpu` unchanged.
core::GpuPower power_at_clock(const core::GpuPower& gpu, double clock);
// One rank's GPU energy over its window: each activity's seconds x the draw of `gpu` doing it.
double rank_gpu_energy_j(const std::vector<ActivityPiece>& pieces, const core::GpuPower& gpu);

struct StagePlan {
  std::string program;  // the workload program's name ("stage 3")
  int ranks = 0;
  StageCompute compute;
  double clock = 1;
  double cap_w = 0;     // the power cap (TDP where the clock is 1)
};

// One point of the energy/time trade-off: the clocks backed off to `backoff` of their reduction
// (0: every stage at full clock, 1: the planned clocks), simulated.
struct TradeoffPoint {
  double backoff = 0;
  double time_s = 0;
  double gpu_j = 0;       // per iteration, all GPUs, before PUE
  double facility_j = 0;  // per iteration, with hosts, network and PUE
};

struct StagePowerPlan {
  std::vector<StagePlan> stages;
  std::vector<TradeoffPoint> curve;  // curve_points points, backoff 0 to 1 evenly (empty when 0)
  double backoff = 1;            // the a that was kept (1: the clocks as computed)
  double baseline_time_s = 0, planned_time_s = 0;
  double baseline_gpu_j = 0, planned_gpu_j = 0;  // per iteration, all GPUs, before PUE
  double baseline_j = 0, planned_j = 0;          // per iteration, facility (with hosts, network, PUE)
};

// The plan for `s` (analytic backend), with `curve_points` (0, or at least 2) points of the trade-off
// curve (one simulation each). Throws InputError when the GPU's power is not known, or the scenario
// already caps its GPUs (the plan starts from uncapped ones).
StagePowerPlan plan_stage_power(const Scenario& s, double tolerance = 0.01, int curve_points = 0);

// The plan as table lines (`run --stage-power`).
std::string stage_power_table(const StagePowerPlan& plan);

}  // namespace trainsim::plan
