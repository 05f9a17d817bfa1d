#include "sim/cli/replay_command.hpp"

#include <iostream>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>

#include "calibrate/accuracy.hpp"
#include "calibrate/chakra_workload.hpp"
#include "calibrate/replay_workload.hpp"
#include "calibrate/trace_set.hpp"
#include "sim/cli/calibrate_command.hpp"
#include "sim/cli/cli_options.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

struct Replay {
  calibrate::ReplayWorkload built;
  TracedCluster traced;
  engine::SimulationResult result;
  int scale_data = 1;
  std::string backend;
  double wall_s = 0;

  double predicted_s() const { return result.iteration_time.value(); }
  double measured_s() const { return built.measured.value(); }
};

// The critical rank's breakdown and its communication per axis, as `breakdown_s` and `communication_s`.
void add_time_split(const engine::SimulationResult& result, core::Json& j) {
  const engine::Breakdown& b = result.breakdown;
  j["breakdown_s"] = {{"compute", b.compute.value()},
                      {"exposed_communication", b.exposed_comm_total().value()},
                      {"pipeline_bubble", b.pipeline_bubble.value()},
                      {"other", b.other.value()}};
  core::Json comm = core::Json::object();
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    comm[std::string(core::to_string(static_cast<core::Axis>(a)))] = result.comm_time[static_cast<size_t>(a)].value();
  }
  j["communication_s"] = comm;
}

// The same as table lines.
std::string time_split_lines(const engine::SimulationResult& result) {
  const engine::Breakdown& b = result.breakdown;
  std::string s = fmt::format("{:<34} {}\n", "critical_rank", result.critical_rank);
  s += fmt::format("{:<34} {:.6g}\n", "compute_s", b.compute.value());
  s += fmt::format("{:<34} {:.6g}\n", "exposed_communication_s", b.exposed_comm_total().value());
  s += fmt::format("{:<34} {:.6g}\n", "pipeline_bubble_s", b.pipeline_bubble.value());
  s += fmt::format("{:<34} {:.6g}\n", "other_s", b.other.value());
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    const double t = result.comm_time[static_cast<size_t>(a)].value();
    if (t > 0) s += fmt::format("{:<34} {:.6g}\n", fmt::format("communication_{}_s", core::to_string(static_cast<core::Axis>(a))), t);
  }
  return s;
}

core::Json replay_json(const Replay& r) {
  core::Json j;
  j["schema"] = "trainsim.replay/1";
  j["traced_ranks"] = r.built.traced_ranks;
  j["world_size"] = r.built.workload.layout.world_size();
  j["scale_data"] = r.scale_data;
  j["iteration"] = r.built.iteration;
  j["measured_iteration_time_s"] = r.measured_s();
  j["iteration_time_s"] = r.predicted_s();
  if (r.scale_data == 1) j["error"] = calibrate::signed_error(r.predicted_s(), r.measured_s());
  j["critical_rank"] = r.result.critical_rank;
  add_time_split(r.result, j);
  j["tasks"] = {{"compute", r.built.compute_tasks},
                {"collective", r.built.collective_tasks},
                {"copy", r.built.copy_tasks},
                {"skipped_p2p", r.built.skipped_p2p},
                {"unresolved_collectives", r.built.unresolved_collectives}};
  j["host_gaps_s"] = r.built.host_gaps.value();
  j["cluster"] = r.traced.cluster.to_json();
  j["simulation"] = {{"backend", r.backend}, {"wall_s", r.wall_s}, {"events", r.result.events}};
  return j;
}

