#include "sim/plan/prediction.hpp"

#include <algorithm>
#include <optional>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/checkpoint.hpp"
#include "sim/plan/pool_placement.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/time_to_train.hpp"
#include "sim/plan/uncertainty.hpp"
#include "sim/engine/collective_simulation.hpp"
#include "sim/engine/compute_model.hpp"
#include "sim/engine/host_model.hpp"

namespace trainsim::plan {
namespace {

struct Metrics {
  double time_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double peak_tflops = 0;
};

// The GPUs' mean dense peak at the training precision (MFU's denominator): the GPU's, or over the
// pools weighted by their GPUs.
double mean_peak_flops(const Scenario& s) {
  if (s.cluster.pools.empty()) return s.cluster.gpu_spec.peak(s.training.precision).value();
  double sum = 0;
  for (const network::NodePool& pool : s.cluster.pools) {
    sum += pool.gpu_spec.peak(s.training.precision).value() * pool.nodes * s.cluster.gpus_per_node;
  }
  return sum / s.cluster.world_size();
}

Metrics metrics_of(const Scenario& s, const Prediction& p) {
  Metrics m;
  m.time_s = p.iteration_time_s();
  const double gpus = s.cluster.world_size();
  m.samples_per_s = static_cast<double>(p.built.samples_per_iteration) / m.time_s;
  m.tokens_per_s = static_cast<double>(p.built.tokens_per_iteration) / m.time_s;
  m.model_tflops_per_gpu = p.built.flops.model.value() / m.time_s / gpus / 1e12;
  m.hardware_tflops_per_gpu = p.built.flops.hardware.value() / m.time_s / gpus / 1e12;
  m.peak_tflops = mean_peak_flops(s) / 1e12;
  m.mfu = m.model_tflops_per_gpu / m.peak_tflops;
  m.hfu = m.hardware_tflops_per_gpu / m.peak_tflops;
  return m;
}

// HBM of the GPUs that run program `program` (its pool's GPU on a cluster of several types).
double program_capacity(const Scenario& s, const Prediction& p, size_t program) {
  return s.cluster.gpu_of_pool(p.built.workload.programs[program].node_pool).hbm_capacity.value();
}

// The stage whose peak memory is the largest share of its GPU's (ties: the earliest); with one GPU
// type, the highest peak.
size_t worst_stage(const Scenario& s, const Prediction& p) {
  const auto& peaks = p.result.peak_memory_by_program;
  size_t worst = 0;
  for (size_t i = 1; i < peaks.size(); ++i) {
    if (peaks[i].value() * program_capacity(s, p, worst) > peaks[worst].value() * program_capacity(s, p, i)) worst = i;
  }
  return worst;
}

double optimizer_s(const engine::Breakdown& b) {
  return b.compute_by_phase[static_cast<size_t>(core::Phase::OPTIMIZER)].value();
}

double training_compute_s(const engine::Breakdown& b) { return b.compute.value() - optimizer_s(b); }

// The activations of the breakdown at stage `stage`'s peak: the engine's dynamic peak less the
// gradients in it (gradient_buffers "per-step", where they are MEMORY tasks).
core::Bytes peak_activations(const Prediction& p, size_t stage) {
  const double dynamic = p.result.peak_dynamic_by_program[stage].value();
  if (!p.built.gradients_per_step) return core::Bytes(dynamic);
  return core::Bytes(std::max(0.0, dynamic - p.built.memory[stage].gradients.value()));
}

// Two decimals in the unit that keeps the number >= 1 (tables; JSON carries exact byte counts).
std::string bytes_text(core::Bytes b) {
  const double v = b.value();
  if (v >= core::TiB) return fmt::format("{:.2f} TiB", v / core::TiB);
  if (v >= core::GiB) return fmt::format("{:.2f} GiB", v / core::GiB);
  if (v >= core::MiB) return fmt::format("{:.2f} MiB", v / core::MiB);
  if (v >= core::KiB) return fmt::format("{:.2f} KiB", v / core::KiB);
  return fmt::format("{:.0f} B", v);
}

// Offloading's figures (only computed when something is offloaded).
struct OffloadFigures {
  double host_bytes_per_node = 0;   // the fullest node: static host bytes + peak host activations of its ranks
  double nvme_bytes_per_node = 0;
  size_t host_stage = 0;            // the stage whose ranks hold the most host memory
  double host_activations = 0;      // that stage's peak offloaded activations per rank
  double without_offload = 0;       // the worst stage's GPU peak without offloading
  std::array<double, core::COPY_DIRECTION_COUNT> moved{};  // the critical rank's copies, by direction
};

OffloadFigures offload_figures(const Scenario& s, const Prediction& p) {
  OffloadFigures f;
  const core::Workload& w = p.built.workload;
  auto host_of = [&](size_t program) {
    return w.programs[program].static_host_memory.value() + p.result.peak_host_dynamic_by_program[program].value();
  };
  for (int node = 0; node < s.cluster.nodes; ++node) {
    double host = 0, nvme = 0;
    for (int g = 0; g < s.cluster.gpus_per_node; ++g) {
      const size_t program = w.program_of_rank[static_cast<size_t>(node * s.cluster.gpus_per_node + g)];
      host += host_of(program);
      nvme += p.built.nvme_states[program].total().value();
    }
    f.host_bytes_per_node = std::max(f.host_bytes_per_node, host);
    f.nvme_bytes_per_node = std::max(f.nvme_bytes_per_node, nvme);
  }
  for (size_t program = 0; program < w.programs.size(); ++program) {
    if (host_of(program) > host_of(f.host_stage)) f.host_stage = program;
    f.without_offload = std::max(f.without_offload, p.built.peak_without_offload[program].value());
  }
  f.host_activations = p.result.peak_host_dynamic_by_program[f.host_stage].value();
  for (const core::Task& t : w.program_of(p.result.critical_rank).tasks) {
    if (t.kind == core::TaskKind::COPY) f.moved[static_cast<size_t>(t.copy)] += t.bytes;
  }
  return f;
}

// "fits: 61 GiB of 80 GiB; without offload 112 GiB"
std::string offload_summary(double peak, double capacity, double without) {
  auto gib = [](double b) { return fmt::format("{:.1f} GiB", b / core::GiB); };
  return fmt::format("{}: {} of {}; without offload {}{}", peak <= capacity ? "fits" : "does not fit", gib(peak),
                     gib(capacity), gib(without), without <= capacity ? " (fits too)" : "");
}

Uncertainty uncertainty_of(const Scenario& s, const Prediction& p) {
  return assess(s, p.bands ? *p.bands : builtin_band_set());
}

std::string split_description(const Prediction& p) {
  return fmt::format("{} split [{}]", p.built.balanced_split ? "balanced" : "explicit",
                     fmt::join(p.built.stage_layers, ","));
}

}  // namespace

namespace {

// Checkpoint traffic added to the iteration (models::add_checkpoint_traffic), bytes per rank.
struct ExtraTraffic {
  models::CheckpointTraffic what = models::CheckpointTraffic::SNAPSHOT;
  core::Bytes bytes;
};

// simulation.over_budget "approximate": the classes of collectives (group kinds) to price in closed
// form so that the rest of the simulation fits `flow_budget` flows and `seconds_budget` estimated CPU
// seconds, costliest first, as few as possible; marks them in options.closed_form_groups and updates
// estimate.total and estimate.cpu_seconds. Sends and copies are never approximated: when they alone
// exceed a budget every collective class is chosen and the caller still refuses the run.
std::vector<ClosedFormClass> closed_form_classes(const core::Workload& workload, engine::FlowEstimate& estimate,
                                                 double flow_budget, double seconds_budget,
                                                 engine::SimulationOptions& options) {
  options.closed_form_groups.assign(estimate.by_group.size(), false);
  std::vector<ClosedFormClass> chosen;
  // Costliest first, in the measure that is over its budget (seconds where both are); equal costs in
  // group order, so that the choice is reproducible.
  while (estimate.total > flow_budget || estimate.cpu_seconds > seconds_budget) {
    const std::vector<double>& cost =
        estimate.cpu_seconds > seconds_budget ? estimate.by_group_seconds : estimate.by_group;
    std::optional<size_t> costliest;
    for (size_t g = 0; g < cost.size(); ++g) {
      if (options.closed_form_groups[g] || estimate.by_group[g] <= 0) continue;
      if (!costliest || cost[g] > cost[*costliest]) costliest = g;
    }
    if (!costliest) break;
    const size_t g = *costliest;
    options.closed_form_groups[g] = true;
    estimate.total -= estimate.by_group[g];
    estimate.cpu_seconds -= estimate.by_group_seconds[g];
    chosen.push_back({workload.groups[g].name, estimate.by_group[g], estimate.by_group_seconds[g]});
  }
  return chosen;
}

// "expert (4.77e+07 flows, about 95.4 CPU s), data (2e+07 flows, about 40 CPU s)".
std::string describe_classes(const std::vector<ClosedFormClass>& classes) {
  std::string out;
  for (const ClosedFormClass& c : classes) {
    out += fmt::format("{}{} ({:.3g} flows, about {:.3g} CPU s)", out.empty() ? "" : ", ", c.group, c.flows, c.seconds);
  }
  return out;
}

// The WatchSimulations in scope, if any.
struct Watch {
  std::ostream* out = nullptr;
  std::string label;
  double last_print_s = 0;
};
Watch* watch = nullptr;

// A GPU power cap slows the tensor cores (core::GpuPower::clock_ratio): GEMM and FlashAttention tasks
// reach that share of their efficiency; memory-bound work keeps its speed (docs/energy.md).
core::Profile capped_profile(const Scenario& s) {
  core::Profile profile = s.profile;
  const double ratio = s.gpu_power.clock_ratio();
  for (double& scale : profile.device.gemm_precision_scale) scale *= ratio;
  return profile;
}

// `ranks` and `more`, each once, in order.
std::vector<int> with_ranks(std::vector<int> ranks, const std::vector<int>& more) {
  for (int r : more) {
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  }
  return ranks;
}

// Drops the timeline events and flows of every rank but `ranks` (those the caller asked for).
void keep_timeline_ranks(engine::SimulationResult& r, const std::vector<int>& ranks) {
  auto kept = [&ranks](int rank) { return std::find(ranks.begin(), ranks.end(), rank) != ranks.end(); };
  std::erase_if(r.timeline, [&](const engine::TimelineEvent& e) { return !kept(e.rank); });
  std::erase_if(r.flows, [&](const engine::FlowEvent& f) { return !kept(f.src) && !kept(f.dst); });
}

// Each pool's GPU power (its catalog figures, a described GPU's base's), or nothing when one of
// them is not known (a GPU described from scratch).
std::optional<std::vector<core::GpuPower>> pool_gpu_powers(const Scenario& s) {
  std::vector<core::GpuPower> powers;
  for (const network::NodePool& pool : s.cluster.pools) {
    powers.push_back(core::catalog_gpu_power(pool.gpu_described ? pool.gpu_base : pool.gpu));
    if (powers.back().tdp_w <= 0) return std::nullopt;
  }
  return powers;
}

// The prediction's energy per iteration from the timelines of one rank per program (energy.hpp); on
// several GPU types each program's ranks draw as their pool's GPU.
EnergyFigures energy_of_run(const Scenario& s, const Prediction& p) {
  const core::Workload& w = p.built.workload;
  std::vector<RankPowerTimeline> timelines = power_timelines(w, p.result);
  if (!s.cluster.pools.empty()) {
    const std::vector<core::GpuPower> powers = *pool_gpu_powers(s);
    std::vector<int> ranks = energy_ranks(w);
    std::sort(ranks.begin(), ranks.end());  // power_timelines' order
    TRAINSIM_CHECK(ranks.size() == timelines.size(), "one power timeline per program");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const core::Program& program = w.programs[w.program_of_rank[static_cast<size_t>(ranks[i])]];
      timelines[i].gpu = powers.at(static_cast<size_t>(program.node_pool));
    }
  }
  return iteration_energy(timelines, p.iteration_time_s(), s.gpu_power, s.power, s.cluster.nodes,
                          s.cluster.network.nics_per_node);
}

// Puts a host task of `seconds` before everything `program` does: it becomes task 0, and every task
// that waited on nothing waits on it (DeviceProfile::step_host_latency). Indices, dependencies and
// the ready pool's range move up by one.
void start_after_host(core::Program& program, double seconds, uint32_t name) {
  core::Program out;
  out.name = program.name;
  out.static_memory = program.static_memory;
  out.static_host_memory = program.static_host_memory;
  out.node_pool = program.node_pool;
  core::Task host;
  host.kind = core::TaskKind::COMPUTE;
  host.stream = core::Stream::HOST;
  host.phase = core::Phase::FORWARD;
  host.seconds = seconds;
  host.name = name;
  out.add(host);
  std::vector<uint32_t> deps;
  for (const core::Task& t : program.tasks) {
    deps.assign(program.deps_of(t), program.deps_of(t) + t.dep_count);
    for (uint32_t& d : deps) ++d;
    if (deps.empty()) deps.push_back(0);
    out.add(t, deps);
  }
  out.pool = std::move(program.pool);
  if (!out.pool.empty()) {
    ++out.pool.begin;
    ++out.pool.end;
    for (core::PoolBlock& b : out.pool.blocks) {
      if (b.trigger != core::NO_TASK) ++b.trigger;
    }
  }
  program = std::move(out);
}

// The scenario's workload; on a cluster of several GPU types with its programs on their pools
// (pool_placement.hpp); after the profile's host latency at the start of each iteration.
models::BuiltWorkload build_for(const Scenario& s) {
  const bool split = splits_batch(s);
  models::BuiltWorkload built =
      split ? models::build_pool_split_workload(s.model, s.training, s.parallelism, replica_shares(s), s.pruning, s.offload,
                                                s.compression)
            : models::build_workload(s.model, s.training, s.parallelism, s.pruning, s.offload, s.compression);
  if (!split && !s.cluster.pools.empty()) models::place_stages_on_pools(built, stage_pools(s));
  if (const double latency = s.profile.device.step_host_latency.value(); latency > 0) {
    const uint32_t name = built.workload.intern("host: step start");
    for (core::Program& program : built.workload.programs) start_after_host(program, latency, name);
  }
  return built;
}

// `energy`: also record the timelines that energy needs and fill p.energy (when the GPU's power is known).
Prediction simulate(const Scenario& scenario, const std::string& backend_override, const std::vector<int>& timeline_ranks,
                    std::optional<ExtraTraffic> extra = std::nullopt, bool energy = false) {
  Prediction p;
  p.built = build_for(scenario);
  if (extra) models::add_checkpoint_traffic(p.built.workload, extra->what, extra->bytes);
  p.backend = backend_override.empty() ? scenario.simulation.backend : backend_override;
  std::unique_ptr<engine::Backend> backend =
      p.backend == "simgrid" ? engine::make_simgrid_backend() : engine::make_analytic_backend();
  engine::SimulationOptions options;
  options.use_symmetry = scenario.simulation.symmetry;
  options.replay_calls_alone = scenario.simulation.replay;
  options.node_symmetry = scenario.simulation.node_symmetry;
  if (watch != nullptr) {
    watch->last_print_s = 0;
    options.on_progress = [](const engine::SimulationProgress& progress) {
      if (watch == nullptr || progress.wall_s < watch->last_print_s + WatchSimulations::PROGRESS_PERIOD_S) return;
      watch->last_print_s = progress.wall_s;
      *watch->out << "simgrid: " << watch->label << ": " << WatchSimulations::describe(progress) << std::endl;
    };
    options.stop_requested = [] { return StopOnInterrupt::requested(); };
  }
  options.algorithm = scenario.simulation.algorithm;
  options.fidelity = scenario.simulation.fidelity;
  energy = energy && gpu_power_known(scenario);
  options.timeline_ranks = energy ? with_ranks(timeline_ranks, energy_ranks(p.built.workload)) : timeline_ranks;
  // Flows only for a timeline asked for (run --timeline): the energy model reads task intervals,
  // and recording no flows keeps node folding on (backend.hpp).
  options.timeline_flows = !timeline_ranks.empty();
  if (p.backend == "simgrid" && options.fidelity != engine::Fidelity::ANALYTIC) {
    // Refuse a simulation that would not end in minutes before it starts: step fidelity turns every
    // collective into all of its algorithm's transfers (the collective command's budget); at flow
    // fidelity the scenario's budget (an MoE job's all-to-alls over thousands of GPUs can need
    // hundreds of millions of flows).
    engine::FlowEstimate estimate = engine::estimate_flows(p.built.workload, scenario.cluster, scenario.profile, options);
    const double budget = static_cast<double>(scenario.simulation.max_flows);
    const double seconds_budget = scenario.simulation.max_seconds;
    const bool over_seconds = estimate.cpu_seconds > seconds_budget;
    if (options.fidelity == engine::Fidelity::FLOW && (estimate.total > budget || over_seconds) &&
        scenario.simulation.approximate_over_budget) {
      p.closed_form = closed_form_classes(p.built.workload, estimate, budget, seconds_budget, options);
    }
    const double flows = estimate.total;
    if (options.fidelity == engine::Fidelity::STEP && flows > static_cast<double>(engine::STEP_FLOW_BUDGET)) {
      throw ImpossibleScenario(core::InputError::expected(
          scenario.file, "/simulation/fidelity",
          fmt::format("a step-fidelity simulation of at most {:.0e} flows (SimGrid runs 0.05-0.5 million flows per "
                      "CPU-second): use \"flow\" (the default: contention at one flow per algorithm edge) or a "
                      "smaller job",
                      static_cast<double>(engine::STEP_FLOW_BUDGET)),
          fmt::format("\"step\" for {} GPUs, at least {:.3g} flows per iteration ({:.0f} to {:.0f} CPU-minutes at "
                      "those rates)",
                      scenario.cluster.world_size(), flows, std::ceil(flows / 0.5e6 / 60), std::ceil(flows / 0.05e6 / 60)))
                                   .problems());
    }
    if (options.fidelity == engine::Fidelity::FLOW && flows > static_cast<double>(scenario.simulation.max_flows)) {
      throw ImpossibleScenario(core::InputError::expected(
          scenario.file, "/simulation/max_flows",
          fmt::format("a SimGrid simulation of at most {} flows (simulation.max_flows; SimGrid runs 0.05-0.5 "
                      "million flows per CPU-second): use --backend analytic (closed forms, no contention), "
                      "a smaller job, raise simulation.max_flows{}",
                      scenario.simulation.max_flows,
                      scenario.simulation.approximate_over_budget
                          ? ""
                          : ", or let simulation.over_budget \"approximate\" price the costliest collectives in closed form"),
          fmt::format("at least {:.3g} flows per iteration for {} GPUs ({:.3g} to {:.3g} CPU-minutes at those rates){}",
                      flows, scenario.cluster.world_size(), flows / 0.5e6 / 60, flows / 0.05e6 / 60,
                      scenario.simulation.approximate_over_budget
                          ? fmt::format(", {:.3g} of them sends and copies, which are always simulated",
                                        estimate.point_to_point)
                          : ""))
                                   .problems());
    }
    if (options.fidelity == engine::Fidelity::FLOW && estimate.cpu_seconds > seconds_budget) {
      throw ImpossibleScenario(core::InputError::expected(
          scenario.file, "/simulation/max_seconds",
          fmt::format("a SimGrid simulation estimated at most {:g} CPU seconds (simulation.max_seconds): use "
                      "--backend analytic (closed forms, no contention), a smaller job, raise "
                      "simulation.max_seconds{}",
                      seconds_budget,
                      scenario.simulation.approximate_over_budget
                          ? ""
                          : ", or let simulation.over_budget \"approximate\" price the costliest collectives in closed form"),
          fmt::format("about {:.3g} CPU seconds for {:.3g} flows per iteration on {} GPUs", estimate.cpu_seconds, flows,
                      scenario.cluster.world_size()))
                                   .problems());
    }
    if (watch != nullptr && !p.closed_form.empty()) {
      const std::string classes = describe_classes(p.closed_form);
      const std::string over = over_seconds ? fmt::format("simulation.max_seconds ({:g} s estimated)", seconds_budget)
                                            : fmt::format("simulation.max_flows ({})", scenario.simulation.max_flows);
      *watch->out << fmt::format("simgrid: {}: over {}: the collectives of the {} groups are priced in closed form, "
                                 "without contention (simulation.over_budget)\n",
                                 watch->label, over, classes)
                  << std::flush;
    }
    // Up front, where the run is watched: a simulation that may take more than PROGRESS_PERIOD_S says
    // so before it starts. The estimate counts neither replays (fewer flows) nor the mirror images of
    // calls that symmetry adds (more), nor calls in flight together (slower): an order of magnitude,
    // not a ceiling (docs/network.md, "Over the flow budget").
    if (watch != nullptr && estimate.cpu_seconds > WatchSimulations::PROGRESS_PERIOD_S) {
      // Events: each flow is about 3 engine events (../shared/SIMGRID-NOTES.md), each task one; memory:
      // TASK_BYTES per task of the programs (the flows in flight add little beside them).
      double tasks = 0;
      for (const core::Program& program : p.built.workload.programs) tasks += static_cast<double>(program.tasks.size());
      *watch->out << fmt::format(
                         "simgrid: {}: about {:.3g} flows to simulate, about {:.0f} CPU seconds at SimGrid's rate for "
                         "its calls' sizes (fewer where calls are replayed, more for symmetry's mirror images), about "
                         "{:.3g} events and {:.0f} MB for its {:.3g} tasks; progress every {:.0f} s, Ctrl-C stops\n",
                         watch->label, flows, estimate.cpu_seconds, 3 * flows + tasks, tasks * TASK_BYTES / 1e6, tasks,
                         WatchSimulations::PROGRESS_PERIOD_S)
                  << std::flush;
    }
  }
  p.result = backend->run(p.built.workload, scenario.cluster, capped_profile(scenario), options);
  // Inputs are bounded (physical ranges, training sizes), so a non-finite time is a bug, never a prediction.
  TRAINSIM_CHECK(std::isfinite(p.iteration_time_s()) && p.iteration_time_s() > 0,
                 fmt::format("the predicted iteration time is {} s", p.iteration_time_s()));
  if (energy) {
    p.energy = energy_of_run(scenario, p);
    keep_timeline_ranks(p.result, timeline_ranks);
  }
  return p;
}

// A pruned GEMM's speedup over the dense one in forward and in backward (half data gradient, half
// weight gradient), tile effects aside.
std::pair<double, double> gemm_speedups(const Scenario& s) {
  core::Task t;
  t.op_class = core::OpClass::GEMM;
  t.sparsity = s.pruning.kernel();
  t.density = static_cast<float>(s.pruning.density());
  t.sparse_block = static_cast<uint8_t>(s.pruning.block_size);
  const double forward = engine::sparse_speedup(t, s.cluster.gpu_spec, s.profile.device);
  const double wgrad = t.sparsity == core::GemmSparsity::STRUCTURED_2_4 ? 1.0 : forward;
  return {forward, 2.0 / (1.0 / forward + 1.0 / wgrad)};
}

// The report's "gradient_compression" object (docs/scenario.md): the resolved keys, and for the
// worst stage's rank the bytes of its data-parallel gradient reductions per iteration, compressed
// and not, and what that saved.
core::Json compression_json(const Scenario& s, const Prediction& p, size_t stage) {
  const models::StageCompression& c = p.built.compression[stage];
  core::Json j = s.compression.to_json();
  j["stage"] = stage;
  j["predicts"] = "steady state: the compressed iterations after warmup_steps";
  j["gradient_bytes_per_iteration"] = {{"compressed", c.bytes}, {"uncompressed", c.uncompressed_bytes}};
  j["sent_bytes_per_iteration"] = {{"compressed", c.wire_bytes}, {"uncompressed", c.uncompressed_wire_bytes}};
  j["bytes_saved_per_iteration"] = c.uncompressed_wire_bytes - c.wire_bytes;
  j["compression_ratio"] = c.wire_bytes > 0 ? c.uncompressed_wire_bytes / c.wire_bytes : 0.0;
  j["error_feedback_bytes"] = static_cast<int64_t>(c.error_feedback_bytes);
  j["compute_tasks_per_iteration"] = c.compute_tasks;
  if (p.warmup_phase) {
    j["warmup_phase"] = {{"iterations", s.compression.warmup_steps},
                         {"iteration_time_s", p.warmup_phase->iteration_time_s}};
  }
  return j;
}

core::Json memory_json(const models::MemoryBreakdown& m) {
  return {{"weights", static_cast<int64_t>(m.weights.value())},
          {"gradients", static_cast<int64_t>(m.gradients.value())},
          {"optimizer_states", static_cast<int64_t>(m.optimizer_states.value())}};
}

// The checkpoint's costs from simulations of the iteration that checkpoints, against the plain
// iteration's time t0, and what failures then cost (docs/resilience.md).
ResilienceFigures resilience_figures(const Scenario& scenario, const std::string& backend_override, double t0) {
  const models::CheckpointConfig& c = *scenario.training.checkpoint;
  ResilienceFigures f;
  f.size = models::checkpoint_size(scenario.model, scenario.training, scenario.parallelism, c.sharding,
                                   scenario.cluster.gpus_per_node);
  // The nodes that write at once share the file system's write bandwidth (network/storage.hpp).
  Scenario s = scenario;
  s.cluster.storage->parallel_fs->writing_nodes = f.size.writing_nodes;
  f.mode = c.mode;
  const core::Bytes shard = f.size.per_writer;
  auto extra_time = [&](models::CheckpointTraffic what, core::Bytes bytes) {
    const double extra = simulate(s, backend_override, {}, ExtraTraffic{what, bytes}).iteration_time_s() - t0;
    return extra > 1e-9 * t0 ? extra : 0.0;  // below: rounding of the same schedule, not a cost
  };
  if (c.mode == models::CheckpointMode::SYNC) {
    f.write_s = extra_time(models::CheckpointTraffic::SYNC_WRITE, shard);
  } else {
    f.snapshot_s = extra_time(models::CheckpointTraffic::SNAPSHOT, shard);
    const double bandwidth = engine::copy_bandwidth(core::CopyDirection::HOST_TO_STORAGE, s.cluster).value();
    f.flush_s = shard.value() / bandwidth;
    // One simulated iteration carries as much of the flush as it takes alone in one iteration (all of
    // it when shorter), in the background: the slowdown of the iteration, scaled to the whole flush,
    // is the interference.
    const core::Bytes chunk(std::min(shard.value(), bandwidth * t0));
    f.interference_s = extra_time(models::CheckpointTraffic::FLUSH, chunk) * (shard.value() / chunk.value());
  }
  const network::ClusterConfig& cl = s.cluster;
  const double per_node = f.size.per_node().value();
  f.load_s = per_node / cl.storage_node_bandwidth(false).value();
  if (c.mode == models::CheckpointMode::MULTILEVEL) {
    // The snapshot also goes to the node's own drives, from host memory: a transfer that crosses no
    // link training uses (so no interference), but that holds the host buffer like the flush does.
    f.local_write_s = per_node / cl.storage->node_local->write_bandwidth.value();
    // The surviving nodes read their node-local copy; the replacement node reads its shard from the
    // file system alone (its link, or the whole aggregate).
    const network::ParallelFs& fs = *cl.storage->parallel_fs;
    const double link = fs.node_bandwidth ? fs.node_bandwidth->value()
                                          : cl.network.nics_per_node * cl.network.nic_bandwidth.value();
    f.load_s = std::max(per_node / cl.storage->node_local->read_bandwidth.value(),
                        per_node / std::min(link, fs.read_bandwidth.value()));
  }
  const network::ReliabilitySpec rel = cl.reliability.value_or(network::ReliabilitySpec{});
  f.node_mtbf_s = rel.node_mtbf.value();
  f.job_mtbf_s = f.node_mtbf_s / cl.nodes;
  f.relaunch_s = rel.restart.value();
  f.warmup_s = rel.warmup.value();
  f.recovery_s = f.relaunch_s + f.load_s + f.warmup_s;
  const double cost = f.write_s + f.snapshot_s + f.interference_s;
  switch (c.interval) {
    case models::CheckpointConfig::Interval::AUTO:
      f.interval_steps = std::max<int64_t>(1, std::llround(daly_interval(cost, f.job_mtbf_s) / t0));
      break;
    case models::CheckpointConfig::Interval::STEPS: f.interval_steps = c.steps; break;
    case models::CheckpointConfig::Interval::DURATION: {
      const double steps = std::floor(c.duration.value() / t0);
      if (steps < 1) {
        throw core::InputError(s.file, "/training/checkpoint/interval",
                               fmt::format("{:.4g} s is shorter than one iteration ({:.4g} s predicted): give at least "
                                           "one iteration, a number of steps, or \"auto\"",
                                           c.duration.value(), t0));
      }
      f.interval_steps = static_cast<int64_t>(std::min(steps, 1e15));
      break;
    }
  }
  f.interval_s = static_cast<double>(f.interval_steps) * t0;
  // The host buffer holds one snapshot: a flush outlasting the interval delays the next snapshot.
  if (c.mode != models::CheckpointMode::SYNC) {
    f.flush_wait_s = std::max(0.0, std::max(f.flush_s, f.local_write_s) - f.interval_s);
  }
  f.stall_s = cost + f.flush_wait_s;
  f.young_s = young_interval(f.stall_s, f.job_mtbf_s);
  f.daly_s = daly_interval(f.stall_s, f.job_mtbf_s);
  f.goodput = goodput(f.interval_s, f.stall_s, f.recovery_s, f.job_mtbf_s);
  return f;
}

// Time to train at `time` per steady-state iteration, with the prediction's early phases (the dense
// iterations before pruning starts, the uncompressed warm-up of gradient compression).
std::optional<TimeToTrain> time_to_train_of(const Scenario& s, const Prediction& p, double time) {
  std::optional<double> dense_time, uncompressed_time;
  if (p.dense_phase) dense_time = p.dense_phase->iteration_time_s;
  if (p.warmup_phase) uncompressed_time = p.warmup_phase->iteration_time_s;
  return time_to_train(s, time, dense_time, uncompressed_time);
}

// The prediction's energy with the whole run's (training.tokens; with failures when the scenario
// has checkpoints), or nullopt without energy figures.
std::optional<EnergyFigures> energy_with_run(const Scenario& s, const Prediction& p) {
  if (!p.energy) return std::nullopt;
  EnergyFigures e = *p.energy;
  if (std::optional<TimeToTrain> t = time_to_train_of(s, p, p.iteration_time_s())) {
    if (p.resilience && p.resilience->goodput > 0) {
      add_failures(*t, *p.resilience, s.cluster.world_size(), s.cluster.price_per_gpu_hour, p.simulated_failures);
    }
    add_run_energy(e, *t, s.power);
  }
  return e;
}

// "64 x A100-SXM4-80GB", or per pool "8 x H100-SXM5-80GB + 8 x A100-SXM4-80GB".
std::string gpus_text(const Scenario& s) {
  if (s.cluster.pools.empty()) return fmt::format("{} x {}", s.cluster.world_size(), s.cluster.gpu);
  std::vector<std::string> parts;
  for (const network::NodePool& pool : s.cluster.pools) {
    parts.push_back(fmt::format("{} x {}", pool.nodes * s.cluster.gpus_per_node, pool.gpu));
  }
  return fmt::format("{}", fmt::join(parts, " + "));
}

// The report's "pools" (docs/scenario.md, "Mixed GPU types").
core::Json pools_json(const Scenario& s, const Prediction& p) {
  const std::vector<PoolFigures> figures = pool_figures(s, p.built.workload, p.iteration_time_s());
  const int binding = s.cluster.pool_of(p.result.critical_rank);
  core::Json list = core::Json::array();
  for (const PoolFigures& f : figures) {
    core::Json j = {{"name", f.name},           {"gpu", f.gpu},         {"gpus", f.gpus},
                    {"first_rank", f.first_rank}, {"compute_s", f.compute_s}, {"idle_fraction", f.idle_fraction}};
    if (s.parallelism.pipeline > 1) {
      j["stages"] = f.stages;
      j["layers"] = f.layers;
    } else {
      j["samples"] = f.samples;
      j["micro_batches_per_replica"] = f.micro_batches;
    }
    list.push_back(std::move(j));
  }
  return {{"binding", figures[static_cast<size_t>(binding)].name},
          {"summary", binding_sentence(s, figures, p.result.critical_rank)},
          {"by_pool", std::move(list)}};
}

std::string pools_table(const Scenario& s, const Prediction& p) {
  const core::Json j = pools_json(s, p);
  std::string out = fmt::format("\n  pools: {}\n", j["summary"].get<std::string>());
  for (const core::Json& f : j["by_pool"]) {
    const std::string share =
        s.parallelism.pipeline > 1
            ? fmt::format("stages {}, {} layers", fmt::join(f["stages"].get<std::vector<int>>(), ","), f["layers"].get<int>())
            : fmt::format("{} samples, {} micro-batches per replica", f["samples"].get<int64_t>(),
                          f["micro_batches_per_replica"].get<int64_t>());
    out += fmt::format("    {:<10}{:>5} x {:<18}{:<40} compute {:.4f} s, idle {:.0f}%\n", f["name"].get<std::string>(),
                       f["gpus"].get<int>(), f["gpu"].get<std::string>(), share, f["compute_s"].get<double>(),
                       100 * f["idle_fraction"].get<double>());
  }
  return out;
}

// The figures a stack fit set from the user's traced run (stack_fit.hpp), each with its source:
// the profile's "stack_fit.<class>" sources, and the step host latency the fit set (its source is
// the last "step_host_latency" one: the fit's follows the stack's). Without a stack fit the step
// host latency is the stack's own constant (composer's, sim/core/stack.cpp) or the profile file's,
// not a traced run's: nothing is listed.
std::vector<std::pair<std::string, std::string>> stack_fit_sources(const core::DeviceProfile& d) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::pair<std::string, std::string>* step = nullptr;
  for (const auto& entry : d.sources) {
    if (entry.first.rfind("stack_fit.", 0) == 0) out.push_back(entry);
    if (entry.first == "step_host_latency") step = &entry;
  }
  if (!out.empty() && step != nullptr && d.step_host_latency.value() > 0) out.push_back(*step);
  return out;
}

