#include "models/compression.hpp"

#include "models/accounting.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <tuple>

namespace trainsim::models {
namespace {

constexpr double BITS_PER_BYTE = 8;
constexpr double SCALE_BYTES = 4;  // one fp32 scale
constexpr double FP32_BYTES = 4;   // 1-bit Adam's momentum and error buffers are fp32 (DeepSpeed)
// PyTorch's PowerSGDState.min_compression_rate default: a matrix is compressed only when
// m·n >= 2·(m + n)·r, else it goes with the uncompressed tensors.
constexpr double POWERSGD_MIN_COMPRESSION_RATE = 2;
constexpr int64_t MAX_RANK = 1 << 20;
constexpr int64_t MAX_WARMUP_STEPS = int64_t{1} << 50;
constexpr int64_t MAX_SCALE_BLOCK = int64_t{1} << 40;

const std::vector<std::string> METHODS = {"none", "fp16", "bf16", "fp8", "int8", "topk", "powersgd", "onebit_adam"};
constexpr double MIN_TOPK_RATIO = 1e-6;

const std::vector<std::string> KEYS = {"ratio", "rank", "warmup_steps", "error_feedback", "index_bytes", "scale_block"};

CompressionMethod method_from(const std::string& s) {
  for (size_t i = 0; i < METHODS.size(); ++i) {
    if (METHODS[i] == s) return static_cast<CompressionMethod>(i);
  }
  return CompressionMethod::NONE;
}

// Which keys a method takes (besides method, warmup_steps and error_feedback).
bool takes(CompressionMethod m, const std::string& key) {
  if (key == "ratio" || key == "index_bytes") return m == CompressionMethod::TOPK;
  if (key == "rank") return m == CompressionMethod::POWERSGD;
  if (key == "scale_block") return m == CompressionMethod::FP8 || m == CompressionMethod::INT8;
  return true;
}

std::string names_taking(const std::string& key) {
  if (key == "ratio" || key == "index_bytes") return "\"topk\"";
  if (key == "rank") return "\"powersgd\"";
  return "\"fp8\" and \"int8\"";
}

// A task step on the data-parallel stream.
CompressionStep compute_step(std::string name, double bytes, double flops = 0) {
  CompressionStep s;
  s.collective = false;
  s.op_class = core::OpClass::ELEMENTWISE;
  s.bytes = bytes;
  s.flops = flops;
  s.name = std::move(name);
  return s;
}

CompressionStep collective_step(std::string name, core::CollectiveOp op, double bytes) {
  CompressionStep s;
  s.collective = true;
  s.op = op;
  s.bytes = bytes;
  s.name = std::move(name);
  return s;
}

// PowerSGD's product over one group of equal matrices: count x [rows x inner]·[inner x cols]. One
// side is r wide: about r/2 FLOPs per fp32 byte, a bandwidth-bound skinny GEMM that cuBLAS runs
// with GEMV-like kernels, so no GemmShape is given (the tile model's 128-wide tiles would waste
// 128/r of the work): the compute model takes the slower of its FLOPs and its HBM bytes.
CompressionStep gemm_step(std::string name, double rows, double cols, double inner, double count, double g) {
  CompressionStep s;
  s.collective = false;
  s.op_class = core::OpClass::GEMM;
  s.flops = 2 * rows * cols * inner * count;
  s.bytes = (rows * inner + inner * cols + rows * cols) * g * count;
  s.name = std::move(name);
  return s;
}

// The matrices PowerSGD compresses (PyTorch's min_compression_rate), grouped by shape in a fixed
// order so that each group is one task.
struct MatrixGroup {
  double rows = 0, cols = 0, count = 0;
};
std::vector<MatrixGroup> compressed_groups(const std::vector<WeightMatrix>& matrices, int rank) {
  std::map<std::pair<double, double>, double> groups;
  for (const WeightMatrix& w : matrices) {
    if (w.rows * w.cols < POWERSGD_MIN_COMPRESSION_RATE * (w.rows + w.cols) * rank) continue;
    groups[{w.rows, w.cols}] += w.count;
  }
  std::vector<MatrixGroup> out;
  for (const auto& [shape, count] : groups) out.push_back({shape.first, shape.second, count});
  return out;
}

std::string label(const CompressionConfig& c) { return to_string(c.method); }

}  // namespace

std::string to_string(CompressionMethod m) {
  const size_t i = static_cast<size_t>(m);
  return i < METHODS.size() ? METHODS[i] : "?";
}

double CompressionConfig::quantized_bytes() const {
  switch (method) {
    case CompressionMethod::FP16:
    case CompressionMethod::BF16: return 2;
    case CompressionMethod::FP8:
    case CompressionMethod::INT8: return 1;
    default: return 0;
  }
}

CompressionConfig CompressionConfig::from_json(core::ObjectReader& r) {
  CompressionConfig c;
  c.method = method_from(r.choice("method", "none", METHODS));
  if (!c.enabled()) {
    r.finish({"ratio", "rank", "warmup_steps", "error_feedback", "index_bytes", "scale_block"});
    return c;
  }
  for (const std::string& key : KEYS) {
    if (r.has(key) && !takes(c.method, key)) {
      r.problem(key, fmt::format("only {} take{} \"{}\", found method \"{}\"", names_taking(key),
                                 key == "scale_block" ? "" : "s", key, to_string(c.method)));
      r.raw(key);
    }
  }
  if (c.method == CompressionMethod::TOPK) {
    if (const core::Json* v = r.raw("ratio")) {
      // At least one element in a million: DGC's 0.001 is 1,000 times that, and below it a bucket of
      // a few million gradients sends a handful of values (1e-300 sent none and still "trained").
      if (!v->is_number() || !(v->get<double>() >= MIN_TOPK_RATIO && v->get<double>() <= 1)) {
        r.problem("ratio", fmt::format("expected the fraction of the gradient elements top-k sends, a number in "
                                       "[{:g}, 1] (0.01 sends 1%), found {}",
                                       MIN_TOPK_RATIO, core::describe_json(*v)));
      } else {
        c.ratio = v->get<double>();
      }
    }
    if (const core::Json* v = r.raw("index_bytes")) {
      if (!v->is_number_integer() || (v->get<int64_t>() != 4 && v->get<int64_t>() != 8)) {
        r.problem("index_bytes",
                  fmt::format("expected 4 (int32 indices) or 8 (int64), found {}", core::describe_json(*v)));
      } else {
        c.index_bytes = static_cast<double>(v->get<int64_t>());
      }
    }
  }
  if (c.method == CompressionMethod::POWERSGD && r.has("rank")) {
    const core::Json* v = r.raw("rank");
    if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > MAX_RANK) {
      r.problem("rank", fmt::format("expected PowerSGD's approximation rank, an integer >= 1 (Vogels et al. use 1-4), "
                                    "found {}",
                                    core::describe_json(*v)));
    } else {
      c.rank = static_cast<int>(v->get<int64_t>());
    }
  }
  if ((c.method == CompressionMethod::FP8 || c.method == CompressionMethod::INT8) && r.has("scale_block")) {
    c.scale_block = r.integer("scale_block", c.scale_block, 1, MAX_SCALE_BLOCK);
  }
  if (c.method == CompressionMethod::ONEBIT_ADAM && !r.has("warmup_steps")) {
    r.problem("warmup_steps", "1-bit Adam needs a full-precision warm-up before it compresses (DeepSpeed's "
                              "freeze_step; Tang et al. warm up for 15-25% of the steps): give warmup_steps, "
                              "an integer >= 0");
  } else {
    c.warmup_steps = r.integer("warmup_steps", 0, 0, MAX_WARMUP_STEPS);
  }
  const bool default_feedback = c.method == CompressionMethod::TOPK || c.method == CompressionMethod::POWERSGD ||
                                c.method == CompressionMethod::ONEBIT_ADAM;
  c.error_feedback = r.boolean("error_feedback", default_feedback);
  if (c.method == CompressionMethod::ONEBIT_ADAM && !c.error_feedback) {
    r.problem("error_feedback", "1-bit Adam always keeps its error-compensation buffers (it does not converge "
                                "without them): remove \"error_feedback\": false");
  }
  r.finish();
  return c;
}

