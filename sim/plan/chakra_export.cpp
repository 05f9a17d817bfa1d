#include "sim/plan/chakra_export.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>

#include "models/workload_builder.hpp"
#include "sim/core/chakra_io.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/output_file.hpp"
#include "sim/engine/compute_model.hpp"
#include "sim/engine/host_model.hpp"

namespace trainsim::plan {
namespace {

namespace chakra = core::chakra;
using core::Task;
using core::TaskKind;

std::string file_name_of(const std::string& scenario_name) {
  std::string out;
  for (char c : scenario_name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    out += plain ? c : '_';
  }
  return out.empty() ? "workload" : out;
}

// The time the engine gives a compute or copy task on the scenario's cluster (sim/engine/program_plan.cpp
// prices them the same way); 0 for communication and memory.
double task_seconds(const Task& t, const core::Workload& wl, const Scenario& s) {
  switch (t.kind) {
    case TaskKind::COMPUTE:
      if (t.stream == core::Stream::HOST) return engine::host_compute_time(t, s.cluster).value();
      return t.seconds > 0 ? t.seconds : engine::compute_time(t, wl.precision, s.cluster.gpu_spec, s.profile.device).value();
    case TaskKind::COPY: return t.seconds > 0 ? t.seconds : engine::copy_time(core::Bytes(t.bytes), t.copy, s.cluster).value();
    default: return 0;
  }
}

chakra::CollectiveCommType comm_type_of(core::CollectiveOp op) {
  switch (op) {
    case core::CollectiveOp::ALL_REDUCE: return chakra::ALL_REDUCE;
    case core::CollectiveOp::REDUCE_SCATTER: return chakra::REDUCE_SCATTER;
    case core::CollectiveOp::ALL_GATHER: return chakra::ALL_GATHER;
    case core::CollectiveOp::BROADCAST: return chakra::BROADCAST;
    case core::CollectiveOp::REDUCE: return chakra::REDUCE;
    case core::CollectiveOp::ALL_TO_ALL: return chakra::ALL_TO_ALL;
  }
  return chakra::ALL_REDUCE;
}

// Process groups: one per group of each kind, numbered from 1 in the order of their lowest rank.
struct ProcessGroups {
  std::vector<std::vector<uint32_t>> id_of;  // [kind][rank]: 0 when the rank is in no group of the kind
  std::map<uint32_t, std::vector<int>> members;

