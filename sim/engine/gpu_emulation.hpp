#pragma once
// The GPU path of `trainsim emulate --device gpu` (docs/emulate.md "On GPUs"), the part that needs
// no GPU: what one rank enqueues on its CUDA streams, and the arithmetic of its calibrated spin
// kernels. Plain C++, unit-tested; sim/cli/emulate_gpu_module.cpp executes it with CUDA and NCCL.
//
// Mapping of an EmulationPlan (emulation_plan.hpp) onto one GPU:
//  - one CUDA stream per IR stream the program uses, so that streams overlap as on the real GPU;
//  - WAIT tasks (compute, copies) are SPIN kernels: a one-thread kernel that spins for a number of
//    GPU clock cycles, from the calibration below;
//  - measured COLLECTIVEs are NCCL calls on a communicator per group (the plan's present members, in
//    key order: ncclCommInitRank with the id that the group's first member gets from
//    ncclGetUniqueId and broadcasts over the group's MPI communicator); ALL_TO_ALL is a
//    ncclGroupStart / ncclSend + ncclRecv to every member / ncclGroupEnd;
//  - measured SEND/RECVs are ncclSend / ncclRecv on a two-rank communicator per channel (sender
//    first), so that each (sender, receiver, tag) keeps its own FIFO order as the IR requires (NCCL
//    matches point-to-point calls per communicator and peer only);
//  - modelled calls are DELAY kernels: spins for `seconds`, like compute;
//  - an op with a not_before is preceded on its stream by a spin until `not_before` after the
//    iteration's start (the GPU's global timer against a start stamp written by the first kernel);
//  - MEMORY tasks are NONE: their stream waits for their dependencies, nothing runs;
//  - a task's dependencies on other streams are cudaStreamWaitEvent on their end events.
// Every operation is enqueued from one host thread, in the order the simulator predicts the tasks
// start (ties: communicator key, then program order). Members of one call are predicted to start it
// at the same time, so every rank enqueues the calls of two communicators in the same relative order,
// and NCCL kernels that wait for each other cannot be queued in opposite orders on two GPUs. The
// order keeps each stream's program order and every dependency before its task; where it would not
// (ties among zero-length tasks) program order is used.

#include <cstdint>
#include <vector>

#include "sim/core/workload.hpp"
#include "sim/engine/emulation_plan.hpp"

namespace trainsim::engine {

// Elements (float32; bytes for send/recv) of one call of `bytes` (core::Task::bytes' meaning) on
// `ranks` members: `count` is what the MPI or NCCL call takes (per member for all_gather's send,
// reduce_scatter's receive and all_to_all's block), send and recv the buffers' sizes.
//   all_reduce, reduce, broadcast  count = ceil(bytes / 4), send = recv = count
//   all_gather                     count = ceil(bytes / 4n), send = count, recv = n count
//   reduce_scatter                 count = ceil(bytes / 4n), send = n count, recv = count
//   all_to_all                     count = ceil(bytes / 4n), send = recv = n count
//   send / recv                    count = bytes (bytes), send = recv = count
struct CallSize {
  uint64_t count = 0;
  uint64_t send = 0;
  uint64_t recv = 0;
};
CallSize collective_call_size(core::CollectiveOp op, uint64_t bytes, uint64_t ranks);
CallSize p2p_call_size(uint64_t bytes);

// A spin kernel's duration as a line in its cycle count: seconds = overhead_s + cycles /
// cycles_per_second (launch overhead plus the spin; the clock's rate is the SM clock the spin
// counts). Fitted by least squares over timed spins (cudaEvent pairs around each).
struct SpinCalibration {
  double cycles_per_second = 0;
  double overhead_s = 0;
};
struct TimedSpin {
  uint64_t cycles = 0;
  double seconds = 0;
};
// Throws InputError (file "--device gpu") when the samples cannot give a rate: fewer than two
// distinct cycle counts, or times that do not grow with cycles (a GPU clock that could not be
// timed). A negative intercept (timer noise) is taken as 0.
SpinCalibration fit_spin(const std::vector<TimedSpin>& samples);
// The cycles that make a spin last `seconds`: (seconds - overhead) x rate, rounded, 0 when the
// launch alone takes that long.
uint64_t spin_cycles(const SpinCalibration& c, double seconds);

enum class GpuOpKind : uint8_t { SPIN, DELAY, COLLECTIVE, SEND, RECV, NONE };

struct GpuComm {
  std::vector<int> ranks;  // global ranks, NCCL rank order
  int index = 0;           // this rank's NCCL rank
  int group = -1;          // group kind (EmulationPlan::groups), or -1 for a channel's
  int tag = 0;             // channel: its MPI tag (the id goes from sender to receiver with it)
};

struct GpuOp {
  GpuOpKind kind = GpuOpKind::SPIN;
  uint32_t task = 0;             // index into EmulationPlan::tasks
  uint32_t stream = 0;           // index into GpuEmulationPlan::streams
  std::vector<uint32_t> waits;   // tasks on other streams whose end this op waits for
  double seconds = 0;            // SPIN, DELAY
  double not_before = 0;         // seconds after the iteration's start (see above)
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  CallSize size;
  int comm = -1;                 // COLLECTIVE, SEND, RECV: index into GpuEmulationPlan::comms
  int peer = -1;                 // SEND, RECV: the peer's NCCL rank (0 or 1)
};

struct GpuEmulationPlan {
  std::vector<core::Stream> streams;  // the IR streams the rank uses, ascending; COMPUTE always
  std::vector<GpuComm> comms;         // groups by index, then channels by (sender, receiver, tag)
  std::vector<GpuOp> ops;             // one per task, in issue order
  std::vector<uint64_t> send_bytes;   // per stream: its largest send buffer (float32 or bytes)
  std::vector<uint64_t> recv_bytes;
  bool predicted_order = true;        // false: program order (the predicted one broke a dependency)
};

// REQUIRES: predicted_start holds a start time per task of plan.tasks (PredictedTimes::start).
GpuEmulationPlan plan_gpu_emulation(const EmulationPlan& plan, const std::vector<double>& predicted_start);

}  // namespace trainsim::engine