// A header row and the replay's row: the figures of the table under their JSON names, the
// breakdown and per-axis communication flattened (compute_s, communication_data_s, ...), the error
// empty with --scale-data > 1 (there is no measured run at that scale), no wall time (rows from
// several replays concatenate, and the same traces give the same row).
std::string replay_csv(const Replay& r) {
  const core::Json j = replay_json(r);
  std::vector<std::pair<std::string, const core::Json*>> columns;
  for (const char* key : {"traced_ranks", "world_size", "scale_data", "iteration", "measured_iteration_time_s",
                          "iteration_time_s", "error", "critical_rank"}) {
    columns.emplace_back(key, j.contains(key) ? &j[key] : nullptr);
  }
  for (const auto& [part, value] : j["breakdown_s"].items()) columns.emplace_back(part + "_s", &value);
  for (int a = 0; a < core::AXIS_COUNT; ++a) {
    const std::string axis(core::to_string(static_cast<core::Axis>(a)));
    columns.emplace_back("communication_" + axis + "_s", &j["communication_s"][axis]);
  }
  for (const auto& [kind, value] : j["tasks"].items()) columns.emplace_back("tasks_" + kind, &value);
  columns.emplace_back("host_gaps_s", &j["host_gaps_s"]);
  columns.emplace_back("backend", &j["simulation"]["backend"]);
  columns.emplace_back("events", &j["simulation"]["events"]);
  std::string header, row;
  for (size_t i = 0; i < columns.size(); ++i) {
    header += (i ? "," : "") + columns[i].first;
    row += (i ? "," : "") + csv_value(columns[i].second);
  }
  return header + "\n" + row + "\n";
}

std::string replay_table(const Replay& r) {
  std::string s = fmt::format("replay of {} traced ranks ({}) on {} x {} {}, world {}{}\n", r.built.traced_ranks,
                              r.built.iteration < 0 ? std::string("whole trace") : fmt::format("iteration {}", r.built.iteration),
                              r.traced.cluster.nodes, r.traced.cluster.gpus_per_node, r.traced.cluster.gpu,
                              r.built.workload.layout.world_size(),
                              r.scale_data > 1 ? fmt::format(" (--scale-data {})", r.scale_data) : "");
  s += fmt::format("{:<34} {:.6g}\n", "measured_iteration_time_s", r.measured_s());
  s += fmt::format("{:<34} {:.6g}\n", "predicted_iteration_time_s", r.predicted_s());
  if (r.scale_data == 1) {
    s += fmt::format("{:<34} {:+.2f} %\n", "error", 100 * calibrate::signed_error(r.predicted_s(), r.measured_s()));
  } else {
    s += fmt::format("{:<34} {:.4f}\n", "predicted / measured (traced)", r.predicted_s() / r.measured_s());
  }
  s += time_split_lines(r.result);
  s += fmt::format("{:<34} {} compute, {} collective, {} copy per traced run\n", "tasks", r.built.compute_tasks,
                   r.built.collective_tasks, r.built.copy_tasks);
  if (r.built.skipped_p2p + r.built.unresolved_collectives > 0) {
    s += fmt::format("{:<34} {} send/recv, {} collectives without known members\n", "not replayed", r.built.skipped_p2p,
                     r.built.unresolved_collectives);
  }
  s += fmt::format("{:<34} {:.6g}\n", "host_gaps_s (in compute tasks)", r.built.host_gaps.value());
  s += fmt::format("{:<34} {}, {} events, {:.3f} s wall\n", "simulation", r.backend, r.result.events, r.wall_s);
  return s;
}

// Seconds per rank-group membership (MAX_REPLAY_MEMBERSHIPS): group resolution and, under SimGrid,
// the flows of collectives over groups that grow with --scale-data.
constexpr double SIMGRID_S_PER_MEMBERSHIP = 3e-7;
constexpr double ANALYTIC_S_PER_MEMBERSHIP = 3e-8;

// The replayed world, before the workload is built (its layout's sizes are ints).
void check_replay_world(const calibrate::TraceSet& traces, int scale_data) {
  const int64_t world = static_cast<int64_t>(traces.world_size()) * scale_data;
  if (world <= MAX_REPLAY_WORLD) return;
  throw core::InputError::expected(
      "--scale-data", "",
      fmt::format("at most {} replicas of the {} traced ranks (a replayed world of at most {} GPUs, the largest "
                  "cluster)",
                  MAX_REPLAY_WORLD / std::max(traces.world_size(), 1), traces.world_size(), MAX_REPLAY_WORLD),
      fmt::format("{} ({} GPUs)", scale_data, world));
}

