#include "sim/plan/stage_power.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/workload_builder.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/compute_model.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

using core::PowerActivity;

// Bisection steps on the back-off a: 2^-6 of the clocks' range is finer than any cap a GPU takes.
constexpr int BACKOFF_STEPS = 6;

bool tensor_core_task(const core::Task& t) {
  return t.kind == core::TaskKind::COMPUTE && t.stream == core::Stream::COMPUTE &&
         (t.op_class == core::OpClass::GEMM || t.op_class == core::OpClass::FLASH_ATTENTION);
}

// One simulation of `w` with the analytic backend, recording one rank per program.
struct Run {
  double time_s = 0;
  std::vector<int> programs;                 // by timeline: the program it records
  std::vector<RankPowerTimeline> timelines;  // power_timelines' order (ascending rank)
};

Run simulate(const Scenario& s, const core::Workload& w) {
  engine::SimulationOptions options;
  options.use_symmetry = s.simulation.symmetry;
  options.algorithm = s.simulation.algorithm;
  std::vector<int> ranks = energy_ranks(w);
  std::sort(ranks.begin(), ranks.end());
  options.timeline_ranks = ranks;
  const engine::SimulationResult result = engine::make_analytic_backend()->run(w, s.cluster, s.profile, options);
  Run run;
  run.time_s = result.iteration_time.value();
  for (int r : ranks) run.programs.push_back(static_cast<int>(w.program_of_rank[static_cast<size_t>(r)]));
  run.timelines = power_timelines(w, result);
  TRAINSIM_CHECK(run.timelines.size() == ranks.size(), "one power timeline per recorded rank");
  return run;
}

// GPU energy per iteration of `run` with each program's GPUs at power[program].
double gpu_energy_j(const Run& run, const std::vector<core::GpuPower>& power) {
  double j = 0;
  for (size_t i = 0; i < run.timelines.size(); ++i) {
    const RankPowerTimeline& t = run.timelines[i];
    j += t.ranks * rank_gpu_energy_j(activity_pieces(t, run.time_s), power[static_cast<size_t>(run.programs[i])]);
  }
  return j;
}

double facility_j(const Scenario& s, double gpu_j, double time_s) {
  return (gpu_j + s.power.non_gpu_w(s.cluster.nodes, s.cluster.network.nics_per_node) * time_s) * s.power.pue;
}

// `w` with the tensor-core tasks of each program slowed to its clock: their compute time / clock.
core::Workload slowed(const Scenario& s, core::Workload w, const std::vector<double>& clock) {
  for (size_t p = 0; p < w.programs.size(); ++p) {
    if (clock[p] >= 1) continue;
    for (core::Task& t : w.programs[p].tasks) {
      if (!tensor_core_task(t)) continue;
      const double time = t.seconds > 0 ? t.seconds
                                        : engine::compute_time(t, w.precision, s.cluster.gpu_spec, s.profile.device).value();
      t.seconds = time / clock[p];
    }
  }
  return w;
}

// Each program's GPU power at its clock.
std::vector<core::GpuPower> powers_at(const core::GpuPower& gpu, const std::vector<double>& clocks) {
  std::vector<core::GpuPower> out;
  for (double f : clocks) out.push_back(power_at_clock(gpu, f));
  return out;
}

}  // namespace

std::vector<double> stage_clocks(const std::vector<StageCompute>& stages, double min_clock) {
  double critical = 0;
  for (const StageCompute& c : stages) critical = std::max(critical, c.gemm_s + c.memory_s);
  std::vector<double> out;
  for (const StageCompute& c : stages) {
    const double room = critical - c.memory_s;
    out.push_back(c.gemm_s > 0 && room > 0 ? std::clamp(c.gemm_s / room, min_clock, 1.0) : 1.0);
  }
  return out;
}

core::GpuPower power_at_clock(const core::GpuPower& gpu, double clock) {
  if (clock >= 1) return gpu;
  core::GpuPower p = gpu;
  p.power_cap_w = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * std::pow(clock, core::DVFS_EXPONENT);
  return p;
}

double rank_gpu_energy_j(const std::vector<ActivityPiece>& pieces, const core::GpuPower& gpu) {
  double j = 0;
  for (const ActivityPiece& p : pieces) j += (p.end_s - p.start_s) * gpu.draw_w(p.activity);
  return j;
}

