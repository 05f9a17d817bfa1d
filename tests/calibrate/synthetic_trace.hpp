#pragma once
// A synthetic traced run made from known device and network parameters, for the calibration tests:
// 2 hosts x 8 A100 GPUs, three iterations (ProfilerStep#0..2) per rank. Per iteration every rank
// runs a sweep of bf16 GEMMs (Kernel + Gemm + ExternalCorrelation records) timed by
// t = F / (peak * max * F / (F + half)) + kernel overhead (the compute model's, without tiles: the
// datasheet-default profile the fits start from has none), device-to-device memcpys and memsets timed by their HBM
// traffic at memory_efficiency, then collectives timed by the ring model of
// network/collective_cost.hpp: all_reduce, all_gather and reduce_scatter of several sizes on its
// node's 8 ranks (intra-node), all_reduce of several sizes with the rank of the same local index on
// the other node (inter-node), one compute kernel overlapping the collectives, and a last kernel
// that waits for them. Kernels are launched `gap` apart (host overhead).

#include <string>
#include <vector>

#include "sim/core/trace_io.hpp"

namespace trainsim::calibrate::testing {

struct SyntheticParameters {
  double gemm_max_efficiency = 0.72;
  double gemm_half_flops = 3e9;
  double kernel_overhead_s = 2e-6;      // core::DeviceProfile::defaults().kernel_overhead
  double memory_efficiency = 0.8;
  double intra_bandwidth_efficiency = 0.7;
  double intra_step_latency_s = 4e-6;   // on top of the cluster's 1 us hop
  double inter_bandwidth_efficiency = 0.85;
  double inter_step_latency_s = 6e-6;   // on top of the cluster's 2 us hop
  double gap_s = 2e-6;                  // between consecutive kernel launches
  double gemm_noise = 0;                // +/- this relative error on alternate GEMMs
  int gemm_shapes = 12;                 // how many GEMM shapes of the sweep are run
};

// The A100-SXM4-80GB figures the traces are made with.
inline constexpr double PEAK_BF16 = 312e12;
inline constexpr double HBM = 2.039e12;
inline constexpr double NVLINK = 300e9;        // the cluster's intra-node bandwidth
inline constexpr double NIC_PER_GPU = 25e9;    // 8 x 200 Gb/s NICs over 8 GPUs
inline constexpr double INTRA_HOP_S = 1e-6;
inline constexpr double INTER_HOP_S = 2e-6;

struct SyntheticRun {
  std::vector<core::TraceFile> ranks;  // 16, rank order
  double iteration_s = 0;              // wall span of every iteration (all ranks alike)
};

SyntheticRun make_synthetic_run(const SyntheticParameters& p);
// Writes each rank with core::TraceWriter to dir/rankNN.trace; returns the paths.
std::vector<std::string> write_synthetic_run(const SyntheticRun& run, const std::string& dir);

}  // namespace trainsim::calibrate::testing
