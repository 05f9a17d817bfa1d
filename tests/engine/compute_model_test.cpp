#include "sim/engine/compute_model.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/core/stack.hpp"

namespace trainsim::engine {
namespace {

core::Task task(double flops, double bytes, core::OpClass op = core::OpClass::GEMM) {
  core::Task t;
  t.flops = flops;
  t.bytes = bytes;
  t.op_class = op;
  return t;
}

// The roofline with a size-dependent efficiency (sim/engine/compute_model.hpp):
// t = max(F / (peak * eff(F)), bytes / (HBM * mem_eff)) + overhead.
TEST(ComputeTime, IsTheSlowerOfMathAndMemoryPlusOverhead) {
  const core::GpuSpec& gpu = *core::find_gpu("H100-SXM5-80GB");
  core::DeviceProfile profile;
  profile.ops[static_cast<size_t>(core::OpClass::GEMM)] = {0.8, 1e9, 0.5};
  profile.kernel_overhead = core::Seconds(3e-6);
  const double peak = 989e12;
  // Math-bound: 1e12 FLOPs at 0.8 * 1e12 / (1e12 + 1e9) of peak.
  const double eff = 0.8 * 1e12 / (1e12 + 1e9);
  EXPECT_DOUBLE_EQ(compute_time(task(1e12, 1e6), core::Precision::BF16, gpu, profile).value(), 1e12 / (peak * eff) + 3e-6);
  // Memory-bound: 1 GB over half of 3.35 TB/s.
  EXPECT_DOUBLE_EQ(compute_time(task(1e6, 1e9), core::Precision::BF16, gpu, profile).value(), 1e9 / (3.35e12 * 0.5) + 3e-6);
  // FP8 doubles the peak.
  EXPECT_DOUBLE_EQ(compute_time(task(1e12, 0), core::Precision::FP8, gpu, profile).value(), 1e12 / (1979e12 * eff) + 3e-6);
  // An empty task costs the overhead.
  EXPECT_DOUBLE_EQ(compute_time(task(0, 0), core::Precision::BF16, gpu, profile).value(), 3e-6);
}

// Host overhead (core/stack.hpp): a task takes at least its kernel launches x the host time per
// kernel; a long task is unchanged.
TEST(ComputeTime, HostOverheadBindsShortTasksOnly) {
  const core::GpuSpec& gpu = *core::find_gpu("H100-SXM5-80GB");
  core::DeviceProfile profile;
  profile.ops[static_cast<size_t>(core::OpClass::ELEMENTWISE)] = {0.5, 0, 0.5};
  profile.kernel_overhead = core::Seconds(2e-6);
  profile.host_overhead_per_kernel = core::Seconds(10e-6);
  // 1 MB over 1.675 TB/s: 0.6 us + 2 us on the device, below 10 us of host time forward...
  core::Task small = task(0, 1e6, core::OpClass::ELEMENTWISE);
  EXPECT_DOUBLE_EQ(compute_time(small, core::Precision::BF16, gpu, profile).value(), 10e-6);
  // ...and 2 launches (20 us) backward; a split backward's half launches one.
  small.phase = core::Phase::BACKWARD;
  EXPECT_DOUBLE_EQ(compute_time(small, core::Precision::BF16, gpu, profile).value(), 20e-6);
  small.gradient = core::BackwardPart::INPUT;
  EXPECT_DOUBLE_EQ(compute_time(small, core::Precision::BF16, gpu, profile).value(), 10e-6);
  // 1 GB: 597 us on the device, far above the host's 20 us.
  core::Task big = task(0, 1e9, core::OpClass::ELEMENTWISE);
  big.phase = core::Phase::BACKWARD;
  EXPECT_DOUBLE_EQ(compute_time(big, core::Precision::BF16, gpu, profile).value(), 1e9 / (3.35e12 * 0.5) + 2e-6);
}

// The stacks (core/stack.hpp): megatron leaves the built-in profile as fitted; an eager PyTorch stack
// scales the GEMM efficiencies, sets the host overhead and names the source of both.
TEST(DeviceProfile, StackCostsAmendTheBuiltInProfileWithSources) {
  const core::DeviceProfile base = core::DeviceProfile::defaults_for("A100-SXM4-80GB");
  core::DeviceProfile megatron = base;
  core::apply_stack(megatron, core::Stack::MEGATRON, false, "A100-SXM4-80GB");
  EXPECT_EQ(megatron.op(core::OpClass::GEMM).max_efficiency, base.op(core::OpClass::GEMM).max_efficiency);
  EXPECT_EQ(megatron.host_overhead_per_kernel.value(), 0.0);
  core::DeviceProfile composer = base;
  core::apply_stack(composer, core::Stack::COMPOSER, false, "A100-SXM4-80GB");
  const core::StackCosts c = core::stack_costs(core::Stack::COMPOSER, false, "A100-SXM4-80GB");
  EXPECT_LT(c.gemm, 1.0);
  EXPECT_DOUBLE_EQ(composer.op(core::OpClass::GEMM).max_efficiency, base.op(core::OpClass::GEMM).max_efficiency * c.gemm);
  // Composer's own (llm-foundry's Triton) attention kernel and its training loop's time per step.
  EXPECT_LT(c.flash, 1.0);
  EXPECT_DOUBLE_EQ(composer.op(core::OpClass::FLASH_ATTENTION).max_efficiency,
                   base.op(core::OpClass::FLASH_ATTENTION).max_efficiency * c.gemm * c.flash);
  EXPECT_DOUBLE_EQ(composer.host_overhead_per_kernel.value(), 25e-6);
  EXPECT_GT(c.step_latency.value(), 0.0);
  EXPECT_DOUBLE_EQ(composer.step_host_latency.value(), c.step_latency.value());
  int named = 0;
  for (const auto& [key, source] : composer.sources) {
    if (key == "stack.gemm" || key == "stack.memory" || key == "host_overhead_per_kernel" || key == "stack.flash_attention" ||
        key == "step_host_latency") {
      named += !source.empty();
    }
  }
  EXPECT_EQ(named, 5);
  // The other eager stacks run the profile's FlashAttention-2 and have no step latency of their own.
  core::DeviceProfile titan = base;
  core::apply_stack(titan, core::Stack::TORCHTITAN, false, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(titan.op(core::OpClass::FLASH_ATTENTION).max_efficiency,
                   base.op(core::OpClass::FLASH_ATTENTION).max_efficiency * c.gemm);
  EXPECT_EQ(titan.step_host_latency.value(), 0.0);
  // torch.compile: Megatron-like fused elementwise kernels, fewer host microseconds per kernel.
  const core::StackCosts compiled = core::stack_costs(core::Stack::TORCHTITAN, true, "H100-SXM5-80GB");
  EXPECT_DOUBLE_EQ(compiled.memory, 1.0);
  EXPECT_LT(compiled.host_per_kernel.value(), c.host_per_kernel.value());
}

// FlashAttention's head-size term (DeviceProfile::flash_head_dim_overhead, c): efficiency x
// (d / (d + c)) / (128 / (128 + c)), at most 1. With c = 12: head 64 runs at (64/76)/(128/140) =
// 0.92105 of head 128's efficiency, head 256 at 128's (capped); c = 0 or no head size: unchanged.
TEST(FlashAttention, HeadSizeScalesTheEfficiency) {
  EXPECT_NEAR(flash_head_dim_factor(64, 12), (64.0 / 76) / (128.0 / 140), 1e-15);
  EXPECT_NEAR(flash_head_dim_factor(64, 12), 0.9210526315789473, 1e-12);
  EXPECT_DOUBLE_EQ(flash_head_dim_factor(128, 12), 1.0);
  EXPECT_DOUBLE_EQ(flash_head_dim_factor(256, 12), 1.0);
  EXPECT_DOUBLE_EQ(flash_head_dim_factor(64, 0), 1.0);
  EXPECT_DOUBLE_EQ(flash_head_dim_factor(0, 12), 1.0);
  // A FlashAttention task of 1e12 counted FLOPs (half executed under the causal mask) on an A100
  // profile with efficiency 0.5 and no half_flops: 0.5e12 / (312e12 x 0.5) at head 128, / 0.92105 at 64.
  core::DeviceProfile p = core::DeviceProfile::defaults();
  p.op(core::OpClass::FLASH_ATTENTION) = {0.5, 0, 0.8};
  p.kernel_overhead = core::Seconds(0);
  p.flash_head_dim_overhead = 12;
  const core::GpuSpec gpu = *core::find_gpu("A100-SXM4-80GB");
  core::Task t = task(1e12, 0, core::OpClass::FLASH_ATTENTION);
  t.gemm = {2048, 2048, 128, 32};
  const double at128 = compute_time(t, core::Precision::BF16, gpu, p).value();
  EXPECT_NEAR(at128, 0.5e12 / (312e12 * 0.5), 1e-15);
  t.gemm.k = 64;
  EXPECT_NEAR(compute_time(t, core::Precision::BF16, gpu, p).value(), at128 / 0.9210526315789473, 1e-15);
}

// Tile and wave quantization (compute_model.hpp). GPT-3 175B's QKV GEMM under TP8 with one 2048-token
// micro-batch: m = 2048 tokens, n = 3·12288/8 = 4608, k = 12288.
TEST(GemmTiles, CountsTilesAndWavesOfTheBestTile) {
  core::DeviceProfile p = core::DeviceProfile::defaults_for("A100-SXM4-80GB");
  // On 108 SMs: 256x128 gives 8·36 = 288 tiles, 3 waves (324 slots): u = 2048·4608 / (324·32768) = 0.8889;
  // 128x128 gives 16·36 = 576 tiles, 6 waves (648): the same 0.8889; 128x64 has 1152 tiles, 11 waves
  // (1188 slots, 0.9697 full) but its operand ratio 42.67 of 64 caps it at 0.6465. The first best wins.
  TileChoice c = best_tile(2048, 4608, 1, 108, p);
  EXPECT_EQ(c.tile.m, 256);
  EXPECT_EQ(c.tile.n, 128);
  EXPECT_DOUBLE_EQ(c.tiles, 288);
  EXPECT_DOUBLE_EQ(c.waves, 3);
  EXPECT_NEAR(c.utilization, 2048.0 * 4608 / (324.0 * 256 * 128), 1e-12);
  // On H100's 132 SMs the same 288 tiles need 3 waves of 132 (396 slots): u = 288/396 = 0.7273,
  // while 128x128's 576 tiles fill 5 waves (660 slots): u = 576/660 = 0.8727.
  c = best_tile(2048, 4608, 1, 132, p);
  EXPECT_EQ(c.tile.m, 128);
  EXPECT_EQ(c.tile.n, 128);
  EXPECT_DOUBLE_EQ(c.waves, 5);
  EXPECT_NEAR(c.utilization, 576.0 / 660, 1e-12);
  // A grouped GEMM of 4 experts with 100 x 1536 outputs each: 128x128 tiles: 4·1·12 = 48 tiles, one
  // wave of 132: u = 4·100·1536 / (132·16384) = 0.2841; 64x128 (operand ratio 42.67/64 = 2/3):
  // 4·2·12 = 96 tiles, one wave: 4·100·1536/(132·8192) · 2/3 = 0.3788; 64x64: 4·2·24 = 192 tiles,
  // 2 waves: 614400/(264·4096) · 32/64 = 0.2841; 128x64 ties with 64x128 (4·1·24 = 96 tiles, same
  // operand ratio) and, listed first, wins.
  c = best_tile(100, 1536, 4, 132, p);
  EXPECT_EQ(c.tile.m, 128);
  EXPECT_EQ(c.tile.n, 64);
  EXPECT_DOUBLE_EQ(c.tiles, 96);
  EXPECT_NEAR(c.utilization, 4.0 * 100 * 1536 / (132.0 * 8192) * (2.0 / 3), 1e-12);
}

TEST(ComputeTime, ShapedGemmPaysItsQuantizationAndBackwardRunsTwoProducts) {
  const core::GpuSpec& gpu = *core::find_gpu("H100-SXM5-80GB");
  core::DeviceProfile p = core::DeviceProfile::defaults();
  p.gemm_tiles = {{128, 128}};
  p.op(core::OpClass::GEMM) = {0.8, 0, 0.8};
  p.kernel_overhead = core::Seconds(0);
  core::Task t = task(2.0 * 2048 * 4608 * 12288, 0);
  t.gemm = {2048, 4608, 12288, 1};
  // Forward: output 2048 x 4608 at u = 576/660 (above).
  const double peak = 989e12 * 0.8;
  EXPECT_NEAR(compute_time(t, core::Precision::BF16, gpu, p).value(), t.flops / (576.0 / 660) / peak, 1e-12);
  // Backward (twice the FLOPs): data gradient 2048 x 12288 output = 16·96 = 1536 tiles, 12 waves
  // (1584 slots): u = 1536/1584; weight gradient 12288 x 4608 = 96·36 = 3456 tiles, 27 waves (3564):
  // u = 3456/3564.
  t.phase = core::Phase::BACKWARD;
  t.flops *= 2;
  const double expected = (0.5 * t.flops / (1536.0 / 1584) + 0.5 * t.flops / (3456.0 / 3564)) / peak;
  EXPECT_NEAR(compute_time(t, core::Precision::BF16, gpu, p).value(), expected, 1e-12);
  // FP8 runs at the FP8 peak times the profile's FP8 scale; a task's own precision wins over the
  // workload's.
  p.gemm_precision_scale[static_cast<size_t>(core::Precision::FP8)] = 0.9;
  t.precision = core::Precision::FP8;
  t.has_precision = true;
  EXPECT_NEAR(compute_time(t, core::Precision::BF16, gpu, p).value(), expected * 989 / (1979 * 0.9), 1e-12);
}

TEST(ComputeTime, FlashAttentionExecutesHalfItsCountedFlopsUnderTheCausalMask) {
  const core::GpuSpec& gpu = *core::find_gpu("H100-SXM5-80GB");
  core::DeviceProfile p = core::DeviceProfile::defaults();
  p.op(core::OpClass::FLASH_ATTENTION) = {0.5, 0, 0.8};
  p.kernel_overhead = core::Seconds(0);
  EXPECT_NEAR(compute_time(task(1e12, 0, core::OpClass::FLASH_ATTENTION), core::Precision::BF16, gpu, p).value(),
              0.5e12 / (989e12 * 0.5), 1e-15);
}

TEST(DeviceProfile, BuiltInProfilesNameTheSourceOfEveryConstant) {
  for (const std::string name : {"A100-SXM4-80GB", "H100-SXM5-80GB", "B200", "V100-SXM2-32GB"}) {
    const core::DeviceProfile p = core::DeviceProfile::defaults_for(name);
    EXPECT_FALSE(p.gemm_tiles.empty()) << name;
    EXPECT_GE(p.sources.size(), 8u) << name;
    for (const auto& [key, source] : p.sources) EXPECT_FALSE(source.empty()) << name << " " << key;
  }
  // H100: the MAMF ratio of FP8 (73.4%) to BF16 (80.3%) efficiency.
  const core::DeviceProfile h100 = core::DeviceProfile::defaults_for("H100-SXM5-80GB");
  EXPECT_NEAR(h100.gemm_precision_scale[static_cast<size_t>(core::Precision::FP8)], (1453.4 / 1979) / (794.5 / 989), 1e-12);
  // A GEMM ceiling is the GPU's MAMF (A100: 267.9 of 312; H100: 794.5 of 989) times its generation's
  // training-stack efficiency (0.86 on A100, 0.84 on H100); memory-bound kernels 0.9 of HBM times
  // 0.64 and 0.58. H200 and B200 take H100's factors, V100 A100's.
  const core::DeviceProfile a100 = core::DeviceProfile::defaults_for("A100-SXM4-80GB");
  EXPECT_NEAR(a100.op(core::OpClass::GEMM).max_efficiency, 267.9 / 312 * 0.86, 1e-12);
  EXPECT_NEAR(h100.op(core::OpClass::GEMM).max_efficiency, 794.5 / 989 * 0.84, 1e-12);
  EXPECT_NEAR(a100.op(core::OpClass::NORM).memory_efficiency, 0.9 * 0.64, 1e-12);
  EXPECT_NEAR(h100.op(core::OpClass::NORM).memory_efficiency, 0.9 * 0.58, 1e-12);
  EXPECT_NEAR(core::DeviceProfile::defaults_for("B200").op(core::OpClass::GEMM).max_efficiency, 1745.0 / 2250 * 0.84, 1e-12);
}

TEST(ComputeTime, UnsupportedPrecisionIsABug) {
  EXPECT_THROW(compute_time(task(1e9, 0), core::Precision::BF16, *core::find_gpu("V100-SXM2-32GB"),
                            core::DeviceProfile::defaults()),
               core::InternalError);
}

// Sparse kernels (compute_model.hpp). A math-bound GEMM on H100 (efficiency 0.8, no size penalty, no
// overhead): dense forward F / (989e12 x 0.8).
core::Task sparse_task(core::GemmSparsity kind, float density, core::Phase phase = core::Phase::FORWARD) {
  core::Task t = task(1e12, 0);
  t.phase = phase;
  t.sparsity = kind;
  t.density = density;
  return t;
}

core::DeviceProfile flat_profile() {
  core::DeviceProfile p = core::DeviceProfile::defaults();
  p.op(core::OpClass::GEMM) = {0.8, 0, 0.8};
  p.kernel_overhead = core::Seconds(0);
  return p;
}

// 2:4 on H100's sparse tensor cores: 2 x 0.85 = 1.7x the dense GEMM in forward. Backward is half
// data gradient (sparse, 1.7x) and half weight gradient (dense): 1 / (0.5 / 1.7 + 0.5) = 1.259x.
TEST(SparseGemm, TwoFourOnH100IsUpTo1Point7xForwardAnd1Point26xBackward) {
  const core::GpuSpec& h100 = *core::find_gpu("H100-SXM5-80GB");
  ASSERT_TRUE(h100.sparse_tensor_cores);
  const core::DeviceProfile p = flat_profile();
  const double dense = 1e12 / (989e12 * 0.8);
  const core::Task forward = sparse_task(core::GemmSparsity::STRUCTURED_2_4, 0.5f);
  EXPECT_NEAR(compute_time(forward, core::Precision::BF16, h100, p).value(), dense / 1.7, 1e-15);
  EXPECT_NEAR(compute_time(sparse_task(core::GemmSparsity::NONE, 1, core::Phase::FORWARD), core::Precision::BF16, h100, p)
                  .value(),
              dense, 1e-15);
  const core::Task backward = sparse_task(core::GemmSparsity::STRUCTURED_2_4, 0.5f, core::Phase::BACKWARD);
  EXPECT_NEAR(compute_time(backward, core::Precision::BF16, h100, p).value(), dense * (0.5 / 1.7 + 0.5), 1e-15);
  // With the datasheet's full 2x (scale 1): exactly half the dense time in forward.
  core::DeviceProfile ideal = p;
  ideal.sparse.structured_2_4_scale = 1.0;
  EXPECT_NEAR(compute_time(forward, core::Precision::BF16, h100, ideal).value(), dense / 2, 1e-15);
  // The tile model applies to the sparse kernel as to the dense one: a shaped GEMM keeps the ratio.
  core::DeviceProfile tiled = p;
  tiled.gemm_tiles = {{128, 128}};
  core::Task shaped = forward;
  shaped.flops = 2.0 * 2048 * 4608 * 12288;
  shaped.gemm = {2048, 4608, 12288, 1};
  core::Task shaped_dense = shaped;
  shaped_dense.sparsity = core::GemmSparsity::NONE;
  EXPECT_NEAR(compute_time(shaped_dense, core::Precision::BF16, h100, tiled).value() /
                  compute_time(shaped, core::Precision::BF16, h100, tiled).value(),
              1.7, 1e-12);
}

TEST(SparseGemm, TwoFourOnAGpuWithoutSparseTensorCoresIsABug) {
  // The scenario reader refuses it (tests/data/bad/pruning-2of4-on-v100.json); reaching the engine is a bug.
  EXPECT_THROW(compute_time(sparse_task(core::GemmSparsity::STRUCTURED_2_4, 0.5f), core::Precision::FP16,
                            *core::find_gpu("V100-SXM2-32GB"), flat_profile()),
               core::InternalError);
}

// Unstructured kernels at the default efficiency 0.05: speedup 0.05 / d. At 50% sparsity 0.1x (ten
// times slower than the dense GEMM), break-even at 95%, 5x at 99%; the weight gradient too (SDDMM).
TEST(SparseGemm, UnstructuredKernelsFollowTheEfficiencyCurve) {
  const core::GpuSpec& h100 = *core::find_gpu("H100-SXM5-80GB");
  core::DeviceProfile p = flat_profile();
  const double dense = 1e12 / (989e12 * 0.8);
  auto time = [&](float density, core::Phase phase = core::Phase::FORWARD) {
    return compute_time(sparse_task(core::GemmSparsity::UNSTRUCTURED, density, phase), core::Precision::BF16, h100, p)
        .value();
  };
  // (Task::density is a float: 1e-6 relative.)
  EXPECT_NEAR(time(0.5f), dense / 0.1, 1e-6 * dense);
  EXPECT_NEAR(time(0.05f), dense, 1e-6 * dense);
  EXPECT_NEAR(time(0.01f), dense / 5, 1e-6 * dense);
  EXPECT_NEAR(time(0.5f, core::Phase::BACKWARD), dense / 0.1, 1e-6 * dense);
  // A measured curve replaces the default: linear between points (0.5, 0.1) and (0.9, 0.3): at 0.7,
  // 0.2 / 0.3.
  p.sparse.unstructured = {{0.5, 0.1}, {0.9, 0.3}};
  EXPECT_NEAR(time(0.3f), dense / (0.2 / 0.3), 1e-6 * dense);
}

// Block-sparse kernels: e_b = min(1, r(128 x b) / r(128 x 128)), r(t) = m·n/(m + n). b = 32:
// 25.6 / 64 = 0.4, so at 90% sparsity 0.4 / 0.1 = 4x; b = 128: 1 / 0.1 = 10x.
TEST(SparseGemm, BlockKernelsTakeTheirEfficiencyFromTheTileModel) {
  const core::GpuSpec& h100 = *core::find_gpu("H100-SXM5-80GB");
  const core::DeviceProfile p = flat_profile();
  const double dense = 1e12 / (989e12 * 0.8);
  core::Task t = sparse_task(core::GemmSparsity::BLOCK, 0.1f);
  t.sparse_block = 32;
  EXPECT_NEAR(compute_time(t, core::Precision::BF16, h100, p).value(), dense * 0.1f / 0.4, 1e-15);
  t.sparse_block = 128;
  EXPECT_NEAR(compute_time(t, core::Precision::BF16, h100, p).value(), dense * 0.1f, 1e-15);
}

TEST(GpuCatalog, SparseTensorCoresFromAmpereOn) {
  EXPECT_FALSE(core::find_gpu("V100-SXM2-32GB")->sparse_tensor_cores);
  for (const std::string name : {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM-141GB", "B200"}) {
    EXPECT_TRUE(core::find_gpu(name)->sparse_tensor_cores) << name;
  }
}

}  // namespace
}  // namespace trainsim::engine
