#pragma once
// What a traced run's GPUs spent per iteration on each class of the workload's compute
// (core::OpClass), told from the kernels' names: what `calibrate --scenario JOB` sets beside the
// job's workload to fit how the user's stack runs it (sim/plan/stack_fit.hpp).
//
// Only time inside the marked iterations counts (iteration_marks.hpp: ProfilerStep#N windows), per
// rank, then averaged over the ranks. A kernel's class, by its name (case-insensitive, first match):
//   "nccl"                                                     communication: not compute
//   "flash", "fmha", "attention", "attn"                       FLASH_ATTENTION (fused attention)
//   "softmax"                                                  ATTENTION for a job without fused
//                                                              attention; else ELEMENTWISE (with
//                                                              FlashAttention the only softmax left is
//                                                              the loss's: PyTorch's cunn_SoftMax*)
//   "gemm", "cutlass", "xmma", "cublas", "nvjet", "matmul"     GEMM
//   "layer_norm", "layernorm", "rms_norm", "rmsnorm"           NORM
//   "multi_tensor_apply", "adam", "optimizer"                  OPTIMIZER (foreach / fused optimizers)
//   "embedding", "index_select", "indexselect"                 EMBEDDING
//   anything else, and device copies and memsets               ELEMENTWISE
// Idle is the iteration's time with no kernel, copy or memset on the GPU.
//
// Example:
//   const TracedWork w = traced_work(TraceSet::load({"traces/"}), true);
//   w.seconds[static_cast<size_t>(core::OpClass::GEMM)]  // GEMM seconds per iteration

#include <array>
#include <cstddef>
#include <string_view>

#include "calibrate/trace_set.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

struct TracedWork {
  std::array<double, core::OP_CLASS_COUNT> seconds{};  // per iteration, by core::OpClass
  double copies_s = 0;      // of which (in ELEMENTWISE) device copies and memsets
  double idle_s = 0;        // per iteration: no GPU activity
  double iteration_s = 0;   // the mean marked window
  size_t iterations = 0;    // marked iterations every rank has
};

// The class of a kernel by its name, as above (on trace_summary.hpp's categorize_kernel); false for
// communication, which has no class.
bool kernel_op_class(std::string_view name, bool fused_attention, core::OpClass& out);

// REQUIRES nothing: traces without iteration marks give iterations == 0 and zero times.
TracedWork traced_work(const TraceSet& traces, bool fused_attention);

}  // namespace trainsim::calibrate
