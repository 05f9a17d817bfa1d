#pragma once
// `trainsim emulate --device gpu` on trainsim's side (emulate_gpu.hpp): loads the GPU module, plans
// the rank's GPU work (engine::plan_gpu_emulation), serves the module's MPI needs and turns its
// results into the spans the CPU path produces. Include it only where TRAINSIM_HAVE_MPI is defined.
//
// Example (every rank, inside the agreement of emulate_mpi.cpp, open before run):
//   GpuEmulation gpu;
//   gpu.open(args, plan, subset, predicted, local_rank);   // no communication
//   double mine = gpu.run(comms, world, spans);

#ifndef TRAINSIM_HAVE_MPI
#error "emulate_gpu_host.hpp needs TRAINSIM_HAVE_MPI (an MPI build)"
#endif

#include <mpi.h>

#include <memory>
#include <vector>

#include "sim/cli/emulate_command.hpp"
#include "sim/engine/emulation_plan.hpp"
#include "sim/engine/emulation_subset.hpp"
#include "sim/engine/gpu_emulation.hpp"
#include "sim/engine/predicted_times.hpp"

namespace trainsim::cli {

class GpuEmulation {
 public:
  GpuEmulation();
  ~GpuEmulation();  // releases the module's GPU state, then unloads it
  GpuEmulation(const GpuEmulation&) = delete;
  GpuEmulation& operator=(const GpuEmulation&) = delete;

  // Loads libtrainsim_emulate_gpu.so from the trainsim executable's folder, plans the rank's GPU
  // work in predicted start order, selects GPU local_rank modulo the visible ones and calibrates its
  // spin kernel. Throws InputError ("--device gpu") when trainsim was built without the module, it
  // cannot be loaded, or no GPU can be used.
  void open(const EmulateArgs& args, const engine::EmulationPlan& plan, const engine::EmulationSubset& subset,
            const engine::PredictedTimes& predicted, int local_rank);
  // Creates the NCCL communicators (ids over `comms` and `world`, the MPI communicators of the plan's
  // groups and its point-to-point traffic) and runs the iterations. Returns this rank's measured
  // seconds; `spans` (host CLOCK_REALTIME, per task) are those of the last iteration.
  double run(const std::vector<MPI_Comm>& comms, MPI_Comm world, std::vector<EmulatedSpan>& spans);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainsim::cli