// Every rank resolves the members of each of its groups: rank count x group sizes.
void check_replay_cost(const calibrate::ReplayWorkload& built, int scale_data, const std::string& backend) {
  const core::Workload& wl = built.workload;
  const double world = wl.layout.world_size();
  double memberships = 0;
  for (const core::GroupKind& k : wl.groups) memberships += world * k.size(wl.layout);
  if (memberships <= MAX_REPLAY_MEMBERSHIPS) return;
  const double per = backend == "analytic" ? ANALYTIC_S_PER_MEMBERSHIP : SIMGRID_S_PER_MEMBERSHIP;
  throw core::InputError::expected(
      "--scale-data", "",
      fmt::format("a replay of at most {:.0e} rank-group memberships (a replay simulates every rank: each of the "
                  "world's ranks joins its groups, which grow with --scale-data, so the work grows as its square): "
                  "a smaller --scale-data",
                  MAX_REPLAY_MEMBERSHIPS),
      fmt::format("{} (world {:.0f}: {:.3g} memberships, about {:.0f} CPU-seconds with the {} backend)", scale_data,
                  world, memberships, std::ceil(memberships * per), backend));
}


// ---------------------------------------------------------------------------------------------
// --chakra: Chakra execution traces

struct ChakraReplay {
  calibrate::ChakraWorkload built;
  network::ClusterConfig cluster;
  core::Profile profile;
  engine::SimulationOptions options;
  std::string cluster_from;  // "scenario" (the whole of it) or "cluster" (its cluster at the traces' shape)
  engine::SimulationResult result;
  std::string backend;
  double wall_s = 0;
};

// The cluster to replay on: the whole scenario when its world matches the traces (the export of a
// scenario replays to its own time), else its cluster section at the traces' shape.
void choose_cluster(const ReplayArgs& args, const core::ChakraTrace& first, int ranks, ChakraReplay& r) {
  r.options.use_symmetry = false;  // every rank runs its own traced program
  if (!args.scenario.empty()) {
    const plan::Scenario s = plan::load_scenario(args.scenario, args.overrides);
    if (s.cluster.world_size() == ranks) {
      r.cluster = s.cluster;
      r.profile = s.profile;
      r.options.algorithm = s.simulation.algorithm;
      r.options.fidelity = s.simulation.fidelity;
      r.options.replay_calls_alone = s.simulation.replay;
      r.cluster_from = "scenario";
      return;
    }
  }
  const core::chakra::AttributeProto* gpu = core::find_attr(first.metadata.attr(), "trainsim.gpu");
  const std::string device = gpu != nullptr && gpu->value_case() == core::chakra::AttributeProto::kStringVal ? gpu->string_val() : "";
  const int per_node = load_traced_cluster(args.scenario, args.overrides, device).cluster.gpus_per_node;
  const int gpus_per_node = ranks % per_node == 0 ? per_node : ranks < per_node ? ranks : 0;
  if (gpus_per_node == 0) {
    throw core::InputError(args.scenario.empty() ? "--set" : args.scenario, "/cluster/gpus_per_node",
                           fmt::format("a number of GPUs per node that divides the {} ranks of the Chakra traces, found {}",
                                       ranks, per_node));
  }
  const TracedCluster t = load_traced_cluster(args.scenario, args.overrides, device, gpus_per_node, ranks / gpus_per_node);
  r.cluster = t.cluster;
  r.profile = t.profile;
  r.cluster_from = "cluster";
}

