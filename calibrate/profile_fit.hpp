#pragma once
// Fitting a core::Profile (device and network efficiencies) from the traces of a real run:
// `trainsim calibrate`. Every model below is linear in its unknowns once written as a time, so each
// is one weighted linear least-squares fit (linear_fit.hpp, Eigen): exact data gives exact
// parameters, and no iterative solver (Levenberg-Marquardt) with starting points is needed.
//
// Categories, each reported with its sample count, R², RMS relative residual and parameters:
//  - "gemm <precision>": kernels joined to Gemm records (Gemm.correlation_id is the external id;
//    ExternalCorrelation maps it to the CUDA correlation id of the kernels it launched, whose
//    durations add up). FLOPs F = 2·m·n·k·batch_count. The compute model's
//        t = F / (peak · max · F / (F + half)) = F / (peak·max) + half / (peak·max)
//    is fitted as t = c0 + c1·F (equivalently 1/eff = 1/max + (half/max)/F, linear in 1/F):
//    max_efficiency = 1 / (peak·c1), half_flops = c0 / c1. Precision from the A type (FP32 with a
//    TF32 compute type counts as TF32); peak from the GPU catalog. The profile has one GEMM curve:
//    the precision with the most samples sets it, the others are reported only.
//  - "memory": device-side copies whose bytes are known: device-to-device memcpys (2·bytes of HBM
//    traffic: read and write) and memsets (bytes). t = c0 + c1·traffic, memory_efficiency =
//    1 / (HBM·c1); it is set for the memory-bound op classes (elementwise, norm, embedding,
//    optimizer). Kernels themselves carry no byte counts in traces, so "elementwise" and
//    "attention" (kernel categories of trace_summary.hpp) are reported with their sample counts as
//    not fitted: neither bytes nor FLOPs are known for them.
//  - "<scope> <op>" and "<scope>" for scope intra_node (every member of the communicator on one
//    host) and inter_node (one member per host): t = steps·a + factor·S·b, with NCCL's ring steps
//    (2(n-1) for all_reduce, n-1 otherwise) and nccl-tests' bus-bandwidth factor, S the per-rank
//    size. One collective call is one sample: its duration is the shortest over the ranks that
//    traced it (the others include waiting for the last rank to arrive). Per op the fit is reported;
//    the scope's joint fit over all ops sets the profile: bandwidth_efficiency = 1 / (B·b),
//    step_latency = a − nominal hop latency (network/collective_cost.hpp adds the two), with B and
//    the latency those of NominalLinks. Groups with several ranks on each of several hosts run
//    hierarchically and are counted but not fitted, as are calls with a member that has no trace
//    (its host is unknown).
// A category with fewer than min_samples points, a fit whose unknowns are not identifiable, or one
// that gives impossible values keeps the defaults and says why. Efficiencies above 1 are clamped to
// 1 and negative latencies or half sizes to 0, with a note.
//
// Example:
//   TraceSet traces = TraceSet::load({"traces/"});
//   ProfileFit fit = fit_profile(traces, FitOptions{*core::find_gpu("H100-SXM5-80GB"), links});
//   write(profile_fit_json(fit));  std::cout << format_fit_table(fit);

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

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
  std::vector<std::pair<std::string, double>> parameters; // name -> value (SI units)
  std::string note;                                       // what it set, or why nothing
};

struct ProfileFit {
  core::Profile profile;
  std::vector<FitCategory> categories;
  std::vector<std::string> traces;  // the files used
  std::string gpu;                  // catalog name of the traced GPU
};

ProfileFit fit_profile(const TraceSet& traces, const FitOptions& options);

// The profile (Profile::to_json, "schema": "trainsim.profile/1") plus "source": "trainsim calibrate"
// and "fit": {"gpu", "traces", "categories": [{name, samples, fitted, in_profile, r_squared,
// rms_relative_residual, parameters, note}]}. Profile::from_json reads it back.
core::Json profile_fit_json(const ProfileFit& fit);
// One line per category: name, samples, R², RMS relative residual, parameters, note.
std::string format_fit_table(const ProfileFit& fit);

// The catalog GPU a traced device name denotes ("NVIDIA A100-SXM4-80GB" -> A100-SXM4-80GB): an
// exact name, else the longest catalog name the device name contains; nullptr when none.
const core::GpuSpec* catalog_gpu_for(const std::string& device_name);

}  // namespace trainsim::calibrate