core::Json CompressionConfig::to_json() const {
  core::Json j;
  j["method"] = to_string(method);
  if (!enabled()) return j;
  if (method == CompressionMethod::TOPK) {
    j["ratio"] = ratio;
    j["index_bytes"] = static_cast<int64_t>(index_bytes);
  }
  if (method == CompressionMethod::POWERSGD) j["rank"] = rank;
  if (method == CompressionMethod::FP8 || method == CompressionMethod::INT8) j["scale_block"] = scale_block;
  j["warmup_steps"] = warmup_steps;
  j["error_feedback"] = error_feedback;
  return j;
}

std::vector<WeightMatrix> compressed_matrices(const ModelSpec& m, const ParallelismConfig& p, LayerKind kind) {
  return layer_pruned_matrices(m, p, kind);
}

std::vector<WeightMatrix> embedding_matrices(const ModelSpec& m, const ParallelismConfig& p) {
  return {{static_cast<double>(m.vocab) / p.tensor, static_cast<double>(m.hidden)}};
}

std::vector<WeightMatrix> head_matrices(const ModelSpec& m, const ParallelismConfig& p) {
  if (m.tied_embeddings && p.pipeline == 1) return {};
  return {{static_cast<double>(m.vocab) / p.tensor, static_cast<double>(m.hidden)}};
}