// Copies to NVMe or the parallel file system need the cluster to have them.
void check_copies(const core::Workload& wl, const network::ClusterConfig& cluster, const std::string& traces) {
  for (const core::Program& p : wl.programs) {
    for (const core::Task& t : p.tasks) {
      if (t.kind != core::TaskKind::COPY) continue;
      const bool nvme = t.copy != core::CopyDirection::HOST_TO_DEVICE && t.copy != core::CopyDirection::DEVICE_TO_HOST &&
                        !core::to_storage(t.copy);
      const bool storage = core::to_storage(t.copy);
      if ((nvme && !cluster.nvme) || (storage && !(cluster.storage && cluster.storage->parallel_fs))) {
        throw core::InputError(traces, "", fmt::format("{} copies {} ({}): the cluster has no {} (give a scenario whose "
                                                       "cluster describes it)",
                                                       p.name, core::to_string(t.copy), core::CHAKRA_ATTR_COPY,
                                                       nvme ? "cluster.nvme" : "cluster.storage.parallel_fs"));
      }
    }
  }
}

core::Json chakra_json(const ReplayArgs& args, const ChakraReplay& r) {
  const calibrate::ChakraWorkload& b = r.built;
  core::Json j;
  j["schema"] = "trainsim.chakra_replay/1";
  j["traces"] = args.chakra;
  j["world_size"] = b.workload.layout.world_size();
  core::Json layout = core::Json::object();
  for (int a = 0; a < core::AXIS_COUNT; ++a) layout[std::string(core::to_string(static_cast<core::Axis>(a)))] = b.workload.layout.size(static_cast<core::Axis>(a));
  j["layout"] = layout;
  j["layout_from"] = b.layout_from_files ? "trainsim metadata" : "process groups";
  j["cluster_from"] = r.cluster_from;
  j["iteration_time_s"] = r.result.iteration_time.value();
  if (b.traced) j["traced_iteration_time_s"] = b.traced->value();
  j["critical_rank"] = r.result.critical_rank;
  add_time_split(r.result, j);
  j["tasks"] = {{"compute", b.compute_tasks},     {"collective", b.collective_tasks}, {"send_recv", b.send_recv_tasks},
                {"copy", b.copy_tasks},           {"untimed", b.untimed},             {"skipped_nodes", b.skipped}};
  j["cluster"] = r.cluster.to_json();
  j["simulation"] = {{"backend", r.backend}, {"wall_s", r.wall_s}, {"events", r.result.events}};
  return j;
}

// One header row and one row: the JSON's numbers and strings, nested objects flattened with "_"
// (breakdown_s.compute -> breakdown_s_compute), without the cluster and the wall time.
std::string chakra_csv(const core::Json& j) {
  std::vector<std::pair<std::string, const core::Json*>> columns;
  for (const auto& [key, value] : j.items()) {
    if (key == "cluster" || key == "schema") continue;
    if (!value.is_object()) {
      columns.emplace_back(key, &value);
      continue;
    }
    for (const auto& [sub, v] : value.items()) {
      if (sub != "wall_s") columns.emplace_back(key + "_" + sub, &v);
    }
  }
  std::string header, row;
  for (size_t i = 0; i < columns.size(); ++i) {
    header += (i ? "," : "") + columns[i].first;
    row += (i ? "," : "") + csv_value(columns[i].second);
  }
  return header + "\n" + row + "\n";
}

