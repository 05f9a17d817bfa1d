// `trainsim emulate` under MPI (emulate_command.hpp, docs/emulate.md). The only file of the command
// that sees mpi.h; built without TRAINSIM_HAVE_MPI it only explains how to rebuild.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models/workload_builder.hpp"
#include "sim/cli/emulate_command.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/communication_model.hpp"
#include "sim/engine/emulation_subset.hpp"
#include "sim/engine/gpu_emulation.hpp"
#include "sim/engine/predicted_times.hpp"

#ifdef TRAINSIM_HAVE_MPI
#include "sim/cli/emulate_gpu_host.hpp"
#include "sim/cli/mpi_session.hpp"
#endif

namespace trainsim::cli {

using namespace trainsim::plan;
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

int checked_count(uint64_t count) {
  TRAINSIM_CHECK(count <= static_cast<uint64_t>(INT32_MAX / 4),
                 fmt::format("{} elements do not fit one MPI call: use --scale-bytes", count));
  return static_cast<int>(count);
}

// Posts the MPI call of a COLLECTIVE, SEND or RECV task (sizes: engine::collective_call_size).
void post(const engine::EmulationPlan& plan, const engine::EmulationSubset& subset, const engine::EmulatedTask& e,
          const std::vector<MPI_Comm>& comms, MPI_Comm world, Active& a) {
  using core::CollectiveOp;
  if (e.kind == engine::EmulatedKind::SEND || e.kind == engine::EmulatedKind::RECV) {
    const int n = checked_count(engine::p2p_call_size(e.bytes).count);
    a.send.resize(static_cast<size_t>(n + 3) / 4);
    const int peer = subset.mpi_rank_of(e.stand_in);
    if (e.kind == engine::EmulatedKind::SEND) {
      MPI_Isend(a.send.data(), n, MPI_BYTE, peer, e.mpi_tag, world, &a.request);
    } else {
      MPI_Irecv(a.send.data(), n, MPI_BYTE, peer, e.mpi_tag, world, &a.request);
    }
    return;
  }
  const MPI_Comm comm = comms[static_cast<size_t>(e.group)];
  const auto ranks = static_cast<uint64_t>(plan.groups[static_cast<size_t>(e.group)].ranks.size());
  const engine::CallSize size = engine::collective_call_size(e.op, e.bytes, ranks);
  const int c = checked_count(size.count);
  checked_count(size.send);
  checked_count(size.recv);
  a.send.resize(size.send);
  a.recv.resize(size.recv);
  switch (e.op) {
    case CollectiveOp::ALL_REDUCE:
      MPI_Iallreduce(a.send.data(), a.recv.data(), c, MPI_FLOAT, MPI_SUM, comm, &a.request);
      break;
    case CollectiveOp::REDUCE:
      MPI_Ireduce(a.send.data(), a.recv.data(), c, MPI_FLOAT, MPI_SUM, 0, comm, &a.request);
      break;
    case CollectiveOp::BROADCAST:
      MPI_Ibcast(a.send.data(), c, MPI_FLOAT, 0, comm, &a.request);
      break;
    case CollectiveOp::ALL_GATHER:  // bytes: the receive buffer
      MPI_Iallgather(a.send.data(), c, MPI_FLOAT, a.recv.data(), c, MPI_FLOAT, comm, &a.request);
      break;
    case CollectiveOp::REDUCE_SCATTER:  // bytes: the send buffer
      MPI_Ireduce_scatter_block(a.send.data(), a.recv.data(), c, MPI_FLOAT, MPI_SUM, comm, &a.request);
      break;
    case CollectiveOp::ALL_TO_ALL:  // bytes: the send buffer, 1/n to each member
      MPI_Ialltoall(a.send.data(), c, MPI_FLOAT, a.recv.data(), c, MPI_FLOAT, comm, &a.request);
      break;
  }
}

// One iteration of the plan (workload.hpp's semantics, one thread with non-blocking MPI): each
// stream runs its tasks one at a time in program order once their dependencies are done and their
// not_before has passed; a group's collectives and a channel's messages are issued in their call
// order; modelled calls are timed waits. Returns the rank's seconds.
double run_iteration(const engine::EmulationPlan& plan, const engine::EmulationSubset& subset,
                     const std::vector<MPI_Comm>& comms, MPI_Comm world, std::vector<EmulatedSpan>& spans) {
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
    Clock::time_point next_deadline = Clock::time_point::max();
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
        if ((e.kind == engine::EmulatedKind::SEND || e.kind == engine::EmulatedKind::RECV) && !e.modelled) {
          ready = ready && channel_next[e.channel] == e.seq;
        }
        if (ready && e.not_before > 0) {
          const Clock::time_point at = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(e.not_before));
          if (Clock::now() < at) {
            next_deadline = std::min(next_deadline, at);
            ready = false;
          }
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
        if (e.kind == engine::EmulatedKind::WAIT || e.modelled) {
          a.wait = true;
          a.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(e.seconds));
          if (e.kind == engine::EmulatedKind::COLLECTIVE) ++group_next[static_cast<size_t>(e.group)];
        } else {
          post(plan, subset, e, comms, world, a);
          if (e.kind == engine::EmulatedKind::COLLECTIVE) ++group_next[static_cast<size_t>(e.group)];
          else ++channel_next[e.channel];
        }
        active.push_back(std::move(a));
        break;
      }
    }
    const Clock::time_point now = Clock::now();
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