// "stack fitted on a traced run ...: elementwise x4.557, ..., step host latency 1.052 ms; ..." when a
// stack fit set figures; "" otherwise.
std::string stack_fit_text(const core::DeviceProfile& d) {
  std::vector<std::string> fitted;
  for (const auto& [key, source] : stack_fit_sources(d)) {
    fitted.push_back(key == "step_host_latency"
                         ? fmt::format("step host latency {:.3f} ms", 1e3 * d.step_host_latency.value())
                         : fmt::format("{} {}", key.substr(10), source.substr(0, source.find(' '))));
  }
  if (fitted.empty()) return "";
  return fmt::format("stack fitted on a traced run of this stack (calibrate --scenario): {}; the other figures are the "
                     "profile's kernel fit or defaults",
                     fmt::join(fitted, ", "));
}

}  // namespace

void simulate_failures(const Scenario& s, Prediction& p, int runs, uint64_t seed) {
  if (!p.resilience) {
    throw core::InputError("--simulate-failures", "",
                           "needs training.checkpoint in the scenario (what a failure rolls back to)");
  }
  const std::optional<TimeToTrain> t = time_to_train_of(s, p, p.iteration_time_s());
  if (!t) throw core::InputError("--simulate-failures", "", "needs training.tokens in the scenario (how long the run is)");
  const ResilienceFigures& f = *p.resilience;
  if (f.goodput <= 0) {
    throw core::InputError("--simulate-failures", "", "the expected run never ends (goodput 0): failures are far more "
                                                      "frequent than the checkpoints");
  }
  p.simulated_failures = plan::simulate_failures(t->days * 86400.0, f.interval_s, f.stall_s, f.recovery_s, f.job_mtbf_s,
                                                runs, seed);
}

