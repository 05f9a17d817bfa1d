#include "sim/cli/prediction.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/cli/time_to_train.hpp"
#include "sim/engine/compute_model.hpp"

namespace trainsim::cli {
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

Metrics metrics_of(const Scenario& s, const Prediction& p) {
  Metrics m;
  m.time_s = p.iteration_time_s();
  const double gpus = s.cluster.world_size();
  m.samples_per_s = static_cast<double>(p.built.samples_per_iteration) / m.time_s;
  m.tokens_per_s = static_cast<double>(p.built.tokens_per_iteration) / m.time_s;
  m.model_tflops_per_gpu = p.built.flops.model.value() / m.time_s / gpus / 1e12;
  m.hardware_tflops_per_gpu = p.built.flops.hardware.value() / m.time_s / gpus / 1e12;
  m.peak_tflops = s.cluster.gpu_spec.peak(s.training.precision).value() / 1e12;
  m.mfu = m.model_tflops_per_gpu / m.peak_tflops;
  m.hfu = m.hardware_tflops_per_gpu / m.peak_tflops;
  return m;
}

// The stage whose peak memory is highest (ties: the earliest).
size_t worst_stage(const Prediction& p) {
  const auto& peaks = p.result.peak_memory_by_program;
  return static_cast<size_t>(std::max_element(peaks.begin(), peaks.end()) - peaks.begin());
}

double optimizer_s(const engine::Breakdown& b) {
  return b.compute_by_phase[static_cast<size_t>(core::Phase::OPTIMIZER)].value();
}

double training_compute_s(const engine::Breakdown& b) { return b.compute.value() - optimizer_s(b); }

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

std::string split_description(const Prediction& p) {
  return fmt::format("{} split [{}]", p.built.balanced_split ? "balanced" : "explicit",
                     fmt::join(p.built.stage_layers, ","));
}

}  // namespace

namespace {

Prediction simulate(const Scenario& scenario, const std::string& backend_override, const std::vector<int>& timeline_ranks) {
  Prediction p;
  p.built = models::build_workload(scenario.model, scenario.training, scenario.parallelism, scenario.pruning,
                                   scenario.offload);
  p.backend = backend_override.empty() ? scenario.simulation.backend : backend_override;
  std::unique_ptr<engine::Backend> backend =
      p.backend == "simgrid" ? engine::make_simgrid_backend() : engine::make_analytic_backend();
  engine::SimulationOptions options;
  options.use_symmetry = scenario.simulation.symmetry;
  options.algorithm = scenario.simulation.algorithm;
  options.fidelity = scenario.simulation.fidelity;
  options.timeline_ranks = timeline_ranks;
  p.result = backend->run(p.built.workload, scenario.cluster, scenario.profile, options);
  // Inputs are bounded (physical ranges, training sizes), so a non-finite time is a bug, never a prediction.
  TRAINSIM_CHECK(std::isfinite(p.iteration_time_s()) && p.iteration_time_s() > 0,
                 fmt::format("the predicted iteration time is {} s", p.iteration_time_s()));
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

core::Json memory_json(const models::MemoryBreakdown& m) {
  return {{"weights", static_cast<int64_t>(m.weights.value())},
          {"gradients", static_cast<int64_t>(m.gradients.value())},
          {"optimizer_states", static_cast<int64_t>(m.optimizer_states.value())}};
}

}  // namespace

Prediction predict(const Scenario& scenario, const std::string& backend_override,
                   const std::vector<int>& timeline_ranks) {
  check_task_budget(scenario);  // read_scenario checked it, except for search's layouts (StrategyCheck::SKIP)
  const auto start = std::chrono::steady_clock::now();
  Prediction p = simulate(scenario, backend_override, timeline_ranks);
  if (scenario.pruning.enabled() && scenario.pruning.start_iteration > 0) {
    Scenario dense = scenario;
    dense.pruning = models::PruningConfig{};
    const Prediction d = simulate(dense, backend_override, {});
    const auto& peaks = d.result.peak_memory_by_program;
    const double peak = std::max_element(peaks.begin(), peaks.end())->value();
    p.dense_phase = DensePhase{d.iteration_time_s(), peak, peak <= scenario.cluster.gpu_spec.hbm_capacity.value()};
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

  const size_t stage = worst_stage(p);
  const models::MemoryBreakdown& mem = p.built.memory[stage];
  const double peak = p.result.peak_memory_by_program[stage].value();
  const double capacity = s.cluster.gpu_spec.hbm_capacity.value();
  core::Json memory;
  memory["peak_bytes_per_gpu"] = static_cast<int64_t>(peak);
  memory["capacity_bytes"] = static_cast<int64_t>(capacity);
  memory["fits"] = peak <= capacity;
  memory["stage"] = stage;
  memory["breakdown_bytes"] = {
      {"weights", static_cast<int64_t>(mem.weights.value())},
      {"gradients", static_cast<int64_t>(mem.gradients.value())},
      {"optimizer_states", static_cast<int64_t>(mem.optimizer_states.value())},
      {"activations", static_cast<int64_t>(p.result.peak_dynamic_by_program[stage].value())},
      {"buffers", static_cast<int64_t>(mem.buffers.value())}};
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
  std::optional<double> dense_time;
  if (p.dense_phase) dense_time = p.dense_phase->iteration_time_s;
  if (const std::optional<TimeToTrain> t = time_to_train(s, m.time_s, dense_time)) j["time_to_train"] = t->to_json();
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
    j["network"] = {{"top_links", links}, {"flows_simulated", p.result.network_flows}};
  }
  j["simulation"] = {{"backend", p.backend},
                     {"wall_s", p.wall_s},
                     {"events", p.result.events},
                     {"simulated_ranks", p.result.simulated_ranks},
                     {"profile", s.profile.device.source}};
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
                   offload_summary(p.result.peak_memory_by_program[stage].value(), s.cluster.gpu_spec.hbm_capacity.value(),
                                   f.without_offload)));
}

}  // namespace

