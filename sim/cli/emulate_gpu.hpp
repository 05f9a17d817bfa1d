#pragma once
// The boundary between `trainsim emulate --device gpu` and its GPU module,
// libtrainsim_emulate_gpu.so (sim/cli/emulate_gpu_module.cpp, spin_kernels.cu): built only where
// CUDA and NCCL are found, and loaded with dlopen from the folder of the trainsim executable, so that
// trainsim itself never needs the CUDA or NCCL libraries to start. The module executes an
// engine::GpuEmulationPlan (sim/engine/gpu_emulation.hpp); MPI stays on trainsim's side: the module
// asks the host for what needs it (sharing NCCL ids, barriers) through GpuHost.
//
// Both sides are built from this header by the same compiler in the same build; the module's
// trainsim_emulate_gpu_abi() must return GPU_MODULE_ABI.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/gpu_emulation.hpp"

namespace trainsim::cli {

inline constexpr int GPU_MODULE_ABI = 1;
inline constexpr const char* GPU_MODULE_FILE = "libtrainsim_emulate_gpu.so";

// What the module needs from the MPI side. Exceptions it throws pass through the module to the
// caller of trainsim_emulate_gpu_run.
class GpuHost {
 public:
  virtual ~GpuHost() = default;
  // Fits the spin calibration to `samples` (engine::fit_spin) and returns the cycles of every op's
  // spin (GpuEmulationPlan::ops order; 0 for ops without one): the module does no arithmetic of its own.
  virtual std::vector<uint64_t> calibrate(const std::vector<engine::TimedSpin>& samples) = 0;
  // Communicator `comm` (GpuEmulationPlan::comms): its NCCL rank 0 passes the ncclUniqueId it made,
  // every other member receives it into `id`. Called for every communicator in plan order.
  virtual void share_id(size_t comm, void* id, size_t bytes) = 0;
  // MPI_Barrier over every emulating process (before each iteration); the host notes the time.
  virtual void barrier() = 0;
};

// One run, in three calls: open (select the GPU, create streams, events and buffers, calibrate; no
// communication, so that a rank without a usable GPU fails before any rank waits for it), run
// (NCCL communicators, then the iterations), close (frees everything; also after a failure).
struct GpuRun {
  // In.
  const engine::GpuEmulationPlan* plan = nullptr;
  size_t tasks = 0;       // EmulationPlan::tasks.size()
  int iterations = 1;     // the last one is measured
  int local_rank = 0;     // selects the GPU: local_rank modulo the visible devices
  int rank = 0;           // global rank, for messages
  GpuHost* host = nullptr;
  // Out.
  int code = 0;             // 0, or 2: no usable GPU, or a CUDA / NCCL call failed (error says which)
  std::string error;
  std::string device;       // the GPU's name
  double iteration_s = 0;   // this rank's measured iteration: its start event to its last end event
  std::vector<uint64_t> start_ns;  // per task: nanoseconds after the iteration's start event
  std::vector<uint64_t> end_ns;
  void* state = nullptr;    // the module's
};

}  // namespace trainsim::cli

extern "C" {
// The module's entry points (resolved with dlsym).
int trainsim_emulate_gpu_abi();
void trainsim_emulate_gpu_open(trainsim::cli::GpuRun* run);
void trainsim_emulate_gpu_run(trainsim::cli::GpuRun* run);
void trainsim_emulate_gpu_close(trainsim::cli::GpuRun* run);
}
