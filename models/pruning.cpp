#include "models/pruning.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace trainsim::models {
namespace {

constexpr double BITS_PER_BYTE = 8;
// NVIDIA's 2:4 metadata: 2 bits per kept value (PTX ISA, mma.sp "Sparse matrix storage").
constexpr double METADATA_BITS_PER_KEPT_VALUE = 2;
constexpr double STRUCTURED_2_4_SPARSITY = 0.5;
constexpr int MAX_BLOCK_SIZE = 128;
constexpr int64_t MAX_START_ITERATION = int64_t{1} << 50;

const std::vector<std::string> METHODS = {"none", "magnitude", "2:4", "block"};
const std::vector<std::string> FORMATS = {"dense", "csr", "bitmask", "2:4", "bsr"};
const std::vector<std::string> COMMUNICATIONS = {"dense", "values", "indexed"};

PruningMethod method_from(const std::string& s) {
  if (s == "magnitude") return PruningMethod::MAGNITUDE;
  if (s == "2:4") return PruningMethod::STRUCTURED_2_4;
  if (s == "block") return PruningMethod::BLOCK;
  return PruningMethod::NONE;
}

SparseFormat format_from(const std::string& s) {
  if (s == "csr") return SparseFormat::CSR;
  if (s == "bitmask") return SparseFormat::BITMASK;
  if (s == "2:4") return SparseFormat::COMPRESSED_2_4;
  if (s == "bsr") return SparseFormat::BSR;
  return SparseFormat::DENSE;
}

SparseCommunication communication_from(const std::string& s) {
  if (s == "values") return SparseCommunication::VALUES;
  if (s == "indexed") return SparseCommunication::INDEXED;
  return SparseCommunication::DENSE;
}

// The formats a method can be stored in, its default first.
std::vector<SparseFormat> formats_of(PruningMethod m) {
  switch (m) {
    case PruningMethod::MAGNITUDE: return {SparseFormat::CSR, SparseFormat::BITMASK, SparseFormat::DENSE};
    case PruningMethod::STRUCTURED_2_4: return {SparseFormat::COMPRESSED_2_4, SparseFormat::DENSE};
    case PruningMethod::BLOCK: return {SparseFormat::BSR, SparseFormat::DENSE};
    case PruningMethod::NONE: break;
  }
  return {SparseFormat::DENSE};
}

std::string quoted_list(const std::vector<SparseFormat>& formats) {
  std::string out;
  for (size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) out += i + 1 == formats.size() ? " or " : ", ";
    out += fmt::format("\"{}\"", to_string(formats[i]));
  }
  return out;
}

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Index bytes of `m` stored in the format (values excluded).
double index_bytes(const WeightMatrix& m, const PruningConfig& c) {
  const double n = m.rows * m.cols;
  const double kept = c.density() * n;
  double per_matrix = 0;
  switch (c.format) {
    case SparseFormat::DENSE: per_matrix = 0; break;
    case SparseFormat::CSR: per_matrix = kept * SPARSE_INDEX_BYTES + (m.rows + 1) * SPARSE_INDEX_BYTES; break;
    case SparseFormat::BITMASK: per_matrix = n / BITS_PER_BYTE; break;
    case SparseFormat::COMPRESSED_2_4: per_matrix = kept * METADATA_BITS_PER_KEPT_VALUE / BITS_PER_BYTE; break;
    case SparseFormat::BSR: {
      const double b = c.block_size;
      per_matrix = kept / (b * b) * SPARSE_INDEX_BYTES + (std::ceil(m.rows / b) + 1) * SPARSE_INDEX_BYTES;
      break;
    }
  }
  return per_matrix * m.count;
}

}  // namespace

std::string to_string(PruningMethod m) {
  switch (m) {
    case PruningMethod::NONE: return "none";
    case PruningMethod::MAGNITUDE: return "magnitude";
    case PruningMethod::STRUCTURED_2_4: return "2:4";
    case PruningMethod::BLOCK: return "block";
  }
  return "?";
}

std::string to_string(SparseFormat f) {
  switch (f) {
    case SparseFormat::DENSE: return "dense";
    case SparseFormat::CSR: return "csr";
    case SparseFormat::BITMASK: return "bitmask";
    case SparseFormat::COMPRESSED_2_4: return "2:4";
    case SparseFormat::BSR: return "bsr";
  }
  return "?";
}

std::string to_string(SparseCommunication c) {
  switch (c) {
    case SparseCommunication::DENSE: return "dense";
    case SparseCommunication::VALUES: return "values";
    case SparseCommunication::INDEXED: return "indexed";
  }
  return "?";
}

core::GemmSparsity PruningConfig::kernel() const {
  if (!enabled() || !sparse_kernel) return core::GemmSparsity::NONE;
  switch (method) {
    case PruningMethod::MAGNITUDE: return core::GemmSparsity::UNSTRUCTURED;
    case PruningMethod::STRUCTURED_2_4: return core::GemmSparsity::STRUCTURED_2_4;
    case PruningMethod::BLOCK: return core::GemmSparsity::BLOCK;
    case PruningMethod::NONE: break;
  }
  return core::GemmSparsity::NONE;
}