std::string chakra_table(const ReplayArgs& args, const ChakraReplay& r) {
  const calibrate::ChakraWorkload& b = r.built;
  const core::ParallelLayout& l = b.workload.layout;
  std::string s = fmt::format("replay of the Chakra traces {} ({} ranks, layout tensor {} x context {} x expert {} x data {} x "
                              "pipeline {} from {}) on {} x {} {} ({})\n",
                              args.chakra, l.world_size(), l.size(core::Axis::TENSOR), l.size(core::Axis::CONTEXT),
                              l.size(core::Axis::EXPERT), l.size(core::Axis::DATA), l.size(core::Axis::PIPELINE),
                              b.layout_from_files ? "trainsim metadata" : "the process groups", r.cluster.nodes,
                              r.cluster.gpus_per_node, r.cluster.gpu,
                              r.cluster_from == "scenario" ? "the scenario" : "the cluster of --scenario and --set at the traces' shape");
  if (b.traced) s += fmt::format("{:<34} {:.6g}\n", "traced_iteration_time_s", b.traced->value());
  s += fmt::format("{:<34} {:.6g}\n", "predicted_iteration_time_s", r.result.iteration_time.value());
  s += time_split_lines(r.result);
  s += fmt::format("{:<34} {} compute, {} collective, {} send/recv, {} copy over the ranks\n", "tasks", b.compute_tasks,
                   b.collective_tasks, b.send_recv_tasks, b.copy_tasks);
  if (b.untimed > 0) s += fmt::format("{:<34} {} (no duration, FLOPs or bytes: 1 ns each)\n", "untimed compute nodes", b.untimed);
  if (b.skipped > 0) s += fmt::format("{:<34} {} (metadata, invalid, single-rank collectives)\n", "skipped nodes", b.skipped);
  s += fmt::format("{:<34} {}, {} events, {:.3f} s wall\n", "simulation", r.backend, r.result.events, r.wall_s);
  return s;
}

int chakra_replay_command(const ReplayArgs& args, std::ostream& out) {
  const auto start = std::chrono::steady_clock::now();
  if (!args.paths.empty()) throw core::InputError("--chakra", "", "give either trainsim traces or --chakra, not both");
  if (args.scale_data != 1) throw core::InputError("--scale-data", "", "not with --chakra (replay the traces at their own scale)");
  const std::vector<core::ChakraTrace> files = calibrate::load_chakra_traces(args.chakra);
  ChakraReplay r;
  r.built = calibrate::build_chakra_workload(files, calibrate::ChakraOptions{args.comm_groups});
  const core::Workload& wl = r.built.workload;
  const uint64_t tasks = r.built.compute_tasks + r.built.collective_tasks + r.built.send_recv_tasks + r.built.copy_tasks;
  if (tasks == 0) throw core::InputError(args.chakra, "", "nothing to replay: the traces hold no compute, communication or copy node");
  choose_cluster(args, files.front(), wl.layout.world_size(), r);
  check_copies(wl, r.cluster, args.chakra);
  r.backend = args.backend;
  const std::unique_ptr<engine::Backend> backend =
      args.backend == "analytic" ? engine::make_analytic_backend() : engine::make_simgrid_backend();
  try {
    r.result = backend->run(wl, r.cluster, r.profile, r.options);
  } catch (const engine::WorkloadStuck& e) {
    throw core::InputError(args.chakra, "",
                           fmt::format("the traces do not replay as one run ({}); the likely cause is ranks whose files "
                                       "disagree on their collective sequence (another call, size or order on a process "
                                       "group) or sends without their receives",
                                       e.what()));
  }
  TRAINSIM_CHECK(std::isfinite(r.result.iteration_time.value()),
                 fmt::format("a non-finite replayed iteration time ({})", r.result.iteration_time.value()));
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  switch (args.format) {
    case Format::JSON: out << chakra_json(args, r).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: out << chakra_csv(chakra_json(args, r)); break;
    case Format::TABLE: out << chakra_table(args, r); break;
  }
  return 0;
}

}  // namespace

