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
// scripts/fit_stack_costs.py on the 125 MosaicML llm-foundry A100 runs of
// validation/training-llmfoundry (Composer's FSDP1, MPT-125M to 70B, 8-128 GPUs, 512-65,536 tokens per
// sequence), jointly with the composer constants below and the head-size term of FlashAttention
// (device.cpp), the stack's other mechanisms (host overhead, backward prefetch, fp32 reduce) in
// place; the 14 runs of validation/training-fsdp-dev are held out. The fit chose an absolute GEMM
// efficiency of 0.71 where Megatron's A100 profile has 0.738 (0.859 x 0.86), and left the
// memory-bound one at Megatron's own. docs/validation.md has the fit and its cross-validation.
constexpr double EAGER_GEMM_A100 = 0.961;
constexpr double EAGER_MEMORY_A100 = 1.0;
constexpr const char* EAGER_SOURCE = "fitted on the 125 llm-foundry FSDP runs of validation/training-llmfoundry (A100)";

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

// Composer / llm-foundry as benchmarked (scripts/train/benchmarking: MPT with attn_impl "triton", the
// Triton port of FlashAttention in llm-foundry's flash_attn_triton.py, torch 1.13-2.0). Both constants
// are fitted on the 125 A100 runs of validation/training-llmfoundry (scripts/fit_stack_costs.py;
// docs/validation.md, "The llm-foundry benchmark table"), held out from the 14 of training-fsdp-dev:
//   - its attention reaches COMPOSER_FLASH of the FlashAttention-2 efficiency the profiles hold: the
//     runs at 8k-64k tokens per sequence, whose time is mostly attention, are 30-60% slower than
//     FlashAttention-2 would make them (the FlashAttention-2 paper, Dao 2023, benchmarks the Triton
//     implementation as a slower baseline on A100);
//   - every optimizer step costs COMPOSER_STEP_S of host time before the GPU gets work. Fitted, not
//     measured piece by piece: it is what makes the table's runs with one micro-batch per step 3-6%
//     slower per token than the same micro-batch with accumulation. What it stands for (assumed):
//     Composer's per-batch event loop and callbacks, the batch's transfer, and the synchronizations
//     of a step (the logged loss, the optimizer step's own launches) that drain the GPU.
constexpr double COMPOSER_FLASH = 0.675;
constexpr double COMPOSER_STEP_S = 75e-3;
// Composer on Hopper as benchmarked (the H100 rows: torch 2.0.1 image, amp_bf16, 2023): its GEMMs and
// its attention kernel reach less of the H100 profile (fitted on Megatron / NeMo runs with Transformer
// Engine and cuDNN / FlashAttention-3 attention) than the A100 constants give. Fitted the same way on
// the 52 H100 rows of validation/training-llmfoundry-h100 (absolute GEMM 0.60 of Megatron's 0.675,
// FlashAttention 0.18 of its 0.462 x the GEMM factor), the step latency kept; split by model size
// (760M/3B/13B/70B against 1B/7B/30B) each half chose the same point (docs/validation.md).
constexpr double COMPOSER_GEMM_HOPPER = 0.889;
constexpr double COMPOSER_FLASH_HOPPER = 0.438;
constexpr const char* COMPOSER_HOPPER_SOURCE = "fitted on the 52 llm-foundry H100 runs of validation/training-llmfoundry-h100";
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
  if (s == Stack::COMPOSER) {
    const bool hopper = gpu_name.rfind("H100-", 0) == 0 || gpu_name.rfind("H200-", 0) == 0 || gpu_name.rfind("H800-", 0) == 0;
    if (hopper) {
      c.gemm = COMPOSER_GEMM_HOPPER;
      c.gemm_source = fmt::format("composer eager PyTorch GEMMs on Hopper x {:.3f} ({})", c.gemm, COMPOSER_HOPPER_SOURCE);
    }
    c.flash = hopper ? COMPOSER_FLASH_HOPPER : COMPOSER_FLASH;
    c.flash_source =
        hopper ? fmt::format("composer: llm-foundry's attention on Hopper x {:.3f} of the profile's FlashAttention ({})", c.flash,
                             COMPOSER_HOPPER_SOURCE)
               : fmt::format("composer: llm-foundry's Triton FlashAttention x {:.3f} of FlashAttention-2 (fitted on the runs "
                             "of validation/training-llmfoundry{})",
                             c.flash, a100 ? "" : "; A100-fitted, assumed alike on this GPU");
    c.step_latency = Seconds(COMPOSER_STEP_S);
    c.step_source = fmt::format(
        "composer: {:.0f} ms of host time per optimizer step (fitted on validation/training-llmfoundry: one micro-batch per "
        "step against accumulated micro-batches)",
        1e3 * COMPOSER_STEP_S);
  }
  return c;
}

void apply_stack(DeviceProfile& profile, Stack s, bool compile, std::string_view gpu_name) {
  if (s == Stack::MEGATRON) return;
  const StackCosts c = stack_costs(s, compile, gpu_name);
  for (OpClass oc : {OpClass::GEMM, OpClass::ATTENTION, OpClass::FLASH_ATTENTION}) profile.op(oc).max_efficiency *= c.gemm;
  for (size_t i = 0; i < OP_CLASS_COUNT; ++i) profile.ops[i].memory_efficiency *= c.memory;
  profile.host_overhead_per_kernel = c.host_per_kernel;
  profile.op(OpClass::FLASH_ATTENTION).max_efficiency *= c.flash;
  if (c.step_latency.value() > 0) profile.step_host_latency = c.step_latency;
  profile.source += fmt::format(", {} stack{}", to_string(s), compile ? " (torch.compile)" : "");
  profile.sources.emplace_back("stack.gemm", c.gemm_source);
  profile.sources.emplace_back("stack.memory", c.memory_source);
  profile.sources.emplace_back("host_overhead_per_kernel", c.host_source);
  if (!c.flash_source.empty()) profile.sources.emplace_back("stack.flash_attention", c.flash_source);
  if (!c.step_source.empty()) profile.sources.emplace_back("step_host_latency", c.step_source);
}

}  // namespace trainsim::core