PruningConfig PruningConfig::from_json(core::ObjectReader& r) {
  PruningConfig c;
  c.method = method_from(r.choice("method", "none", METHODS));
  if (!c.enabled()) {
    r.finish({"sparsity", "block_size", "start_iteration", "format", "sparse_kernel", "communication", "embeddings"});
    return c;
  }
  if (const core::Json* v = r.raw("sparsity")) {
    if (!v->is_number() || !(v->get<double>() >= 0 && v->get<double>() < 1)) {
      r.problem("sparsity", fmt::format("expected the fraction of the weights pruned, a number in [0, 1), found {}",
                                        core::describe_json(*v)));
    } else if (c.method == PruningMethod::STRUCTURED_2_4 && v->get<double>() != STRUCTURED_2_4_SPARSITY) {
      r.problem("sparsity", fmt::format("2:4 pruning keeps two of every four weights: expected 0.5, found {}",
                                        core::describe_json(*v)));
    } else {
      c.sparsity = v->get<double>();
    }
  }
  if (r.has("block_size")) {
    if (c.method != PruningMethod::BLOCK) {
      r.problem("block_size", fmt::format("only \"block\" pruning has blocks, found method \"{}\"", to_string(c.method)));
      r.raw("block_size");
    } else {
      const int64_t b = r.integer("block_size", c.block_size, 2, MAX_BLOCK_SIZE);
      if (!is_power_of_two(b)) {
        r.problem("block_size", fmt::format("expected a power of two from 2 to {}, found {}", MAX_BLOCK_SIZE, b));
      } else {
        c.block_size = static_cast<int>(b);
      }
    }
  }
  c.start_iteration = r.integer("start_iteration", 0, 0, MAX_START_ITERATION);
  const std::vector<SparseFormat> allowed = formats_of(c.method);
  c.format = allowed.front();
  if (r.has("format")) {
    const SparseFormat f = format_from(r.choice("format", to_string(c.format), FORMATS));
    if (std::find(allowed.begin(), allowed.end(), f) == allowed.end()) {
      r.problem("format", fmt::format("\"{}\" pruning is stored as {}, found \"{}\"", to_string(c.method),
                                      quoted_list(allowed), to_string(f)));
    } else {
      c.format = f;
    }
  }
  c.sparse_kernel = r.boolean("sparse_kernel", c.method == PruningMethod::STRUCTURED_2_4);
  c.communication = communication_from(r.choice("communication", "dense", COMMUNICATIONS));
  if (c.communication == SparseCommunication::INDEXED && c.format == SparseFormat::DENSE) {
    r.problem("communication", "\"indexed\" sends the storage format's index, but format is \"dense\" (no index): use "
                               "\"values\", or a sparse format");
  }
  c.embeddings = r.boolean("embeddings", false);
  r.finish();
  return c;
}

core::Json PruningConfig::to_json() const {
  core::Json j;
  j["method"] = to_string(method);
  if (!enabled()) return j;
  j["sparsity"] = sparsity;
  if (method == PruningMethod::BLOCK) j["block_size"] = block_size;
  j["start_iteration"] = start_iteration;
  j["format"] = to_string(format);
  j["sparse_kernel"] = sparse_kernel;
  j["communication"] = to_string(communication);
  j["embeddings"] = embeddings;
  return j;
}

void check_pruning(const PruningConfig& c, const core::GpuSpec& gpu, core::Precision precision, const std::string& file,
                   core::Diagnostics& diag) {
  if (c.kernel() != core::GemmSparsity::STRUCTURED_2_4) return;
  const std::string pointer = "/optimizations/pruning/method";
  if (!gpu.sparse_tensor_cores) {
    diag.add(file, pointer,
             fmt::format("2:4 sparse kernels need sparse tensor cores (NVIDIA Ampere or later), and {} has none: "
                         "choose such a GPU, or set \"sparse_kernel\": false to keep the 2:4 masks with dense GEMMs",
                         gpu.name));
  } else if (precision != core::Precision::BF16 && precision != core::Precision::FP16 &&
             precision != core::Precision::FP8) {
    diag.add(file, pointer,
             fmt::format("2:4 sparse kernels are modelled for bf16, fp16 and fp8 operands, found training.precision "
                         "\"{}\"",
                         core::to_string(precision)));
  }
}

void apply_pruning(std::vector<OpCost>& ops, const PruningConfig& c) {
  const core::GemmSparsity kernel = c.kernel();
  if (kernel == core::GemmSparsity::NONE) return;
  for (OpCost& op : ops) {
    const bool pruned = op.kind == OpKind::QKV || op.kind == OpKind::PROJECTION || op.kind == OpKind::MLP_UP ||
                        op.kind == OpKind::MLP_DOWN || op.kind == OpKind::EXPERT_UP || op.kind == OpKind::EXPERT_DOWN ||
                        (c.embeddings && op.kind == OpKind::LOGITS);
    if (!pruned || op.op_class != core::OpClass::GEMM) continue;
    op.sparsity = kernel;
    op.density = c.density();
  }
}

