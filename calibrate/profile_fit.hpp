#pragma once
// Fitting a core::Profile (device and network efficiencies) from the traces of a real run:
// `trainsim calibrate`. Every model below is linear in its unknowns once written as a time, so each
// is one weighted linear least-squares fit (linear_fit.hpp, Eigen): exact data gives exact
// parameters, and no iterative solver (Levenberg-Marquardt) with starting points is needed.
//
// Categories, each reported with its sample count, R², RMS relative residual and parameters:
//  - "gemm <precision>": kernels joined to Gemm records (Gemm.correlation_id is the external id;
//    ExternalCorrelation maps it to the CUDA correlation id of the kernels it launched, whose
//    durations add up: the tracer's cuBLAS wrappers and Kineto imports of traces recorded with
//    record_shapes=True both write them). FLOPs F = 2·m·n·k·batch_count. With GEMM tiles in the base
//    profile (every built-in GPU profile has them) the compute model's shape-aware time
//        t = (F/u + half) / (peak · max) + overhead,  u = the shape's tile and wave utilization
//    (core::best_tile) is fitted as t = c0 + c1·(F/u): max_efficiency = 1 / (peak·c1), half_flops =
//    (c0 − kernel_overhead) / c1, and the tiles stay in the profile. Without tiles u = 1, and the
//    fitted efficiency holds the traced shapes' quantization. Precision from the A type (FP32 with a
//    TF32 compute type counts as TF32); peak from the GPU catalog. The profile has one GEMM curve:
//    the precision with the most samples sets it (the other precisions keep their ratio to it in
//    gemm_precision_scale), the others are reported only.
//  - "flash_attention <precision>": Operation records of kind ATTENTION (Kineto imports:
//    calibrate/op_costs.hpp): t = (executed FLOPs + half) / (peak · max · scale) + overhead, the
//    same affine fit. Samples whose bytes at the base profile's attention memory efficiency take
//    >= 90 % of their time are memory-bound and left out (the note counts them, and the samples
//    whose causal mask was assumed).
//  - "elementwise" and "norm": Operation records of those kinds, t = c0 + bytes / (HBM · eff):
//    memory_efficiency of elementwise, embedding and optimizer (pointwise streaming kernels), and of
//    norm.
//  - "memory": device-side copies whose bytes are known: device-to-device memcpys (2·bytes of HBM
//    traffic: read and write) and memsets (bytes). t = c0 + c1·traffic, memory_efficiency =
//    1 / (HBM·c1); it sets the memory-bound classes (elementwise, norm, embedding, optimizer) that no
//    costed-op fit above set. Categories without samples say why (the kernels are there, but no op
//    gives their FLOPs or bytes: the tracer's own records have no attention or pointwise costs).
//  - "<scope> <op>" and "<scope>" for scope intra_node (every member of the communicator on one
//    host) and inter_node (one member per host): t = steps·a + factor·S·b, with NCCL's ring steps
//    (2(n-1) for all_reduce, n-1 otherwise) and nccl-tests' bus-bandwidth factor, S the per-rank
//    size. The samples (collective_sample.hpp) are the traces' collective calls, one per call: its
//    duration is the shortest over the ranks that traced it (the others include waiting for the
//    last rank to arrive); and the rows of nccl-tests outputs (nccl_tests_import.hpp). Per op the
//    fit is reported; the scope's joint fit over all ops sets the profile: bandwidth_efficiency =
//    1 / (B·b), step_latency = a − nominal hop latency (network/collective_cost.hpp adds the two),
//    with B and the latency those of NominalLinks. Groups with several ranks on each of several
//    hosts run hierarchically and are counted but not fitted, as are calls with a member that has
//    no trace (its host is unknown).
//  - "<scope> <op> curve": NCCL's efficiency depends on the size well beyond its latency (protocols,
//    channels, pipelining), so for each op of a fitted scope with samples at >= 2 distinct sizes the
//    profile gets a curve of efficiency by size (core::LinkEfficiency::by_size): at each size S
//    (per group size n; sizes measured with several n take the median), with t the median time of
//    its samples and a = hop latency + step_latency the per-step latency of the cost model,
//        e(S) = factor·S / (B · (t − steps·a)),
//    the efficiency at which the cost model reproduces t exactly. Sizes where t − steps·a <= 0, or
//    is under 2 % of t (latency-bound: e is then set by timer noise, and the time there hardly
//    depends on it), are left out; e > 1 is clamped to 1; the note counts both. The step latency
//    is shared by every op of the scope while the curves are not, so the constant-efficiency joint
//    fit tends to overestimate it when efficiency grows with size, which would leave the smallest
//    sizes with t < steps·a: when curves are made, a is lowered to the smallest t/steps over the
//    scope's sizes, never below the nominal hop latency (the note says so). The constant
//    bandwidth_efficiency of the joint fit stays for ops without a curve (a fitted scope drops the
//    curves of FitOptions::base: they go with another latency). A curve whose points are all within
//    2 % of that constant is still written, and the note says the size does not matter.
//    Its R² and RMS relative residual are those of the profile (constant latency, interpolated
//    curve) against the op's samples.
// Without traces (nccl-tests outputs only) only the network is fitted: the device section keeps
// FitOptions::base.
//
// Example:
//   TraceSet traces = TraceSet::load({"traces/"});
//   ProfileFit fit = fit_profile(traces, FitOptions{*core::find_gpu("H100-SXM5-80GB"), links});
//   write(profile_fit_json(fit));  std::cout << format_fit_table(fit);
//   // or with nccl-tests rows as well:
//   FitInputs in{&traces, collective_samples(load_nccl_tests("ar.txt").front()), {"ar.txt"}};
//   ProfileFit both = fit_profile(in, options);

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/collective_sample.hpp"
#include "calibrate/trace_set.hpp"
#include "sim/core/device.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"

