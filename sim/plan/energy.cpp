#include "sim/plan/energy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/plan/scenario.hpp"
#include "sim/plan/time_to_train.hpp"

namespace trainsim::plan {
namespace {

using core::PowerActivity;

constexpr double JOULES_PER_MWH = 3.6e9;
constexpr double SECONDS_PER_DAY = 86400;

// The busy activities, in the order that wins an instant (WAITING is what is left).
constexpr int BUSY_LANES = 3;  // GEMM_BOUND, MEMORY_BOUND, COMMUNICATION

// What a task makes its GPU do, or nothing (memory bookkeeping, background checkpoint writes, copies
// and CPU work, which leave the GPU's SMs waiting).
std::optional<PowerActivity> activity_of(const core::Task& t) {
  if (t.stream == core::Stream::STORAGE) return std::nullopt;
  switch (t.kind) {
    case core::TaskKind::COMPUTE:
      if (t.stream == core::Stream::HOST) return std::nullopt;
      return t.op_class == core::OpClass::GEMM || t.op_class == core::OpClass::FLASH_ATTENTION
                 ? PowerActivity::GEMM_BOUND
                 : PowerActivity::MEMORY_BOUND;
    case core::TaskKind::COLLECTIVE:
    case core::TaskKind::SEND:
    case core::TaskKind::RECV: return PowerActivity::COMMUNICATION;
    case core::TaskKind::COPY:
    case core::TaskKind::MEMORY: return std::nullopt;
  }
  return std::nullopt;
}

struct Edge {
  double time;
  int delta;
  int lane;
};

// Appends [from, to) (absolute times within a window of length T) wrapped onto [0, T).
void append_wrapped(std::vector<ActivityPiece>& out, double from, double to, PowerActivity a, double period) {
  if (!(to > from)) return;
  double start = std::fmod(from, period);
  double length = to - from;
  while (length > 0) {
    const double piece = std::min(length, period - start);
    out.push_back({start, start + piece, a});
    length -= piece;
    start = 0;
  }
}

// The draw of each activity, by index.
std::array<double, core::POWER_ACTIVITY_COUNT> draws(const core::GpuPower& gpu) {
  std::array<double, core::POWER_ACTIVITY_COUNT> w{};
  for (int a = 0; a < core::POWER_ACTIVITY_COUNT; ++a) w[static_cast<size_t>(a)] = gpu.draw_w(static_cast<PowerActivity>(a));
  return w;
}

// The highest total GPU draw over [0, period): every rank's pieces tile it, so the running sum of
// their edges is the cluster's GPU power at each instant.
struct RankPieces {
  std::vector<ActivityPiece> pieces;
  int ranks = 1;
  std::array<double, core::POWER_ACTIVITY_COUNT> draw{};  // its GPU's
};
double peak_gpu_w(const std::vector<RankPieces>& all) {
  std::vector<std::pair<double, double>> edges;  // (time, change in watts)
  for (const auto& [rank_pieces, ranks, draw] : all) {
    for (const ActivityPiece& p : rank_pieces) {
      const double w = ranks * draw[static_cast<size_t>(p.activity)];
      edges.emplace_back(p.start_s, w);
      edges.emplace_back(p.end_s, -w);
    }
  }
  std::sort(edges.begin(), edges.end());
  double now = 0, peak = 0;
  for (size_t i = 0; i < edges.size();) {
    const double t = edges[i].first;
    while (i < edges.size() && edges[i].first == t) now += edges[i++].second;
    if (i < edges.size() && edges[i].first > t) peak = std::max(peak, now);
  }
  return peak;
}

}  // namespace

std::vector<ActivityPiece> activity_pieces(const RankPowerTimeline& rank, double iteration_time_s) {
  const double begin = rank.window_start_s;
  const double end = begin + iteration_time_s;
  std::vector<Edge> edges;
  for (const ActivitySpan& s : rank.spans) {
    const double from = std::max(s.start_s, begin), to = std::min(s.end_s, end);
    if (!(to > from) || s.activity == PowerActivity::WAITING) continue;
    edges.push_back({from, +1, static_cast<int>(s.activity)});
    edges.push_back({to, -1, static_cast<int>(s.activity)});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.time < y.time; });
  std::vector<ActivityPiece> out;
  std::array<int, BUSY_LANES> busy{};
  auto current = [&busy] {
    for (int lane = 0; lane < BUSY_LANES; ++lane) {
      if (busy[static_cast<size_t>(lane)] > 0) return static_cast<PowerActivity>(lane);
    }
    return PowerActivity::WAITING;
  };
  double now = begin;
  for (const Edge& e : edges) {
    append_wrapped(out, now, e.time, current(), iteration_time_s);
    now = std::max(now, e.time);
    busy[static_cast<size_t>(e.lane)] += e.delta;
  }
  append_wrapped(out, now, end, current(), iteration_time_s);
  return out;
}