std::string report_table(const Scenario& s, const Prediction& p) {
  const Metrics m = metrics_of(s, p);
  const engine::Breakdown& b = p.result.breakdown;
  const models::ParallelismConfig& par = s.parallelism;
  std::string out;
  auto line = [&out](const std::string& text) { out += text + "\n"; };

  line(fmt::format("{}: {} x {} ({} nodes x {}), {}", s.name, s.cluster.world_size(), s.cluster.gpu,
                   s.cluster.nodes, s.cluster.gpus_per_node, s.model.name));
  line(fmt::format("strategy: TP{} PP{} DP{} CP{} EP{}{}{}, {}{}, recompute {}, ZeRO {}, {} micro-batches of {}",
                   par.tensor, par.pipeline, par.data, par.context, par.expert,
                   par.folded() ? fmt::format(" ETP{} (folded)", par.expert_tensor) : "",
                   std::string(par.sequence_parallel ? " +SP" : "") + (par.moe_a2a_overlap ? " +A2A overlap" : ""),
                   models::to_string(par.schedule),
                   par.virtual_stages > 1 ? fmt::format(" (v={})", par.virtual_stages) : "",
                   models::to_string(par.recompute), par.zero_stage, p.built.micro_batches, s.training.micro_batch));
  line(fmt::format("pipeline: {}", split_description(p)));
  line("");
  line(fmt::format("  {:<28}{:>14.4f} s", "iteration time", m.time_s));
  line(fmt::format("  {:<28}{:>14.2f} samples/s {:>14.0f} tokens/s", "throughput", m.samples_per_s, m.tokens_per_s));
  line(fmt::format("  {:<28}{:>14.1f}   (hardware {:.1f}, peak {:.1f} {})", "TFLOP/s per GPU (model)",
                   m.model_tflops_per_gpu, m.hardware_tflops_per_gpu, m.peak_tflops,
                   core::to_string(s.training.precision)));
  line(fmt::format("  {:<28}{:>13.1f}%   (HFU {:.1f}%)", "MFU", 100 * m.mfu, 100 * m.hfu));
  std::optional<double> dense_time;
  if (p.dense_phase) dense_time = p.dense_phase->iteration_time_s;
  if (const std::optional<TimeToTrain> t = time_to_train(s, m.time_s, dense_time)) {
    line(fmt::format("  {:<28}{:>14.2f} days ({} iterations for {:g} tokens, {:.0f} GPU-hours{})", "time to train",
                     t->days, t->iterations, t->tokens, t->gpu_hours,
                     t->cost ? fmt::format(", ${:.0f} at ${:g}/GPU-hour", *t->cost, *s.cluster.price_per_gpu_hour) : ""));
  }
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
  const size_t stage = worst_stage(p);
  const models::MemoryBreakdown& mem = p.built.memory[stage];
  const double peak = p.result.peak_memory_by_program[stage].value();
  const double capacity = s.cluster.gpu_spec.hbm_capacity.value();
  line(fmt::format("  {:<28}{:>14} of {} per GPU (stage {}): {}", "peak memory", bytes_text(core::Bytes(peak)),
                   bytes_text(core::Bytes(capacity)), stage,
                   peak <= capacity ? "fits" : fmt::format("OUT OF MEMORY by {}", bytes_text(core::Bytes(peak - capacity)))));
  auto mrow = [&](const std::string& name, core::Bytes v) {
    line(fmt::format("    {:<26}{:>14}", name, bytes_text(v)));
  };
  mrow("weights", mem.weights);
  mrow("gradients", mem.gradients);
  mrow("optimizer states", mem.optimizer_states);
  mrow("activations", p.result.peak_dynamic_by_program[stage]);
  mrow("buffers", mem.buffers);
  if (mem.stashed_weights.value() > 0) mrow("stashed weight versions", mem.stashed_weights);
  if (s.offload.active()) offload_table(s, p, stage, line);
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
  const std::string flows =
      p.result.network_flows > 0 ? fmt::format(", {} network flows", p.result.network_flows) : std::string();
  line(fmt::format("simulated by {} backend in {:.3f} s ({} events{}, {} of {} ranks simulated, profile: {})",
                   p.backend, p.wall_s, p.result.events, flows, p.result.simulated_ranks, s.cluster.world_size(),
                   s.profile.device.source));
  for (const std::string& w : s.warnings) line("warning: " + w);
  return out;
}

}  // namespace trainsim::cli