int replay_command(const ReplayArgs& args, std::ostream& out) {
  if (!args.chakra.empty()) return chakra_replay_command(args, out);
  if (args.paths.empty()) throw core::InputError("replay", "", "give trainsim trace files or folders, or --chakra FOLDER");
  const auto start = std::chrono::steady_clock::now();
  const calibrate::TraceSet traces = calibrate::TraceSet::load(args.paths);
  for (const std::string& w : traces.warnings()) std::cerr << w << "\n";
  Replay r;
  r.scale_data = args.scale_data;
  check_replay_world(traces, args.scale_data);
  r.built = calibrate::build_replay_workload(traces, calibrate::ReplayOptions{args.scale_data});
  check_replay_cost(r.built, args.scale_data, args.backend);
  const std::string files = fmt::format("{}", fmt::join(args.paths, ", "));
  if (r.built.compute_tasks + r.built.collective_tasks + r.built.copy_tasks == 0 || !(r.built.measured.value() > 0)) {
    // Traces without timed work (all records dropped as corrupt, or only markers): an input problem.
    throw core::InputError(files, "",
                           fmt::format("nothing to replay: the traces hold {} kernels, {} collectives and {} copies, "
                                       "spanning {:.6g} s (a corrupt or truncated file is read up to its last "
                                       "complete record: see the warnings above)",
                                       r.built.compute_tasks, r.built.collective_tasks, r.built.copy_tasks,
                                       r.built.measured.value()));
  }
  r.traced = load_traced_cluster(args.scenario, args.overrides, traces.device_name(), r.built.gpus_per_node, r.built.nodes);
  engine::SimulationOptions options;
  options.use_symmetry = false;  // every rank runs its own measured program
  r.backend = args.backend;
  const std::unique_ptr<engine::Backend> backend =
      args.backend == "analytic" ? engine::make_analytic_backend() : engine::make_simgrid_backend();
  try {
    r.result = backend->run(r.built.workload, r.traced.cluster, r.traced.profile, options);
  } catch (const engine::WorkloadStuck& e) {
    // A workload built from traces runs what was measured: if it cannot run to its end, the traces
    // do not describe one consistent run.
    throw core::InputError(files, "",
                           fmt::format("the traces do not replay as one run ({}); the likely cause is ranks whose "
                                       "traces disagree on their collective sequence (another call, size or order) "
                                       "or a truncated trace: check that every rank's trace is complete and from "
                                       "the same run",
                                       e.what()));
  }
  if (r.result.iteration_time.value() == 0) {
    throw core::InputError(files, "", "nothing to replay: every traced kernel, copy and collective takes no time "
                                      "(each record's end equals its start)");
  }
  TRAINSIM_CHECK(std::isfinite(r.result.iteration_time.value()) && r.result.iteration_time.value() > 0,
                 fmt::format("a non-finite or non-positive replayed iteration time ({})", r.result.iteration_time.value()));
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  switch (args.format) {
    case Format::JSON: out << replay_json(r).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: out << replay_csv(r); break;
    case Format::TABLE: out << replay_table(r); break;
  }
  return 0;
}

ReplaySubcommand::ReplaySubcommand(CLI::App& app) {
  command_ = app.add_subcommand("replay", "Simulate a traced run from its traces (trainsim's, or Chakra execution traces with --chakra); predicted vs measured iteration time");
  command_->add_option("traces", args_.paths, "Trace files, or folders of *.trace files (one per rank)");
  command_->add_option("--chakra", args_.chakra, "Chakra execution traces: a folder of PREFIX.<rank>.et files, or PREFIX")
      ->type_name("PATH");
  command_->add_option("--comm-groups", args_.comm_groups, "With --chakra: ASTRA-sim's communicator-group JSON (pg_name -> ranks)")
      ->type_name("FILE");
  command_->add_option("--scenario", args_.scenario, "Scenario whose cluster (and simulation.profile) to replay on");
  command_->add_option("--set", args_.overrides, "Override a scenario value: key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  command_->add_option("--scale-data", args_.scale_data, "Replay N data-parallel replicas of the traced run")
      ->check(CLI::PositiveNumber)
      ->default_str("1");
  command_->add_option("--backend", args_.backend, "Simulation backend: simgrid (contention) or analytic")
      ->check(CLI::IsMember({"simgrid", "analytic"}))
      ->default_str("simgrid");
  add_format(command_, args_.format, /*csv=*/true);
}

std::optional<int> ReplaySubcommand::run(std::ostream& out) const {
  if (!command_->parsed()) return std::nullopt;
  return replay_command(args_, out);
}

}  // namespace trainsim::cli