EnergyFigures iteration_energy(const std::vector<RankPowerTimeline>& ranks, double iteration_time_s,
                               const core::GpuPower& gpu, const core::ClusterPower& cluster, int nodes,
                               int nics_per_node) {
  EnergyFigures e;
  e.iteration_time_s = iteration_time_s;
  e.pue = cluster.pue;
  e.gpu_power_cap_w = gpu.power_cap_w.value_or(0);
  // Joules piece by piece when ranks draw differently (several GPU types); else the seconds summed
  // over ranks times the one GPU's draw.
  const bool per_rank = std::any_of(ranks.begin(), ranks.end(), [](const RankPowerTimeline& r) { return r.gpu.has_value(); });
  std::vector<RankPieces> all;
  for (const RankPowerTimeline& r : ranks) {
    RankPieces rp{activity_pieces(r, iteration_time_s), r.ranks, draws(r.gpu ? *r.gpu : gpu)};
    for (const ActivityPiece& p : rp.pieces) {
      const auto a = static_cast<size_t>(p.activity);
      e.gpu_s[a] += r.ranks * (p.end_s - p.start_s);
      if (per_rank) e.gpu_j[a] += r.ranks * (p.end_s - p.start_s) * rp.draw[a];
    }
    all.push_back(std::move(rp));
  }
  const std::array<double, core::POWER_ACTIVITY_COUNT> draw = draws(gpu);
  for (size_t a = 0; a < e.gpu_s.size(); ++a) {
    if (!per_rank) e.gpu_j[a] = e.gpu_s[a] * draw[a];
    e.gpu_j_total += e.gpu_j[a];
  }
  const double non_gpu_w = cluster.non_gpu_w(nodes, nics_per_node);
  e.non_gpu_j = non_gpu_w * iteration_time_s;
  e.per_iteration_j = (e.gpu_j_total + e.non_gpu_j) * cluster.pue;
  e.average_power_w = e.per_iteration_j / iteration_time_s;
  e.peak_power_w = (peak_gpu_w(all) + non_gpu_w) * cluster.pue;
  return e;
}

std::vector<int> energy_ranks(const core::Workload& w) {
  std::vector<int> first(w.programs.size(), -1);
  for (size_t rank = 0; rank < w.program_of_rank.size(); ++rank) {
    int& f = first[w.program_of_rank[rank]];
    if (f < 0) f = static_cast<int>(rank);
  }
  std::vector<int> out;
  for (int f : first) {
    if (f >= 0) out.push_back(f);
  }
  return out;
}

std::vector<RankPowerTimeline> power_timelines(const core::Workload& w, const engine::SimulationResult& result) {
  std::vector<int> count(w.programs.size(), 0);
  for (uint32_t p : w.program_of_rank) ++count[p];
  std::map<int, RankPowerTimeline> by_rank;
  for (int rank : energy_ranks(w)) {
    RankPowerTimeline& r = by_rank[rank];
    r.ranks = count[w.program_of_rank[static_cast<size_t>(rank)]];
    r.window_start_s = -1;
  }
  for (const engine::TimelineEvent& ev : result.timeline) {
    auto it = by_rank.find(ev.rank);
    if (it == by_rank.end()) continue;
    const core::Task& t = w.program_of(ev.rank).tasks[ev.task];
    RankPowerTimeline& r = it->second;
    // The engine's period start: the first compute task on the compute stream (steady state).
    if (w.steady_state && t.kind == core::TaskKind::COMPUTE && t.stream == core::Stream::COMPUTE) {
      r.window_start_s = r.window_start_s < 0 ? ev.start_s : std::min(r.window_start_s, ev.start_s);
    }
    if (const std::optional<core::PowerActivity> a = activity_of(t)) r.spans.push_back({ev.start_s, ev.end_s, *a});
  }
  std::vector<RankPowerTimeline> out;
  for (auto& [rank, r] : by_rank) {
    r.window_start_s = std::max(r.window_start_s, 0.0);
    out.push_back(std::move(r));
  }
  return out;
}

