// `trainsim emulate` under MPI (emulate_command.hpp, docs/emulate.md). The only file of the command
// that sees mpi.h; built without TRAINSIM_HAVE_MPI it only explains how to rebuild.

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "models/workload_builder.hpp"
#include "sim/cli/emulate_command.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"

#ifdef TRAINSIM_HAVE_MPI
#include "sim/cli/mpi_session.hpp"
#endif

namespace trainsim::cli {
namespace {

#ifdef TRAINSIM_HAVE_MPI

// Runs `step` on every rank and agrees on its outcome, so that no rank goes on (and hangs in a
// collective) while another failed: 0 when it succeeded everywhere; else the lowest failing rank's
// error is sent to rank 0, which prints it on `err` as main would (once), and every rank returns its
// exit code (2 for bad input, 1 for a bug). Rank 0 prints before a barrier that the other ranks pass
// before they exit: mpirun aborts the job when a rank exits non-zero, and rank 0 must have printed.
int agree(const MpiSession& mpi, std::ostream& err, const std::function<void()>& step) {
  int code = 0;
  std::string text;  // InputError: its problems, one line each; else the message
  try {
    step();
  } catch (const core::InputError& e) {
    code = 2;
    for (const core::InputProblem& p : e.problems()) text += "error: " + p.to_string() + "\n";
  } catch (const std::exception& e) {
    code = 1;
    text = fmt::format("trainsim: rank {}: {}\n(this is a bug in trainsim; please report it with the scenario)\n",
                       mpi.rank(), e.what());
  }
  // The lowest failing rank (size when none).
  int failing = code != 0 ? mpi.rank() : mpi.size();
  int first = mpi.size();
  MPI_Allreduce(&failing, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == mpi.size()) return 0;
  int first_code = code;
  MPI_Bcast(&first_code, 1, MPI_INT, first, MPI_COMM_WORLD);
  if (first != 0) {
    if (mpi.rank() == first) {
      const int n = static_cast<int>(text.size());
      MPI_Send(&n, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
      MPI_Send(text.data(), n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    } else if (mpi.rank() == 0) {
      int n = 0;
      MPI_Recv(&n, 1, MPI_INT, first, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      text.assign(static_cast<size_t>(n), '\0');
      MPI_Recv(text.data(), n, MPI_CHAR, first, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  if (mpi.rank() == 0) {
    err << text;
    err.flush();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return first_code;
}

uint64_t realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

struct Active {
  uint32_t task = 0;
  bool wait = false;
  std::chrono::steady_clock::time_point deadline;
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<float> send;
  std::vector<float> recv;
};

int count_of(uint64_t bytes, uint64_t parts, uint64_t unit) {
  const uint64_t per = (bytes + parts * unit - 1) / (parts * unit);
  TRAINSIM_CHECK(per <= static_cast<uint64_t>(INT32_MAX / 4),
                 fmt::format("{} bytes do not fit one MPI call: use --scale-bytes", bytes));
  return static_cast<int>(per);
}

// Posts the MPI call of a COLLECTIVE, SEND or RECV task.
void post(const engine::EmulationPlan& plan, const engine::EmulatedTask& e, const std::vector<MPI_Comm>& comms,
          MPI_Comm world, Active& a) {
  using core::CollectiveOp;
  if (e.kind == engine::EmulatedKind::SEND || e.kind == engine::EmulatedKind::RECV) {
    const int n = count_of(e.bytes, 1, 1);
    a.send.resize(static_cast<size_t>(n + 3) / 4);
    if (e.kind == engine::EmulatedKind::SEND) {
      MPI_Isend(a.send.data(), n, MPI_BYTE, e.peer, e.tag, world, &a.request);
    } else {
      MPI_Irecv(a.send.data(), n, MPI_BYTE, e.peer, e.tag, world, &a.request);
    }
    return;
  }
  const MPI_Comm comm = comms[static_cast<size_t>(e.group)];
  const auto n = static_cast<uint64_t>(plan.groups[static_cast<size_t>(e.group)].ranks.size());
  const auto size = [](int count) { return static_cast<size_t>(count); };
  switch (e.op) {
    case CollectiveOp::ALL_REDUCE: {
      const int c = count_of(e.bytes, 1, 4);
      a.send.resize(size(c));
      a.recv.resize(size(c));
      MPI_Iallreduce(a.send.data(), a.recv.data(), c, MPI_FLOAT, MPI_SUM, comm, &a.request);
      break;
    }
    case CollectiveOp::REDUCE: {
      const int c = count_of(e.bytes, 1, 4);
      a.send.resize(size(c));
      a.recv.resize(size(c));
      MPI_Ireduce(a.send.data(), a.recv.data(), c, MPI_FLOAT, MPI_SUM, 0, comm, &a.request);
      break;
    }
    case CollectiveOp::BROADCAST: {
      const int c = count_of(e.bytes, 1, 4);
      a.send.resize(size(c));
      MPI_Ibcast(a.send.data(), c, MPI_FLOAT, 0, comm, &a.request);
      break;
    }
    case CollectiveOp::ALL_GATHER: {  // bytes: the receive buffer
      const int c = count_of(e.bytes, n, 4);
      a.send.resize(size(c));
      a.recv.resize(size(c) * n);
      MPI_Iallgather(a.send.data(), c, MPI_FLOAT, a.recv.data(), c, MPI_FLOAT, comm, &a.request);
      break;
    }
    case CollectiveOp::REDUCE_SCATTER: {  // bytes: the send buffer
      const int c = count_of(e.bytes, n, 4);
      a.send.resize(size(c) * n);
      a.recv.resize(size(c));
      MPI_Ireduce_scatter_block(a.send.data(), a.recv.data(), c, MPI_FLOAT, MPI_SUM, comm, &a.request);
      break;
    }
    case CollectiveOp::ALL_TO_ALL: {  // bytes: the send buffer, 1/n to each member
      const int c = count_of(e.bytes, n, 4);
      a.send.resize(size(c) * n);
      a.recv.resize(size(c) * n);
      MPI_Ialltoall(a.send.data(), c, MPI_FLOAT, a.recv.data(), c, MPI_FLOAT, comm, &a.request);
      break;
    }
  }
}

// One iteration of the plan (workload.hpp's semantics, one thread with non-blocking MPI): each
// stream runs its tasks one at a time in program order once their dependencies are done; a group's
// collectives and a channel's messages are issued in their call order. Returns the rank's seconds.
double run_iteration(const engine::EmulationPlan& plan, const std::vector<MPI_Comm>& comms, MPI_Comm world,
                     std::vector<EmulatedSpan>& spans) {
  using Clock = std::chrono::steady_clock;
  const size_t n = plan.tasks.size();
  spans.assign(n, EmulatedSpan{});
  std::vector<std::vector<uint32_t>> streams(core::STREAM_COUNT);
  for (uint32_t i = 0; i < n; ++i) streams[static_cast<size_t>(plan.tasks[i].stream)].push_back(i);
  std::vector<size_t> head(core::STREAM_COUNT, 0);
  std::vector<bool> started(n, false);
  std::vector<bool> done(n, false);
  std::vector<uint32_t> group_next(plan.groups.size(), 0);
  std::vector<uint32_t> channel_next(plan.channels.size(), 0);
  std::vector<Active> active;
  size_t finished = 0;
  const Clock::time_point t0 = Clock::now();

  auto finish = [&](uint32_t i) {
    done[i] = true;
    spans[i].end_ns = realtime_ns();
    ++finished;
  };
  while (finished < n) {
    bool progress = false;
    for (size_t s = 0; s < streams.size(); ++s) {
      while (head[s] < streams[s].size()) {
        const uint32_t i = streams[s][head[s]];
        if (done[i]) {
          ++head[s];
          progress = true;
          continue;
        }
        if (started[i]) break;
        const engine::EmulatedTask& e = plan.tasks[i];
        bool ready = true;
        for (uint32_t d : e.deps) ready = ready && done[d];
        if (e.kind == engine::EmulatedKind::COLLECTIVE) ready = ready && group_next[static_cast<size_t>(e.group)] == e.seq;
        if (e.kind == engine::EmulatedKind::SEND || e.kind == engine::EmulatedKind::RECV) {
          ready = ready && channel_next[e.channel] == e.seq;
        }
        if (!ready) break;
        started[i] = true;
        progress = true;
        spans[i].start_ns = realtime_ns();
        if (e.kind == engine::EmulatedKind::NOOP || (e.kind == engine::EmulatedKind::WAIT && e.seconds <= 0)) {
          finish(i);
          continue;
        }
        Active a;
        a.task = i;
        if (e.kind == engine::EmulatedKind::WAIT) {
          a.wait = true;
          a.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(e.seconds));
        } else {
          post(plan, e, comms, world, a);
          if (e.kind == engine::EmulatedKind::COLLECTIVE) ++group_next[static_cast<size_t>(e.group)];
          else ++channel_next[e.channel];
        }
        active.push_back(std::move(a));
        break;
      }
    }
    const Clock::time_point now = Clock::now();
    Clock::time_point next_deadline = Clock::time_point::max();
    bool requests = false;
    for (size_t k = 0; k < active.size();) {
      Active& a = active[k];
      bool complete = false;
      if (a.wait) {
        complete = now >= a.deadline;
        if (!complete) next_deadline = std::min(next_deadline, a.deadline);
      } else {
        int flag = 0;
        MPI_Test(&a.request, &flag, MPI_STATUS_IGNORE);
        complete = flag != 0;
        requests = requests || !complete;
      }
      if (complete) {
        finish(a.task);
        progress = true;
        active[k] = std::move(active.back());
        active.pop_back();
      } else {
        ++k;
      }
    }
    if (!progress) {
      // Nothing to do: let the other ranks (oversubscribed cores) run. With messages in flight poll
      // again soon; with only waits, sleep until the first one ends.
      const auto poll = std::chrono::microseconds(requests ? 20 : 1000);
      const Clock::time_point until = std::min(next_deadline, Clock::now() + poll);
      std::this_thread::sleep_until(until);
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int emulate_mpi(const EmulateArgs& args, std::ostream& out, std::ostream& err) {
  MpiSession mpi;
  Scenario scenario;
  core::Workload workload;
  engine::EmulationPlan plan;
  engine::EmulationOptions options;
  options.scale_compute = args.scale_compute;
  options.scale_bytes = args.scale_bytes;
  int code = agree(mpi, err, [&] {
    scenario = load_scenario(args.scenario, args.overrides);
    workload = models::build_workload(scenario.model, scenario.training, scenario.parallelism, scenario.pruning,
                                      scenario.offload, scenario.compression)
                   .workload;
    engine::check_emulation_world(workload, mpi.size(), scenario.file);
    plan = engine::plan_emulation(workload, mpi.rank(), scenario.cluster, scenario.profile.device, options,
                                  scenario.file);
  });
  if (code != 0) return code;

  std::vector<MPI_Comm> comms(plan.groups.size(), MPI_COMM_NULL);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const engine::EmulatedGroup& group = plan.groups[g];
    MPI_Comm_split(MPI_COMM_WORLD, group.color < 0 ? MPI_UNDEFINED : group.color, group.key, &comms[g]);
  }
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);

  std::vector<EmulatedSpan> spans;
  double iteration_s = 0;
  for (int it = 0; it < args.iterations; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    double mine = 0;
    code = agree(mpi, err, [&] { mine = run_iteration(plan, comms, world, spans); });
    if (code != 0) return code;
    MPI_Reduce(&mine, &iteration_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  }
  code = agree(mpi, err, [&] {
    if (!args.trace_dir.empty()) {
      write_emulation_trace(args.trace_dir, workload, plan, spans, fmt::format("trainsim emulate {}", args.scenario));
    }
  });
  if (code != 0) return code;
  double predicted_s = 0;
  if (mpi.rank() == 0) {
    const core::Workload scaled = engine::scaled_workload(workload, scenario.cluster, scenario.profile.device, options);
    engine::SimulationOptions sim;
    sim.use_symmetry = scenario.simulation.symmetry;
    sim.algorithm = scenario.simulation.algorithm;
    predicted_s = engine::make_analytic_backend()->run(scaled, scenario.cluster, scenario.profile, sim)
                      .iteration_time.value();
  }
  for (MPI_Comm& c : comms) {
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
  MPI_Comm_free(&world);
  if (mpi.rank() == 0) {
    out << emulation_report(args, mpi.size(), iteration_s, predicted_s, plan.wait_seconds,
                            collective_timings(workload, plan, spans));
    if (!args.trace_dir.empty()) out << fmt::format("  traces: {}/emulate.rank<R>.trace\n", args.trace_dir);
  }
  mpi.finalize();
  return 0;
}

#endif

}  // namespace

int emulate_command(const EmulateArgs& args, std::ostream& out, std::ostream& err) {
#ifdef TRAINSIM_HAVE_MPI
  return emulate_mpi(args, out, err);
#else
  (void)out;
  (void)err;
  (void)args;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::atoi(rank) > 0) return 2;  // rank 0 says why
  throw core::InputError("emulate", "",
                         "trainsim was built without MPI: install libopenmpi-dev and openmpi-bin, reconfigure "
                         "(cmake -DTRAINSIM_MPI=ON) and rebuild, then run it under mpirun -np N");
#endif
}

}  // namespace trainsim::cli