WatchSimulations::WatchSimulations(std::ostream& out, std::string label) {
  TRAINSIM_CHECK(watch == nullptr, "one WatchSimulations at a time");
  watch = new Watch{&out, std::move(label), 0};
}

WatchSimulations::~WatchSimulations() {
  delete watch;
  watch = nullptr;
}

std::string WatchSimulations::describe(const engine::SimulationProgress& p) {
  const double share = p.tasks_total > 0 ? 100.0 * static_cast<double>(p.tasks_done) / static_cast<double>(p.tasks_total) : 0;
  return fmt::format("simulated {:.4g} s of the iteration, {:.0f}% of the simulated ranks' tasks ({} of {}), {} flows, "
                     "{} calls replayed, {:.0f} s of wall time",
                     p.simulated_s, share, p.tasks_done, p.tasks_total, p.flows, p.replayed_calls, p.wall_s);
}

Prediction predict(const Scenario& scenario, const std::string& backend_override,
                   const std::vector<int>& timeline_ranks) {
  check_task_budget(scenario);  // read_scenario checked it, except for search's layouts (StrategyCheck::SKIP)
  const auto start = std::chrono::steady_clock::now();
  Prediction p = simulate(scenario, backend_override, timeline_ranks, std::nullopt, true);
  if (scenario.pruning.enabled() && scenario.pruning.start_iteration > 0) {
    Scenario dense = scenario;
    dense.pruning = models::PruningConfig{};
    const Prediction d = simulate(dense, backend_override, {});
    const auto& peaks = d.result.peak_memory_by_program;
    const double peak = std::max_element(peaks.begin(), peaks.end())->value();
    p.dense_phase = DensePhase{d.iteration_time_s(), peak, peak <= scenario.cluster.gpu_spec.hbm_capacity.value()};
  }
  if (scenario.training.checkpoint) p.resilience = resilience_figures(scenario, backend_override, p.iteration_time_s());
  if (scenario.compression.enabled() && scenario.compression.warmup_steps > 0) {
    Scenario uncompressed = scenario;
    uncompressed.compression = models::CompressionConfig{};
    p.warmup_phase = WarmupPhase{simulate(uncompressed, backend_override, {}).iteration_time_s()};
  }
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

core::Json report_json(const Scenario& s, const Prediction& p) {
  const Metrics m = metrics_of(s, p);
  const engine::Breakdown& b = p.result.breakdown;
  core::Json j;
  j["schema"] = "trainsim.report/1";
  j["scenario"] = s.name;
  j["world_size"] = s.cluster.world_size();
  j["iteration_time_s"] = m.time_s;
  j["samples_per_s"] = m.samples_per_s;
  j["tokens_per_s"] = m.tokens_per_s;
  j["model_tflops_per_gpu"] = m.model_tflops_per_gpu;
  j["hardware_tflops_per_gpu"] = m.hardware_tflops_per_gpu;
  j["mfu"] = m.mfu;
  j["hfu"] = m.hfu;

  const double exposed = b.exposed_comm_total().value();
  // The contract's four parts add up to the iteration time; "other" is the optimizer step plus time
  // the compute stream waits on host<->device copies only.
  const double other = optimizer_s(b) + b.other.value();
  core::Json breakdown;
  breakdown["compute"] = training_compute_s(b);
  breakdown["exposed_communication"] = exposed;
  breakdown["pipeline_bubble"] = b.pipeline_bubble.value();
  breakdown["other"] = other;
  breakdown["optimizer"] = optimizer_s(b);
  core::Json by_phase, by_axis;
  for (int ph = 0; ph < core::PHASE_COUNT; ++ph) {
    by_phase[std::string(core::to_string(static_cast<core::Phase>(ph)))] = b.compute_by_phase[static_cast<size_t>(ph)].value();
  }
  core::Json comm;
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    const std::string axis(core::to_string(static_cast<core::Axis>(a)));
    by_axis[axis] = b.exposed_comm[static_cast<size_t>(a)].value();
    comm[axis] = p.result.comm_time[static_cast<size_t>(a)].value();
  }
  breakdown["compute_by_phase"] = by_phase;
  breakdown["exposed_communication_by_axis"] = by_axis;
  j["breakdown_s"] = breakdown;
  j["communication_s"] = comm;

  const size_t stage = worst_stage(s, p);
  const models::MemoryBreakdown& mem = p.built.memory[stage];
  const double peak = p.result.peak_memory_by_program[stage].value();
  const double capacity = program_capacity(s, p, stage);
  core::Json memory;
  memory["peak_bytes_per_gpu"] = static_cast<int64_t>(peak);
  memory["capacity_bytes"] = static_cast<int64_t>(capacity);
  memory["fits"] = peak <= capacity;
  memory["stage"] = stage;
  memory["breakdown_bytes"] = {
      {"weights", static_cast<int64_t>(mem.weights.value())},
      {"gradients", static_cast<int64_t>(mem.gradients.value())},
      {"optimizer_states", static_cast<int64_t>(mem.optimizer_states.value())},
      {"activations", static_cast<int64_t>(peak_activations(p, stage).value())},
      {"buffers", static_cast<int64_t>(mem.buffers.value())}};
  if (p.resilience) {
    memory["checkpoint_bytes"] = static_cast<int64_t>(p.resilience->size.total.value());
    memory["checkpoint_bytes_per_writer"] = static_cast<int64_t>(p.resilience->size.per_writer.value());
  }
  if (s.compression.enabled()) memory["breakdown_bytes"]["error_feedback"] = static_cast<int64_t>(mem.error_feedback.value());
  if (mem.stashed_weights.value() > 0) {
    memory["breakdown_bytes"]["stashed_weights"] = static_cast<int64_t>(mem.stashed_weights.value());
  }
  if (s.offload.active()) {
    const OffloadFigures f = offload_figures(s, p);
    const models::OffloadedStates& h = p.built.host_states[f.host_stage];
    memory["host_bytes"] = static_cast<int64_t>(f.host_bytes_per_node);
    memory["host_capacity_bytes"] = static_cast<int64_t>(s.cluster.host_memory.value());
    memory["host_fits"] = f.host_bytes_per_node <= s.cluster.host_memory.value();
    memory["host_stage"] = f.host_stage;
    memory["host_breakdown_bytes"] = {{"optimizer_states", static_cast<int64_t>(h.optimizer_states.value())},
                                      {"master_weights", static_cast<int64_t>(h.master_weights.value())},
                                      {"gradients", static_cast<int64_t>(h.gradients.value())},
                                      {"weights", static_cast<int64_t>(h.weights.value())},
                                      {"activations", static_cast<int64_t>(f.host_activations)}};
    if (s.offload.uses_nvme()) {
      memory["nvme_bytes"] = static_cast<int64_t>(f.nvme_bytes_per_node);
      if (s.cluster.nvme && s.cluster.nvme->capacity) {
        memory["nvme_capacity_bytes"] = static_cast<int64_t>(s.cluster.nvme->capacity->value());
      }
    }
    core::Json o = s.offload.to_json();
    o["peak_bytes_per_gpu_without_offload"] = static_cast<int64_t>(f.without_offload);
    o["fits_without_offload"] = f.without_offload <= capacity;
    auto busy = [](double total, double waited) {
      return core::Json{{"busy", total}, {"exposed", waited}, {"hidden", std::max(0.0, total - waited)}};
    };
    o["copy_s"] = busy(p.result.copy_time.value(), b.other_copy.value());
    o["host_optimizer_s"] = busy(p.result.host_time.value(), b.other_host.value());
    core::Json moved = core::Json::object();
    for (int d = 0; d < core::COPY_DIRECTION_COUNT; ++d) {
      if (f.moved[static_cast<size_t>(d)] > 0) {
        moved[std::string(core::to_string(static_cast<core::CopyDirection>(d)))] = f.moved[static_cast<size_t>(d)];
      }
    }
    o["bytes_per_iteration"] = moved;
    o["summary"] = offload_summary(peak, capacity, f.without_offload);
    j["memory"] = memory;
    j["offload"] = o;
  } else {
    j["memory"] = memory;
  }
  if (std::optional<TimeToTrain> t = time_to_train_of(s, p, m.time_s)) {
    if (p.resilience && p.resilience->goodput > 0) {
      add_failures(*t, *p.resilience, s.cluster.world_size(), s.cluster.price_per_gpu_hour, p.simulated_failures);
    }
    j["time_to_train"] = t->to_json();
  }
  if (const std::optional<EnergyFigures> e = energy_with_run(s, p)) j["energy"] = energy_json(*e);
  if (p.resilience) {
    const ResilienceFigures& f = *p.resilience;
    core::Json c = s.training.checkpoint->to_json();
    c["bytes"] = static_cast<int64_t>(f.size.total.value());
    c["bytes_per_writer"] = static_cast<int64_t>(f.size.per_writer.value());
    c["writers"] = f.size.writers;
    c["writing_nodes"] = f.size.writing_nodes;
    c["interval_steps"] = f.interval_steps;
    c["interval_s"] = f.interval_s;
    c["optimal_interval_s"] = {{"daly", f.daly_s}, {"young", f.young_s}};
    c["stall_s"] = f.stall_s;
    c["stall_breakdown_s"] = {{"write", f.write_s},
                              {"snapshot", f.snapshot_s},
                              {"interference", f.interference_s},
                              {"flush_wait", f.flush_wait_s}};
    if (f.mode != models::CheckpointMode::SYNC) c["flush_s"] = f.flush_s;
    if (f.mode == models::CheckpointMode::MULTILEVEL) c["local_write_s"] = f.local_write_s;
    c["amortized_s_per_iteration"] = f.amortized_s_per_iteration();
    c["load_s"] = f.load_s;
    const double save_s = f.mode == models::CheckpointMode::SYNC ? f.write_s : f.flush_s;
    if (save_s > 0) c["save_bandwidth"] = f.size.total.value() / save_s;  // bytes/s, all writers together
    j["checkpoint"] = c;
    j["reliability"] = {{"node_mtbf_s", f.node_mtbf_s},  {"job_mtbf_s", f.job_mtbf_s}, {"relaunch_s", f.relaunch_s},
                        {"load_s", f.load_s},            {"warmup_s", f.warmup_s},     {"recovery_s", f.recovery_s}};
    j["goodput"] = f.goodput;
  }
  if (s.pruning.enabled()) {
    const models::StagePruning& sp = p.built.pruning[stage];
    const auto [forward, backward] = gemm_speedups(s);
    core::Json pr = s.pruning.to_json();
    pr["stage"] = stage;
    pr["pruned_parameters_per_gpu"] = static_cast<int64_t>(sp.pruned_parameters);
    pr["gemm_speedup"] = {{"forward", forward}, {"backward", backward}};
    pr["memory_bytes"] = memory_json(mem);
    pr["dense_memory_bytes"] = memory_json(sp.dense_memory);
    pr["data_communication_bytes"] = static_cast<int64_t>(sp.data_bytes);
    pr["dense_data_communication_bytes"] = static_cast<int64_t>(sp.dense_data_bytes);
    if (p.dense_phase) {
      pr["dense_phase"] = {{"iterations", s.pruning.start_iteration},
                           {"iteration_time_s", p.dense_phase->iteration_time_s},
                           {"peak_bytes_per_gpu", static_cast<int64_t>(p.dense_phase->peak_bytes_per_gpu)},
                           {"fits", p.dense_phase->fits}};
    }
    j["pruning"] = pr;
  }

  if (s.compression.enabled()) j["gradient_compression"] = compression_json(s, p, stage);
  if (!s.cluster.pools.empty()) j["pools"] = pools_json(s, p);

  j["pipeline"] = {{"schedule", models::to_string(s.parallelism.schedule)},
                   {"micro_batches", p.built.micro_batches},
                   {"stage_layers", p.built.stage_layers},
                   {"split", p.built.balanced_split ? "balanced" : "explicit"},
                   {"critical_rank", p.result.critical_rank}};
  // The simulated bubble (the critical rank's pipeline_bubble over the iteration time) and the
  // schedule's own, from its timing with layer-proportional pass costs and no communication.
  const double iteration = p.result.iteration_time.value();
  j["pipeline"]["bubble_fraction"] = iteration > 0 ? b.pipeline_bubble.value() / iteration : 0.0;
  j["pipeline"]["ideal_bubble_fraction"] = p.built.schedule.bubble_fraction;
  if (s.parallelism.execution != models::PipelineExecution::ORDERED) {
    j["pipeline"]["execution"] = models::to_string(s.parallelism.execution);
  }
  if (p.built.workload.steady_state) {
    j["pipeline"]["steady_state"] = true;
    j["pipeline"]["peak_in_flight"] = p.built.schedule.peak_in_flight;
  }
  if (mem.stashed_weights.value() > 0) {
    j["pipeline"]["weight_versions"] =
        models::weight_versions(s.parallelism.schedule, s.parallelism.pipeline, static_cast<int>(stage), p.built.micro_batches);
  }
  if (!p.result.top_links.empty()) {
    core::Json links = core::Json::array();
    for (const engine::LinkLoad& l : p.result.top_links) {
      links.push_back({{"link", l.link}, {"bytes", l.bytes}, {"utilization", l.utilization}});
    }
    j["network"] = {{"top_links", links},
                    {"flows_simulated", p.result.network_flows},
                    {"calls_replayed", p.result.replayed_calls}};
  }
  if (!p.closed_form.empty()) {
    // Over simulation.max_flows or max_seconds: which collectives were priced in closed form instead
    // of simulated.
    core::Json classes = core::Json::array();
    for (const ClosedFormClass& c : p.closed_form) {
      classes.push_back({{"group", c.group}, {"flows", c.flows}, {"cpu_seconds", c.seconds}});
    }
    j["network"]["closed_form"] = {{"groups", classes},
                                   {"calls", p.result.closed_form_calls},
                                   {"flows_budget", s.simulation.max_flows},
                                   {"seconds_budget", s.simulation.max_seconds}};
  }
  j["simulation"] = {{"backend", p.backend},
                     {"wall_s", p.wall_s},
                     {"events", p.result.events},
                     {"simulated_ranks", p.result.simulated_ranks},
                     {"profile", s.profile.device.source}};
  core::Json stack_fit = core::Json::object();
  for (const auto& [key, source] : stack_fit_sources(s.profile.device)) stack_fit[key] = source;
  if (!stack_fit.empty()) j["simulation"]["profile_stack_fit"] = stack_fit;
  // The training stack that priced the job (training.stack, or the one the layout implies).
  j["stack"] = {{"name", core::to_string(models::resolved_stack(s.training, s.parallelism))},
                {"given", s.training.stack.has_value()},
                {"compile", s.training.compile}};
  if (s.cluster.gpu_speed_spread > 0) {
    j["variability"] = {{"gpu_speed_spread", s.cluster.gpu_speed_spread},
                        {"ranks", s.cluster.world_size()},
                        {"compute_slowdown", s.profile.device.straggler_slowdown}};
  }
  const Uncertainty u = uncertainty_of(s, p);
  j["bands"] = bands_json(u, j);
  j["envelope"] = u.envelope.to_json();
  if (!s.warnings.empty()) j["warnings"] = s.warnings;
  return j;
}

