#pragma once
// A Workload IR built directly from the traces of a run, at the traced scale: `trainsim replay`
// simulates it and compares the predicted iteration with the measured one. Compute keeps its
// measured durations (Task::seconds); communication is re-costed by the backend, so a replay
// under another network (or scaled out) is a what-if on the real kernel sequence.
//
// What is built, per traced rank (one program each; no templates):
//  - The iteration: the middle one (index (n-1)/2) of the iteration numbers whose markers
//    (ProfilerStep#N) every rank has; a rank's window is the union of its markers of that number.
//    Without markers the whole trace is one iteration. Events belong to the window they start in.
//    Measured iteration time: the longest window over the ranks.
//  - Kernels other than NCCL's -> COMPUTE tasks on the COMPUTE stream, op class from the kernel's
//    category (trace_summary.hpp: gemm, attention, else elementwise), `seconds` = the kernel's
//    duration plus the idle time before it on the compute stream that no dependency explains
//    (launch and host overhead, which the measured iteration includes). Kernels of several CUDA
//    streams are serialized on the one compute stream. Device-to-device memcpys and memsets are
//    compute tasks too; host<->device memcpys are COPY tasks (bytes, direction), costed by the
//    backend.
//  - Collectives (TraceSet's, i.e. NCCL kernels or NCCL records, not the NCCL kernels again) ->
//    COLLECTIVE tasks in their order on the communication stream of their group's axis.
//    Point-to-point transfers are not replayed (their peers are communicator ranks the traces do not
//    map to global ranks); they are counted in skipped_p2p.
//  - Dependencies: the stream order, plus cross-stream order from timestamps: a task depends on the
//    last task of every other stream that ended before it started (a compute kernel that started
//    after a collective ended waits for it; a collective waits for the kernel before it).
//  - Layout: the communicators' rank sets must be arithmetic progressions. Sorted by stride, they
//    give the parallel axes, fastest first; the slowest axis with collectives is DATA, faster ones
//    are TENSOR, CONTEXT, EXPERT in order, and ranks no communicator spans form a slower PIPELINE
//    axis. A communicator spanning several axes (e.g. the world) is one group kind over them.
//  - scale_data N: the DATA axis is N times longer; rank r of replica j runs the program of the
//    traced rank with the same coordinates (data coordinate mod the traced size), and every group
//    over the DATA axis grows with it.
// Throws core::InputError (naming a trace file) when a rank's trace is missing, a communicator's
// ranks do not form a parallel group, or ranks disagree on the iteration markers.
//
// Example:
//   ReplayWorkload r = build_replay_workload(TraceSet::load({"traces/"}), ReplayOptions{});
//   backend->run(r.workload, cluster_with(r.nodes, r.gpus_per_node), profile, options);

#include <cstdint>
#include <string>

#include "calibrate/trace_set.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

struct ReplayOptions {
  int scale_data = 1;  // >= 1: data-parallel replicas of the traced run
};

struct ReplayWorkload {
  core::Workload workload;
  int traced_ranks = 0;
  int gpus_per_node = 1;       // traced ranks per host (the largest count on one host)
  int nodes = 1;               // of the replayed (scaled) world: world size / gpus_per_node
  int64_t iteration = -1;      // the iteration number replayed; -1: the whole trace
  core::Seconds measured;      // the traced iteration's wall span (longest over the ranks)
  core::Seconds host_gaps;     // idle compute time folded into compute tasks (the rank with most)
  uint64_t compute_tasks = 0;  // over the traced ranks
  uint64_t collective_tasks = 0;
  uint64_t copy_tasks = 0;
  uint64_t skipped_p2p = 0;
  uint64_t unresolved_collectives = 0;  // TraceSet's, within the iteration or not
};

// REQUIRES: options.scale_data >= 1.
ReplayWorkload build_replay_workload(const TraceSet& traces, const ReplayOptions& options);

}  // namespace trainsim::calibrate
