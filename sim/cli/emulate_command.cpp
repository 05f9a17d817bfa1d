#include "sim/cli/emulate_command.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <unistd.h>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::cli {
namespace {

trace::CollectiveOp traced_op(core::CollectiveOp op) {
  switch (op) {
    case core::CollectiveOp::ALL_REDUCE: return trace::COLLECTIVE_OP_ALL_REDUCE;
    case core::CollectiveOp::REDUCE_SCATTER: return trace::COLLECTIVE_OP_REDUCE_SCATTER;
    case core::CollectiveOp::ALL_GATHER: return trace::COLLECTIVE_OP_ALL_GATHER;
    case core::CollectiveOp::BROADCAST: return trace::COLLECTIVE_OP_BROADCAST;
    case core::CollectiveOp::REDUCE: return trace::COLLECTIVE_OP_REDUCE;
    case core::CollectiveOp::ALL_TO_ALL: return trace::COLLECTIVE_OP_ALL_TO_ALL;
  }
  return trace::COLLECTIVE_OP_UNKNOWN;
}

std::string task_name(const core::Workload& workload, const core::Task& t) {
  return t.name < workload.names.size() ? workload.names[t.name] : std::string("task");
}

}  // namespace

std::string write_emulation_trace(const std::string& dir, const core::Workload& workload,
                                  const engine::EmulationPlan& plan, const std::vector<EmulatedSpan>& spans,
                                  const std::string& command_line, int iteration, trace::Timing timing) {
  TRAINSIM_CHECK(spans.size() == plan.tasks.size(), "one span per emulated task");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw core::InputError("--trace", "", fmt::format("cannot create the folder {}: {}", dir, ec.message()));
  const std::string path = (std::filesystem::path(dir) / fmt::format("emulate.rank{}.trace", plan.rank)).string();

  trace::Header header;
  // No Producer enum value of its own (trace.proto): the producer is named by producer_version.
  header.set_producer_version("trainsim emulate");
  header.set_clock(trace::TRACE_CLOCK_REALTIME);
  header.set_world_size(plan.world_size);
  header.set_rank(plan.rank);
  header.set_local_rank(-1);  // unknown: ranks may span hosts
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) header.set_hostname(host);
  header.set_pid(static_cast<uint32_t>(getpid()));
  header.set_command_line(command_line);
  core::TraceWriter writer(path, header);

  uint64_t first = UINT64_MAX, last = 0;
  for (const EmulatedSpan& s : spans) {
    if (s.end_ns == 0) continue;
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
  }
  if (first <= last) {
    trace::Record r;
    trace::Marker* m = r.mutable_marker();
    m->set_name(fmt::format("ProfilerStep#{}", iteration));
    m->set_domain("trainsim.emulate");
    m->set_start_ns(first);
    m->set_end_ns(last);
    m->set_iteration(iteration);
    writer.append(r);
  }
  const core::Program& program = workload.program_of(plan.rank);
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const engine::EmulatedTask& e = plan.tasks[i];
    const core::Task& t = program.tasks[e.task];
    const EmulatedSpan& s = spans[i];
    const auto stream = static_cast<uint32_t>(e.stream);
    trace::Record r;
    if (e.modelled) {
      trace::Marker* m = r.mutable_marker();
      m->set_name(e.kind == engine::EmulatedKind::COLLECTIVE
                      ? fmt::format("{} {} {} B (modelled)", core::to_string(e.op),
                                    plan.groups[static_cast<size_t>(e.group)].name, e.bytes)
                      : fmt::format("{} rank {} {} B (modelled)",
                                    e.kind == engine::EmulatedKind::SEND ? "send to" : "recv from", e.peer, e.bytes));
      m->set_domain("trainsim.emulate.modelled");
      m->set_start_ns(s.start_ns);
      m->set_end_ns(s.end_ns);
      m->set_iteration(-1);
      writer.append(r);
      continue;
    }
    switch (e.kind) {
      case engine::EmulatedKind::WAIT:
        if (t.kind == core::TaskKind::COPY) {
          trace::Memcpy* m = r.mutable_memcpy();
          m->set_bytes(static_cast<uint64_t>(t.bytes > 0 ? t.bytes : 0));
          m->set_stream_id(stream);
          m->set_start_ns(s.start_ns);
          m->set_end_ns(s.end_ns);
        } else {
          trace::Kernel* k = r.mutable_kernel();
          k->set_name(task_name(workload, t));
          k->set_stream_id(stream);
          k->set_start_ns(s.start_ns);
          k->set_end_ns(s.end_ns);
        }
        break;
      case engine::EmulatedKind::COLLECTIVE: {
        const engine::EmulatedGroup& g = plan.groups[static_cast<size_t>(e.group)];
        trace::Collective* c = r.mutable_collective();
        c->set_op(traced_op(e.op));
        c->set_op_name(std::string(core::to_string(e.op)));
        c->set_bytes(e.bytes);
        c->set_data_type(trace::DATA_TYPE_FLOAT32);
        c->set_count((e.bytes + 3) / 4);
        c->set_comm_hash(static_cast<uint64_t>(e.group) << 32 | static_cast<uint32_t>(g.color));
        c->set_comm_name(g.name);
        c->set_comm_size(static_cast<int32_t>(g.ranks.size()));
        c->set_rank(g.key);
        c->set_root(e.op == core::CollectiveOp::BROADCAST || e.op == core::CollectiveOp::REDUCE ? 0 : -1);
        c->set_stream(stream);
        c->set_start_ns(s.start_ns);
        c->set_end_ns(s.end_ns);
        c->set_timing(timing);
        c->set_seq_number(e.seq);
        for (int q : g.ranks) c->add_group_ranks(q);
        break;
      }
      case engine::EmulatedKind::SEND:
      case engine::EmulatedKind::RECV: {
        trace::P2p* p = r.mutable_p2p();
        p->set_direction(e.kind == engine::EmulatedKind::SEND ? trace::P2P_DIRECTION_SEND : trace::P2P_DIRECTION_RECV);
        p->set_peer(e.stand_in);
        p->set_bytes(e.bytes);
        p->set_count(e.bytes);
        p->set_comm_name("world");
        p->set_comm_size(plan.world_size);
        p->set_rank(plan.rank);
        p->set_stream(stream);
        p->set_start_ns(s.start_ns);
        p->set_end_ns(s.end_ns);
        p->set_timing(timing);
        break;
      }
      case engine::EmulatedKind::NOOP:
        continue;
    }
    writer.append(r);
  }
  writer.flush();
  return path;
}