void check_compression(const CompressionConfig& c, const ModelSpec& m, const ParallelismConfig& p,
                       const PruningConfig& pruning, const std::string& file, core::Diagnostics& diag) {
  if (!c.enabled()) return;
  const std::string base = "/optimizations/gradient_compression";
  const std::string method = base + "/method";
  if (c.method == CompressionMethod::ONEBIT_ADAM && p.zero_stage >= 1) {
    diag.add(file, method,
             fmt::format("1-bit Adam compresses the whole momentum on every rank, and DeepSpeed runs it without ZeRO "
                         "only (its 1-bit optimizers are not compatible with ZeRO), found parallelism.zero_stage {}: "
                         "use zero_stage 0, or a quantization method",
                         p.zero_stage));
  }
  if (p.hybrid_shard()) {
    diag.add(file, method,
             fmt::format("gradient compression with hybrid sharding (parallelism.shard_group {}) is not modelled: the "
                         "shard's all-reduce across replicas would stay uncompressed; remove shard_group or "
                         "gradient_compression",
                         p.shard_group));
  }
  if ((c.method == CompressionMethod::TOPK || c.method == CompressionMethod::POWERSGD) && p.zero_stage >= 2) {
    diag.add(file, method,
             fmt::format("\"{}\" cannot feed ZeRO-{}'s reduce-scatter: a gradient shard cannot be reduced from the other "
                         "ranks' {} without every rank rebuilding the whole gradient, and the full-size error-feedback "
                         "residual undoes the gradient sharding; no framework implements it (PyTorch's PowerSGD is a "
                         "DDP hook, FSDP's hooks are fp16/bf16 casts): use zero_stage 0 or 1, or a quantization method "
                         "(fp16, bf16, fp8, int8)",
                         to_string(c.method), p.zero_stage,
                         c.method == CompressionMethod::TOPK ? "top-k sets" : "low-rank factors"));
  }
  if (c.method == CompressionMethod::POWERSGD && pruning.enabled() &&
      pruning.communication != SparseCommunication::DENSE) {
    diag.add(file, method,
             fmt::format("PowerSGD factors each gradient matrix, but optimizations.pruning.communication \"{}\" sends a "
                         "compacted array of kept values, not a matrix: use pruning communication \"dense\"",
                         to_string(pruning.communication)));
  }
  if (c.method == CompressionMethod::POWERSGD) {
    // The smallest dimension of any matrix a rank holds (the rank's shard of each linear layer, the
    // embedding and the output layer).
    std::vector<std::pair<std::string, WeightMatrix>> named;
    const char* layer_names[] = {"qkv", "attention projection", "mlp up", "mlp down"};
    std::vector<LayerKind> kinds = {LayerKind::DENSE};
    if (m.is_moe()) kinds.push_back(LayerKind::MOE);
    for (LayerKind kind : kinds) {
      const std::vector<WeightMatrix> ws = compressed_matrices(m, p, kind);
      for (size_t i = 0; i < ws.size(); ++i) {
        const std::string name = i < 2 ? layer_names[i] : ws[i].expert ? (i % 2 == 0 ? "expert up" : "expert down")
                                                                       : layer_names[2 + i % 2];
        named.push_back({name, ws[i]});
      }
    }
    for (const WeightMatrix& w : embedding_matrices(m, p)) named.push_back({"word embedding", w});
    for (const WeightMatrix& w : head_matrices(m, p)) named.push_back({"output layer", w});
    const auto smallest = std::min_element(named.begin(), named.end(), [](const auto& a, const auto& b) {
      return std::min(a.second.rows, a.second.cols) < std::min(b.second.rows, b.second.cols);
    });
    if (smallest != named.end() && c.rank > std::min(smallest->second.rows, smallest->second.cols)) {
      diag.add(file, base + "/rank",
               fmt::format("PowerSGD's rank {} is larger than the {} matrix a rank holds ({:.0f} x {:.0f} under "
                           "tensor parallelism {}): the rank must be at most the smaller dimension of every matrix, "
                           "here {:.0f}",
                           c.rank, smallest->first, smallest->second.rows, smallest->second.cols, p.tensor,
                           std::min(smallest->second.rows, smallest->second.cols)));
    }
  }
}