// What every rank knows after set-up: the scenario, its workload, the ranks emulated, this rank's
// plan and the simulator's prediction of the scaled job.
struct Setup {
  Scenario scenario;
  core::Workload workload;
  std::optional<engine::EmulationSubset> subset;
  engine::EmulationPlan plan;
  engine::PredictedTimes predicted;
  double predicted_s = 0;  // the analytic backend's iteration of the scaled job
};

// Loads and plans; throws InputError for bad input. Every rank predicts the scaled job with the
// analytic backend (deterministic: each gets the same numbers without communicating), recording its
// own timeline and its unmatched partners'.
void set_up(const EmulateArgs& args, const MpiSession& mpi, Setup& s) {
  s.scenario = load_scenario(args.scenario, args.overrides);
  s.workload = models::build_workload(s.scenario.model, s.scenario.training, s.scenario.parallelism,
                                      s.scenario.pruning, s.scenario.offload, s.scenario.compression)
                   .workload;
  if (args.device != "cpu" && args.device != "gpu") {
    throw core::InputError("--device", "", fmt::format("expected cpu or gpu, found \"{}\"", args.device));
  }
  s.subset = engine::EmulationSubset::parse(args.ranks, s.workload.layout, s.scenario.cluster);
  engine::check_emulation_world(*s.subset, mpi.size(), s.scenario.file);
  const int rank = s.subset->ranks()[static_cast<size_t>(mpi.rank())];
  engine::EmulationOptions options;
  options.scale_compute = args.scale_compute;
  options.scale_bytes = args.scale_bytes;
  const core::Profile& profile = s.scenario.profile;
  engine::check_emulation_options(options);
  const core::Workload scaled = engine::scaled_workload(s.workload, s.scenario.cluster, profile.device, options);
  engine::SimulationOptions sim;
  sim.use_symmetry = s.scenario.simulation.symmetry;
  sim.algorithm = s.scenario.simulation.algorithm;
  sim.timeline_ranks = engine::emulation_partners(s.workload, *s.subset, rank);
  sim.timeline_ranks.push_back(rank);
  const engine::SimulationResult result =
      engine::make_analytic_backend()->run(scaled, s.scenario.cluster, profile, sim);
  s.predicted_s = result.iteration_time.value();
  s.predicted = engine::PredictedTimes(scaled, result);
  engine::AnalyticCommunicationModel model(s.scenario.cluster, profile.network, sim.algorithm);
  const engine::Reduction reduction{*s.subset, s.predicted, model};
  s.plan = engine::plan_emulation(s.workload, rank, s.scenario.cluster, profile.device, options, s.scenario.file,
                                  &reduction);
  for (const engine::EmulatedTask& e : s.plan.tasks) {
    if (e.modelled || e.kind == engine::EmulatedKind::WAIT || e.kind == engine::EmulatedKind::NOOP) continue;
    const engine::CallSize size =
        e.kind == engine::EmulatedKind::COLLECTIVE
            ? engine::collective_call_size(e.op, e.bytes, s.plan.groups[static_cast<size_t>(e.group)].ranks.size())
            : engine::p2p_call_size(e.bytes);
    if (std::max({size.count, size.send, size.recv}) > static_cast<uint64_t>(INT32_MAX / 4)) {
      throw core::InputError("--scale-bytes", "",
                             fmt::format("a call of {} bytes does not fit one MPI call (2^29 elements at most): "
                                         "scale sizes down with --scale-bytes",
                                         e.bytes));
    }
  }
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  if (found != 0 && tag_ub != nullptr && s.plan.max_mpi_tag > *tag_ub) {
    throw core::InputError("--ranks", "",
                           fmt::format("the messages to stand-ins need MPI tags up to {}, this MPI allows {}: "
                                       "choose a larger subset",
                                       s.plan.max_mpi_tag, *tag_ub));
  }
}

