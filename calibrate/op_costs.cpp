#include "calibrate/op_costs.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>

namespace trainsim::calibrate {
namespace {

using core::Json;

// One-byte dropout mask per element (PyTorch's native_dropout returns a bool mask).
constexpr double DROPOUT_MASK_BYTES = 1;

double product(const std::vector<double>& dims, size_t begin, size_t end) {
  double p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

const OpArgument* tensor_at(const CpuOp& op, size_t i, size_t min_rank) {
  if (i >= op.inputs.size()) return nullptr;
  const OpArgument& a = op.inputs[i];
  return a.tensor && a.dims.size() >= min_rank ? &a : nullptr;
}

// A GEMM operand: a tensor, or sizes without a type (the kernel's name may give the type).
const OpArgument* operand_at(const CpuOp& op, size_t i, size_t min_rank) {
  if (i >= op.inputs.size()) return nullptr;
  const OpArgument& a = op.inputs[i];
  return (a.tensor || a.untyped) && a.dims.size() >= min_rank ? &a : nullptr;
}

bool any_untyped(const CpuOp& op) {
  return std::any_of(op.inputs.begin(), op.inputs.end(), [](const OpArgument& a) { return a.untyped; });
}

trace::Gemm make_gemm(double m, double n, double k, double batch, const OpArgument& a, const OpArgument& b) {
  trace::Gemm g;
  g.set_m(static_cast<uint64_t>(m));
  g.set_n(static_cast<uint64_t>(n));
  g.set_k(static_cast<uint64_t>(k));
  g.set_batch_count(static_cast<uint64_t>(batch));
  g.set_a_type(a.data_type);
  g.set_b_type(b.data_type);
  g.set_c_type(a.data_type);
  return g;
}

// a[..., m, k] x b[k, n] (b 2-D) or a[B..., m, k] x b[B..., k, n].
std::optional<trace::Gemm> matmul(const OpArgument& a, const OpArgument& b) {
  const size_t ra = a.dims.size(), rb = b.dims.size();
  if (ra < 2 || rb < 2) return std::nullopt;
  if (rb == 2) return make_gemm(product(a.dims, 0, ra - 1), b.dims[1], a.dims[ra - 1], 1, a, b);
  return make_gemm(a.dims[ra - 2], b.dims[rb - 1], a.dims[ra - 1], product(a.dims, 0, ra - 2), a, b);
}

enum class Layout { BHSD, BSHD };

struct AttentionOp {
  std::string_view name;
  size_t query = 0;   // argument index of the query
  size_t key = 1;
  Layout layout = Layout::BHSD;
  size_t is_causal = 0;  // argument index of is_causal
  bool backward = false;
};

// Argument positions from the ops' schemas (aten/src/ATen/native/native_functions.yaml).
constexpr AttentionOp ATTENTION_OPS[] = {
    {"aten::_scaled_dot_product_flash_attention", 0, 1, Layout::BHSD, 4, false},
    {"aten::_scaled_dot_product_efficient_attention", 0, 1, Layout::BHSD, 6, false},
    {"aten::_scaled_dot_product_cudnn_attention", 0, 1, Layout::BHSD, 6, false},
    {"aten::_flash_attention_forward", 0, 1, Layout::BSHD, 8, false},
    {"aten::_efficient_attention_forward", 0, 1, Layout::BSHD, 9, false},  // custom_mask_type: 1 causal
    {"aten::_scaled_dot_product_flash_attention_backward", 1, 2, Layout::BHSD, 11, true},
    {"aten::_scaled_dot_product_efficient_attention_backward", 1, 2, Layout::BHSD, 11, true},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 1, 2, Layout::BHSD, 14, true},
    {"aten::_flash_attention_backward", 1, 2, Layout::BSHD, 11, true},
    {"aten::_efficient_attention_backward", 1, 2, Layout::BSHD, 14, true},
};

const AttentionOp* attention_op(std::string_view name) {
  for (const AttentionOp& a : ATTENTION_OPS) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

constexpr std::string_view NORM_OPS[] = {"aten::native_layer_norm", "aten::native_layer_norm_backward",
                                                   "aten::_fused_rms_norm", "aten::_fused_rms_norm_backward"};

constexpr std::string_view ELEMENTWISE_OPS[] = {
    "aten::add",       "aten::add_",          "aten::sub",         "aten::sub_",
    "aten::mul",       "aten::mul_",          "aten::div",         "aten::div_",
    "aten::gelu",      "aten::gelu_",         "aten::gelu_backward", "aten::silu",
    "aten::silu_",     "aten::silu_backward", "aten::relu",        "aten::relu_",
    "aten::threshold_backward", "aten::tanh", "aten::tanh_backward", "aten::sigmoid",
    "aten::sigmoid_backward", "aten::exp",    "aten::neg",         "aten::sqrt",
    "aten::rsqrt",     "aten::pow",           "aten::clamp",       "aten::where",
    "aten::masked_fill", "aten::masked_fill_", "aten::native_dropout", "aten::native_dropout_backward",
    "aten::_softmax",  "aten::_softmax_backward_data", "aten::copy_", "aten::fill_",
    "aten::zero_",     "aten::addcmul_",      "aten::addcdiv_",    "aten::lerp_",
    "aten::sqrt_",       "aten::_log_softmax", "aten::_log_softmax_backward_data"};

bool member(std::string_view name, const auto& list) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

// Every tensor input read, an output the size of the largest written (see the header).
double memory_bytes(const CpuOp& op) {
  double read = 0, largest = 0;
  for (const OpArgument& a : op.inputs) {
    read += a.bytes();
    largest = std::max(largest, a.bytes());
  }
  if (op.name == "aten::fill_" || op.name == "aten::zero_") return op.inputs.empty() ? 0.0 : op.inputs[0].bytes();
  if (op.name == "aten::copy_") return read;
  double bytes = read + largest;
  if (op.name == "aten::native_dropout" && !op.inputs.empty()) bytes += op.inputs[0].elements() * DROPOUT_MASK_BYTES;
  return bytes;
}

// "True"/"False" (Concrete Inputs); nothing when absent.
std::optional<bool> concrete_bool(const CpuOp& op, size_t i) {
  if (i >= op.inputs.size()) return std::nullopt;
  const std::string& c = op.inputs[i].concrete;
  if (c == "True" || c == "true" || c == "1") return true;
  if (c == "False" || c == "false" || c == "0") return false;
  return std::nullopt;
}

std::vector<double> dims_of(const Json& j, bool& ok) {
  std::vector<double> dims;
  ok = j.is_array();
  if (!ok) return dims;
  for (const Json& d : j) {
    const double v = d.is_number() ? d.get<double>() : -1.0;
    if (!(v >= 0) || v != std::floor(v)) {  // sizes are whole numbers (written as 2 or 2.0)
      ok = false;
      return {};
    }
    dims.push_back(v);
  }
  return dims;
}

}  // namespace

double OpArgument::elements() const { return product(dims, 0, dims.size()); }

std::pair<trace::DataType, double> torch_type(const std::string& name) {
  static const std::tuple<std::string_view, trace::DataType, double> TYPES[] = {
      {"float", trace::DATA_TYPE_FLOAT32, 4},         {"double", trace::DATA_TYPE_FLOAT64, 8},
      {"c10::Half", trace::DATA_TYPE_FLOAT16, 2},      {"c10::BFloat16", trace::DATA_TYPE_BFLOAT16, 2},
      {"c10::Float8_e4m3fn", trace::DATA_TYPE_FLOAT8_E4M3, 1}, {"c10::Float8_e5m2", trace::DATA_TYPE_FLOAT8_E5M2, 1},
      {"long int", trace::DATA_TYPE_INT64, 8},         {"int", trace::DATA_TYPE_INT32, 4},
      {"short int", trace::DATA_TYPE_UNKNOWN, 2},      {"bool", trace::DATA_TYPE_UINT8, 1},
      {"unsigned char", trace::DATA_TYPE_UINT8, 1},    {"signed char", trace::DATA_TYPE_INT8, 1},
      {"c10::complex<float>", trace::DATA_TYPE_UNKNOWN, 8}};
  std::string_view n = name;
  for (const auto& [key, type, size] : TYPES) {
    if (n == key || (key.rfind("c10::", 0) == 0 && n == key.substr(5))) return {type, size};
  }
  return {trace::DATA_TYPE_UNKNOWN, 0};
}

CpuOp read_cpu_op(const std::string& name, const Json& args) {
  CpuOp op;
  op.name = name;
  const auto dims = args.find("Input Dims");
  const auto types = args.find("Input type");
  const auto concrete = args.find("Concrete Inputs");
  if (dims == args.end() || !dims->is_array()) return op;
  // One entry per argument in each list; a shorter list leaves the rest unknown.
  auto size = [&](auto it) { return it != args.end() && it->is_array() ? it->size() : size_t{0}; };
  const size_t count = std::max({dims->size(), size(types), size(concrete)});
  for (size_t i = 0; i < count; ++i) {
    OpArgument a;
    bool ok = false;
    if (i < dims->size()) a.dims = dims_of((*dims)[i], ok);
    if (i < size(types) && (*types)[i].is_string()) {
      const auto [type, bytes] = torch_type((*types)[i].get<std::string>());
      a.tensor = ok && bytes > 0;
      a.element_bytes = a.tensor ? bytes : 0;
      a.data_type = type;
    } else {
      a.untyped = ok && !a.dims.empty();
    }
    if (!a.tensor && !a.untyped) a.dims.clear();
    if (i < size(concrete) && (*concrete)[i].is_string()) a.concrete = (*concrete)[i].get<std::string>();
    op.inputs.push_back(std::move(a));
  }
  return op;
}

bool is_attention_op(const std::string& name) { return attention_op(name) != nullptr; }

std::optional<trace::Gemm> gemm_of(const CpuOp& op) {
  const std::string& n = op.name;
  if (n == "aten::mm" || n == "aten::_scaled_mm") {
    const OpArgument *a = operand_at(op, 0, 2), *b = operand_at(op, 1, 2);
    if (a && b && a->dims.size() == 2 && b->dims.size() == 2) return make_gemm(a->dims[0], b->dims[1], a->dims[1], 1, *a, *b);
  } else if (n == "aten::addmm" || n == "aten::_addmm_activation") {
    const OpArgument *a = operand_at(op, 1, 2), *b = operand_at(op, 2, 2);
    if (a && b && a->dims.size() == 2 && b->dims.size() == 2) return make_gemm(a->dims[0], b->dims[1], a->dims[1], 1, *a, *b);
  } else if (n == "aten::bmm" || n == "aten::baddbmm") {
    const size_t first = n == "aten::bmm" ? 0 : 1;
    const OpArgument *a = operand_at(op, first, 3), *b = operand_at(op, first + 1, 3);
    if (a && b && a->dims.size() == 3 && b->dims.size() == 3) {
      return make_gemm(a->dims[1], b->dims[2], a->dims[2], a->dims[0], *a, *b);
    }
  } else if (n == "aten::matmul") {
    const OpArgument *a = operand_at(op, 0, 2), *b = operand_at(op, 1, 2);
    if (a && b) return matmul(*a, *b);
  } else if (n == "aten::linear") {
    const OpArgument *x = operand_at(op, 0, 1), *w = operand_at(op, 1, 2);
    if (x && w && w->dims.size() == 2) {
      return make_gemm(product(x->dims, 0, x->dims.size() - 1), w->dims[0], x->dims.back(), 1, *x, *w);
    }
  }
  return std::nullopt;
}

std::optional<trace::Operation> operation_of(const CpuOp& op) {
  if (any_untyped(op)) return std::nullopt;
  trace::Operation out;
  out.set_name(op.name);
  if (const AttentionOp* a = attention_op(op.name)) {
    const OpArgument *q = tensor_at(op, a->query, 4), *k = tensor_at(op, a->key, 4);
    if (!q || !k || q->dims.size() != 4 || k->dims.size() != 4) return std::nullopt;
    const bool bhsd = a->layout == Layout::BHSD;
    const double batch = q->dims[0], heads = bhsd ? q->dims[1] : q->dims[2];
    const double sq = bhsd ? q->dims[2] : q->dims[1], sk = bhsd ? k->dims[2] : k->dims[1], d = q->dims[3];
    const double forward = 4.0 * batch * heads * sq * sk * d;
    const std::optional<bool> causal = concrete_bool(op, a->is_causal);
    out.set_kind(trace::OPERATION_KIND_ATTENTION);
    out.set_backward(a->backward);
    out.set_causal(causal.value_or(true));
    out.set_causal_known(causal.has_value());
    out.set_flops(a->backward ? 2.5 * forward : forward);
    out.set_executed_flops(out.causal() ? 0.5 * out.flops() : out.flops());
    // FlashAttention reads its inputs once and writes the output (forward) or the gradients of Q, K
    // and V (backward): Dao 2023, FlashAttention-2, Algorithms 1 and 2.
    double read = 0;
    for (const OpArgument& arg : op.inputs) read += arg.bytes();
    const OpArgument* v = tensor_at(op, a->key + 1, 4);
    out.set_bytes(read + (a->backward ? q->bytes() + k->bytes() + (v ? v->bytes() : k->bytes()) : q->bytes()));
    out.set_data_type(q->data_type);
    return out;
  }
  const bool norm = member(op.name, NORM_OPS);
  if (!norm && !member(op.name, ELEMENTWISE_OPS)) return std::nullopt;
  const double bytes = memory_bytes(op);
  if (bytes <= 0) return std::nullopt;
  out.set_kind(norm ? trace::OPERATION_KIND_NORM : trace::OPERATION_KIND_ELEMENTWISE);
  out.set_backward(op.name.find("backward") != std::string::npos);
  out.set_bytes(bytes);
  for (const OpArgument& a : op.inputs) {
    if (a.tensor) {
      out.set_data_type(a.data_type);
      break;
    }
  }
  return out;
}

}  // namespace trainsim::calibrate