std::vector<CollectiveTiming> collective_timings(const core::Workload& workload, const engine::EmulationPlan& plan,
                                                 const std::vector<EmulatedSpan>& spans) {
  TRAINSIM_CHECK(spans.size() == plan.tasks.size(), "one span per emulated task");
  std::map<std::pair<int, int>, CollectiveTiming> by;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const engine::EmulatedTask& e = plan.tasks[i];
    if (e.kind != engine::EmulatedKind::COLLECTIVE) continue;
    CollectiveTiming& c = by[{e.group, static_cast<int>(e.op)}];
    const engine::EmulatedGroup& g = plan.groups[static_cast<size_t>(e.group)];
    c.group = workload.groups[static_cast<size_t>(e.group)].name;
    c.op = e.op;
    c.ranks = static_cast<int>(g.ranks.size());
    c.members = g.members;
    c.modelled = e.modelled;
    ++c.calls;
    c.bytes += static_cast<double>(e.bytes);
    c.seconds += static_cast<double>(spans[i].end_ns - spans[i].start_ns) * 1e-9;
  }
  std::vector<CollectiveTiming> out;
  for (auto& [key, c] : by) out.push_back(std::move(c));
  return out;
}

std::string emulation_report(const EmulateArgs& args, const EmulationOutcome& o) {
  std::string s = fmt::format("emulate: {} ({} MPI ranks{}, device {}, compute x{:g}, bytes x{:g}, iteration {} of {})\n",
                              args.scenario, o.mpi_ranks,
                              args.ranks == "all" ? std::string() : fmt::format(" standing for --ranks {}", args.ranks),
                              args.device, args.scale_compute, args.scale_bytes, args.iterations, args.iterations);
  s += fmt::format("  emulated iteration   {:10.4f} s  (rank {}'s compute and copy waits: {:.4f} s)\n", o.iteration_s,
                   o.rank, o.wait_s);
  s += fmt::format("  calls of rank {}: {} measured, {} modelled (timed waits priced by the analytic model)\n", o.rank,
                   o.measured_calls, o.modelled_calls);
  s += fmt::format("  collectives of rank {} in the measured iteration:\n", o.rank);
  s += fmt::format("    {:<14} {:<15} {:>7} {:<9} {:>7} {:>12} {:>10}\n", "group", "op", "ranks", "how", "calls",
                   "bytes", "seconds");
  for (const CollectiveTiming& c : o.timings) {
    const std::string how = c.modelled ? "modelled" : "measured";
    const std::string ranks = c.ranks == c.members || c.modelled ? fmt::format("{}", c.members)
                                                                 : fmt::format("{} of {}", c.ranks, c.members);
    s += fmt::format("    {:<14} {:<15} {:>7} {:<9} {:>7} {:>12.4g} {:>10.4f}\n", c.group, core::to_string(c.op),
                     ranks, how, c.calls, c.bytes, c.seconds);
  }
  s += fmt::format("  simulated (analytic) {:10.4f} s  for the same scaled job on the scenario's cluster; emulated / "
                   "simulated = {:.3f}\n",
                   o.predicted_s, o.predicted_s > 0 ? o.iteration_s / o.predicted_s : 0.0);
  if (o.predicted_present_s >= 0) {
    s += fmt::format("  simulated, emulated ranks {:10.4f} s  (their last task); emulated / simulated = {:.3f}\n",
                     o.predicted_present_s, o.predicted_present_s > 0 ? o.iteration_s / o.predicted_present_s : 0.0);
  }
  return s;
}

