#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/layer_graph.hpp"
#include "models/model_spec.hpp"
#include "sim/cli/commands.hpp"
#include "sim/core/device.hpp"
#include "sim/core/stack.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {
namespace {

double tflops(const core::GpuSpec& g, core::Precision p) { return g.peak(p).value() / 1e12; }

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

int describe_gpus(Format format, std::ostream& out) {
  if (format == Format::JSON) {
    core::Json list = core::Json::array();
    for (const core::GpuSpec& g : core::gpu_catalog()) {
      core::Json peaks;
      for (int p = 0; p < core::PRECISION_COUNT; ++p) {
        peaks[std::string(core::to_string(static_cast<core::Precision>(p)))] = tflops(g, static_cast<core::Precision>(p));
      }
      list.push_back({{"name", g.name},
                      {"dense_tflops", peaks},
                      {"hbm_capacity_bytes", static_cast<int64_t>(g.hbm_capacity.value())},
                      {"hbm_bandwidth_bytes_per_s", g.hbm_bandwidth.value()},
                      {"nvlink_bandwidth_bytes_per_s", g.nvlink_bandwidth.value()},
                      {"pcie_bandwidth_bytes_per_s", g.pcie_bandwidth.value()},
                      {"sm_count", g.sm_count},
                      {"sparse_tensor_cores", g.sparse_tensor_cores},
                      {"nvlink_sharp", g.nvlink_sharp},
                      {"source", g.source}});
    }
    out << list.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (format == Format::CSV) {
    out << "gpu,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,hbm_capacity_bytes,hbm_bandwidth_bytes_per_s,"
           "nvlink_bandwidth_bytes_per_s,pcie_bandwidth_bytes_per_s,sm_count,sparse_tensor_cores,source,nvlink_sharp\n";
    for (const core::GpuSpec& g : core::gpu_catalog()) {
      out << fmt::format("{},{:g},{:g},{:g},{:g},{:g},{:.0f},{:.0f},{:.0f},{:.0f},{},{},{},{}\n", g.name,
                         tflops(g, core::Precision::FP32), tflops(g, core::Precision::TF32),
                         tflops(g, core::Precision::BF16), tflops(g, core::Precision::FP16),
                         tflops(g, core::Precision::FP8), g.hbm_capacity.value(), g.hbm_bandwidth.value(),
                         g.nvlink_bandwidth.value(), g.pcie_bandwidth.value(), g.sm_count, g.sparse_tensor_cores,
                         csv_field(g.source), g.nvlink_sharp);
    }
    return 0;
  }
  out << fmt::format("{:<16}{:>8}{:>8}{:>8}{:>8}{:>8}{:>10}{:>12}{:>12}{:>12}{:>6}{:>8}{:>6}\n", "gpu", "fp32", "tf32",
                     "bf16", "fp16", "fp8", "hbm", "hbm_bw", "nvlink_bw", "pcie_bw", "sms", "sparse", "nvls");
  out << fmt::format("{:<16}{:>40}{:>10}{:>12}{:>12}{:>12}\n", "", "dense TFLOP/s (0: unsupported)", "", "", "per dir", "per dir");
  for (const core::GpuSpec& g : core::gpu_catalog()) {
    out << fmt::format("{:<16}{:>8g}{:>8g}{:>8g}{:>8g}{:>8g}{:>10}{:>12}{:>12}{:>12}{:>6}{:>8}{:>6}\n", g.name,
                       tflops(g, core::Precision::FP32), tflops(g, core::Precision::TF32),
                       tflops(g, core::Precision::BF16), tflops(g, core::Precision::FP16),
                       tflops(g, core::Precision::FP8), core::format_bytes(g.hbm_capacity),
                       core::format_bandwidth(g.hbm_bandwidth),
                       g.nvlink_bandwidth.value() > 0 ? core::format_bandwidth(g.nvlink_bandwidth) : std::string("none"),
                       core::format_bandwidth(g.pcie_bandwidth), g.sm_count, g.sparse_tensor_cores ? "2:4" : "no",
                       g.nvlink_sharp ? "yes" : "no");
  }
  out << "\nsources:\n";
  for (const core::GpuSpec& g : core::gpu_catalog()) out << fmt::format("  {}: {}\n", g.name, g.source);
  out << "\nnvls: NVLink SHARP on its NVSwitch systems (cluster.intra_node.nvls needs it; docs/network.md).\n";
  out << "A scenario may also describe a GPU: cluster.gpu {\"base\": NAME, ...figures} or every figure (docs/scenario.md).\n";
  return 0;
}

int describe_models(Format format, std::ostream& out) {
  constexpr int64_t PARAMS_AT_SEQUENCE = 2048;  // learned position embeddings depend on it
  if (format == Format::JSON) {
    core::Json list = core::Json::array();
    for (const models::ModelSpec& m : models::model_catalog()) {
      core::Json j = m.to_json();
      j["parameters"] = m.parameter_count(PARAMS_AT_SEQUENCE);
      list.push_back(j);
    }
    for (const auto& g : models::layer_graph_catalog()) {
      list.push_back({{"family", "layer_graph"}, {"name", g->name}, {"layers", g->layers.size()},
                      {"input", models::to_string(g->input)}, {"parameters", g->parameter_count()},
                      {"forward_flops_per_sample", g->forward_flops_per_sample()}, {"source", g->source}});
    }
    out << list.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (format == Format::CSV) {
    out << "model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,activation,experts,parameters\n";
    for (const models::ModelSpec& m : models::model_catalog()) {
      out << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden,
                         m.vocab, m.activation == models::Activation::GELU ? "gelu" : "swiglu", m.experts,
                         m.parameter_count(PARAMS_AT_SEQUENCE));
    }
    // Layer-graph models (docs/cnn.md): name, resolved layers and parameters; the transformer columns empty.
    for (const auto& g : models::layer_graph_catalog()) {
      out << fmt::format("{},{},,,,,,,,{:.0f}\n", g->name, g->layers.size(), g->parameter_count());
    }
    return 0;
  }
  out << fmt::format("{:<14}{:>7}{:>7}{:>7}{:>9}{:>8}{:>8}{:>9}{:>9}{:>10}\n", "model", "layers", "hidden", "heads",
                     "kv_heads", "ffn", "vocab", "mlp", "experts", "params");
  for (const models::ModelSpec& m : models::model_catalog()) {
    out << fmt::format("{:<14}{:>7}{:>7}{:>7}{:>9}{:>8}{:>8}{:>9}{:>9}{:>9.1f}B\n", m.name, m.layers, m.hidden, m.heads,
                       m.kv_heads, m.ffn_hidden, m.vocab, m.activation == models::Activation::GELU ? "gelu" : "swiglu",
                       m.experts, static_cast<double>(m.parameter_count(PARAMS_AT_SEQUENCE)) / 1e9);
  }
  out << fmt::format("\n{:<14}{:>7}{:>16}{:>10}{:>16}  {}\n", "layer graph", "layers", "input", "params",
                     "GFLOP/sample", "source (docs/cnn.md)");
  for (const auto& g : models::layer_graph_catalog()) {
    out << fmt::format("{:<14}{:>7}{:>16}{:>9.1f}M{:>16.2f}  {}\n", g->name, g->layers.size(), models::to_string(g->input),
                       g->parameter_count() / 1e6, g->forward_flops_per_sample() / 1e9, g->source.substr(0, 60));
  }
  return 0;
}

}  // namespace

int describe_command(const DescribeArgs& args, std::ostream& out) {
  if (args.what == "gpus") return describe_gpus(args.format, out);
  if (args.what == "models") return describe_models(args.format, out);
  if (args.what == "profile") {
    if (args.format == Format::CSV) {
      throw core::InputError("--format", "", "describe profile prints a JSON profile; csv applies to gpus and models");
    }
    core::Profile profile;
    if (!args.gpu.empty()) {
      const core::GpuSpec* gpu = core::find_gpu(args.gpu);
      if (gpu == nullptr) {
        const std::string hint = core::closest_match(args.gpu, core::gpu_names());
        throw core::InputError("--gpu", "", fmt::format("unknown GPU \"{}\"{}; `trainsim describe gpus` lists them", args.gpu,
                                                        hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
      }
      profile.device = core::DeviceProfile::defaults_for(gpu->name);
    }
    if (!args.stack.empty() || args.compile) {
      const std::optional<core::Stack> named = core::stack_named(args.stack);
      if (!named) {
        throw core::InputError("--stack", "", fmt::format("expected one of {}, found \"{}\"{}", fmt::join(core::stack_names(), ", "),
                                                          args.stack, args.compile ? " (--compile needs a --stack)" : ""));
      }
      const core::Stack stack = *named;
      if (args.compile && stack == core::Stack::MEGATRON) {
        throw core::InputError("--compile", "", "torch.compile is a PyTorch stack's option, not megatron's");
      }
      core::apply_stack(profile.device, stack, args.compile, args.gpu);
    }
    core::Json j = profile.to_json();
    j["source"] = profile.device.source;
    out << j.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
    return 0;
  }
  throw core::InputError("describe", "", fmt::format("expected gpus, models or profile, found \"{}\"", args.what));
}

}  // namespace trainsim::cli
