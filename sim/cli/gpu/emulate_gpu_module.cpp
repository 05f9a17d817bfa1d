// libtrainsim_emulate_gpu.so: executes an engine::GpuEmulationPlan on one GPU with CUDA and NCCL
// (sim/cli/emulate_gpu.hpp, sim/engine/gpu_emulation.hpp say what and why). Compiled, never run in
// the project's CI: no GPU there (docs/emulate.md "On GPUs").

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/cli/emulate_gpu.hpp"
#include "sim/cli/gpu/spin_kernels.hpp"

namespace trainsim::cli {
namespace {

using engine::GpuOp;
using engine::GpuOpKind;

// A failing CUDA or NCCL call: the run reports it (exit 2) instead of going on.
struct Failure {
  std::string message;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Failure{std::string(what) + ": " + cudaGetErrorString(e)};
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Failure{std::string(what) + ": " + ncclGetErrorString(r)};
}

// Cycle counts of the calibration spins: 0.05 to 1 ms at 1.5-2 GHz, each timed three times.
constexpr uint64_t CALIBRATION_CYCLES[] = {100000, 200000, 400000, 800000, 1600000};
constexpr int CALIBRATION_REPEATS = 3;

ncclDataType_t data_type(GpuOpKind kind) { return kind == GpuOpKind::COLLECTIVE ? ncclFloat32 : ncclInt8; }
size_t element_bytes(GpuOpKind kind) { return kind == GpuOpKind::COLLECTIVE ? 4 : 1; }

// Everything one run creates on the GPU, released in reverse order by the destructor.
struct State {
  int device = 0;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> start;  // per task
  std::vector<cudaEvent_t> end;
  cudaEvent_t t0_event = nullptr;
  cudaEvent_t calibration[2] = {nullptr, nullptr};
  unsigned long long* t0 = nullptr;  // device: the iteration's start stamp
  std::vector<void*> send;           // per stream
  std::vector<void*> recv;
  std::vector<ncclComm_t> comms;
  std::vector<uint64_t> cycles;      // per op
  bool failed = false;