EmulateSubcommand::EmulateSubcommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "emulate", "Run a scenario's communication for real under mpirun, compute as timed waits (docs/emulate.md)");
  command_->add_option("scenario", args_.scenario, "Scenario JSON file")->required();
  command_->add_option("--set", args_.overrides, "Override a scenario value first: key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  command_->add_option("--scale-compute", args_.scale_compute, "Compute and copy waits times F")
      ->type_name("F")
      ->default_val(1.0);
  command_->add_option("--scale-bytes", args_.scale_bytes, "Collective and message sizes times F")
      ->type_name("F")
      ->default_val(1.0);
  command_->add_option("--iterations", args_.iterations, "Iterations run; the last one is measured")
      ->check(CLI::Range(1, 1000))
      ->default_val(2);
  command_->add_option("--trace", args_.trace_dir, "Write DIR/emulate.rank<R>.trace per rank (trainsim traces)")
      ->type_name("DIR");
  command_->add_option("--ranks", args_.ranks,
                       "Ranks the MPI processes stand for: all, node:N or stage:S; the others' traffic is mirrored "
                       "or modelled (docs/emulate.md)")
      ->type_name("SPEC")
      ->default_val("all");
  command_->add_option("--device", args_.device,
                       "cpu: MPI and timed waits; gpu: NCCL on GPU buffers and spin kernels (CUDA and NCCL builds)")
      ->type_name("cpu|gpu")
      ->default_val("cpu");
}

std::optional<int> EmulateSubcommand::run(std::ostream& out, std::ostream& err) {
  if (!command_->parsed()) return std::nullopt;
  return emulate_command(args_, out, err);
}

}  // namespace trainsim::cli