double gradient_reduce_bytes(const TrainingConfig& t, const ParallelismConfig& p) {
  if (!p.framework_reduce()) return gradient_bytes_per_parameter();
  return p.reduce_fp32() ? 4.0 : activation_element_bytes(t.precision);
}

std::vector<std::string> compression_warnings(const CompressionConfig& c, const TrainingConfig& t,
                                              const ParallelismConfig& p) {
  std::vector<std::string> out;
  const double gradient_reduce_bytes = models::gradient_reduce_bytes(t, p);
  if (c.quantization() && c.quantized_bytes() >= gradient_reduce_bytes) {
    out.push_back(fmt::format(
        "optimizations.gradient_compression.method \"{}\" sends {:g} bytes per gradient element, but the reduction "
        "already sends {:g} (the framework's 16-bit gradient reduction): it changes nothing",
        to_string(c.method), c.quantized_bytes(), gradient_reduce_bytes));
  }
  return out;
}

double wire_bytes(core::CollectiveOp op, double bytes, int ranks) {
  return bytes * core::bus_bandwidth_factor(op, std::max(1, ranks));
}

std::vector<CompressionStep> compressed_reduction(const CompressionConfig& c, const GradientReduction& r) {
  const double N = r.elements;
  const double g = r.element_bytes;
  const double n = r.replicas;
  const std::string op_name = std::string(core::to_string(r.op));
  // Elements a rank holds after the reduction (all of them, or its shard after a reduce-scatter).
  const double out = r.op == core::CollectiveOp::REDUCE_SCATTER ? N / n : N;
  std::vector<CompressionStep> steps;
  const std::string tag = fmt::format(" ({})", label(c));
  const double feedback = c.error_feedback ? 2 * N * g : 0.0;  // read and write the residual

  if (c.quantization()) {
    const double q = c.quantized_bytes();
    if (q >= g) {  // already reduced at that width (compression_warnings says so)
      steps.push_back(collective_step("gradient " + op_name, r.op, N * g + r.index_bytes));
      return steps;
    }
    const bool scaled = c.method == CompressionMethod::FP8 || c.method == CompressionMethod::INT8;
    const double scales = scaled ? SCALE_BYTES * std::ceil(N / static_cast<double>(c.scale_block)) : 0.0;
    // Cast (read g, write q), an absmax pass for the scales, the residual.
    steps.push_back(compute_step("compress" + tag, N * (g + q) + (scaled ? N * g : 0.0) + feedback));
    steps.push_back(collective_step("gradient " + op_name + tag, r.op, N * q + scales + r.index_bytes));
    steps.push_back(compute_step("decompress" + tag, out * (q + g)));
    return steps;
  }

  switch (c.method) {
    case CompressionMethod::TOPK: {
      const double k = c.ratio * N;
      const double entry = g + c.index_bytes;
      // Accumulate the residual (read gradient and residual, write the sum), select the k largest
      // magnitudes (torch.topk reads the tensor about twice), write values and indices, and keep
      // the rest as the new residual.
      const double compress = (c.error_feedback ? 3 * N * g + N * g : 0.0) + 2 * N * g + k * entry;
      steps.push_back(compute_step("compress" + tag, compress));
      steps.push_back(collective_step("gradient all_gather" + tag, core::CollectiveOp::ALL_GATHER, n * k * entry));
      // Zero the dense result and scatter-add the n contributions (read-modify-write of the
      // elements the rank keeps).
      steps.push_back(compute_step("decompress" + tag, out * g + n * k * entry + n * k * 2 * g * (out / N)));
      return steps;
    }
    case CompressionMethod::POWERSGD: {
      const std::vector<MatrixGroup> groups = compressed_groups(r.matrices, c.rank);
      double matrix_elements = 0, p_elements = 0, q_elements = 0;
      for (const MatrixGroup& m : groups) {
        matrix_elements += m.rows * m.cols * m.count;
        p_elements += m.rows * c.rank * m.count;
        q_elements += m.cols * c.rank * m.count;
      }
      const double rest = std::max(0.0, N - matrix_elements);
      if (rest > 0) steps.push_back(collective_step("gradient " + op_name + " (uncompressed)", r.op, rest * g));
      if (groups.empty()) return steps;
      const double rk = c.rank;
      // The hook adds the residual to the bucket and keeps a copy of it (3 N g), and after the
      // approximation stores the new residual (3 N g).
      if (c.error_feedback) steps.push_back(compute_step("powersgd error feedback", 3 * N * g));
      for (const MatrixGroup& m : groups) steps.push_back(gemm_step("powersgd P = M Q", m.rows, rk, m.cols, m.count, g));
      steps.push_back(collective_step("powersgd P all_reduce", core::CollectiveOp::ALL_REDUCE, p_elements * g));
      // Gram-Schmidt on each P (m x r): column i is normalized and removed from the r - i - 1
      // columns after it, each pass reading and writing the columns it touches.
      double orth_bytes = 0, orth_flops = 0;
      for (const MatrixGroup& m : groups) {
        orth_bytes += m.rows * rk * (rk + 1) * g * m.count;
        orth_flops += 2 * m.rows * rk * rk * m.count;
      }
      steps.push_back(compute_step("powersgd orthogonalize P", orth_bytes, orth_flops));
      for (const MatrixGroup& m : groups) steps.push_back(gemm_step("powersgd Q = M^T P", m.cols, rk, m.rows, m.count, g));
      steps.push_back(collective_step("powersgd Q all_reduce", core::CollectiveOp::ALL_REDUCE, q_elements * g));
      for (const MatrixGroup& m : groups) steps.push_back(gemm_step("powersgd M = P Q^T", m.rows, m.cols, rk, m.count, g));
      if (c.error_feedback) steps.push_back(compute_step("powersgd error feedback", 3 * N * g));
      return steps;
    }
    case CompressionMethod::ONEBIT_ADAM: {
      const double bits = N / BITS_PER_BYTE;
      const double scales = SCALE_BYTES * n;
      // Worker: momentum update (read gradient, read and write the fp32 momentum), add the worker
      // error, a norm pass for the scale, write the signs and the new worker error.
      steps.push_back(compute_step("compress (1-bit)", N * (g + 5 * FP32_BYTES) + bits));
      steps.push_back(collective_step("momentum all_to_all (1-bit)", core::CollectiveOp::ALL_TO_ALL, bits + scales));
      // Server: its chunk from every rank (N/8 bits), averaged with the server error, recompressed.
      steps.push_back(compute_step("server compress (1-bit)", bits + N / n * 3 * FP32_BYTES + bits / n));
      steps.push_back(collective_step("momentum all_gather (1-bit)", core::CollectiveOp::ALL_GATHER, bits + scales));
      steps.push_back(compute_step("decompress (1-bit)", bits + N * FP32_BYTES));
      return steps;
    }
    default: break;
  }
  steps.push_back(collective_step("gradient " + op_name, r.op, N * g + r.index_bytes));
  return steps;
}

double error_feedback_bytes(const CompressionConfig& c, const GradientReduction& r) {
  if (!c.enabled()) return 0;
  const double N = r.elements;
  const double g = r.element_bytes;
  switch (c.method) {
    case CompressionMethod::ONEBIT_ADAM: return N * FP32_BYTES + N / r.replicas * FP32_BYTES;
    case CompressionMethod::POWERSGD: {
      // P and Q stay allocated between iterations (the hook's warm start reuses Q).
      double factors = 0;
      for (const MatrixGroup& m : compressed_groups(r.matrices, c.rank)) factors += (m.rows + m.cols) * c.rank * m.count;
      return (c.error_feedback ? N * g : 0.0) + factors * g;
    }
    default:
      if (!c.error_feedback) return 0;
      if (c.quantization() && c.quantized_bytes() >= g) return 0;
      return N * g;
  }
}

void set_compute_fields(const CompressionStep& step, core::Task& task) {
  task.op_class = step.op_class;
  task.flops = step.flops;
  task.bytes = step.bytes;
  task.gemm = step.gemm;
  if (step.op_class == core::OpClass::GEMM) {
    task.precision = core::Precision::FP32;
    task.has_precision = true;
  }
}

}  // namespace trainsim::models
