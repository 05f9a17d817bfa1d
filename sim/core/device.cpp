#include "sim/core/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/core/error.hpp"

namespace trainsim::core {
namespace {

constexpr double TFLOPS = 1e12;
constexpr double GBPS = 1e9;

GpuSpec make_gpu(std::string name, std::array<double, PRECISION_COUNT> tflops, double hbm_gib, double hbm_tbps,
                 double nvlink_gbps, double pcie_gbps, int sms, bool sparse, std::string source,
                 bool nvlink_sharp = false) {
  GpuSpec g;
  g.name = std::move(name);
  for (size_t i = 0; i < tflops.size(); ++i) g.dense_peak[i] = FlopsPerSecond(tflops[i] * TFLOPS);
  g.hbm_capacity = Bytes(hbm_gib * GiB);
  g.hbm_bandwidth = BytesPerSecond(hbm_tbps * 1e12);
  g.nvlink_bandwidth = BytesPerSecond(nvlink_gbps * GBPS);
  g.pcie_bandwidth = BytesPerSecond(pcie_gbps * GBPS);
  g.sm_count = sms;
  g.sparse_tensor_cores = sparse;
  g.nvlink_sharp = nvlink_sharp;
  g.source = std::move(source);
  return g;
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  // Columns: fp32, tf32, bf16, fp16, fp8 dense TFLOP/s (0: no tensor-core support for that type;
  // datasheets quote tensor rates with 2:4 sparsity, marked *, which are twice the dense ones);
  // HBM GiB (as nvidia-smi reports the marketed size), HBM TB/s, NVLink GB/s per direction (0: none),
  // PCIe GB/s per direction (x16: Gen3 15.75, Gen4 31, Gen5 63); SMs enabled on the product (NVIDIA
  // architecture whitepapers: V100 80, A100 108, H100 SXM5 132; B200 148 = 2 dies x 74; AMD compute
  // units for MI300X); 2:4 sparse tensor cores (Ampere and later, CDNA 3); NVLink SHARP, last and true
  // where given (third-generation NVSwitch and later, network/feasibility.cpp).
  static const std::vector<GpuSpec> catalog = {
      make_gpu("V100-SXM2-32GB", {15.7, 0, 0, 125, 0}, 32, 0.9, 150, 15.75, 80, false,
               "NVIDIA V100 datasheet (fp16 125 TFLOP/s, fp32 15.7); NVLink2 150 GB/s per direction; Volta whitepaper (80 SMs)"),
      make_gpu("A100-SXM4-40GB", {19.5, 156, 312, 312, 0}, 40, 1.555, 300, 31, 108, true,
               "NVIDIA A100 datasheet; NVLink3 300 GB/s per direction; Ampere whitepaper (108 SMs)"),
      make_gpu("A100-SXM4-80GB", {19.5, 156, 312, 312, 0}, 80, 2.039, 300, 31, 108, true,
               "NVIDIA A100 80GB datasheet (HBM2e 2.039 TB/s); NVLink3 300 GB/s per direction; Ampere whitepaper (108 SMs)"),
      make_gpu("H100-SXM5-80GB", {67, 494.5, 989, 989, 1979}, 80, 3.35, 450, 63, 132, true,
               "NVIDIA H100 SXM5 datasheet (dense = sparse/2); NVLink4 450 GB/s per direction; Hopper whitepaper (132 SMs)",
               true),
      make_gpu("H800-SXM5-80GB", {67, 494.5, 989, 989, 1979}, 80, 3.35, 200, 63, 132, true,
               "NVIDIA H800 Tensor Core GPU datasheet, H800 SXM column: FP32 67 TFLOPS, TF32 989*, BF16 1,979*, "
               "FP16 1,979*, FP8 3,958* TFLOPS (* with sparsity; dense = half), 80 GB HBM3 at 3.35 TB/s, NVLink "
               "400 GB/s (200 GB/s per direction), PCIe Gen5 128 GB/s (63 GB/s per direction); the H100 SXM5's "
               "GH100 configuration (Hopper whitepaper: 132 SMs)",
               true),
      make_gpu("H200-SXM-141GB", {67, 494.5, 989, 989, 1979}, 141, 4.8, 450, 63, 132, true,
               "NVIDIA H200 datasheet; NVLink4 450 GB/s per direction; same GH100 die as H100 SXM5 (132 SMs)",
               true),
      make_gpu("B200", {80, 1125, 2250, 2250, 4500}, 180, 8.0, 900, 63, 148, true,
               "NVIDIA DGX B200 datasheet (180 GB usable); NVLink5 900 GB/s per direction; 148 SMs (2 dies x 74)",
               true),
      make_gpu("GB200", {90, 1250, 2500, 2500, 5000}, 186, 8.0, 900, 63, 148, true,
               "One Blackwell GPU of a GB200 superchip (1 Grace CPU + 2 GPUs). NVIDIA GB200 NVL72 specifications "
               "(https://www.nvidia.com/en-us/data-center/gb200-nvl72/), per superchip: FP32 180 TFLOPS, TF32 5 "
               "PFLOPS*, FP16/BF16 10 PFLOPS*, FP8 20 PFLOPS* (* with sparsity; dense = half), up to 372 GB HBM3e "
               "at 16 TB/s, NVLink 3.6 TB/s; halved per GPU: 186 GB, 8 TB/s, NVLink5 900 GB/s per direction. "
               "SMs: 148 as B200 (NVIDIA publishes no SM count for it); PCIe Gen5 x16 (the NVLink-C2C link to "
               "the Grace CPU is not modelled)",
               true),
      make_gpu("L40S", {91.6, 183, 362.05, 362.05, 733}, 48, 0.864, 0, 31, 142, true,
               "NVIDIA L40S datasheet: FP32 91.6 TFLOPS, TF32 183 | 366*, BF16 362.05 | 733*, FP16 362.05 | "
               "733*, FP8 733 | 1,466* TFLOPS (* with sparsity), 48 GB GDDR6 at 864 GB/s, PCIe Gen4 x16 64 GB/s "
               "bidirectional (31 GB/s per direction), no NVLink (intra_node.fabric defaults to pcie); 142 SMs "
               "(AD102 as configured: 18,176 CUDA cores / 128 per SM, 142 RT cores)"),
      make_gpu("MI300X", {163.4, 653.7, 1307.4, 1307.4, 2614.9}, 192, 5.3, 448, 63, 304, true,
               "AMD Instinct MI300X accelerator data sheet (amd.com): FP32 163.4, TF32 653.7, FP16 1,307.4, BF16 "
               "1,307.4, FP8 2,614.9 TFLOPS dense (twice with structured sparsity), 192 GB HBM3 at 5.3 TB/s, 304 "
               "compute units, 7 Infinity Fabric links of 128 GB/s (896 GB/s aggregate bidirectional: 448 GB/s "
               "per direction, 64 GB/s to each peer of a fully connected 8-GPU node: set intra_node.fabric "
               "\"nvlink-mesh\"), PCIe Gen5 x16 128 GB/s (63 GB/s per direction)"),
  };
  return catalog;
}

const GpuSpec* find_gpu(const std::string& name) {
  for (const GpuSpec& g : gpu_catalog()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const GpuSpec& g : gpu_catalog()) names.push_back(g.name);
  return names;
}

double SparseKernels::unstructured_efficiency(double sparsity) const {
  TRAINSIM_CHECK(!unstructured.empty(), "the unstructured sparse kernel curve is empty");
  if (sparsity <= unstructured.front().sparsity) return unstructured.front().efficiency;
  if (sparsity >= unstructured.back().sparsity) return unstructured.back().efficiency;
  const auto above = std::upper_bound(unstructured.begin(), unstructured.end(), sparsity,
                                      [](double v, const SparsityPoint& p) { return v < p.sparsity; });
  const SparsityPoint& hi = *above;
  const SparsityPoint& lo = *(above - 1);
  return lo.efficiency + (sparsity - lo.sparsity) / (hi.sparsity - lo.sparsity) * (hi.efficiency - lo.efficiency);
}

DeviceProfile DeviceProfile::defaults() {
  DeviceProfile p;
  // Large bf16/fp16 cuBLAS GEMMs reach 75-85% of dense peak on A100/H100; a 1 GFLOP GEMM only about
  // half of that (launch latency, wave quantization).
  p.op(OpClass::GEMM) = {0.80, 1e9, 0.80};
  // Core attention (QK^T, softmax, AV) as batched GEMMs plus memory-bound softmax/dropout: lower
  // tensor-core utilisation than plain GEMMs.
  p.op(OpClass::ATTENTION) = {0.60, 1e9, 0.80};
  // FlashAttention-2 forward + backward on A100 at head dim 128: 50-70% of the tensor-core peak on
  // the FLOPs it executes (Dao 2023, FlashAttention-2, Figures 4-6).
  p.op(OpClass::FLASH_ATTENTION) = {0.55, 1e9, 0.80};
  // Memory-bound kernels (bias, GeLU, dropout, residual add; layer norm; embedding gather; fused
  // Adam): their FLOPs are negligible, HBM streaming reaches ~70-80% of nominal bandwidth.
  p.op(OpClass::ELEMENTWISE) = {0.50, 0, 0.75};
  p.op(OpClass::NORM) = {0.50, 0, 0.70};
  p.op(OpClass::EMBEDDING) = {0.50, 0, 0.70};
  p.op(OpClass::OPTIMIZER) = {0.50, 0, 0.80};
  p.kernel_overhead = Seconds(2e-6);
  return p;
}

namespace {

// What a GPU's kernels reach on their own, from public microbenchmarks; the training-stack factors
// below scale them to what published training runs reached.
struct KernelCeilings {
  double gemm = 0.80;         // best BF16/FP16 cuBLAS GEMM / dense peak
  double fp8_scale = 1.0;     // best FP8 GEMM / FP8 peak, relative to `gemm`
  double flash = 0.55;        // FlashAttention forward + backward / BF16 peak, on executed FLOPs
  double hbm = 0.90;          // large streaming copies / nominal HBM bandwidth
  std::string gemm_source;
  std::string fp8_source;
  std::string flash_source;
  std::string hbm_source;
};

KernelCeilings ceilings_of(std::string_view gpu) {
  const std::string mamf = "Maximum Achievable Matmul FLOPS, ml-engineering (Bekman), mamf-finder.py";
  const std::string stream = "assumed: STREAM-like copies reach ~90% of nominal HBM bandwidth on NVIDIA data-center GPUs";
  KernelCeilings k;
  k.hbm_source = stream;
  if (gpu.rfind("A100-", 0) == 0) {
    k.gemm = 267.9 / 312;
    k.gemm_source = mamf + ": A100 SXM BF16 267.9 of 312 TFLOP/s (CUDA 12.1)";
    k.flash = 0.60;
    k.flash_source = "FlashAttention-2 (Dao 2023), Figures 4-6: A100 forward+backward, head dim 128, causal: ~190 TFLOP/s";
  } else if (gpu.rfind("H100-", 0) == 0 || gpu.rfind("H200-", 0) == 0 || gpu.rfind("H800-", 0) == 0) {
    k.gemm = 794.5 / 989;
    k.gemm_source = mamf + ": H100/H200 SXM BF16 794.5 of 989 TFLOP/s" +
                    (gpu.rfind("H800-", 0) == 0 ? " (H800: the same GH100 configuration, assumed alike)" : "");
    k.fp8_scale = (1453.4 / 1979) / (794.5 / 989);
    k.fp8_source = mamf + ": H200 SXM FP8 1453.4 of 1979 TFLOP/s (73.4%) vs BF16 80.3%";
    k.flash = 0.55;
    k.flash_source =
        "FlashAttention-3 (Shah et al. 2024) and cuDNN fused attention on H100, head dim 128, causal, 2-8k "
        "tokens: forward ~600, backward ~450 TFLOP/s";
  } else if (gpu.rfind("B200", 0) == 0 || gpu.rfind("GB200", 0) == 0) {
    k.gemm = 1745.0 / 2250;
    k.gemm_source = mamf + ": B200 SXM BF16 1745 of 2250 TFLOP/s" +
                    (gpu.rfind("GB200", 0) == 0 ? " (GB200: the same Blackwell GPU, assumed alike)" : "");
    k.fp8_scale = (3432.5 / 4500) / (1745.0 / 2250);
    k.fp8_source = mamf + ": B200 SXM FP8 3432.5 of 4500 TFLOP/s (76.3%) vs BF16 77.6%";
    k.flash_source = "assumed as on H100 (no published FlashAttention-4 figure in reach)";
  } else if (gpu == "MI300X") {
    k.gemm = 781.9 / 1307.4;
    k.gemm_source = mamf + ": MI300X BF16 781.9 TFLOP/s (ROCm 6.2) of the datasheet's 1307.4";
    k.flash_source = "assumed (no published FlashAttention figure for MI300X in reach)";
  } else {
    k.gemm_source = "assumed (no public MAMF figure for this GPU): the A100/H100 range";
    k.flash_source = "assumed (FlashAttention-2 does not support this GPU)";
  }
  if (k.fp8_source.empty()) k.fp8_source = "no FP8 tensor cores";
  return k;
}

// FlashAttention's non-tensor-core work per score element, in head-dimension units
// (DeviceProfile::flash_head_dim_overhead): FlashAttention-2 (Dao 2023, Figures 4-6) runs head 64 at
// a lower fraction of peak than head 128 on A100 and H100, as its online softmax's exp / max /
// rescale cost per score does not shrink with the head. The constant is fitted on the published
// llm-foundry runs of validation/training-llmfoundry whose attention dominates (sequences of 8k-64k):
// the head-64 models (MPT-125M, 350M) against the head-128 ones (760M-30B) at the same lengths,
// scripts/fit_stack_costs.py; docs/validation.md, "The llm-foundry benchmark table".
constexpr double FLASH_HEAD_DIM_OVERHEAD = 16;
constexpr const char* FLASH_HEAD_DIM_SOURCE =
    "16 head-dimension units per score: head 64 at 0.89 of head 128's efficiency (fitted on the long-sequence "
    "llm-foundry runs, MPT-125M/350M against 760M-30B; FlashAttention-2, Dao 2023, shows the same direction)";

// Training-stack efficiencies: the fraction of the kernels' own ceilings that published Megatron-LM
// and NeMo runs reached once launch gaps, unfused framework kernels, sustained clocks under the power
// cap and stream synchronization are paid. One pair per GPU generation with published runs in
// validation/training, chosen there with scripts/fit_training_efficiency.py (docs/validation.md: how,
// and the cross-validated figures: fitted on the A100 runs alone, the pair predicts the H100 runs
// within 5.3%). GPUs without published runs take the pair of the generation they follow.
struct TrainingEfficiency {
  double gemm = 0;
  double memory = 0;
  const char* source = "";
};

TrainingEfficiency training_efficiency_of(std::string_view gpu) {
  // A100: Megatron-LM SC21 Table 1 and Korthikanti et al. 2022 Table 5 (18 runs).
  constexpr TrainingEfficiency A100 = {0.86, 0.64, "fitted on the 18 A100 runs of validation/training"};
  // H100: the three MLPerf Training v4.0 GPT-3 175B submissions (FP8, 512-11,616 GPUs).
  constexpr TrainingEfficiency H100 = {0.84, 0.58, "fitted on the 3 H100 MLPerf v4.0 runs of validation/training"};
  if (gpu.rfind("H100-", 0) == 0) return H100;
  if (gpu.rfind("H200-", 0) == 0 || gpu.rfind("H800-", 0) == 0 || gpu.rfind("B200", 0) == 0 ||
      gpu.rfind("GB200", 0) == 0) {
    return {H100.gemm, H100.memory, "assumed as on H100 (no published runs in validation/training)"};
  }
  if (gpu.rfind("A100-", 0) == 0) return A100;
  return {A100.gemm, A100.memory, "assumed as on A100 (no published runs in validation/training)"};
}

// CUTLASS's and cuBLAS's common CTA tiles for tensor-core GEMMs (CUTLASS profiler defaults).
std::vector<GemmTile> standard_tiles() { return {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}; }

}  // namespace

DeviceProfile DeviceProfile::defaults_for(std::string_view gpu_name) {
  const GpuSpec* gpu = find_gpu(std::string(gpu_name));
  if (gpu == nullptr) return defaults();
  DeviceProfile p = defaults();
  const KernelCeilings k = ceilings_of(gpu_name);
  const TrainingEfficiency f = training_efficiency_of(gpu_name);
  const std::string training = fmt::format("x training-stack efficiency {}", f.source);
  p.source = fmt::format("built-in {} profile (kernel ceilings x training-stack efficiencies)", gpu_name);
  p.fitted_on.gpu = gpu->name;
  const double gemm = k.gemm * f.gemm;
  const double memory = k.hbm * f.memory;
  p.op(OpClass::GEMM) = {gemm, 1e9, memory};
  // Unfused core attention: batched GEMMs with head-dim inner size, at the datasheet defaults' 3/4
  // of a plain GEMM's efficiency; its time is mostly the score matrix's HBM traffic.
  p.op(OpClass::ATTENTION) = {0.75 * gemm, 1e9, memory};
  p.op(OpClass::FLASH_ATTENTION) = {k.flash * f.gemm, 1e9, memory};
  for (OpClass c : {OpClass::ELEMENTWISE, OpClass::NORM, OpClass::EMBEDDING, OpClass::OPTIMIZER}) {
    p.op(c) = {0.50, 0, memory};
  }
  p.gemm_precision_scale[static_cast<size_t>(Precision::FP8)] = k.fp8_scale;
  p.gemm_tiles = standard_tiles();
  p.flash_head_dim_overhead = FLASH_HEAD_DIM_OVERHEAD;
  p.sources = {
      {"ops.gemm.max_efficiency", fmt::format("{:.3f} = {:.3f} ({}) {} ({:.3f})", gemm, k.gemm, k.gemm_source, training, f.gemm)},
      {"ops.flash_attention.max_efficiency",
       fmt::format("{:.3f} = {:.3f} ({}) {} ({:.3f})", k.flash * f.gemm, k.flash, k.flash_source, training, f.gemm)},
      {"flash_head_dim_overhead", FLASH_HEAD_DIM_SOURCE},
      {"ops.attention.max_efficiency", "3/4 of the GEMM efficiency (unfused batched GEMMs with head-dim inner size; datasheet defaults' ratio)"},
      {"ops.*.memory_efficiency", fmt::format("{:.3f} = {:.2f} ({}) {} ({:.3f})", memory, k.hbm, k.hbm_source, training, f.memory)},
      {"ops.*.half_flops", "1 GFLOP: launch latency and tails of small kernels (datasheet defaults)"},
      {"gemm_precision_scale.fp8", fmt::format("{:.3f}: {}", k.fp8_scale, k.fp8_source)},
      {"gemm_tiles", "CUTLASS/cuBLAS tensor-core CTA tiles; the best one per GEMM shape, waves over the GPU's SMs"},
      {"gemm_full_tile", "smaller tiles are starved by operand traffic (modelling assumption: efficiency ~ m·n/(m+n))"},
      {"kernel_overhead", "2 us per kernel: launch gap (datasheet defaults)"},
      {"sparse.structured_2_4_scale",
       "0.85: 2:4 GEMMs on sparse tensor cores reach 1.7x the dense GEMM (torchao sparsity README: \"we can speed up "
       "matrix multiplication up to 1.7x\" with cuSPARSELt on A100) of the datasheets' 2x"},
      {"sparse.unstructured",
       "efficiency 0.05 at every sparsity: unstructured sparse kernels break even with dense tensor-core GEMMs at "
       "about 95% sparsity (NVIDIA developer blog, \"Accelerating Matrix Multiplication with Block Sparse Format and "
       "NVIDIA Tensor Cores\": not competitive below 95%; torchao sparsity README: needs >98%)"},
  };
  return p;
}

NetworkProfile NetworkProfile::defaults() {
  NetworkProfile n;
  // nccl-tests all_reduce on one 8xA100 node reaches 235 GB/s bus bandwidth of 300 GB/s NVLink (78%)
  // for large messages (validation/collectives/nccl-tests.json); ~5 us per ring step is what
  // its 1-8 MiB points leave after the bandwidth term.
  n.intra_node = {0.78, Seconds(5e-6)};
  // InfiniBand HDR/NDR: NCCL's inter-node bus bandwidth is ~90% of line rate; network and proxy
  // latency ~10 us per step.
  n.inter_node = {0.90, Seconds(10e-6)};
  return n;
}

double LinkEfficiency::efficiency(CollectiveOp op, Bytes size) const {
  const std::vector<EfficiencyPoint>& curve = by_size[static_cast<size_t>(op)];
  if (curve.empty()) return bandwidth_efficiency;
  const double s = size.value();
  if (s <= curve.front().size_bytes) return curve.front().efficiency;
  if (s >= curve.back().size_bytes) return curve.back().efficiency;
  const auto above = std::upper_bound(curve.begin(), curve.end(), s,
                                      [](double v, const EfficiencyPoint& p) { return v < p.size_bytes; });
  const EfficiencyPoint& hi = *above;
  const EfficiencyPoint& lo = *(above - 1);
  const double t = std::log(s / lo.size_bytes) / std::log(hi.size_bytes / lo.size_bytes);
  return lo.efficiency + t * (hi.efficiency - lo.efficiency);
}

bool LinkEfficiency::size_dependent() const {
  return std::any_of(by_size.begin(), by_size.end(), [](const auto& curve) { return !curve.empty(); });
}

namespace {

// A size that reads back as exactly `bytes`: "64 MiB" where that is exact, else "1000003 B".
std::string exact_bytes(double bytes) {
  const std::string readable = format_bytes(Bytes(bytes));
  Bytes back;
  if (parse_bytes(readable, back) && back.value() == std::round(bytes)) return readable;
  return fmt::format("{:.0f} B", bytes);
}

void read_efficiency(ObjectReader& r, OpEfficiency& e) {
  e.max_efficiency = r.number("max_efficiency", e.max_efficiency, 1e-6, 1.0);
  e.half_flops = r.number("half_flops", e.half_flops, 0.0, 1e18);
  e.memory_efficiency = r.number("memory_efficiency", e.memory_efficiency, 1e-6, 1.0);
  r.finish();
}

// "by_size": {"all_reduce": [{"size": "1 MiB", "efficiency": 0.3}, ...], ...}: sizes strictly
// increasing, efficiencies in (0, 1].
void read_curves(ObjectReader& r, LinkEfficiency& l) {
  for (int o = 0; o < COLLECTIVE_OP_COUNT; ++o) {
    const std::string op(to_string(static_cast<CollectiveOp>(o)));
    const Json* points = r.raw(op);
    if (points == nullptr) continue;
    if (!points->is_array() || points->empty()) {
      r.problem(op, fmt::format("expected a non-empty array of {{\"size\": ..., \"efficiency\": ...}} points, found {}",
                                describe_json(*points)));
      continue;
    }
    std::vector<EfficiencyPoint>& curve = l.by_size[static_cast<size_t>(o)];
    for (size_t i = 0; i < points->size(); ++i) {
      ObjectReader pr((*points)[i], r.file(), append_pointer(r.pointer_of(op), i), r.diagnostics());
      EfficiencyPoint p;
      p.size_bytes = pr.bytes("size", Bytes(0)).value();
      p.efficiency = pr.number("efficiency", 1.0, 1e-6, 1.0);
      if (p.size_bytes <= 0) {
        pr.problem("size", "expected a positive size");
      } else if (!curve.empty() && p.size_bytes <= curve.back().size_bytes) {
        pr.problem("size", fmt::format("expected sizes in increasing order, found {} after {}",
                                       format_bytes(Bytes(p.size_bytes)), format_bytes(Bytes(curve.back().size_bytes))));
      }
      pr.finish();
      curve.push_back(p);
    }
  }
  r.finish();
}

// "gemm_tiles": [[256, 128], [128, 128], ...] (or one [m, n] pair with `single`): positive tile sizes.
std::vector<GemmTile> read_tiles(ObjectReader& r, std::string_view key, bool single = false) {
  const Json* node = r.raw(key);
  std::vector<GemmTile> tiles;
  auto pair = [&](const Json& j) {
    if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || !j[1].is_number_integer() ||
        j[0].get<int64_t>() < 1 || j[1].get<int64_t>() < 1 || j[0].get<int64_t>() > 4096 || j[1].get<int64_t>() > 4096) {
      r.problem(key, fmt::format("expected {}[m, n] tile sizes (integers 1-4096), found {}", single ? "" : "an array of ",
                                 describe_json(*node)));
      return false;
    }
    tiles.push_back({static_cast<int>(j[0].get<int64_t>()), static_cast<int>(j[1].get<int64_t>())});
    return true;
  };
  if (node == nullptr) return tiles;
  if (single) {
    pair(*node);
    return tiles;
  }
  if (!node->is_array()) {
    r.problem(key, fmt::format("expected an array of [m, n] tile sizes, found {}", describe_json(*node)));
    return tiles;
  }
  for (const Json& j : *node) {
    if (!pair(j)) break;
  }
  return tiles;
}

// "sparse": {"structured_2_4_scale": 0.85, "unstructured": [{"sparsity": 0.9, "efficiency": 0.05}, ...]}:
// the scale in (0, 1], sparsities in [0, 1) strictly increasing, efficiencies in (0, 1].
void read_sparse_kernels(ObjectReader& r, SparseKernels& k) {
  k.structured_2_4_scale = r.number("structured_2_4_scale", k.structured_2_4_scale, 1e-6, 1.0);
  if (const Json* points = r.raw("unstructured")) {
    if (!points->is_array() || points->empty()) {
      r.problem("unstructured", fmt::format("expected a non-empty array of {{\"sparsity\": ..., \"efficiency\": ...}} "
                                            "points, found {}",
                                            describe_json(*points)));
    } else {
      std::vector<SparsityPoint> curve;
      for (size_t i = 0; i < points->size(); ++i) {
        ObjectReader pr((*points)[i], r.file(), append_pointer(r.pointer_of("unstructured"), i), r.diagnostics());
        SparsityPoint p;
        p.sparsity = pr.number("sparsity", 0.0, 0.0, 0.999999);
        p.efficiency = pr.number("efficiency", 1.0, 1e-6, 1.0);
        if (!curve.empty() && p.sparsity <= curve.back().sparsity) {
          pr.problem("sparsity", fmt::format("expected sparsities in increasing order, found {:g} after {:g}", p.sparsity,
                                             curve.back().sparsity));
        }
        pr.finish();
        curve.push_back(p);
      }
      k.unstructured = curve;
    }
  }
  r.finish();
}

void read_link(ObjectReader& r, LinkEfficiency& l) {
  l.bandwidth_efficiency = r.number("bandwidth_efficiency", l.bandwidth_efficiency, 1e-6, 1.0);
  l.step_latency = r.duration("step_latency", l.step_latency);
  if (auto curves = r.object("by_size")) read_curves(*curves, l);
  r.finish();
}

FittedOn read_fitted_on(ObjectReader& r) {
  FittedOn f;
  f.gpu = r.string("gpu", "");
  f.cuda = r.string("cuda", "");
  f.nccl = r.string("nccl", "");
  f.framework = r.string("framework", "");
  r.finish();
  return f;
}

Json fitted_on_json(const FittedOn& f) {
  Json j = Json::object();
  if (!f.gpu.empty()) j["gpu"] = f.gpu;
  if (!f.cuda.empty()) j["cuda"] = f.cuda;
  if (!f.nccl.empty()) j["nccl"] = f.nccl;
  if (!f.framework.empty()) j["framework"] = f.framework;
  return j;
}

}  // namespace

Profile Profile::from_json(ObjectReader& r) { return from_json(r, Profile{}); }

Profile Profile::from_json(ObjectReader& r, const Profile& base) {
  Profile p = base;
  const std::string schema = r.string("schema", "trainsim.profile/1");
  if (schema != "trainsim.profile/1") {
    r.problem("schema", fmt::format("expected \"trainsim.profile/1\", found \"{}\"", schema));
  }
  p.device.source = r.file();
  p.network.source = r.file();
  if (auto f = r.object("fitted_on")) {
    p.device.fitted_on = read_fitted_on(*f);
  } else if (const Json* fit = r.raw("fit"); fit != nullptr && fit->is_object() && fit->contains("gpu") &&
                                              (*fit)["gpu"].is_string()) {
    p.device.fitted_on = FittedOn{(*fit)["gpu"].get<std::string>(), "", "", ""};  // calibrate before fitted_on
  }
  if (auto dev = r.object("device")) {
    if (auto ops = dev->object("ops")) {
      for (int c = 0; c < OP_CLASS_COUNT; ++c) {
        if (auto e = ops->object(to_string(static_cast<OpClass>(c)))) read_efficiency(*e, p.device.ops[static_cast<size_t>(c)]);
      }
      ops->finish();
    }
    p.device.kernel_overhead = dev->duration("kernel_overhead", p.device.kernel_overhead);
    p.device.host_overhead_per_kernel = dev->duration("host_overhead_per_kernel", p.device.host_overhead_per_kernel);
    p.device.step_host_latency = dev->duration("step_host_latency", p.device.step_host_latency);
    p.device.flash_head_dim_overhead = dev->number("flash_head_dim_overhead", p.device.flash_head_dim_overhead, 0.0, 4096.0);
    if (auto scale = dev->object("gemm_precision_scale")) {
      for (int i = 0; i < PRECISION_COUNT; ++i) {
        double& v = p.device.gemm_precision_scale[static_cast<size_t>(i)];
        v = scale->number(to_string(static_cast<Precision>(i)), v, 1e-6, 10.0);
      }
      scale->finish();
    }
    if (dev->has("gemm_tiles")) p.device.gemm_tiles = read_tiles(*dev, "gemm_tiles");
    if (dev->has("gemm_full_tile")) {
      const std::vector<GemmTile> full = read_tiles(*dev, "gemm_full_tile", true);
      if (!full.empty()) p.device.gemm_full_tile = full.front();
    }
    if (auto sparse = dev->object("sparse")) read_sparse_kernels(*sparse, p.device.sparse);
    if (const Json* notes = dev->raw("sources")) {
      if (notes->is_object()) {
        p.device.sources.clear();
        for (const auto& [key, value] : notes->items()) {
          p.device.sources.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
        }
      } else {
        dev->problem("sources", fmt::format("expected an object of \"constant\": \"source\" strings, found {}",
                                            describe_json(*notes)));
      }
    }
    dev->finish();
  }
  if (auto net = r.object("network")) {
    if (auto l = net->object("intra_node")) read_link(*l, p.network.intra_node);
    if (auto l = net->object("inter_node")) read_link(*l, p.network.inter_node);
    net->finish();
  }
  r.finish({"source", "fit", "calibration_run", "stack_fit"});  // sim/plan/calibration_run.hpp, stack_fit.hpp
  return p;
}

Json Profile::to_json() const {
  Json j;
  j["schema"] = "trainsim.profile/1";
  if (!device.fitted_on.empty()) j["fitted_on"] = fitted_on_json(device.fitted_on);
  Json ops = Json::object();
  for (int c = 0; c < OP_CLASS_COUNT; ++c) {
    const OpEfficiency& e = device.ops[static_cast<size_t>(c)];
    ops[std::string(to_string(static_cast<OpClass>(c)))] = {
        {"max_efficiency", e.max_efficiency}, {"half_flops", e.half_flops}, {"memory_efficiency", e.memory_efficiency}};
  }
  j["device"] = {{"ops", ops}, {"kernel_overhead", format_duration(device.kernel_overhead)}};
  if (device.host_overhead_per_kernel.value() > 0) {
    j["device"]["host_overhead_per_kernel"] = format_duration(device.host_overhead_per_kernel);
  }
  if (device.step_host_latency.value() > 0) {
    j["device"]["step_host_latency"] = format_duration(device.step_host_latency);
  }
  if (device.flash_head_dim_overhead > 0) j["device"]["flash_head_dim_overhead"] = device.flash_head_dim_overhead;
  Json scale = Json::object();
  for (int i = 0; i < PRECISION_COUNT; ++i) {
    scale[std::string(to_string(static_cast<Precision>(i)))] = device.gemm_precision_scale[static_cast<size_t>(i)];
  }
  j["device"]["gemm_precision_scale"] = scale;
  Json tiles = Json::array();
  for (const GemmTile& t : device.gemm_tiles) tiles.push_back({t.m, t.n});
  j["device"]["gemm_tiles"] = tiles;
  j["device"]["gemm_full_tile"] = {device.gemm_full_tile.m, device.gemm_full_tile.n};
  Json unstructured = Json::array();
  for (const SparsityPoint& p : device.sparse.unstructured) {
    unstructured.push_back({{"sparsity", p.sparsity}, {"efficiency", p.efficiency}});
  }
  j["device"]["sparse"] = {{"structured_2_4_scale", device.sparse.structured_2_4_scale}, {"unstructured", unstructured}};
  if (!device.sources.empty()) {
    Json notes = Json::object();
    for (const auto& [key, value] : device.sources) notes[key] = value;
    j["device"]["sources"] = notes;
  }
  auto link = [](const LinkEfficiency& l) {
    Json out{{"bandwidth_efficiency", l.bandwidth_efficiency}, {"step_latency", format_duration(l.step_latency)}};
    if (l.size_dependent()) {
      Json curves = Json::object();
      for (int o = 0; o < COLLECTIVE_OP_COUNT; ++o) {
        const std::vector<EfficiencyPoint>& curve = l.by_size[static_cast<size_t>(o)];
        if (curve.empty()) continue;
        Json points = Json::array();
        for (const EfficiencyPoint& p : curve) {
          points.push_back({{"size", exact_bytes(p.size_bytes)}, {"efficiency", p.efficiency}});
        }
        curves[std::string(to_string(static_cast<CollectiveOp>(o)))] = points;
      }
      out["by_size"] = curves;
    }
    return out;
  };
  j["network"] = {{"intra_node", link(network.intra_node)}, {"inter_node", link(network.inter_node)}};
  return j;
}

namespace {
double operand_ratio(const GemmTile& t) { return double(t.m) * t.n / (t.m + t.n); }
}  // namespace

TileChoice best_tile(double m, double n, double count, int sms, const DeviceProfile& profile) {
  TRAINSIM_CHECK(m > 0 && n > 0 && count > 0 && sms > 0 && !profile.gemm_tiles.empty(), "best_tile needs a shape and tiles");
  const double full = operand_ratio(profile.gemm_full_tile);
  TileChoice best;
  best.utilization = -1;
  for (const GemmTile& t : profile.gemm_tiles) {
    TileChoice c;
    c.tile = t;
    c.tiles = count * std::ceil(m / t.m) * std::ceil(n / t.n);
    c.waves = std::ceil(c.tiles / sms);
    c.utilization = count * m * n / (c.waves * sms * t.m * t.n) * std::min(1.0, operand_ratio(t) / full);
    if (c.utilization > best.utilization) best = c;
  }
  return best;
}

}  // namespace trainsim::core