std::vector<WeightMatrix> layer_pruned_matrices(const ModelSpec& m, const ParallelismConfig& p, LayerKind kind) {
  const double h = static_cast<double>(m.hidden);
  const double t = p.tensor;
  const double q = static_cast<double>(m.attention_width());
  const double kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim());
  const double up = m.activation == Activation::SWIGLU ? 2 : 1;  // gate and up fused in one matrix
  std::vector<WeightMatrix> out;
  out.push_back({(q + 2 * kv) / t, h});  // QKV, column-parallel
  out.push_back({h, q / t});             // projection, row-parallel
  auto mlp = [&](double f, double split, double count, bool expert) {
    out.push_back({up * f / split, h, count, expert});  // up (and gate), column-parallel
    out.push_back({h, f / split, count, expert});       // down, row-parallel
  };
  if (kind == LayerKind::MOE) {
    if (m.shared_experts > 0) mlp(static_cast<double>(m.shared_ffn()), t, 1, false);
    mlp(static_cast<double>(m.ffn_hidden), p.expert_mlp_tensor(), static_cast<double>(m.experts) / p.expert, true);
  } else {
    mlp(static_cast<double>(m.dense_ffn()), t, 1, false);
  }
  return out;
}

std::vector<WeightMatrix> embedding_pruned_matrices(const ModelSpec& m, const ParallelismConfig& p, const PruningConfig& c) {
  if (!c.enabled() || !c.embeddings) return {};
  return {{static_cast<double>(m.vocab) / p.tensor, static_cast<double>(m.hidden)}};
}

std::vector<WeightMatrix> head_pruned_matrices(const ModelSpec& m, const ParallelismConfig& p, const PruningConfig& c) {
  if (!c.enabled() || !c.embeddings || (m.tied_embeddings && p.pipeline == 1)) return {};
  return {{static_cast<double>(m.vocab) / p.tensor, static_cast<double>(m.hidden)}};
}

PrunedParameters pruned_parameters(const std::vector<WeightMatrix>& matrices, const PruningConfig& c) {
  PrunedParameters out;
  if (!c.enabled()) return out;
  for (const WeightMatrix& w : matrices) {
    const double n = w.rows * w.cols * w.count;
    double& pruned = w.expert ? out.pruned.expert : out.pruned.dense;
    double& kept = w.expert ? out.kept.expert : out.kept.dense;
    double& index = w.expert ? out.index_bytes.expert : out.index_bytes.dense;
    pruned += n;
    kept += c.density() * n;
    index += index_bytes(w, c);
  }
  return out;
}

ParameterCount stored_elements(const ParameterCount& params, const PrunedParameters& pruned, const PruningConfig& c) {
  if (!c.sparse_storage()) return params;
  return {params.dense - pruned.pruned.dense + pruned.kept.dense, params.expert - pruned.pruned.expert + pruned.kept.expert};
}

ParameterCount sent_elements(const ParameterCount& params, const PrunedParameters& pruned, const PruningConfig& c) {
  if (!c.enabled() || c.communication == SparseCommunication::DENSE) return params;
  return {params.dense - pruned.pruned.dense + pruned.kept.dense, params.expert - pruned.pruned.expert + pruned.kept.expert};
}

ParameterCount sent_index_bytes(const PrunedParameters& pruned, const PruningConfig& c) {
  if (!c.enabled() || c.communication != SparseCommunication::INDEXED) return {};
  return pruned.index_bytes;
}

MemoryBreakdown model_state_memory(const ParameterCount& local, const TrainingConfig& t, const ParallelismConfig& p,
                                   const PruningConfig& c, const PrunedParameters& pruned) {
  if (!c.sparse_storage()) return model_state_memory(local, t, p);
  const ParameterCount stored = stored_elements(local, pruned, c);
  auto sharded = [&](const ParameterCount& n, int from_stage) {
    const bool shard = p.zero_stage >= from_stage;
    return n.dense / (shard ? p.dense_shards() : 1) + n.expert / (shard ? p.expert_replicas() : 1);
  };
  MemoryBreakdown mem;
  mem.weights = core::Bytes(sharded(stored, 3) * weight_bytes_per_parameter(t) + sharded(pruned.index_bytes, 3));
  mem.gradients = core::Bytes(sharded(stored, 2) * gradient_bytes_per_parameter() +
                              stored.total() * accumulated_gradient_bytes_per_parameter(t.precision, p));
  mem.optimizer_states = core::Bytes(sharded(stored, 1) * optimizer_bytes_per_parameter(t.precision));
  return mem;
}

}  // namespace trainsim::models