namespace {

// The table's offload lines: host memory per node, NVMe, what moved and what it cost and bought.
template <class Line>
void offload_table(const Scenario& s, const Prediction& p, size_t stage, Line line) {
  const OffloadFigures f = offload_figures(s, p);
  const models::OffloadedStates& h = p.built.host_states[f.host_stage];
  const double capacity = s.cluster.host_memory.value();
  line(fmt::format("  {:<28}{:>14} of {} per node (stage {} ranks: {} per GPU): {}", "host memory",
                   bytes_text(core::Bytes(f.host_bytes_per_node)), bytes_text(s.cluster.host_memory), f.host_stage,
                   bytes_text(h.total() + core::Bytes(f.host_activations)),
                   f.host_bytes_per_node <= capacity
                       ? "fits"
                       : fmt::format("OUT OF HOST MEMORY by {}", bytes_text(core::Bytes(f.host_bytes_per_node - capacity)))));
  auto mrow = [&](const std::string& name, double v) {
    if (v > 0) line(fmt::format("    {:<26}{:>14}", name, bytes_text(core::Bytes(v))));
  };
  mrow("optimizer states", h.optimizer_states.value());
  mrow("master weights", h.master_weights.value());
  mrow("gradients", h.gradients.value());
  mrow("parameters", h.weights.value());
  mrow("activations", f.host_activations);
  if (s.offload.uses_nvme()) {
    line(fmt::format("  {:<28}{:>14} per node{}", "nvme", bytes_text(core::Bytes(f.nvme_bytes_per_node)),
                     s.cluster.nvme && s.cluster.nvme->capacity ? fmt::format(" of {}", bytes_text(*s.cluster.nvme->capacity))
                                                                : std::string()));
  }
  const engine::Breakdown& b = p.result.breakdown;
  line("");
  line(fmt::format("  {:<28}{}", "offload", s.offload.describe()));
  line(fmt::format("    {:<26}{:>14.4f} s busy {:>10.4f} s exposed", "copies", p.result.copy_time.value(),
                   b.other_copy.value()));
  if (p.result.host_time.value() > 0) {
    line(fmt::format("    {:<26}{:>14.4f} s busy {:>10.4f} s exposed", "cpu optimizer step", p.result.host_time.value(),
                     b.other_host.value()));
  }
  std::string moved;
  for (int d = 0; d < core::COPY_DIRECTION_COUNT; ++d) {
    const double v = f.moved[static_cast<size_t>(d)];
    if (v > 0) {
      moved += fmt::format("{}{} {}", moved.empty() ? "" : ", ", core::to_string(static_cast<core::CopyDirection>(d)),
                           bytes_text(core::Bytes(v)));
    }
  }
  line(fmt::format("    {:<26}{}", "moved per iteration", moved.empty() ? "nothing" : moved));
  line(fmt::format("    {:<26}{}", "bought",
                   offload_summary(p.result.peak_memory_by_program[stage].value(), program_capacity(s, p, stage),
                                   f.without_offload)));
}

// "1.23 h", "12.3 min", "4.56 s"
std::string duration_text(double s) {
  if (s >= 3600) return fmt::format("{:.2f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.3g} s", s);
}

template <class Line>
void resilience_table(const Scenario& s, const ResilienceFigures& f, Line line) {
  const models::CheckpointConfig& c = *s.training.checkpoint;
  line("");
  line(fmt::format("  {:<28}{}, {} sharding, every {} step{} ({}; Daly optimum {}, Young {})", "checkpoint",
                   models::to_string(c.mode), models::to_string(c.sharding), f.interval_steps,
                   f.interval_steps == 1 ? "" : "s",
                   duration_text(f.interval_s), duration_text(f.daly_s), duration_text(f.young_s)));
  const std::string parts =
      c.mode == models::CheckpointMode::SYNC
          ? fmt::format("write {:.3g} s", f.write_s)
          : fmt::format("snapshot {:.3g} s + interference {:.3g} s + flush wait {:.3g} s", f.snapshot_s,
                        f.interference_s, f.flush_wait_s);
  line(fmt::format("    {:<26}{:>14.4g} s ({}); {:.4g} s per iteration amortized", "stall per checkpoint", f.stall_s,
                   parts, f.amortized_s_per_iteration()));
  if (c.mode != models::CheckpointMode::SYNC) {
    line(fmt::format("    {:<26}{:>14.4g} s in the background", "flush", f.flush_s));
  }
  if (c.mode == models::CheckpointMode::MULTILEVEL) {
    line(fmt::format("    {:<26}{:>14.4g} s in the background", "node-local write", f.local_write_s));
  }
  line(fmt::format("    {:<26}{:>14.4g} s", "load on restart", f.load_s));
  line(fmt::format("  {:<28}node MTBF {}, job MTBF {}; recovery {} (relaunch {}, load {}, warm-up {})", "reliability",
                   duration_text(f.node_mtbf_s), duration_text(f.job_mtbf_s), duration_text(f.recovery_s),
                   duration_text(f.relaunch_s), duration_text(f.load_s), duration_text(f.warmup_s)));
  line(fmt::format("    {:<26}{:>13.1f}%", "goodput", 100 * f.goodput));
}

}  // namespace

