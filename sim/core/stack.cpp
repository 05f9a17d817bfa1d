#include "sim/core/stack.hpp"

#include <fmt/format.h>

#include "sim/core/device.hpp"
#include "sim/core/error.hpp"

namespace trainsim::core {

const std::vector<std::string>& stack_names() {
  static const std::vector<std::string> names = {"megatron", "torchtitan", "composer", "deepspeed", "fsdp", "ddp"};
  return names;
}

std::string to_string(Stack s) { return stack_names()[static_cast<size_t>(s)]; }

std::optional<Stack> stack_named(std::string_view name) {
  for (size_t i = 0; i < stack_names().size(); ++i) {
    if (stack_names()[i] == name) return static_cast<Stack>(i);
  }
  return std::nullopt;
}

Stack parse_stack(std::string_view name) {
  const std::optional<Stack> s = stack_named(name);
  TRAINSIM_CHECK(s.has_value(), fmt::format("unknown stack \"{}\" (the reader checks names)", name));
  return *s;
}

namespace {

// Eager PyTorch against Megatron-LM + Transformer Engine, per GPU generation: the fraction of the
// Megatron-fitted GEMM and memory-bound efficiencies that eager PyTorch runs reach. What they stand
// for: nn.Linear's cuBLAS GEMMs without TE's tuned kernels and without gradient-accumulation fusion
// (the weight gradient is written, then added), and one kernel per elementwise op where Megatron
// runs fused bias-GeLU, bias-dropout-add, masked softmax and cross-entropy kernels. Fitted with
// scripts/fit_training_efficiency.py (absolute efficiencies, divided here by Megatron's A100 pair) on
// the 14 MosaicML llm-foundry runs of validation/training-fsdp-dev, whose files name the composer stack (A100 40/80 GB, FSDP1, 8-128 GPUs), the stack's other mechanisms
// (host overhead, backward prefetch) in place; docs/validation.md has the fit and its
// cross-validation.
constexpr double EAGER_GEMM_A100 = 0.83 / 0.86;  // 0.965: the fit chose 0.83 where Megatron's A100 pair has 0.86
constexpr double EAGER_MEMORY_A100 = 0.64 / 0.64;  // 1.00: the fit chose Megatron's own 0.64
constexpr const char* EAGER_SOURCE = "fitted on the 14 llm-foundry FSDP runs of validation/training-fsdp-dev (A100)";

// CPU time per kernel launch of the IR (one per forward op, two per backward op). Measured for eager
// PyTorch (2.11, DDP, autocast bf16) on a lent H200 machine's host: 4 -> 8 layers of a host-bound GPT
// step added 0.75 ms of step time per layer (scripts/gpu/host_overhead.sh; docs/gpu-runs.md), for the
// IR's 30 launches per layer: 25 us each. The GPU ran 93 operations per layer there (74.5 kernels, 16.8
// copies, 2 sets: autocast's weight casts, DDP's bucket copies, unfused elementwise ops), 8.0 us of
// host time each; PyTorch's operator micro-benchmarks put a trivial CUDA op at ~3.3 us without
// autograd (pytorch/pytorch#32194). Compiled regions run Inductor's generated wrapper: no dispatcher,
// autograd or Python per op (assumed: 4 us per launch; the same measurement did not confirm a smaller
// per-layer cost under torch.compile, docs/gpu-runs.md).
constexpr double EAGER_HOST_S = EAGER_HOST_PER_LAUNCH_S;
constexpr double COMPILED_HOST_S = 4e-6;

}  // namespace

StackCosts stack_costs(Stack s, bool compile, std::string_view gpu_name) {
  StackCosts c;
  if (s == Stack::MEGATRON) {
    c.gemm_source = c.memory_source = "megatron: the built-in profile as fitted (Megatron-LM / NeMo runs)";
    c.host_source = "megatron: 0 (its launch gaps are in the fitted efficiencies)";
    return c;
  }
  const bool a100 = gpu_name.rfind("A100-", 0) == 0;
  const std::string generation = a100 ? std::string(EAGER_SOURCE) : std::string(EAGER_SOURCE) + "; assumed alike on this GPU";
  c.gemm = EAGER_GEMM_A100;
  c.gemm_source = fmt::format("{} eager PyTorch GEMMs x {:.2f} ({})", to_string(s), c.gemm, generation);
  if (compile) {
    // torch.compile fuses the elementwise chains as Megatron's hand-written kernels do.
    c.memory = 1.0;
    c.memory_source = fmt::format("{} with torch.compile: fused elementwise kernels, as Megatron's (x 1.00)", to_string(s));
    c.host_per_kernel = Seconds(COMPILED_HOST_S);
    c.host_source = "4 us per kernel: Inductor's wrapper launches (assumed; no dispatcher or autograd per op)";
  } else {
    c.memory = EAGER_MEMORY_A100;
    c.memory_source = fmt::format("{} eager elementwise kernels x {:.2f} ({})", to_string(s), c.memory, generation);
    c.host_per_kernel = Seconds(EAGER_HOST_S);
    c.host_source =
        "25 us per IR kernel launch: eager PyTorch 2.11 + DDP measured on an H200 machine's host, 0.75 ms of host "
        "time per transformer layer for 30 launches (docs/gpu-runs.md)";
  }
  return c;
}

void apply_stack(DeviceProfile& profile, Stack s, bool compile, std::string_view gpu_name) {
  if (s == Stack::MEGATRON) return;
  const StackCosts c = stack_costs(s, compile, gpu_name);
  for (OpClass oc : {OpClass::GEMM, OpClass::ATTENTION, OpClass::FLASH_ATTENTION}) profile.op(oc).max_efficiency *= c.gemm;
  for (size_t i = 0; i < OP_CLASS_COUNT; ++i) profile.ops[i].memory_efficiency *= c.memory;
  profile.host_overhead_per_kernel = c.host_per_kernel;
  profile.source += fmt::format(", {} stack{}", to_string(s), compile ? " (torch.compile)" : "");
  profile.sources.emplace_back("stack.gemm", c.gemm_source);
  profile.sources.emplace_back("stack.memory", c.memory_source);
  profile.sources.emplace_back("host_overhead_per_kernel", c.host_source);
}

}  // namespace trainsim::core
