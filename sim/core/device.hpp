#pragma once
// GPUs: datasheet specifications (the catalog behind `trainsim describe gpus`) and the device
// profile that turns FLOPs and bytes into time (efficiencies; defaults here, fitted ones from
// `trainsim calibrate` later).

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::core {

struct GpuSpec {
  std::string name;                                   // catalog name, e.g. "A100-SXM4-80GB"
  std::array<FlopsPerSecond, PRECISION_COUNT> dense_peak{};  // by Precision; 0 = not supported
  Bytes hbm_capacity;
  BytesPerSecond hbm_bandwidth;
  BytesPerSecond nvlink_bandwidth;                    // per GPU, per direction
  BytesPerSecond pcie_bandwidth;                      // per direction
  int sm_count = 0;                                   // streaming multiprocessors (GEMM wave quantization)
  // Sparse tensor cores: 2:4 fine-grained structured sparsity (two non-zero values in every four
  // along a GEMM's reduction dimension) at twice the dense tensor-core rate (the datasheets' "with
  // sparsity" figures). NVIDIA Ampere (A100) and later; not Volta (V100). optimizations.pruning
  // "2:4" with sparse kernels needs it.
  bool sparse_tensor_cores = false;
  // NVLink SHARP (NVLS): the NVSwitch of the GPU's HGX/NVL systems reduces and multicasts (third-
  // generation NVSwitch and later: Hopper, Blackwell; not A100's second generation, nor V100's first).
  // cluster.intra_node.nvls needs it (network/feasibility.hpp).
  bool nvlink_sharp = false;
  std::string source;                                 // where the numbers come from
  // A short name for tables (`compare --vary`, `sweep` columns); "" for a catalog GPU or an object
  // without "label" (the name is shown then).
  std::string label;

  FlopsPerSecond peak(Precision p) const { return dense_peak[static_cast<size_t>(p)]; }
};

// The built-in catalog, in a fixed order. Values: validation/hardware-specs.json (vendor datasheets,
// each entry's `source` names its document), dense (non-sparse) tensor-core rates; sparse_tensor_cores
// where the datasheet gives "with sparsity" rates; nvlink_sharp on the GPUs whose NVSwitch systems
// have NVLink SHARP (H100, H800, H200, B200, GB200; network/feasibility.cpp cites the sources).
const std::vector<GpuSpec>& gpu_catalog();
// REQUIRES nothing; returns nullptr for an unknown name.
const GpuSpec* find_gpu(const std::string& name);
std::vector<std::string> gpu_names();

// Efficiency of a class of compute ops as a function of its size: an op of F FLOPs reaches
//   efficiency(F) = max_efficiency * F / (F + half_flops)
// of the peak (half_flops: the size at which half of max_efficiency is reached; small kernels are
// launch- and tail-bound). Memory traffic reaches memory_efficiency of HBM bandwidth.
struct OpEfficiency {
  double max_efficiency = 1.0;
  double half_flops = 0.0;
  double memory_efficiency = 1.0;

  double at(Flops f) const {
    return half_flops <= 0 ? max_efficiency : max_efficiency * f.value() / (f.value() + half_flops);
  }
};

// An output tile of a CUTLASS/cuBLAS-style GEMM kernel: one thread block computes tile m x n of the
// output, and blocks run in waves over the SMs.
struct GemmTile {
  int m = 128;
  int n = 128;
};

struct DeviceProfile;

struct TileChoice {
  GemmTile tile;
  double tiles = 0;        // thread blocks
  double waves = 0;        // ceil(tiles / SMs)
  double utilization = 1;  // of the GPU: quantization and operand factor (sim/engine/compute_model.hpp)
};

// The best of the profile's tiles for `count` products with an m x n output each (the tile and wave
// quantization model of sim/engine/compute_model.hpp).
// REQUIRES: m, n, count > 0, sms > 0, !profile.gemm_tiles.empty().
TileChoice best_tile(double m, double n, double count, int sms, const DeviceProfile& profile);

// One point of a sparse kernel's efficiency curve: at `sparsity` (fraction of the weights that are
// zero), the kernel computes the kept products at `efficiency` times the rate of the dense GEMM on
// the same shape.
struct SparsityPoint {
  double sparsity = 0;
  double efficiency = 1.0;
};

// How fast sparse GEMM kernels are, relative to the dense GEMM of the same shape
// (sim/engine/compute_model.hpp applies them; docs/scenario.md, optimizations.pruning):
//   structured_2_4_scale   2:4 kernels on sparse tensor cores run at 2 x structured_2_4_scale the
//                          dense GEMM's rate (1.0 would be the datasheets' 2x)
//   unstructured           sparse kernels for unstructured (magnitude) sparsity compute the kept
//                          d = 1 - s of the products at efficiency(s) of the dense rate, i.e. a
//                          speedup of efficiency(s) / d; linear in s between points, flat beyond
//                          the ends. REQUIRES: sorted by sparsity, non-empty.
// Block-sparse kernels take their efficiency from the tile model instead (compute_model.hpp).
struct SparseKernels {
  double structured_2_4_scale = 0.85;
  std::vector<SparsityPoint> unstructured{{0.95, 0.05}};

  // efficiency(s) of the unstructured curve.
  double unstructured_efficiency(double sparsity) const;
};

// What a profile was measured on: `trainsim calibrate` records the traced GPU and the software stack
// the traces name; a built-in profile names the catalog GPU it describes. Empty strings: not known
// (the datasheet defaults describe no GPU in particular). `run` warns when a profile's GPU is not the
// scenario's (sim/plan/scenario.hpp).
struct FittedOn {
  std::string gpu;        // catalog name (or a described GPU's name), e.g. "A100-SXM4-80GB"
  std::string cuda;       // CUDA runtime version, e.g. "12.4"
  std::string nccl;       // NCCL version, e.g. "2.21.5"
  std::string framework;  // e.g. "pytorch" (Kineto traces are written by the PyTorch profiler)

  bool empty() const { return gpu.empty() && cuda.empty() && nccl.empty() && framework.empty(); }
};

// Turns a compute task's FLOPs and bytes into time (sim/engine/compute_model.hpp has the formula).
// Every constant of a built-in profile says where it comes from in `sources` (shown by `trainsim
// describe profile --gpu NAME`).
struct DeviceProfile {
  std::string source = "datasheet defaults";  // "datasheet defaults", a built-in profile, or the profile file
  FittedOn fitted_on;                         // the GPU (and software) its constants were measured on
  std::array<OpEfficiency, OP_CLASS_COUNT> ops{};  // by OpClass
  Seconds kernel_overhead;                    // fixed cost added to every compute task (launch, tails)
  // CPU time to dispatch and launch one kernel (core/stack.hpp: eager PyTorch ~10 us). A compute task
  // launches 1 kernel forward and 2 backward (data and weight gradient, or gradient and
  // accumulation) and takes at least that many times this: the GPU cannot run ahead of the host that
  // feeds it. 0 (the built-in profiles, fitted on Megatron runs): never binds.
  Seconds host_overhead_per_kernel;
  // Host time at the start of every iteration before the GPU gets its first kernel: a synchronous
  // training loop (a loss.item(), a clip-norm or timing synchronize) drains the GPU each step, and
  // the next step's first launches wait for Python (input batch, zero_grad, autocast setup). Every
  // program starts with a host task this long (plan::build_for). 0 (built-in profiles): none; set
  // by `calibrate --scenario` from a traced run (sim/plan/stack_fit.hpp).
  Seconds step_host_latency;
  // FlashAttention's work per score element that is not a tensor-core product (the online softmax:
  // exp, max, rescaling), in head-dimension units: a head of d computes d multiply-adds per score in
  // QK^T (and d in PV) on tensor cores beside this fixed cost, so its efficiency scales as d / (d + c)
  // against the head-128 kernels the FLASH_ATTENTION efficiency was measured on (capped at 1 above
  // 128). 0: no dependence on the head size (compute_model.hpp flash_head_dim_factor).
  double flash_head_dim_overhead = 0;
  // The job's compute runs at the pace of its slowest rank (core/variability.hpp): device time of
  // every compute task x this (>= 1). Set from cluster.gpu_speed_spread and the job's world size when
  // a scenario is read, not part of a profile file. 1: identical GPUs.
  double straggler_slowdown = 1.0;
  // GEMM and FlashAttention tasks of precision p reach max_efficiency x gemm_precision_scale[p]
  // (e.g. FP8 cuBLAS GEMMs reach a smaller fraction of the FP8 peak than BF16 ones of theirs).
  std::array<double, PRECISION_COUNT> gemm_precision_scale{1, 1, 1, 1, 1};
  // Tiles a GEMM may run with; a shaped GEMM (Task::gemm) takes the one with the best utilization.
  // Empty: no tile or wave quantization (profiles fitted on traces without shapes).
  std::vector<GemmTile> gemm_tiles;
  // Tiles with fewer output elements per operand element than this one (m·n/(m+n) below it) are
  // starved by shared-memory/L2 operand traffic: their efficiency scales with that ratio.
  GemmTile gemm_full_tile{128, 128};
  SparseKernels sparse;                       // sparse GEMM kernels (pruned weights)
  // (constant, where its value comes from), in the order `describe profile` prints them.
  std::vector<std::pair<std::string, std::string>> sources;

  const OpEfficiency& op(OpClass c) const { return ops[static_cast<size_t>(c)]; }
  OpEfficiency& op(OpClass c) { return ops[static_cast<size_t>(c)]; }
  // Documented defaults for current NVIDIA data-center GPUs (see device.cpp for each value's basis).
  static DeviceProfile defaults();
  // The built-in profile of a catalog GPU: the GPU's measured kernel ceilings (public
  // microbenchmarks) times the training-stack efficiencies fitted on published runs
  // (docs/validation.md); fitted_on.gpu names the GPU. Unknown names get defaults().
  static DeviceProfile defaults_for(std::string_view gpu_name);
};

// One point of a measured efficiency curve: at a per-rank buffer of size_bytes (nccl-tests'
// convention), a collective reaches `efficiency` of the nominal bandwidth.
struct EfficiencyPoint {
  double size_bytes = 0;
  double efficiency = 1.0;
};

// Efficiencies of the interconnects relative to their nominal bandwidth, and fixed latencies
// added per algorithm step, by scope (inside a node over NVLink, across nodes over NICs).
// NCCL's achieved bandwidth depends on the message size well beyond its latency (protocol and
// channel choices, pipeline depth: an 8 x A100 all_reduce reaches ~57% of NVLink at 64 MiB and ~78%
// at 16 GiB), so a calibrated profile may carry, per collective op, a curve of efficiency by size:
// interpolated linearly in log(size) between its points, flat beyond its ends. Ops without a curve
// use bandwidth_efficiency at every size.
struct LinkEfficiency {
  double bandwidth_efficiency = 1.0;  // achieved / nominal for large messages, ops without a curve
  Seconds step_latency;               // software latency added to every algorithm step
  std::array<std::vector<EfficiencyPoint>, COLLECTIVE_OP_COUNT> by_size{};  // by CollectiveOp, sorted
                                                                            // by size; empty: constant

  // The efficiency of `op` on a per-rank buffer of `size` bytes.
  double efficiency(CollectiveOp op, Bytes size) const;
  bool size_dependent() const;
};

struct NetworkProfile {
  std::string source = "datasheet defaults";
  LinkEfficiency intra_node;
  LinkEfficiency inter_node;

  static NetworkProfile defaults();
};

// A profile file ("schema": "trainsim.profile/1") holds optional "device" and "network" sections
// and an optional "fitted_on" object ({"gpu", "cuda", "nccl", "framework"}, strings, each optional);
// what it leaves out keeps the defaults. A file without "fitted_on" but with the "fit" object of
// older `calibrate` outputs takes fit.gpu; a file with neither keeps the base's fitted_on (the
// built-in profile of the scenario's GPU, which it amends).
struct Profile {
  DeviceProfile device = DeviceProfile::defaults();
  NetworkProfile network = NetworkProfile::defaults();

  // What the file leaves out keeps the defaults, or `base`'s values.
  static Profile from_json(ObjectReader& r);
  static Profile from_json(ObjectReader& r, const Profile& base);
  Json to_json() const;
};

}  // namespace trainsim::core