namespace trainsim::calibrate {

// Nominal (datasheet) figures of the cluster the traces ran on, per GPU and direction; the fitted
// efficiencies are relative to them. The CLI takes them from a scenario's cluster section.
struct NominalLinks {
  core::BytesPerSecond intra_bandwidth;
  core::Seconds intra_latency = core::Seconds(1e-6);
  core::BytesPerSecond inter_bandwidth;
  core::Seconds inter_latency = core::Seconds(2e-6);
};

struct FitOptions {
  core::GpuSpec gpu;          // the traced GPU: dense peaks and HBM bandwidth
  NominalLinks links;         // REQUIRES: bandwidths > 0
  size_t min_samples = 4;     // fewer points: the category keeps the defaults
  core::Profile base;         // what the fit does not set (default: the datasheet defaults)
};

struct FitCategory {
  std::string name;                                       // "gemm bf16", "memory", "intra_node all_reduce", ...
  size_t samples = 0;
  bool fitted = false;                                    // a fit was made (quality figures valid)
  bool in_profile = false;                                // its parameters went into the profile
  double r_squared = 0;
  double rms_relative_residual = 0;
  double max_relative_residual = 0;                       // the residual spread's worst sample
  std::vector<std::pair<std::string, double>> parameters; // name -> value (SI units)
  std::vector<core::EfficiencyPoint> curve;               // "<scope> <op> curve": its points
  std::string note;                                       // what it set, or why nothing
};

struct ProfileFit {
  core::Profile profile;
  std::vector<FitCategory> categories;
  std::vector<std::string> traces;      // the trace files used
  std::vector<std::string> nccl_tests;  // the nccl-tests outputs used
  std::string gpu;                      // catalog name of the measured GPU
};

// What a fit reads: the traces of a run, collective measurements from elsewhere, or both.
struct FitInputs {
  const TraceSet* traces = nullptr;            // not owned; nullptr: no traces (the network only)
  std::vector<CollectiveSample> collectives;   // fitted with the traces' calls (nccl-tests rows)
  std::vector<std::string> nccl_tests;         // the files they come from, for the report
};

ProfileFit fit_profile(const FitInputs& inputs, const FitOptions& options);
ProfileFit fit_profile(const TraceSet& traces, const FitOptions& options);  // FitInputs{&traces}

// The profile (Profile::to_json, "schema": "trainsim.profile/1") plus "source": "trainsim calibrate"
// and "fit": {"gpu", "traces", "nccl_tests", "categories": [{name, samples, fitted, in_profile,
// r_squared, rms_relative_residual, max_relative_residual, parameters, curve: [{size_bytes, efficiency}] (curves only),
// note}]}. Profile::from_json reads it back.
core::Json profile_fit_json(const ProfileFit& fit);
// One line per category: name, samples, R², RMS relative residual, parameters, a curve's points
// ("64 KiB: 0.213, ..."), note.
std::string format_fit_table(const ProfileFit& fit);

// The catalog GPU a traced device name denotes ("NVIDIA A100-SXM4-80GB" -> A100-SXM4-80GB): an
// exact name, else the longest catalog name the device name contains; nullptr when none.
const core::GpuSpec* catalog_gpu_for(const std::string& device_name);

}  // namespace trainsim::calibrate
