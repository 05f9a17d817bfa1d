#include "sim/core/device.hpp"

#include <fmt/format.h>

namespace trainsim::core {
namespace {

constexpr double TFLOPS = 1e12;
constexpr double GBPS = 1e9;

GpuSpec make_gpu(std::string name, std::array<double, PRECISION_COUNT> tflops, double hbm_gib,
                 double hbm_tbps, double nvlink_gbps, double pcie_gbps, std::string source) {
  GpuSpec g;
  g.name = std::move(name);
  for (size_t i = 0; i < tflops.size(); ++i) g.dense_peak[i] = FlopsPerSecond(tflops[i] * TFLOPS);
  g.hbm_capacity = Bytes(hbm_gib * GiB);
  g.hbm_bandwidth = BytesPerSecond(hbm_tbps * 1e12);
  g.nvlink_bandwidth = BytesPerSecond(nvlink_gbps * GBPS);
  g.pcie_bandwidth = BytesPerSecond(pcie_gbps * GBPS);
  g.source = std::move(source);
  return g;
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  // Columns: fp32, tf32, bf16, fp16, fp8 dense TFLOP/s (0: no tensor-core support for that type);
  // HBM GiB (as nvidia-smi reports the marketed size), HBM TB/s, NVLink GB/s per direction, PCIe GB/s
  // per direction (x16: Gen3 15.75, Gen4 31, Gen5 63).
  static const std::vector<GpuSpec> catalog = {
      make_gpu("V100-SXM2-32GB", {15.7, 0, 0, 125, 0}, 32, 0.9, 150, 15.75,
               "NVIDIA V100 datasheet (fp16 125 TFLOP/s, fp32 15.7); NVLink2 150 GB/s per direction"),
      make_gpu("A100-SXM4-40GB", {19.5, 156, 312, 312, 0}, 40, 1.555, 300, 31,
               "NVIDIA A100 datasheet; NVLink3 300 GB/s per direction"),
      make_gpu("A100-SXM4-80GB", {19.5, 156, 312, 312, 0}, 80, 2.039, 300, 31,
               "NVIDIA A100 80GB datasheet (HBM2e 2.039 TB/s); NVLink3 300 GB/s per direction"),
      make_gpu("H100-SXM5-80GB", {67, 494.5, 989, 989, 1979}, 80, 3.35, 450, 63,
               "NVIDIA H100 SXM5 datasheet (dense = sparse/2); NVLink4 450 GB/s per direction"),
      make_gpu("H200-SXM-141GB", {67, 494.5, 989, 989, 1979}, 141, 4.8, 450, 63,
               "NVIDIA H200 datasheet; NVLink4 450 GB/s per direction"),
      make_gpu("B200", {80, 1125, 2250, 2250, 4500}, 180, 8.0, 900, 63,
               "NVIDIA DGX B200 datasheet (180 GB usable); NVLink5 900 GB/s per direction"),
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

DeviceProfile DeviceProfile::defaults() {
  DeviceProfile p;
  // Large bf16/fp16 cuBLAS GEMMs reach 75-85% of dense peak on A100/H100; a 1 GFLOP GEMM only about
  // half of that (launch latency, wave quantization).
  p.ops[static_cast<size_t>(OpClass::GEMM)] = {0.80, 1e9, 0.80};
  // Core attention (QK^T, softmax, AV) as batched GEMMs plus memory-bound softmax/dropout: lower
  // tensor-core utilisation than plain GEMMs.
  p.ops[static_cast<size_t>(OpClass::ATTENTION)] = {0.60, 1e9, 0.80};
  // Memory-bound kernels (bias, GeLU, dropout, residual add; layer norm; embedding gather; fused
  // Adam): their FLOPs are negligible, HBM streaming reaches ~70-80% of nominal bandwidth.
  p.ops[static_cast<size_t>(OpClass::ELEMENTWISE)] = {0.50, 0, 0.75};
  p.ops[static_cast<size_t>(OpClass::NORM)] = {0.50, 0, 0.70};
  p.ops[static_cast<size_t>(OpClass::EMBEDDING)] = {0.50, 0, 0.70};
  p.ops[static_cast<size_t>(OpClass::OPTIMIZER)] = {0.50, 0, 0.80};
  p.kernel_overhead = Seconds(2e-6);
  return p;
}

NetworkProfile NetworkProfile::defaults() {
  NetworkProfile n;
  // nccl-tests all_reduce on one 8xA100 node reaches 235 GB/s bus bandwidth of 300 GB/s NVLink (78%)
  // for large messages (../shared/validation/collectives/nccl-tests.json); ~5 us per ring step is what
  // its 1-8 MiB points leave after the bandwidth term.
  n.intra_node = {0.78, Seconds(5e-6)};
  // InfiniBand HDR/NDR: NCCL's inter-node bus bandwidth is ~90% of line rate; network and proxy
  // latency ~10 us per step.
  n.inter_node = {0.90, Seconds(10e-6)};
  return n;
}

namespace {

void read_efficiency(ObjectReader& r, OpEfficiency& e) {
  e.max_efficiency = r.number("max_efficiency", e.max_efficiency, 1e-6, 1.0);
  e.half_flops = r.number("half_flops", e.half_flops, 0.0, 1e18);
  e.memory_efficiency = r.number("memory_efficiency", e.memory_efficiency, 1e-6, 1.0);
  r.finish();
}

void read_link(ObjectReader& r, LinkEfficiency& l) {
  l.bandwidth_efficiency = r.number("bandwidth_efficiency", l.bandwidth_efficiency, 1e-6, 1.0);
  l.step_latency = r.duration("step_latency", l.step_latency);
  r.finish();
}

}  // namespace

Profile Profile::from_json(ObjectReader& r) {
  Profile p;
  const std::string schema = r.string("schema", "trainsim.profile/1");
  if (schema != "trainsim.profile/1") {
    r.problem("schema", fmt::format("expected \"trainsim.profile/1\", found \"{}\"", schema));
  }
  p.device.source = r.file();
  p.network.source = r.file();
  if (auto dev = r.object("device")) {
    if (auto ops = dev->object("ops")) {
      for (int c = 0; c < OP_CLASS_COUNT; ++c) {
        if (auto e = ops->object(to_string(static_cast<OpClass>(c)))) read_efficiency(*e, p.device.ops[static_cast<size_t>(c)]);
      }
      ops->finish();
    }
    p.device.kernel_overhead = dev->duration("kernel_overhead", p.device.kernel_overhead);
    dev->finish();
  }
  if (auto net = r.object("network")) {
    if (auto l = net->object("intra_node")) read_link(*l, p.network.intra_node);
    if (auto l = net->object("inter_node")) read_link(*l, p.network.inter_node);
    net->finish();
  }
  r.finish({"source", "fit"});
  return p;
}

Json Profile::to_json() const {
  Json j;
  j["schema"] = "trainsim.profile/1";
  Json ops = Json::object();
  for (int c = 0; c < OP_CLASS_COUNT; ++c) {
    const OpEfficiency& e = device.ops[static_cast<size_t>(c)];
    ops[std::string(to_string(static_cast<OpClass>(c)))] = {
        {"max_efficiency", e.max_efficiency}, {"half_flops", e.half_flops}, {"memory_efficiency", e.memory_efficiency}};
  }
  j["device"] = {{"ops", ops}, {"kernel_overhead", format_duration(device.kernel_overhead)}};
  auto link = [](const LinkEfficiency& l) {
    return Json{{"bandwidth_efficiency", l.bandwidth_efficiency}, {"step_latency", format_duration(l.step_latency)}};
  };
  j["network"] = {{"intra_node", link(network.intra_node)}, {"inter_node", link(network.inter_node)}};
  return j;
}

}  // namespace trainsim::core
