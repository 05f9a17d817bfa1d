#pragma once
// How the user's own training stack runs the job's work, fitted from a traced run: the step of
// `trainsim calibrate TRACES -o P --scenario JOB` that closes the gap between a kernel fit and the
// measured iteration (issue 27, item 5).
//
// A kernel fit (calibrate/profile_fit.hpp) prices each kernel the trace shows, but the workload
// holds the stack's work as trainsim models it: an eager PyTorch program moves more bytes through
// its elementwise kernels (fp32 casts, unfused norms and activations, the loss in fp32) than the
// workload's op chains, and its host leaves the GPU idle at each step's start. So, with JOB loaded
// with the kernel-fitted profile:
//   1. per class group g (gemm; attention = ATTENTION + FLASH_ATTENTION; elementwise; norm;
//      embedding; optimizer), W_g = the device time the workload's compute tasks of one iteration
//      take on the critical program (rank 0's; host-side tasks left out), and T_g = the traced GPU
//      time of that class per iteration (calibrate/traced_work.hpp: kernels by name).
//   2. each group with W_g > 0 and T_g > 0 gets its efficiencies (max_efficiency and
//      memory_efficiency of its classes) divided by T_g / W_g, repeated until W_g = T_g to 1e-6
//      (a task's time is not exactly proportional to 1/efficiency: kernel overhead, saturation);
//      efficiencies stay <= 1 (a group then stays faster than traced, and its note says so). A
//      group the trace has no kernel of keeps the kernel fit (noted); traced time of a class the
//      workload has no task of is left to step 3 (noted).
//   3. the profile's step_host_latency = the median measured iteration minus the analytic
//      prediction after step 2, when positive: the host time of a synchronous step
//      (core::DeviceProfile::step_host_latency). Every program starts after it, so it adds exactly.
// The factors T_g / W_g are what the user's stack costs per class against trainsim's model of the
// job; they carry to other jobs of the same stack in proportion to each class's work (more layers,
// larger micro-batches), which docs/workflow.md checks on two neighbours of the traced job.
//
// Example:
//   StackFit f = fit_stack(job, calibrate::traced_work(traces, true), 0.01907, "traced run");
//   profile.device = f.device;  profile_json["stack_fit"] = f.to_json();

#include <array>
#include <string>
#include <vector>

#include "calibrate/traced_work.hpp"
#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

struct Scenario;

struct ClassGroupFit {
  std::string name;         // "gemm", "attention", "elementwise", "norm", "embedding", "optimizer"
  double traced_s = 0;      // T_g: per iteration
  double workload_s = 0;    // W_g with the kernel-fitted profile, before the fit
  double factor = 1;        // T_g / W_g as applied (1 when not fitted)
  bool fitted = false;
  std::string note;         // why not fitted, or a clamp
};

struct StackFit {
  std::vector<ClassGroupFit> groups;
  double idle_s = 0;                   // traced GPU idle per iteration
  double measured_s = 0;               // the median measured iteration
  double predicted_kernel_fit_s = 0;   // the job with the kernel fit alone
  double predicted_classes_s = 0;      // after step 2
  double step_host_latency_s = 0;      // step 3
  double predicted_s = 0;              // after step 3 (analytic)
  core::DeviceProfile device;          // the job's device profile with the fit applied

  // {"groups": [{name, traced_s, workload_s, factor, fitted, note}], "idle_s", "measured_iteration_s",
  //  "predicted_kernel_fit_s", "predicted_classes_s", "step_host_latency_s", "predicted_iteration_s"}
  core::Json to_json() const;
  // A few lines for calibrate's table.
  std::string text() const;
};

// Device seconds per iteration of the workload's compute tasks on rank 0's program, by core::OpClass,
// with the scenario's profile (host-stream tasks left out).
std::array<double, core::OP_CLASS_COUNT> workload_seconds(const Scenario& job);

// Steps 1-3 above, on `job` as load_scenario gives it with the kernel-fitted profile: StackFit::device
// is that profile's device section fitted, its sources saying which figures came from the traced run
// `run_name`. REQUIRES: measured_s > 0.
StackFit fit_stack(const Scenario& job, const calibrate::TracedWork& traced, double measured_s,
                   const std::string& run_name);

}  // namespace trainsim::plan