void add_run_energy(EnergyFigures& e, const TimeToTrain& t, const core::ClusterPower& cluster) {
  EnergyFigures::Run run;
  run.mwh = e.average_power_w * t.days * SECONDS_PER_DAY / JOULES_PER_MWH;
  if (t.with_failures) run.with_failures_mwh = e.average_power_w * t.with_failures->days * SECONDS_PER_DAY / JOULES_PER_MWH;
  const double expected = run.with_failures_mwh.value_or(run.mwh);
  if (cluster.price_per_kwh) run.cost_usd = expected * 1000 * *cluster.price_per_kwh;
  if (cluster.grid_gco2_per_kwh) run.tco2 = expected * *cluster.grid_gco2_per_kwh / 1000;
  e.run = run;
}

core::Json energy_json(const EnergyFigures& e) {
  core::Json j;
  j["per_iteration_j"] = e.per_iteration_j;
  j["average_power_w"] = e.average_power_w;
  j["peak_power_w"] = e.peak_power_w;
  j["pue"] = e.pue;
  core::Json gpu;
  for (int a = 0; a < core::POWER_ACTIVITY_COUNT; ++a) {
    const std::string name(core::to_string(static_cast<PowerActivity>(a)));
    gpu["j"][name] = e.gpu_j[static_cast<size_t>(a)];
    gpu["s"][name] = e.gpu_s[static_cast<size_t>(a)];
  }
  gpu["j_total"] = e.gpu_j_total;
  if (e.gpu_power_cap_w > 0) gpu["power_cap_w"] = e.gpu_power_cap_w;
  j["gpu"] = gpu;
  j["non_gpu_j"] = e.non_gpu_j;
  if (e.run) {
    j["run_mwh"] = e.run->mwh;
    if (e.run->with_failures_mwh) j["with_failures_mwh"] = *e.run->with_failures_mwh;
    if (e.run->cost_usd) j["cost"] = *e.run->cost_usd;
    if (e.run->tco2) j["tco2"] = *e.run->tco2;
  }
  return j;
}

std::string energy_table(const EnergyFigures& e, const Scenario& s) {
  std::string out;
  const double it = e.gpu_j_total + e.non_gpu_j;
  out += fmt::format("  {:<28}{:>14.4g} MJ per iteration (GPUs {:.0f}%, hosts and network {:.0f}%; PUE {:g})\n",
                     "energy", e.per_iteration_j / 1e6, 100 * e.gpu_j_total / it, 100 * e.non_gpu_j / it, e.pue);
  out += fmt::format("  {:<28}{:>14} average, {} peak (facility){}\n", "power", core::format_watts(e.average_power_w),
                     core::format_watts(e.peak_power_w),
                     e.gpu_power_cap_w > 0 ? fmt::format(", GPUs capped at {}", core::format_watts(e.gpu_power_cap_w))
                                           : std::string());
  if (e.run) {
    const core::ClusterPower& c = s.power;
    std::string extra;
    if (e.run->with_failures_mwh) extra += fmt::format(", {:.4g} MWh with failures", *e.run->with_failures_mwh);
    if (e.run->cost_usd) extra += fmt::format(", ${:.0f} at ${:g}/kWh", *e.run->cost_usd, *c.price_per_kwh);
    if (e.run->tco2) extra += fmt::format(", {:.4g} tCO2eq at {:g} g/kWh", *e.run->tco2, *c.grid_gco2_per_kwh);
    out += fmt::format("  {:<28}{:>14.4g} MWh{}\n", "energy to train", e.run->mwh, extra);
  }
  return out;
}

}  // namespace trainsim::plan