std::string report_table(const Scenario& s, const Prediction& p) {
  const Metrics m = metrics_of(s, p);
  const engine::Breakdown& b = p.result.breakdown;
  const models::ParallelismConfig& par = s.parallelism;
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };

  line(fmt::format("{}: {} ({} nodes x {}), {}", s.name, gpus_text(s), s.cluster.nodes, s.cluster.gpus_per_node,
                   s.model.name));
  line(fmt::format("strategy: TP{} PP{} DP{} CP{} EP{}{}{}, {}{}, recompute {}, ZeRO {}, {} micro-batches of {}",
                   par.tensor, par.pipeline, par.data, par.context, par.expert,
                   (par.spatial > 1 ? fmt::format(" SPATIAL{}", par.spatial) : std::string()) +
                       (par.folded() ? fmt::format(" ETP{} (folded)", par.expert_tensor) : std::string()),
                   std::string(par.sequence_parallel ? " +SP" : "") + (par.moe_a2a_overlap ? " +A2A overlap" : ""),
                   models::to_string(par.schedule),
                   par.virtual_stages > 1 ? fmt::format(" (v={})", par.virtual_stages) : "",
                   models::to_string(par.recompute) + (par.recompute_early_stop ? " (early stop)" : ""), par.zero_stage,
                   p.built.micro_batches, s.training.micro_batch));
  line(fmt::format("pipeline: {}", split_description(p)));
  line("");
  const Uncertainty u = uncertainty_of(s, p);
  // Each headline figure's band after it ("" without a finite band).
  auto band = [&u](double x, int digits, const std::string& unit = "") {
    const std::string text = band_text(u.time, u.coverage, x, digits, unit);
    return text.empty() ? text : "   " + text;
  };
  line(fmt::format("  {:<28}{:>14.4f} s{}", "iteration time", m.time_s, band(m.time_s, 4, " s")));
  line(fmt::format("  {:<28}{:>14.2f} samples/s {:>14.0f} tokens/s{}", "throughput", m.samples_per_s, m.tokens_per_s,
                   band(m.tokens_per_s, 0, " tokens/s")));
  line(fmt::format("  {:<28}{:>14.1f}   (hardware {:.1f}, peak {:.1f} {}){}", "TFLOP/s per GPU (model)",
                   m.model_tflops_per_gpu, m.hardware_tflops_per_gpu, m.peak_tflops,
                   core::to_string(s.training.precision), band(m.model_tflops_per_gpu, 1)));
  line(fmt::format("  {:<28}{:>13.1f}%   (HFU {:.1f}%){}", "MFU", 100 * m.mfu, 100 * m.hfu, band(100 * m.mfu, 1, "%")));
  if (std::optional<TimeToTrain> t = time_to_train_of(s, p, m.time_s)) {
    line(fmt::format("  {:<28}{:>14.2f} days ({} iterations for {:g} tokens, {:.0f} GPU-hours{}){}", "time to train",
                     t->days, t->iterations, t->tokens, t->gpu_hours,
                     t->cost ? fmt::format(", ${:.0f} at ${:g}/GPU-hour", *t->cost, *s.cluster.price_per_gpu_hour) : "",
                     band(t->days, 2, " days") +
                         (t->cost && u.time.finite() ? fmt::format(", ${:.0f}-${:.0f}", u.time.low(*t->cost), u.time.high(*t->cost)) : "")));
    if (p.resilience && p.resilience->goodput > 0) {
      add_failures(*t, *p.resilience, s.cluster.world_size(), s.cluster.price_per_gpu_hour, p.simulated_failures);
      const TimeToTrain::WithFailures& w = *t->with_failures;
      line(fmt::format("  {:<28}{:>14.2f} days (goodput {:.1f}%, {:.0f} failures expected, {:.0f} GPU-hours{})",
                       "  with failures", w.days, 100 * w.goodput, w.failures, w.gpu_hours,
                       w.cost ? fmt::format(", ${:.0f}", *w.cost) : ""));
      if (t->simulated_failures) {
        const SimulatedRuns& r = *t->simulated_failures;
        line(fmt::format("  {:<28}{:>14.2f} days p50 (p5 {:.2f}, p95 {:.2f}, mean {:.2f}; {} runs, seed {})",
                         "  simulated failures", r.p50_s / 86400, r.p5_s / 86400, r.p95_s / 86400, r.mean_s / 86400,
                         r.runs, r.seed));
      }
    }
  }
  if (const std::optional<EnergyFigures> e = energy_with_run(s, p)) {
    out += energy_table(*e, s);
  } else if (!s.cluster.pools.empty()) {
    line(fmt::format("  {:<28}{:>14}   (a pool's GPU has no known power: docs/energy.md)", "energy", "not known"));
  } else {
    line(fmt::format("  {:<28}{:>14}   (the GPU object gives no \"tdp\": docs/energy.md)", "energy", "not known"));
  }
  if (!s.cluster.pools.empty()) out += pools_table(s, p);
  line("");
  line(fmt::format("  {:<28}{:>14}{:>9}", "breakdown (critical rank " + std::to_string(p.result.critical_rank) + ")",
                   "time_s", "share"));
  auto row = [&](const std::string& name, double v) {
    line(fmt::format("    {:<26}{:>14.4f}{:>8.1f}%", name, v, 100 * v / m.time_s));
  };
  row("compute", training_compute_s(b));
  for (core::Phase ph : {core::Phase::FORWARD, core::Phase::BACKWARD, core::Phase::RECOMPUTE}) {
    const double v = b.compute_by_phase[static_cast<size_t>(ph)].value();
    if (v > 0) row("  " + std::string(core::to_string(ph)), v);
  }
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    const double v = b.exposed_comm[static_cast<size_t>(a)].value();
    if (v > 0 || p.built.workload.layout.size(static_cast<core::Axis>(a)) > 1) row(fmt::format("exposed {} comm", core::to_string(static_cast<core::Axis>(a))), v);
  }
  row("pipeline bubble", b.pipeline_bubble.value());
  row("optimizer", optimizer_s(b));
  if (s.offload.active()) row("offload (exposed)", b.other.value());
  line("");
  const size_t stage = worst_stage(s, p);
  const models::MemoryBreakdown& mem = p.built.memory[stage];
  const double peak = p.result.peak_memory_by_program[stage].value();
  const double capacity = program_capacity(s, p, stage);
  line(fmt::format("  {:<28}{:>14} of {} per GPU (stage {}): {}{}", "peak memory", bytes_text(core::Bytes(peak)),
                   bytes_text(core::Bytes(capacity)), stage,
                   peak <= capacity ? "fits" : fmt::format("OUT OF MEMORY by {}", bytes_text(core::Bytes(peak - capacity))),
                   u.memory.finite() ? fmt::format("   {:g}% band {}-{}", 100 * u.coverage, bytes_text(core::Bytes(u.memory.low(peak))),
                                                   bytes_text(core::Bytes(u.memory.high(peak))))
                                     : std::string()));
  auto mrow = [&](const std::string& name, core::Bytes v) {
    line(fmt::format("    {:<26}{:>14}", name, bytes_text(v)));
  };
  mrow("weights", mem.weights);
  mrow("gradients", mem.gradients);
  mrow("optimizer states", mem.optimizer_states);
  mrow("activations", peak_activations(p, stage));
  mrow("buffers", mem.buffers);
  if (p.resilience) {
    const models::CheckpointSize& z = p.resilience->size;
    line(fmt::format("  {:<28}{:>14} ({:.2f} TB, {:g} bytes/parameter; {} per writer, {} writers)", "checkpoint",
                     bytes_text(z.total), z.total.value() / 1e12, z.bytes_per_parameter, bytes_text(z.per_writer),
                     z.writers));
  }
  if (s.compression.enabled()) mrow("error feedback", mem.error_feedback);
  if (mem.stashed_weights.value() > 0) mrow("stashed weight versions", mem.stashed_weights);
  if (s.offload.active()) offload_table(s, p, stage, line);
  if (p.resilience) resilience_table(s, *p.resilience, line);
  if (s.compression.enabled()) {
    const models::StageCompression& c = p.built.compression[stage];
    std::string what = models::to_string(s.compression.method);
    if (s.compression.method == models::CompressionMethod::TOPK) what += fmt::format(" ratio {:g}", s.compression.ratio);
    if (s.compression.method == models::CompressionMethod::POWERSGD) what += fmt::format(" rank {}", s.compression.rank);
    line("");
    line(fmt::format("  {:<28}{}{}, steady state (stage {})", "gradient compression", what,
                     s.compression.error_feedback ? " with error feedback" : "", stage));
    line(fmt::format("    {:<26}{:>14} per iteration (uncompressed {}; saved {})", "data-parallel gradients sent",
                     bytes_text(core::Bytes(c.wire_bytes)), bytes_text(core::Bytes(c.uncompressed_wire_bytes)),
                     c.uncompressed_wire_bytes >= c.wire_bytes
                         ? bytes_text(core::Bytes(c.uncompressed_wire_bytes - c.wire_bytes))
                         : fmt::format("-{}", bytes_text(core::Bytes(c.wire_bytes - c.uncompressed_wire_bytes)))));
    if (p.warmup_phase) {
      line(fmt::format("    {:<26}{:>14.4f} s per iteration (uncompressed)",
                       fmt::format("warm-up, {} iterations", s.compression.warmup_steps),
                       p.warmup_phase->iteration_time_s));
    }
  }
  if (s.pruning.enabled()) {
    const models::StagePruning& sp = p.built.pruning[stage];
    const models::PruningConfig& c = s.pruning;
    const auto [forward, backward] = gemm_speedups(s);
    line("");
    line(fmt::format("  {:<28}{} at {:g}% of the linear layers' weights{}, format {}, {}", "pruning",
                     models::to_string(c.method), 100 * c.sparsity, c.embeddings ? " and the embeddings" : "",
                     models::to_string(c.format),
                     c.sparse_kernel ? fmt::format("sparse GEMMs {:.2f}x forward, {:.2f}x backward", forward, backward)
                                     : std::string("dense GEMMs")));
    const models::MemoryBreakdown& dm = sp.dense_memory;
    line(fmt::format("    {:<26}{:>14} (dense {}; stage {})", "weights+grads+optimizer",
                     bytes_text(mem.weights + mem.gradients + mem.optimizer_states),
                     bytes_text(dm.weights + dm.gradients + dm.optimizer_states), stage));
    line(fmt::format("    {:<26}{:>14} per iteration (dense {}; communication {})", "data-parallel comm",
                     bytes_text(core::Bytes(sp.data_bytes)), bytes_text(core::Bytes(sp.dense_data_bytes)),
                     models::to_string(c.communication)));
    if (p.dense_phase) {
      line(fmt::format("    {:<26}{:>14.4f} s per iteration, peak {}: {}",
                       fmt::format("dense until iteration {}", c.start_iteration), p.dense_phase->iteration_time_s,
                       bytes_text(core::Bytes(p.dense_phase->peak_bytes_per_gpu)),
                       p.dense_phase->fits ? "fits" : "OUT OF MEMORY"));
    } else {
      line("    pruned from the first iteration (start_iteration 0): the figures above are the pruned job's");
    }
  }
  if (!p.result.top_links.empty()) {
    line("");
    line(fmt::format("  {:<44}{:>14}{:>13}", "most utilized links", "bytes", "utilization"));
    for (const engine::LinkLoad& l : p.result.top_links) {
      line(fmt::format("    {:<42}{:>14}{:>12.1f}%", l.link, bytes_text(core::Bytes(l.bytes)), 100 * l.utilization));
    }
  }
  line("");
  for (const std::string& l : uncertainty_lines(u)) line(l);
  line("");
  const std::string flows =
      p.result.network_flows > 0
          ? fmt::format(", {} network flows{}", p.result.network_flows,
                        p.result.replayed_calls > 0 ? fmt::format(", {} calls replayed", p.result.replayed_calls) : "")
          : std::string();
  line(fmt::format("simulated by {} backend in {:.3f} s ({} events{}, {} of {} ranks simulated, profile: {})",
                   p.backend, p.wall_s, p.result.events, flows, p.result.simulated_ranks, s.cluster.world_size(),
                   s.profile.device.source));
  if (const std::string fitted = stack_fit_text(s.profile.device); !fitted.empty()) line(fitted);
  if (!p.closed_form.empty()) {
    const std::string classes = describe_classes(p.closed_form);
    line(fmt::format("approximated: {} collective calls of the {} groups priced in closed form, without contention "
                     "(simulation.max_flows {}, simulation.max_seconds {:g}, simulation.over_budget \"approximate\")",
                     p.result.closed_form_calls, classes, s.simulation.max_flows, s.simulation.max_seconds));
  }
  for (const std::string& w : s.warnings) line("warning: " + w);
  return out;
}

bool gpu_power_known(const Scenario& s) {
  return s.cluster.pools.empty() ? s.gpu_power.tdp_w > 0 : pool_gpu_powers(s).has_value();
}

}  // namespace trainsim::plan
