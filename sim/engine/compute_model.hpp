#pragma once
// Time of a compute task on a GPU: the slower of its math and its HBM traffic, plus a fixed kernel
// overhead:
//   t = max(math, bytes / (HBM · mem_eff)) · straggler_slowdown + overhead
// (straggler_slowdown: the slowest rank's pace, core/variability.hpp; 1 by default)
// with, for F FLOPs at precision p (the task's own, else the workload's) of peak P_p and the op
// class's efficiency (max_eff, half_flops h):
//   math = (F / u + h) / (P_p · max_eff · s_p)          GEMM and FlashAttention (s_p: gemm_precision_scale)
//   math = (F + h) / (P_p · max_eff)                    other classes (the saturating eff(F) form)
// u is the GEMM's tile and wave utilization (below) when the task carries a shape, else 1: a forward
// product [m x k]·[k x n] is one GEMM with an m x n output; a backward task runs the data gradient
// (m x k output) and the weight gradient (k x n output), half of its FLOPs each, and u is their
// FLOP-weighted harmonic mean; a split backward task (Task::gradient INPUT or WEIGHT, zero-bubble
// schedules) runs only one of them, all its FLOPs at that product's u. FlashAttention executes half of the attention FLOPs a task counts
// (causal mask: blocks above the diagonal are skipped), so its F is halved, and divided by
// flash_head_dim_factor (below) of its head size.
//
// Tile and wave quantization (the usual GEMM performance model; NVIDIA "Matrix Multiplication
// Background User's Guide"): with a tile of tm x tn output elements, `count` products need
//   tiles = count · ceil(m/tm) · ceil(n/tn),   waves = ceil(tiles / SMs)
// and reach u = count·m·n / (waves · SMs · tm · tn) of the GPU, times min(1, r(tile) / r(full_tile))
// where r(t) = tm·tn/(tm + tn) is the tile's output per operand element (smaller tiles are starved by
// operand traffic). The profile's best tile for the shape is taken, as cuBLAS's heuristics would.
//
// Sparse kernels (Task::sparsity, optimizations.pruning): the passes that run one (core::GemmSparsity
// says which) divide their F/u by the kernel's speedup over the dense GEMM of the same shape:
//   2:4           2 x profile.sparse.structured_2_4_scale (sparse tensor cores: twice the dense rate
//                 at the datasheet; 1.7x measured, so 0.85 by default). REQUIRES: gpu.sparse_tensor_cores.
//   unstructured  e(s) / d, d = Task::density, s = 1 - d, e = profile.sparse.unstructured_efficiency:
//                 the kept products at e(s) of the dense rate (default 0.05: break-even at 95%)
//   block (b)     e_b / d with e_b = min(1, r(tm x b) / r(tm x tn)), (tm, tn) = gemm_full_tile: the
//                 kernel multiplies the kept b x b blocks as dense tiles whose output is tm x b, and a
//                 tile b wide is starved by operand traffic as the tile model above says (128 x 128
//                 full tile: b = 32 -> 0.40, 64 -> 0.67, >= 128 -> 1)
// A backward task is half data gradient, half weight gradient: with 2:4 only the data gradient half
// is sparse.

#include "sim/core/device.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

// The tile choice lives with the profile (core::best_tile), so that calibration fits against it.
using core::best_tile;
using core::TileChoice;

// The speedup of a pass with the task's sparse kernel over the dense GEMM (1 for GemmSparsity::NONE).
// REQUIRES: for STRUCTURED_2_4, gpu.sparse_tensor_cores; density in (0, 1].
double sparse_speedup(const core::Task& task, const core::GpuSpec& gpu, const core::DeviceProfile& profile);

// FlashAttention's efficiency at head size d relative to head size 128 (its ceilings' measurement),
// with c = DeviceProfile::flash_head_dim_overhead: min(1, (d / (d + c)) / (128 / (128 + c))); 1 when
// either is 0 (a task without a head size). A FLASH_ATTENTION task carries d as Task::gemm.k.
double flash_head_dim_factor(double head_dim, double overhead);

// Kernels the task launches: 1, or 2 for a whole backward (data and weight gradient, or a gradient
// and its accumulation). With the profile's host_overhead_per_kernel h a task takes at least
// kernel_launches x h: t = max(t_device, kernel_launches x h) (the host cannot feed the GPU faster).
int kernel_launches(const core::Task& task);
// max(device, launches x profile.host_overhead_per_kernel): the host-side bound on a task's time.
core::Seconds host_bound(core::Seconds device, int launches, const core::DeviceProfile& profile);

// REQUIRES: task.kind == COMPUTE and gpu.peak(the task's precision) > 0.
core::Seconds compute_time(const core::Task& task, core::Precision precision, const core::GpuSpec& gpu,
                           const core::DeviceProfile& profile);

}  // namespace trainsim::engine
