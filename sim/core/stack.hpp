#pragma once
// The training stack: the framework that runs the job (training.stack, docs/scenario.md). The same
// layout costs different time under Megatron-LM with Transformer Engine and under eager PyTorch
// FSDP, and this is where the difference lives as mechanisms with named constants:
//   - GEMM and memory-bound kernel efficiency relative to the generation's Megatron-fitted profile
//     (sim/core/device.cpp: Megatron's fused kernels, TE GEMMs and gradient-accumulation fusion are
//     what the built-in profiles were fitted on);
//   - host-side overhead: the CPU time to dispatch and launch one kernel, which binds compute tasks
//     shorter than it (small models, small micro-batches; sim/engine/compute_model.hpp), and the
//     training loop's own host time per step (Composer's; DeviceProfile::step_host_latency);
//   - the stack's own attention kernel where it is not the FlashAttention-2 the profiles hold
//     (llm-foundry's Triton FlashAttention);
//   - the stack's defaults for the parallelism keys (zero_impl, backward_prefetch; models/strategy.hpp)
//     and the layouts it can run at all (check_strategy);
//   - what the workload holds, not priced here: eager PyTorch's op chains for a Llama-style block
//     (RMSNorm in fp32, SwiGLU as two kernels, rotary; models/accounting.hpp eager_elementwise).
// Every constant names its source in the profile's `sources` (`trainsim describe profile --gpu NAME
// --stack NAME`).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/units.hpp"

namespace trainsim::core {

struct DeviceProfile;

//   MEGATRON    Megatron-LM / Megatron-core / NeMo / Megatron-Bridge with Transformer Engine (the
//               stack the built-in profiles were fitted on)
//   TORCHTITAN  PyTorch torchtitan: FSDP2 (fully_shard) x TP x PP x CP; eager or torch.compile
//   COMPOSER    MosaicML Composer / llm-foundry: PyTorch FSDP1 only
//   DEEPSPEED   DeepSpeed ZeRO 1-3 (+ its pipeline engine) on eager PyTorch
//   FSDP        plain PyTorch FullyShardedDataParallel (FSDP1) in a user's training loop
//   DDP         plain PyTorch DistributedDataParallel (no sharding)
enum class Stack { MEGATRON, TORCHTITAN, COMPOSER, DEEPSPEED, FSDP, DDP };

// "megatron", "torchtitan", "composer", "deepspeed", "fsdp", "ddp", in enum order.
const std::vector<std::string>& stack_names();
std::string to_string(Stack s);
// REQUIRES: name is one of stack_names().
Stack parse_stack(std::string_view name);
// The stack of that name; nullopt for any other string (names read back from files trainsim wrote).
std::optional<Stack> stack_named(std::string_view name);

// CPU time per kernel launch of eager PyTorch (dispatcher, autograd, Python), measured on an H200
// machine's host (stack.cpp says how; docs/gpu-runs.md): the host_overhead_per_kernel of every
// eager stack, and the unit of other host-side costs priced in launches (DeepSpeed's ZeRO-3 hooks,
// models/deepspeed_config.hpp).
inline constexpr double EAGER_HOST_PER_LAUNCH_S = 25e-6;

// What the stack changes in a device profile, for one GPU generation.
struct StackCosts {
  double gemm = 1.0;      // x the profile's GEMM and attention efficiencies
  double memory = 1.0;    // x the profile's memory-bound efficiencies
  Seconds host_per_kernel;  // CPU time to dispatch and launch one kernel (0: never binds)
  double flash = 1.0;     // x the profile's FlashAttention efficiency (the stack's own attention kernel)
  Seconds step_latency;   // DeviceProfile::step_host_latency: the training loop's host time per step (0: none)
  std::string gemm_source;
  std::string memory_source;
  std::string host_source;
  std::string flash_source;   // empty: the stack runs the profile's FlashAttention
  std::string step_source;    // empty: no step latency
};

// The costs of `s` on the built-in profile of `gpu_name` (a catalog name; unknown GPUs take the
// A100 generation's). `compile`: torch.compile (torchtitan's --compile): the elementwise ops fuse
// into Triton kernels as Megatron's hand-fused ones do, and a compiled region launches its kernels
// from C++ (no Python per op).
StackCosts stack_costs(Stack s, bool compile, std::string_view gpu_name);

// Applies stack_costs() to `profile` (efficiencies scaled, host overhead set) and records the
// sources. MEGATRON leaves the profile unchanged.
void apply_stack(DeviceProfile& profile, Stack s, bool compile, std::string_view gpu_name);

}  // namespace trainsim::core