int emulate_mpi(const EmulateArgs& args, std::ostream& out, std::ostream& err) {
  MpiSession mpi;
  Setup s;
  int code = agree(mpi, err, [&] { set_up(args, mpi, s); });
  if (code != 0) return code;
  const engine::EmulationPlan& plan = s.plan;
  const engine::EmulationSubset& subset = *s.subset;

  std::vector<MPI_Comm> comms(plan.groups.size(), MPI_COMM_NULL);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const engine::EmulatedGroup& group = plan.groups[g];
    MPI_Comm_split(MPI_COMM_WORLD, group.color < 0 ? MPI_UNDEFINED : group.color, group.key, &comms[g]);
  }
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);

  std::vector<EmulatedSpan> spans;
  double iteration_s = 0;
  if (args.device == "gpu") {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int local_rank = 0;
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    GpuEmulation gpu;
    code = agree(mpi, err, [&] { gpu.open(args, plan, subset, s.predicted, local_rank); });
    if (code != 0) return code;
    double mine = 0;
    code = agree(mpi, err, [&] { mine = gpu.run(comms, world, spans); });
    if (code != 0) return code;
    MPI_Reduce(&mine, &iteration_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  } else {
    for (int it = 0; it < args.iterations; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double mine = 0;
      code = agree(mpi, err, [&] { mine = run_iteration(plan, subset, comms, world, spans); });
      if (code != 0) return code;
      MPI_Reduce(&mine, &iteration_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    }
  }
  code = agree(mpi, err, [&] {
    if (!args.trace_dir.empty()) {
      write_emulation_trace(args.trace_dir, s.workload, plan, spans, fmt::format("trainsim emulate {}", args.scenario),
                            args.iterations - 1,
                            args.device == "gpu" ? trace::TIMING_GPU_KERNEL : trace::TIMING_HOST_COMPLETION);
    }
  });
  if (code != 0) return code;
  const double mine = s.predicted.last_end(plan.rank);
  double predicted_present_s = 0;
  MPI_Reduce(&mine, &predicted_present_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  for (MPI_Comm& c : comms) {
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
  MPI_Comm_free(&world);
  if (mpi.rank() == 0) {
    EmulationOutcome o;
    o.mpi_ranks = mpi.size();
    o.rank = plan.rank;
    o.iteration_s = iteration_s;
    o.predicted_s = s.predicted_s;
    o.predicted_present_s = subset.all() ? -1 : predicted_present_s;
    o.wait_s = plan.wait_seconds;
    o.measured_calls = plan.measured_calls;
    o.modelled_calls = plan.modelled_calls;
    o.timings = collective_timings(s.workload, plan, spans);
    out << emulation_report(args, o);
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