StagePowerPlan plan_stage_power(const Scenario& s, double tolerance, int curve_points) {
  TRAINSIM_CHECK(curve_points == 0 || curve_points >= 2, "a trade-off curve of at least 2 points");
  if (s.gpu_power.tdp_w <= 0) {
    throw core::InputError(s.file, "/cluster/gpu/tdp", "per-stage power planning needs the GPU's power: give \"tdp\"");
  }
  if (!s.cluster.pools.empty()) {
    throw core::InputError(s.file, "/cluster/pools", "per-stage power planning knows one GPU's power: give a cluster of "
                                                      "one GPU type");
  }
  if (s.gpu_power.power_cap_w) {
    throw core::InputError(s.file, "/cluster/gpu/power_cap",
                           "per-stage power planning starts from uncapped GPUs: remove the cluster-wide cap");
  }
  const models::BuiltWorkload built = models::build_workload(s.model, s.training, s.parallelism, s.pruning, s.offload,
                                                             s.compression);
  const core::Workload& w = built.workload;
  const Run base = simulate(s, w);

  std::vector<StageCompute> compute(w.programs.size());
  for (size_t i = 0; i < base.timelines.size(); ++i) {
    StageCompute& c = compute[static_cast<size_t>(base.programs[i])];
    for (const ActivityPiece& p : activity_pieces(base.timelines[i], base.time_s)) {
      if (p.activity == PowerActivity::GEMM_BOUND) c.gemm_s += p.end_s - p.start_s;
      if (p.activity == PowerActivity::MEMORY_BOUND) c.memory_s += p.end_s - p.start_s;
    }
  }
  const std::vector<double> target = stage_clocks(compute);
  // The clocks backed off to a of their reduction, and the iteration they give (a = 0: the baseline).
  auto clocks_at = [&target](double a) {
    std::vector<double> c;
    for (double f : target) c.push_back(1 - a * (1 - f));
    return c;
  };
  auto point = [&](double a) {
    const std::vector<double> clocks = clocks_at(a);
    const Run run = a == 0 ? base : simulate(s, slowed(s, w, clocks));
    const double gpu_j = gpu_energy_j(run, powers_at(s.gpu_power, clocks));
    return TradeoffPoint{a, run.time_s, gpu_j, facility_j(s, gpu_j, run.time_s)};
  };

  StagePowerPlan plan;
  const TradeoffPoint baseline = point(0);
  // The largest a in [0, 1] whose iteration stays within the tolerance.
  double good = 0, bad = 1, a = 1;
  for (int step = 0; step <= BACKOFF_STEPS; ++step) {
    if (point(a).time_s <= baseline.time_s * (1 + tolerance)) {
      good = a;
      if (a == 1) break;
    } else {
      bad = a;
    }
    a = (good + bad) / 2;
  }
  const TradeoffPoint kept = point(good);
  plan.backoff = good;
  plan.baseline_time_s = baseline.time_s;
  plan.baseline_gpu_j = baseline.gpu_j;
  plan.baseline_j = baseline.facility_j;
  plan.planned_time_s = kept.time_s;
  plan.planned_gpu_j = kept.gpu_j;
  plan.planned_j = kept.facility_j;
  const std::vector<double> clocks = clocks_at(good);
  for (size_t p = 0; p < clocks.size(); ++p) {
    int ranks = 0;
    for (uint32_t q : w.program_of_rank) ranks += q == p ? 1 : 0;
    plan.stages.push_back({w.programs[p].name, ranks, compute[p], clocks[p], power_at_clock(s.gpu_power, clocks[p]).limit_w()});
  }
  for (int i = 0; i < curve_points; ++i) plan.curve.push_back(point(static_cast<double>(i) / (curve_points - 1)));
  return plan;
}

std::string stage_power_table(const StagePowerPlan& plan) {
  std::string out = "per-stage power plan (analytic backend; docs/energy.md)\n";
  out += fmt::format("  {:<12}{:>7}{:>12}{:>12}{:>8}{:>10}\n", "stage", "GPUs", "gemm_s", "memory_s", "clock", "cap");
  for (const StagePlan& st : plan.stages) {
    out += fmt::format("  {:<12}{:>7}{:>12.4f}{:>12.4f}{:>8.3f}{:>10}\n", st.program, st.ranks, st.compute.gemm_s,
                       st.compute.memory_s, st.clock, core::format_watts(st.cap_w));
  }
  const auto change = [](double before, double after) { return fmt::format("{:+.2f}%", 100 * (after / before - 1)); };
  out += fmt::format("  iteration time  {:.4f} s -> {:.4f} s ({})\n", plan.baseline_time_s, plan.planned_time_s,
                     change(plan.baseline_time_s, plan.planned_time_s));
  out += fmt::format("  GPU energy      {:.4g} MJ -> {:.4g} MJ per iteration ({})\n", plan.baseline_gpu_j / 1e6,
                     plan.planned_gpu_j / 1e6, change(plan.baseline_gpu_j, plan.planned_gpu_j));
  out += fmt::format("  facility energy {:.4g} MJ -> {:.4g} MJ per iteration ({})\n", plan.baseline_j / 1e6,
                     plan.planned_j / 1e6, change(plan.baseline_j, plan.planned_j));
  if (plan.backoff < 1) out += fmt::format("  clocks backed off to {:.3f} of their reduction to keep the time\n", plan.backoff);
  if (!plan.curve.empty()) {
    out += fmt::format("  trade-off {:>10}{:>16}{:>16}{:>16}\n", "backoff", "iteration_s", "gpu_MJ", "facility_MJ");
    for (const TradeoffPoint& p : plan.curve) {
      out += fmt::format("            {:>10.3f}{:>16.4f}{:>16.6g}{:>16.6g}\n", p.backoff, p.time_s, p.gpu_j / 1e6,
                         p.facility_j / 1e6);
    }
  }
  return out;
}

}  // namespace trainsim::plan