  explicit ProcessGroups(const core::Workload& wl) : id_of(wl.groups.size()) {
    const int world = wl.layout.world_size();
    for (size_t k = 0; k < wl.groups.size(); ++k) {
      id_of[k].assign(static_cast<size_t>(world), 0);
      for (int r = 0; r < world; ++r) {
        if (id_of[k][static_cast<size_t>(r)] != 0 || !wl.groups[k].contains(wl.layout, r)) continue;
        const uint32_t id = static_cast<uint32_t>(members.size()) + 1;
        std::vector<int> ranks = wl.groups[k].ranks_of(wl.layout, r);
        for (int m : ranks) id_of[k][static_cast<size_t>(m)] = id;
        members.emplace(id, std::move(ranks));
      }
    }
  }
};

core::Json group_kinds_json(const core::Workload& wl) {
  core::Json kinds = core::Json::array();
  for (const core::GroupKind& g : wl.groups) {
    core::Json extra = core::Json::array();
    for (core::Axis a : g.extra_axes) extra.push_back(std::string(core::to_string(a)));
    core::Json kind = {{"name", g.name}, {"axis", std::string(core::to_string(g.axis))}, {"members", g.members}, {"extra_axes", extra}};
    if (g.cut != core::AxisCut::WHOLE) {
      kind["cut"] = std::string(core::to_string(g.cut));
      kind["block"] = g.block;
    }
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

chakra::GlobalMetadata metadata_of(const Scenario& s, const core::Workload& wl, int rank) {
  chakra::GlobalMetadata m;
  std::vector<int64_t> sizes(wl.layout.sizes().begin(), wl.layout.sizes().end());
  *m.add_attr() = core::int64_list_attr(core::CHAKRA_ATTR_LAYOUT, sizes);
  *m.add_attr() = core::string_attr(core::CHAKRA_ATTR_GROUP_KINDS, group_kinds_json(wl).dump());
  *m.add_attr() = core::bool_attr(core::CHAKRA_ATTR_STEADY_STATE, wl.steady_state);
  *m.add_attr() = core::string_attr("trainsim.scenario", s.name);
  *m.add_attr() = core::string_attr("trainsim.gpu", s.cluster.gpu);
  *m.add_attr() = core::int64_attr("trainsim.rank", rank);
  *m.add_attr() = core::int64_attr("trainsim.world_size", wl.layout.world_size());
  return m;
}

// Node 0: the rank's process groups, as PyTorch's execution trace lists them (ASTRA-sim reads them).
chakra::Node pg_init_node(const core::Workload& wl, const ProcessGroups& pgs, int rank) {
  core::Json groups = core::Json::array();
  for (size_t k = 0; k < wl.groups.size(); ++k) {
    const uint32_t id = pgs.id_of[k][static_cast<size_t>(rank)];
    if (id != 0) groups.push_back({{"pg_name", std::to_string(id)}, {"pg_desc", wl.groups[k].name}, {"ranks", pgs.members.at(id)}});
  }
  chakra::Node n;
  n.set_id(0);
  n.set_name(core::CHAKRA_PG_INIT);
  n.set_type(chakra::METADATA_NODE);
  n.mutable_inputs()->set_values("['" + groups.dump() + "']");
  return n;
}

// Each task's dependencies for the traces: its own and its stream predecessor, a MEMORY task (no
// node) replaced by what it waits for.
std::vector<std::vector<uint32_t>> exported_deps(const core::Program& p) {
  std::vector<std::vector<uint32_t>> deps(p.tasks.size());
  std::array<uint32_t, core::STREAM_COUNT> last;
  last.fill(core::NO_TASK);
  for (uint32_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    std::vector<uint32_t> raw(p.deps_of(t), p.deps_of(t) + t.dep_count);
    uint32_t& previous = last[static_cast<size_t>(t.stream)];
    if (previous != core::NO_TASK) raw.push_back(previous);
    previous = i;
    for (uint32_t d : raw) {
      if (p.tasks[d].kind == TaskKind::MEMORY) {
        deps[i].insert(deps[i].end(), deps[d].begin(), deps[d].end());
      } else {
        deps[i].push_back(d);
      }
    }
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
  }
  return deps;
}

chakra::Node task_node(const Task& t, uint32_t index, double seconds, const core::Workload& wl, const ProcessGroups& pgs,
                       int rank) {
  chakra::Node n;
  n.set_id(index + 1);
  n.set_name(wl.names[t.name]);
  n.set_duration_micros(static_cast<uint64_t>(std::llround(seconds * 1e6)));
  *n.add_attr() = core::bool_attr("is_cpu_op", t.kind == TaskKind::COMPUTE && t.stream == core::Stream::HOST);
  *n.add_attr() = core::string_attr(core::CHAKRA_ATTR_STREAM, std::string(core::to_string(t.stream)));
  switch (t.kind) {
    case TaskKind::COMPUTE:
      n.set_type(chakra::COMP_NODE);
      *n.add_attr() = core::double_attr(core::CHAKRA_ATTR_DURATION, seconds);
      *n.add_attr() = core::int64_attr("num_ops", std::llround(t.flops));
      *n.add_attr() = core::uint64_attr("tensor_size", static_cast<uint64_t>(std::llround(t.bytes)));
      *n.add_attr() = core::string_attr(core::CHAKRA_ATTR_OP_CLASS, std::string(core::to_string(t.op_class)));
      break;
    case TaskKind::COLLECTIVE:
      n.set_type(chakra::COMM_COLL_NODE);
      *n.add_attr() = core::int64_attr("comm_type", comm_type_of(t.collective));
      *n.add_attr() = core::int64_attr("comm_size", std::llround(t.bytes));
      *n.add_attr() = core::string_attr("pg_name", std::to_string(pgs.id_of[t.group][static_cast<size_t>(rank)]));
      *n.add_attr() = core::int64_attr(core::CHAKRA_ATTR_GROUP, t.group);
      break;
    case TaskKind::SEND:
    case TaskKind::RECV: {
      const int peer = wl.layout.peer(rank, t.peer_axis, t.peer_offset);
      const bool send = t.kind == TaskKind::SEND;
      n.set_type(send ? chakra::COMM_SEND_NODE : chakra::COMM_RECV_NODE);
      *n.add_attr() = core::int32_attr("comm_src", send ? rank : peer);
      *n.add_attr() = core::int32_attr("comm_dst", send ? peer : rank);
      *n.add_attr() = core::int32_attr("comm_tag", t.tag);
      *n.add_attr() = core::int64_attr("comm_size", std::llround(t.bytes));
      break;
    }
    case TaskKind::COPY:
      n.set_type(core::outbound(t.copy) ? chakra::MEM_STORE_NODE : chakra::MEM_LOAD_NODE);
      *n.add_attr() = core::uint64_attr("tensor_size", static_cast<uint64_t>(std::llround(t.bytes)));
      *n.add_attr() = core::string_attr(core::CHAKRA_ATTR_COPY, std::string(core::to_string(t.copy)));
      if (t.seconds > 0) *n.add_attr() = core::double_attr(core::CHAKRA_ATTR_DURATION, t.seconds);
      break;
    case TaskKind::MEMORY: break;
  }
  return n;
}

std::vector<ExportLoss> notes_of(const core::Workload& wl) {
  std::vector<ExportLoss> notes;
  const auto any = [&](auto pred) { return std::any_of(wl.programs.begin(), wl.programs.end(), pred); };
  if (any([](const core::Program& p) { return !p.pool.empty(); })) {
    notes.push_back({"parallelism.pipeline_schedule",
                     "the ready pool's run-time order (message-driven execution) is written in its default program "
                     "order: a replay of the traces runs that fixed order"});
  }
  if (wl.steady_state) {
    notes.push_back({"parallelism.pipeline_schedule",
                     "the iteration is one period of a steady state that never drains (timed from each rank's first "
                     "compute task): trainsim.steady_state keeps it for trainsim's replay; other readers time the "
                     "files from their start"});
  }
  if (any([](const core::Program& p) {
        return std::any_of(p.tasks.begin(), p.tasks.end(), [](const Task& t) { return t.kind == TaskKind::MEMORY; });
      })) {
    notes.push_back({"memory", "allocations and frees have no Chakra node: the traces carry the iteration's time, not its memory"});
  }
  return notes;
}

}  // namespace

ChakraExportResult export_chakra(const Scenario& s, const std::string& dir) {
  if (!s.cluster.pools.empty()) {
    throw core::InputError(s.file, "/cluster/pools", "a Chakra export of a job on several GPU types is not written yet: "
                                                      "give a cluster of one GPU type");
  }
  const models::BuiltWorkload built =
      models::build_workload(s.model, s.training, s.parallelism, s.pruning, s.offload, s.compression);
  const core::Workload& wl = built.workload;
  const int world = wl.layout.world_size();
  uint64_t tasks = 0;
  for (int r = 0; r < world; ++r) tasks += wl.program_of(r).tasks.size();
  if (tasks > CHAKRA_MAX_EXPORT_NODES) {
    throw core::InputError(s.file, "", fmt::format("the workload has {} tasks over its {} ranks, more than the {} nodes "
                                                   "one Chakra export writes (CHAKRA_MAX_EXPORT_NODES): export a smaller job",
                                                   tasks, world, CHAKRA_MAX_EXPORT_NODES));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw core::InputError(dir, "", fmt::format("cannot create the folder: {}", ec.message()));

  ChakraExportResult out;
  out.prefix = (std::filesystem::path(dir) / file_name_of(s.name)).string();
  out.notes = notes_of(wl);
  const ProcessGroups pgs(wl);
  std::vector<std::vector<double>> seconds(wl.programs.size());
  std::vector<std::vector<std::vector<uint32_t>>> deps(wl.programs.size());
  for (size_t p = 0; p < wl.programs.size(); ++p) {
    for (const Task& t : wl.programs[p].tasks) seconds[p].push_back(task_seconds(t, wl, s));
    deps[p] = exported_deps(wl.programs[p]);
  }
  for (int r = 0; r < world; ++r) {
    const size_t p = wl.program_of_rank[static_cast<size_t>(r)];
    const core::Program& program = wl.programs[p];
    out.files.push_back(fmt::format("{}.{}.et", out.prefix, r));
    core::ChakraWriter w(out.files.back(), metadata_of(s, wl, r));
    w.append(pg_init_node(wl, pgs, r));
    for (uint32_t i = 0; i < program.tasks.size(); ++i) {
      if (program.tasks[i].kind == TaskKind::MEMORY) continue;
      chakra::Node n = task_node(program.tasks[i], i, seconds[p][i], wl, pgs, r);
      for (uint32_t d : deps[p][i]) n.add_data_deps(d + 1);
      w.append(n);
    }
    out.nodes += w.nodes_written();
    w.close();
  }
  core::Json groups = core::Json::object();
  for (const auto& [id, members] : pgs.members) groups[std::to_string(id)] = members;
  out.comm_groups = out.prefix + ".comm_groups.json";
  core::OutputFile f(out.comm_groups, "-o");
  f.stream() << groups.dump() << "\n";
  f.commit();
  return out;
}

}  // namespace trainsim::plan