  ~State() {
    for (ncclComm_t c : comms) {
      if (c == nullptr) continue;
      if (failed) {
        ncclCommAbort(c);
      } else {
        ncclCommDestroy(c);
      }
    }
    for (void* p : send) cudaFree(p);
    for (void* p : recv) cudaFree(p);
    if (t0 != nullptr) cudaFree(t0);
    for (cudaEvent_t e : start) cudaEventDestroy(e);
    for (cudaEvent_t e : end) cudaEventDestroy(e);
    if (t0_event != nullptr) cudaEventDestroy(t0_event);
    for (cudaEvent_t e : calibration) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
  }
};

uint64_t nanoseconds(double seconds) { return seconds > 0 ? static_cast<uint64_t>(seconds * 1e9 + 0.5) : 0; }

void open(GpuRun& run, State& st) {
  const engine::GpuEmulationPlan& plan = *run.plan;
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    throw Failure{"no usable CUDA GPU (cudaGetDeviceCount: " +
                  std::string(e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
                  "): --device gpu runs one process per GPU; use --device cpu on this machine"};
  }
  st.device = run.local_rank % devices;
  check(cudaSetDevice(st.device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, st.device), "cudaGetDeviceProperties");
  run.device = prop.name;

  for (size_t i = 0; i < plan.streams.size(); ++i) {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    st.streams.push_back(s);
    void* send = nullptr;
    void* recv = nullptr;
    check(cudaMalloc(&send, std::max<uint64_t>(plan.send_bytes[i], 1)), "cudaMalloc (use --scale-bytes)");
    st.send.push_back(send);
    check(cudaMalloc(&recv, std::max<uint64_t>(plan.recv_bytes[i], 1)), "cudaMalloc (use --scale-bytes)");
    st.recv.push_back(recv);
  }
  check(cudaMalloc(reinterpret_cast<void**>(&st.t0), sizeof(unsigned long long)), "cudaMalloc");
  check(cudaMemset(st.t0, 0, sizeof(unsigned long long)), "cudaMemset");
  check(cudaEventCreate(&st.t0_event), "cudaEventCreate");
  check(cudaEventCreate(&st.calibration[0]), "cudaEventCreate");
  check(cudaEventCreate(&st.calibration[1]), "cudaEventCreate");
  st.start.assign(run.tasks, nullptr);
  st.end.assign(run.tasks, nullptr);
  for (size_t i = 0; i < run.tasks; ++i) {
    check(cudaEventCreate(&st.start[i]), "cudaEventCreate");
    check(cudaEventCreate(&st.end[i]), "cudaEventCreate");
  }

  // Calibration: time spins of known cycle counts on the first stream, after one to warm up.
  const cudaStream_t s = st.streams.front();
  cudaEvent_t a = st.calibration[0];
  cudaEvent_t b = st.calibration[1];
  check(gpu::launch_spin(s, st.t0, 0, CALIBRATION_CYCLES[0]), "spin kernel launch");
  std::vector<engine::TimedSpin> samples;
  for (int r = 0; r < CALIBRATION_REPEATS; ++r) {
    for (uint64_t cycles : CALIBRATION_CYCLES) {
      check(cudaEventRecord(a, s), "cudaEventRecord");
      check(gpu::launch_spin(s, st.t0, 0, cycles), "spin kernel launch");
      check(cudaEventRecord(b, s), "cudaEventRecord");
      check(cudaEventSynchronize(b), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
      samples.push_back({cycles, static_cast<double>(ms) * 1e-3});
    }
  }
  st.cycles = run.host->calibrate(samples);
}

void create_communicators(GpuRun& run, State& st) {
  const engine::GpuEmulationPlan& plan = *run.plan;
  std::vector<ncclUniqueId> ids(plan.comms.size());
  for (size_t c = 0; c < plan.comms.size(); ++c) {
    if (plan.comms[c].index == 0) check(ncclGetUniqueId(&ids[c]), "ncclGetUniqueId");
    run.host->share_id(c, &ids[c], sizeof(ncclUniqueId));
  }
  // One group for all: NCCL then initializes them together, whatever order the ranks list them in.
  st.comms.assign(plan.comms.size(), nullptr);
  check(ncclGroupStart(), "ncclGroupStart");
  for (size_t c = 0; c < plan.comms.size(); ++c) {
    check(ncclCommInitRank(&st.comms[c], static_cast<int>(plan.comms[c].ranks.size()), ids[c], plan.comms[c].index),
          "ncclCommInitRank");
  }
  check(ncclGroupEnd(), "ncclGroupEnd (initializing the communicators)");
}

void enqueue_call(const GpuOp& op, const engine::GpuEmulationPlan& plan, State& st, cudaStream_t s) {
  void* send = st.send[op.stream];
  void* recv = st.recv[op.stream];
  const ncclComm_t comm = st.comms[static_cast<size_t>(op.comm)];
  const size_t count = op.size.count;
  if (op.kind == GpuOpKind::SEND) {
    check(ncclSend(send, count, ncclInt8, op.peer, comm, s), "ncclSend");
    return;
  }
  if (op.kind == GpuOpKind::RECV) {
    check(ncclRecv(recv, count, ncclInt8, op.peer, comm, s), "ncclRecv");
    return;
  }
  switch (op.op) {
    case core::CollectiveOp::ALL_REDUCE:
      check(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
      break;
    case core::CollectiveOp::REDUCE:
      check(ncclReduce(send, recv, count, ncclFloat32, ncclSum, 0, comm, s), "ncclReduce");
      break;
    case core::CollectiveOp::BROADCAST:
      check(ncclBroadcast(send, recv, count, ncclFloat32, 0, comm, s), "ncclBroadcast");
      break;
    case core::CollectiveOp::ALL_GATHER:
      check(ncclAllGather(send, recv, count, ncclFloat32, comm, s), "ncclAllGather");
      break;
    case core::CollectiveOp::REDUCE_SCATTER:
      check(ncclReduceScatter(send, recv, count, ncclFloat32, ncclSum, comm, s), "ncclReduceScatter");
      break;
    case core::CollectiveOp::ALL_TO_ALL: {
      const auto members = static_cast<int>(plan.comms[static_cast<size_t>(op.comm)].ranks.size());
      const size_t block = count * element_bytes(op.kind);
      check(ncclGroupStart(), "ncclGroupStart");
      for (int p = 0; p < members; ++p) {
        check(ncclSend(static_cast<char*>(send) + p * block, count, data_type(op.kind), p, comm, s), "ncclSend");
        check(ncclRecv(static_cast<char*>(recv) + p * block, count, data_type(op.kind), p, comm, s), "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd (all_to_all)");
      break;
    }
  }
}

// One iteration: every op enqueued from this thread in plan order, then one synchronization.
void iterate(GpuRun& run, State& st) {
  const engine::GpuEmulationPlan& plan = *run.plan;
  run.host->barrier();
  const cudaStream_t first = st.streams.front();
  check(gpu::launch_stamp(first, st.t0), "stamp kernel launch");
  check(cudaEventRecord(st.t0_event, first), "cudaEventRecord");
  for (cudaStream_t s : st.streams) check(cudaStreamWaitEvent(s, st.t0_event, 0), "cudaStreamWaitEvent");
  for (size_t k = 0; k < plan.ops.size(); ++k) {
    const GpuOp& op = plan.ops[k];
    const cudaStream_t s = st.streams[op.stream];
    for (uint32_t w : op.waits) check(cudaStreamWaitEvent(s, st.end[w], 0), "cudaStreamWaitEvent");
    // Not before the predicted arrival of unmatched partners: the op starts after it (as on the CPU).
    if (op.not_before > 0) check(gpu::launch_spin(s, st.t0, nanoseconds(op.not_before), 0), "spin kernel launch");
    check(cudaEventRecord(st.start[op.task], s), "cudaEventRecord");
    switch (op.kind) {
      case GpuOpKind::NONE:
        break;
      case GpuOpKind::SPIN:
      case GpuOpKind::DELAY:
        check(gpu::launch_spin(s, st.t0, 0, st.cycles[k]), "spin kernel launch");
        break;
      case GpuOpKind::COLLECTIVE:
      case GpuOpKind::SEND:
      case GpuOpKind::RECV:
        enqueue_call(op, plan, st, s);
        break;
    }
    check(cudaEventRecord(st.end[op.task], s), "cudaEventRecord");
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (the iteration)");
  run.start_ns.assign(run.tasks, 0);
  run.end_ns.assign(run.tasks, 0);
  double last = 0;
  for (const GpuOp& op : plan.ops) {
    float a = 0, b = 0;
    check(cudaEventElapsedTime(&a, st.t0_event, st.start[op.task]), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&b, st.t0_event, st.end[op.task]), "cudaEventElapsedTime");
    run.start_ns[op.task] = nanoseconds(a * 1e-3);
    run.end_ns[op.task] = nanoseconds(b * 1e-3);
    last = std::max(last, static_cast<double>(b) * 1e-3);
  }
  run.iteration_s = last;
}

// Runs `step`, turning a Failure into the run's error (exceptions from the host pass through).
template <typename Step>
void guarded(GpuRun* run, const char* phase, Step step) {
  State* st = static_cast<State*>(run->state);
  try {
    step(*run, *st);
  } catch (const Failure& f) {
    st->failed = true;
    run->code = 2;
    run->error = "rank " + std::to_string(run->rank) + ", " + phase + ": " + f.message;
  }
}

}  // namespace
}  // namespace trainsim::cli

extern "C" {

__attribute__((visibility("default"))) int trainsim_emulate_gpu_abi() { return trainsim::cli::GPU_MODULE_ABI; }

__attribute__((visibility("default"))) void trainsim_emulate_gpu_open(trainsim::cli::GpuRun* run) {
  run->state = new trainsim::cli::State();
  trainsim::cli::guarded(run, "opening the GPU", trainsim::cli::open);
}

__attribute__((visibility("default"))) void trainsim_emulate_gpu_run(trainsim::cli::GpuRun* run) {
  trainsim::cli::guarded(run, "running", [](trainsim::cli::GpuRun& r, trainsim::cli::State& st) {
    trainsim::cli::create_communicators(r, st);
    for (int i = 0; i < r.iterations; ++i) trainsim::cli::iterate(r, st);
  });
}

__attribute__((visibility("default"))) void trainsim_emulate_gpu_close(trainsim::cli::GpuRun* run) {
  delete static_cast<trainsim::cli::State*>(run->state);
  run->state = nullptr;
}
}
