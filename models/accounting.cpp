#include "models/accounting.hpp"

#include "models/layer_graph.hpp"

namespace trainsim::models {
namespace {

// Weight gradients accumulate into fp32 main gradients: read + write 4 bytes per element.
constexpr double MAIN_GRAD_ACCUMULATE_BYTES = 8.0;
constexpr double FP32_BYTES = 4.0;
constexpr double MASK_BYTES = 1.0;

// The sizes every formula uses, as doubles (products overflow 64-bit integers at 1T scale).
struct Shape {
  double b = 0;      // micro-batch
  double s = 0;      // full sequence length
  double sl = 0;     // tokens per context-parallel rank
  double h = 0;
  double t = 1;      // tensor parallelism
  double tsp = 1;    // t with sequence parallelism, else 1: the split of norms and dropouts
  double a = 0;      // heads
  double q = 0;      // query / attention output width: heads x head_dim
  double kv = 0;     // key/value width: kv_heads x head_dim
  double f = 0;      // routed experts' inner size (MoE) or the MLP's (dense model)
  double dense_f = 0;   // MLP of a dense layer
  double shared_f = 0;  // all shared experts together (0: none)
  double et = 1;        // tensor split of the routed experts (expert_mlp_tensor)
  double expert_tokens = 0;  // tokens one rank routes: b·(s/c), or b·(s/c)/t when the expert group
                             // spans the tensor group (parallel folding with expert_tensor 1)
  double vocab = 0;
  double experts = 1;
  double local_experts = 1;
  double top_k = 1;
  double e = 2;      // activation element bytes
  core::Precision precision = core::Precision::BF16;  // training precision
  bool swiglu = false;
  bool moe = false;
  bool flash = false;  // FlashAttention
  bool eager = false;  // eager_elementwise(): PyTorch's op-by-op RMSNorm, SwiGLU and rotary kernels
  bool rotary = false; // rotary positions (no learned position embedding)
};

Shape shape_of(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  Shape x;
  x.b = static_cast<double>(t.micro_batch);
  x.s = static_cast<double>(t.sequence_length);
  x.sl = x.s / p.context;
  x.h = static_cast<double>(m.hidden);
  x.t = p.tensor;
  x.tsp = p.sequence_parallel ? p.tensor : 1;
  x.flash = t.attention == Attention::FLASH;
  x.a = m.heads;
  x.q = static_cast<double>(m.attention_width());
  x.kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim());
  x.f = static_cast<double>(m.ffn_hidden);
  x.dense_f = static_cast<double>(m.dense_ffn());
  x.shared_f = static_cast<double>(m.shared_ffn());
  x.et = p.expert_mlp_tensor();
  x.expert_tokens = x.b * x.sl / (p.experts_span_tensor() ? x.tsp : 1.0);
  x.vocab = static_cast<double>(m.vocab);
  x.experts = m.experts;
  x.local_experts = static_cast<double>(m.experts) / p.expert;
  x.top_k = m.top_k;
  x.e = activation_element_bytes(t.precision);
  x.precision = t.precision;
  x.swiglu = m.activation == Activation::SWIGLU;
  x.moe = m.is_moe();
  x.eager = eager_elementwise(m, t, p);
  x.rotary = !m.learned_positions;
  return x;
}

// A GEMM of a [rows x inner] input with `weight_sets` [inner x cols] weights (local experts), the
// rows spread over those weights. Backward: data gradient (read dY, W; write dX) and weight
// gradient (read X, dY; accumulate dW into fp32 main gradients).
OpCost gemm(std::string name, OpKind kind, double rows, double inner, double cols, const Shape& x,
            double weight_sets = 1.0) {
  const double in = rows * inner, out = rows * cols, w = weight_sets * inner * cols;
  OpCost c;
  c.name = std::move(name);
  c.kind = kind;
  c.op_class = core::OpClass::GEMM;
  c.precision = gemm_precision(kind, x.precision);
  const double g = element_bytes(c.precision);
  c.forward_flops = core::Flops(2.0 * rows * inner * cols);
  c.backward_flops = core::Flops(4.0 * rows * inner * cols);
  c.forward_bytes = core::Bytes(in * g + w * g + out * x.e);
  c.backward_bytes = core::Bytes((out * x.e + w * g + in * x.e) + (in * g + out * x.e + w * MAIN_GRAD_ACCUMULATE_BYTES));
  c.gemm = {static_cast<float>(rows / weight_sets), static_cast<float>(cols), static_cast<float>(inner),
            static_cast<uint32_t>(weight_sets)};
  return c;
}

// The stand-alone FP8 cast_transpose kernels of a layer (accounting.hpp, FP8_CAST_BYTES): added to
// the memory-bound ops named there, since only the per-layer sum of serial kernel time matters.
void add_fp8_casts(std::vector<OpCost>& ops) {
  double forward = 0, projection_dy = 0, mlp_dy = 0, qkv_dy = 0;
  for (const OpCost& op : ops) {
    if (op.op_class != core::OpClass::GEMM || op.precision != core::Precision::FP8) continue;
    const double inputs = static_cast<double>(op.gemm.m) * op.gemm.k * op.gemm.count;
    const double outputs = static_cast<double>(op.gemm.m) * op.gemm.n * op.gemm.count;
    if (op.kind == OpKind::PROJECTION) {
      forward += inputs * FP8_CAST_BYTES;
      projection_dy += outputs * FP8_CAST_BYTES;
    }
    if (op.kind == OpKind::MLP_DOWN) mlp_dy += outputs * FP8_CAST_BYTES;
    if (op.kind == OpKind::QKV) qkv_dy += outputs * FP8_CAST_BYTES;
  }
  for (OpCost& op : ops) {
    if (op.name == "attn_bda") {
      op.forward_bytes += core::Bytes(forward);
      op.backward_bytes += core::Bytes(projection_dy);
    } else if (op.name == "mlp_bda") {
      op.backward_bytes += core::Bytes(mlp_dy);
    } else if (op.name == "ln1") {
      op.backward_bytes += core::Bytes(qkv_dy);
    }
  }
}

OpCost memory_bound(std::string name, OpKind kind, core::OpClass op_class, double forward_bytes, double backward_bytes) {
  OpCost c;
  c.name = std::move(name);
  c.kind = kind;
  c.op_class = op_class;
  c.forward_bytes = core::Bytes(forward_bytes);
  c.backward_bytes = core::Bytes(backward_bytes);
  return c;
}

// Forward reads x and writes y; backward reads dy and x, writes dx (weight gradients are tiny).
// Eager RMSNorm (eager_elementwise) runs its op chain in fp32: forward x.float() (e + 4), pow (8),
// mean (4), x * rsqrt (8), .type_as(x) (4 + e), * weight (2e); backward the weight product's two
// gradients (2e + 2e), .type_as (e + 4), the rsqrt product's two (8 + 8), mean's expand (4), pow's
// (12), the two paths into x summed (12), .float() (4 + e).
OpCost norm(std::string name, double elements, const Shape& x) {
  if (x.eager && x.swiglu) {
    return memory_bound(std::move(name), OpKind::LAYER_NORM, core::OpClass::NORM, (28 + 4 * x.e) * elements,
                        (56 + 6 * x.e) * elements);
  }
  return memory_bound(std::move(name), OpKind::LAYER_NORM, core::OpClass::NORM, 2 * elements * x.e, 3 * elements * x.e);
}

// Eager PyTorch's rotary embedding and what surrounds attention (eager_elementwise): Q and K
// (q + kv wide per token) go through x.float() (e + 4), the complex product with freqs_cis (8) and
// .type_as (4 + e), the same traffic back in backward; under GQA repeat_kv materialises K and V at
// the query heads' width (reads kv, writes q, each) and its backward sums them back; the attention
// output's transpose().contiguous() copies it (2·q·e) each way.
OpCost rotary_op(const Shape& x) {
  const double tokens = x.b * x.sl;
  double per_token = (x.q + x.kv) / x.t * (16 + 2 * x.e) + 2 * x.q / x.t * x.e;
  if (x.kv < x.q) per_token += 2 * (x.kv + x.q) / x.t * x.e;
  return memory_bound("rotary", OpKind::ROTARY, core::OpClass::ELEMENTWISE, tokens * per_token, tokens * per_token);
}

// Forward reads the input and the residual, writes the sum and the dropout mask; backward reads the
// gradient and the mask and writes the input gradient (the residual gradient passes through).
OpCost bias_dropout_add(std::string name, double elements, const Shape& x) {
  return memory_bound(std::move(name), OpKind::BIAS_DROPOUT_ADD, core::OpClass::ELEMENTWISE,
                      elements * (3 * x.e + MASK_BYTES), elements * (2 * x.e + MASK_BYTES));
}

// Megatron's unfused core attention. Per head group: QKᵀ writes the scores; the scaled-masked softmax
// reads them and writes probabilities; dropout reads those and writes the dropped probabilities and
// a mask; ·V reads them. Backward mirrors it: 8 score-sized passes and the mask.
OpCost core_attention(const Shape& x) {
  const double q = x.b * x.sl * x.q / x.t;         // queries, and the context output
  const double kv = 2 * x.b * x.s * x.kv / x.t;    // keys and values of the whole sequence
  const double scores = x.b * (x.a / x.t) * x.sl * x.s;
  OpCost c;
  c.name = "attention";
  c.kind = OpKind::ATTENTION;
  c.op_class = x.flash ? core::OpClass::FLASH_ATTENTION : core::OpClass::ATTENTION;
  c.precision = gemm_precision(OpKind::ATTENTION, x.precision);
  c.forward_flops = core::Flops(4.0 * x.b * x.sl * x.s * x.q / x.t);
  c.backward_flops = core::Flops(8.0 * x.b * x.sl * x.s * x.q / x.t);
  if (x.flash) {
    // FlashAttention: Q, K, V read and O written once, plus the per-row softmax statistics (fp32);
    // backward reads Q, K, V, O, dO and the statistics, writes dQ, dK, dV, and recomputes QKᵀ
    // (Dao 2023, FlashAttention-2, Algorithm 2). Nothing to recompute selectively.
    const double stats = x.b * (x.a / x.t) * x.sl * FP32_BYTES;
    c.forward_bytes = core::Bytes((q + kv) * x.e + q * x.e + stats);
    c.backward_bytes = core::Bytes((3 * q + kv) * x.e + stats + (q + kv) * x.e);
    c.backward_recompute_flops = core::Flops(2.0 * x.b * x.sl * x.s * x.q / x.t);
    // The kernel's shape for the compute model: per (sequence, head) a [sl x d]·[d x s] product; k
    // is the head size (engine::flash_head_dim_factor).
    c.gemm = {static_cast<float>(x.sl), static_cast<float>(x.s), static_cast<float>(x.q / x.a),
              static_cast<uint32_t>(x.b * x.a / x.t)};
    return c;
  }
  c.forward_bytes = core::Bytes((q + kv) * x.e + q * x.e + scores * (6 * x.e + MASK_BYTES));
  c.backward_bytes = core::Bytes(q * x.e + 2 * (q + kv) * x.e + scores * (8 * x.e + MASK_BYTES));
  c.recomputed_selective = true;
  return c;
}

// GeLU reads x, writes y; SwiGLU reads gate and up, writes y. Backward reads dy and the inputs and
// writes their gradients.
// Eager SwiGLU runs silu(gate) and its product with up as two kernels: forward 2e + 3e, backward the
// product's two gradients (3e + 3e) and silu's (3e).
OpCost activation_op(std::string name, double elements, const Shape& x) {
  const double fwd = x.swiglu ? (x.eager ? 5 : 3) : 2;
  const double bwd = x.swiglu ? (x.eager ? 9 : 5) : 3;
  return memory_bound(std::move(name), OpKind::MLP_ACTIVATION, core::OpClass::ELEMENTWISE, fwd * elements * x.e,
                      bwd * elements * x.e);
}

// The mm calls of a dense layer under torchtitan's module structure, in forward order: the IR op
// they belong to, their share of its FLOPs and the width of their output per token.
struct MmCall {
  OpKind kind;
  double share;
  double width;
};

std::vector<MmCall> layer_mm_calls(const Shape& x) {
  const double qkv = x.q + 2 * x.kv;
  std::vector<MmCall> calls = {{OpKind::QKV, x.q / qkv, x.q / x.t},
                               {OpKind::QKV, x.kv / qkv, x.kv / x.t},
                               {OpKind::QKV, x.kv / qkv, x.kv / x.t},
                               {OpKind::PROJECTION, 1.0, x.h}};
  if (x.swiglu) {
    calls.push_back({OpKind::MLP_UP, 0.5, x.dense_f / x.t});  // w1 (gate)
    calls.push_back({OpKind::MLP_UP, 0.5, x.dense_f / x.t});  // w3 (up)
  } else {
    calls.push_back({OpKind::MLP_UP, 1.0, x.dense_f / x.t});
  }
  calls.push_back({OpKind::MLP_DOWN, 1.0, x.h});
  return calls;
}

// The policy's rule: the 2nd, 4th, ... mm call of the region is recomputed, the others saved.
bool mm_saved(size_t index) { return (index + 1) % 2 == 1; }

core::Flops forward_flops(const std::vector<OpCost>& ops, bool selective_only) {
  core::Flops f;
  for (const OpCost& op : ops) {
    if (!selective_only || op.recomputed_selective) f += op.forward_flops;
  }
  return f;
}

core::Flops total_flops(const std::vector<OpCost>& ops) {
  core::Flops f;
  for (const OpCost& op : ops) f += op.forward_flops + op.backward_flops;
  return f;
}

core::Flops backward_recompute_flops(const std::vector<OpCost>& ops) {
  core::Flops f;
  for (const OpCost& op : ops) f += op.backward_recompute_flops;
  return f;
}

}  // namespace

bool eager_elementwise(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  return m.activation == Activation::SWIGLU && !t.compile && resolved_stack(t, p) != core::Stack::MEGATRON;
}

double element_bytes(core::Precision p) {
  switch (p) {
    case core::Precision::FP32:
    case core::Precision::TF32: return 4;
    case core::Precision::BF16:
    case core::Precision::FP16: return 2;
    case core::Precision::FP8: return 1;
  }
  return 2;
}

core::Precision gemm_precision(OpKind kind, core::Precision p) {
  if (p != core::Precision::FP8) return p;
  switch (kind) {
    case OpKind::QKV:
    case OpKind::PROJECTION:
    case OpKind::MLP_UP:
    case OpKind::MLP_DOWN: return core::Precision::FP8;
    default: return core::Precision::BF16;
  }
}

double activation_element_bytes(core::Precision p) {
  return p == core::Precision::FP32 || p == core::Precision::TF32 ? 4 : 2;
}

std::vector<OpCost> layer_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p, LayerKind kind) {
  const Shape x = shape_of(m, t, p);
  const double tokens = x.b * x.sl;
  const double split_hidden = tokens * x.h / x.tsp;  // elements of norms and dropouts
  const double up = x.swiglu ? 2 : 1;                // up-projection matrices
  std::vector<OpCost> ops;
  ops.push_back(norm("ln1", split_hidden, x));
  ops.push_back(gemm("qkv", OpKind::QKV, tokens, x.h, (x.q + 2 * x.kv) / x.t, x));
  if (x.eager && x.rotary) ops.push_back(rotary_op(x));
  ops.push_back(core_attention(x));
  ops.push_back(gemm("proj", OpKind::PROJECTION, tokens, x.q / x.t, x.h, x));
  ops.push_back(bias_dropout_add("attn_bda", split_hidden, x));
  ops.push_back(norm("ln2", split_hidden, x));
  if (kind == LayerKind::MOE) {
    if (x.shared_f > 0) {
      ops.push_back(gemm("shared_up", OpKind::MLP_UP, tokens, x.h, up * x.shared_f / x.t, x));
      ops.push_back(activation_op("shared_act", tokens * x.shared_f / x.t, x));
      ops.push_back(gemm("shared_down", OpKind::MLP_DOWN, tokens, x.shared_f / x.t, x.h, x));
    }
    ops.push_back(gemm("router", OpKind::ROUTER, tokens / x.tsp, x.h, x.experts, x));
    const double routed = x.expert_tokens * x.top_k;
    ops.push_back(gemm("expert_up", OpKind::EXPERT_UP, routed, x.h, up * x.f / x.et, x, x.local_experts));
    ops.push_back(activation_op("expert_act", routed * x.f / x.et, x));
    ops.push_back(gemm("expert_down", OpKind::EXPERT_DOWN, routed, x.f / x.et, x.h, x, x.local_experts));
  } else {
    ops.push_back(gemm("mlp_up", OpKind::MLP_UP, tokens, x.h, up * x.dense_f / x.t, x));
    ops.push_back(activation_op("mlp_act", tokens * x.dense_f / x.t, x));
    ops.push_back(gemm("mlp_down", OpKind::MLP_DOWN, tokens, x.dense_f / x.t, x.h, x));
  }
  ops.push_back(bias_dropout_add("mlp_bda", split_hidden, x));
  add_fp8_casts(ops);
  return ops;
}

std::vector<OpCost> layer_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  return layer_ops(m, t, p, m.is_moe() ? LayerKind::MOE : LayerKind::DENSE);
}

size_t full_recompute_ops(const std::vector<OpCost>& ops, bool early_stop) {
  if (!early_stop) return ops.size();
  for (size_t i = ops.size(); i > 0; --i) {
    switch (ops[i - 1].kind) {
      case OpKind::BIAS_DROPOUT_ADD: continue;
      case OpKind::QKV:
      case OpKind::PROJECTION:
      case OpKind::ROUTER:
      case OpKind::MLP_UP:
      case OpKind::MLP_ACTIVATION:
      case OpKind::MLP_DOWN:
      case OpKind::EXPERT_UP:
      case OpKind::LOGITS: return i - 1;
      default: return i;
    }
  }
  return 0;
}

void mark_op_sac(std::vector<OpCost>& ops, const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const Shape x = shape_of(m, t, p);
  const std::vector<MmCall> calls = layer_mm_calls(x);
  for (OpCost& op : ops) {
    if (op.op_class != core::OpClass::GEMM) {
      // Norms, activations, residual adds; the attention core unless it is one SDPA call.
      op.op_sac_recompute = op.op_class == core::OpClass::FLASH_ATTENTION ? 0.0 : 1.0;
      continue;
    }
    double rerun = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].kind == op.kind && !mm_saved(i)) rerun += calls[i].share;
    }
    op.op_sac_recompute = rerun;
  }
}

std::vector<OpCost> embedding_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const Shape x = shape_of(m, t, p);
  const double out = x.b * x.sl * x.h;
  // Each rank reads the rows of its vocabulary shard and writes the whole (partial) output, which
  // the tensor group then sums; learned positions add a read of their rows. Backward scatters the
  // output gradient into the fp32 main gradients of the rows.
  double fwd = out / x.t * x.e + out * x.e;  // 16-bit (fp32) embedding rows, FP8 training included
  double bwd = out * x.e + out / x.t * MAIN_GRAD_ACCUMULATE_BYTES;
  if (m.learned_positions) {
    fwd += out * x.e;
    bwd += out * MAIN_GRAD_ACCUMULATE_BYTES;
  }
  std::vector<OpCost> ops;
  ops.push_back(memory_bound("embedding", OpKind::EMBEDDING, core::OpClass::EMBEDDING, fwd, bwd));
  if (m.embedding_norm) ops.push_back(norm("embedding_ln", out / x.tsp, x));
  return ops;
}

std::vector<OpCost> head_ops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const Shape x = shape_of(m, t, p);
  const double tokens = x.b * x.sl;
  const double logits = tokens * x.vocab / x.t;
  std::vector<OpCost> ops;
  ops.push_back(norm("final_ln", tokens * x.h / x.tsp, x));
  ops.push_back(gemm("logits", OpKind::LOGITS, tokens, x.h, x.vocab / x.t, x));
  // Cross-entropy reads the logits and keeps their fp32 softmax; backward turns it into the logits'
  // gradient.
  ops.push_back(memory_bound("loss", OpKind::LOSS, core::OpClass::ELEMENTWISE, logits * (x.e + FP32_BYTES),
                             logits * (FP32_BYTES + x.e)));
  return ops;
}

IterationFlops iteration_flops(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  if (m.is_layer_graph()) {
    // Model FLOPs: 3x the forward FLOPs of conv, dense and attention layers per sample. Executed:
    // forward + 2x backward of every layer, on each of the spatial ranks for its share (the layers
    // after the split has been consumed run whole on every spatial rank).
    TrainingConfig one = t;
    one.micro_batch = 1;
    double executed = 0;
    for (const LocalLayerCost& c : local_layer_costs(*m.graph, one, p)) executed += c.flops;
    IterationFlops f;
    f.model = core::Flops(m.graph->model_flops_per_sample() * static_cast<double>(t.global_batch));
    f.hardware = core::Flops(3 * executed * static_cast<double>(p.spatial) * static_cast<double>(t.global_batch));
    return f;
  }
  // The whole batch as one micro-batch on one unsplit GPU: every parallel split only divides the
  // same products among GPUs.
  TrainingConfig whole = t;
  whole.micro_batch = t.global_batch;
  const ParallelismConfig single;
  IterationFlops f;
  f.model = total_flops(head_ops(m, whole, single)) + total_flops(embedding_ops(m, whole, single));
  f.hardware = f.model;
  const double moe_layers = m.moe_layer_count();
  for (const LayerKind kind : {LayerKind::DENSE, LayerKind::MOE}) {
    const double layers = kind == LayerKind::MOE ? moe_layers : m.layers - moe_layers;
    if (layers == 0) continue;
    const std::vector<OpCost> layer = layer_ops(m, whole, single, kind);
    f.model += total_flops(layer) * layers;
    f.hardware += (total_flops(layer) + backward_recompute_flops(layer)) * layers;
    if (p.recompute == Recompute::FULL) {
      const size_t rerun = full_recompute_ops(layer, p.recompute_early_stop);
      for (size_t i = 0; i < rerun; ++i) f.hardware += layer[i].forward_flops * layers;
    }
    if (p.recompute == Recompute::SELECTIVE) f.hardware += forward_flops(layer, true) * layers;
    if (p.recompute == Recompute::SELECTIVE_OP) {
      std::vector<OpCost> marked = layer;
      mark_op_sac(marked, m, whole, single);
      for (const OpCost& op : marked) f.hardware += op.forward_flops * op.op_sac_recompute * layers;
    }
  }
  return f;
}

core::Bytes activation_bytes_per_layer(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                                       LayerKind kind) {
  const Shape x = shape_of(m, t, p);
  const double tokens = x.b * x.sl;
  if (p.recompute == Recompute::FULL) return core::Bytes(tokens * x.h * x.e / x.tsp);
  if (p.recompute == Recompute::SELECTIVE_OP) {
    // The checkpoint's input, the saved mm outputs, and SDPA's output with its statistics.
    double saved = tokens * x.h * x.e / x.tsp;
    const std::vector<MmCall> calls = layer_mm_calls(x);
    for (size_t i = 0; i < calls.size(); ++i) {
      if (mm_saved(i)) saved += tokens * calls[i].width * x.e;
    }
    if (x.flash) saved += tokens * x.q / x.t * x.e + x.b * (x.a / x.t) * x.sl * FP32_BYTES;
    // Under sequence parallelism the reduce-scatters after the projection and the MLP are saved
    // (their outputs, 1/t of the sequence each); the all-gathered inputs and the all-reduce outputs
    // without it are not.
    if (x.t > 1 && x.tsp > 1) saved += 2 * tokens * x.h / x.t * x.e;
    return core::Bytes(saved);
  }
  // Norm inputs, QKV and MLP inputs, two dropout masks: whole on every tensor rank unless sequence
  // parallel.
  const double whole = tokens * x.h * (4 * x.e + 2 * MASK_BYTES) / x.tsp;
  // Q, K, V and the projection input.
  const double attention = tokens * (2 * x.q + 2 * x.kv) * x.e;
  // Activation input(s) and down-projection input of an MLP of inner size f split `split` ways, per
  // token it processes.
  auto per_token_mlp = [&](double f, double split) { return (x.swiglu ? 3 : 2) * f * x.e / split; };
  double mlp = tokens * per_token_mlp(x.dense_f, x.t);
  if (kind == LayerKind::MOE) {
    // The routed experts keep their tensors per routed token, plus the dispatched tokens.
    mlp = x.expert_tokens * x.top_k * (per_token_mlp(x.f, x.et) + x.h * x.e) + tokens * per_token_mlp(x.shared_f, x.t);
  }
  double bytes = whole + attention / x.t + mlp;
  if (x.flash) {
    bytes += x.b * (x.a / x.t) * x.sl * FP32_BYTES;  // softmax statistics
  } else if (p.recompute == Recompute::NONE) {
    bytes += x.b * (x.a / x.t) * x.sl * x.s * (2 * x.e + MASK_BYTES);
  }
  return core::Bytes(bytes);
}

core::Bytes activation_bytes_per_layer(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  return activation_bytes_per_layer(m, t, p, m.is_moe() ? LayerKind::MOE : LayerKind::DENSE);
}

bool eager_loss(const TrainingConfig& t, const ParallelismConfig& p) {
  const core::Stack s = resolved_stack(t, p);
  return s == core::Stack::TORCHTITAN || s == core::Stack::FSDP || s == core::Stack::DDP;
}

core::Bytes head_activation_bytes(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const Shape x = shape_of(m, t, p);
  const double logits = x.b * x.sl * x.vocab / x.t;
  return core::Bytes((FP32_BYTES + (eager_loss(t, p) ? x.e : 0.0)) * logits);
}

core::Bytes head_backward_transient_bytes(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  if (!eager_loss(t, p)) return core::Bytes(0);
  const Shape x = shape_of(m, t, p);
  return core::Bytes(2 * FP32_BYTES * x.b * x.sl * x.vocab / x.t);
}

ParameterCount layer_parameters(const ModelSpec& m, const ParallelismConfig& p, LayerKind kind) {
  const double h = static_cast<double>(m.hidden);
  const double t = p.tensor;
  const double q = static_cast<double>(m.attention_width());
  const double kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim());
  const double qkv_out = q + 2 * kv;
  const double up_matrices = m.activation == Activation::SWIGLU ? 2 : 1;
  // One MLP of inner size f split over `split` ranks: column-parallel weights and biases and the
  // row-parallel weight are split, the row-parallel bias is not.
  auto mlp = [&](double f, double split) {
    double n = (up_matrices + 1) * h * f / split;
    if (m.has_biases()) n += up_matrices * f / split + h;
    return n;
  };
  ParameterCount c;
  c.dense = 2.0 * static_cast<double>(m.norm_parameters()) + h * qkv_out / t + q * h / t;
  if (m.has_biases()) c.dense += qkv_out / t + h;
  if (kind == LayerKind::MOE) {
    c.dense += h * m.experts;  // router
    if (m.shared_experts > 0) c.dense += mlp(static_cast<double>(m.shared_ffn()), t);
    c.expert = static_cast<double>(m.experts) / p.expert * mlp(static_cast<double>(m.ffn_hidden), p.expert_mlp_tensor());
  } else {
    c.dense += mlp(static_cast<double>(m.dense_ffn()), t);
  }
  return c;
}

ParameterCount layer_parameters(const ModelSpec& m, const ParallelismConfig& p) {
  return layer_parameters(m, p, m.is_moe() ? LayerKind::MOE : LayerKind::DENSE);
}

ParameterCount embedding_parameters(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const double h = static_cast<double>(m.hidden);
  ParameterCount c;
  c.dense = static_cast<double>(m.vocab) * h / p.tensor;
  if (m.learned_positions) c.dense += static_cast<double>(t.sequence_length) * h;
  if (m.embedding_norm) c.dense += static_cast<double>(m.norm_parameters());
  return c;
}

ParameterCount head_parameters(const ModelSpec& m, const ParallelismConfig& p) {
  ParameterCount c;
  c.dense = static_cast<double>(m.norm_parameters());
  if (!m.tied_embeddings || p.pipeline > 1) c.dense += static_cast<double>(m.vocab) * static_cast<double>(m.hidden) / p.tensor;
  return c;
}

double weight_bytes_per_parameter(core::Precision p) { return activation_element_bytes(p); }

double weight_bytes_per_parameter(const TrainingConfig& t) {
  return t.fp8_params ? element_bytes(core::Precision::FP8) : weight_bytes_per_parameter(t.precision);
}

double gradient_bytes_per_parameter() { return FP32_BYTES; }

double optimizer_bytes_per_parameter(core::Precision p) { return activation_element_bytes(p) == FP32_BYTES ? 8 : 12; }

double optimizer_step_bytes_per_parameter(core::Precision p) {
  const bool mixed = activation_element_bytes(p) != FP32_BYTES;
  return 2 * FP32_BYTES + 6 * FP32_BYTES + (mixed ? 2 : 0);
}

double accumulated_gradient_bytes_per_parameter(core::Precision precision, const ParallelismConfig& p) {
  if (!p.fsdp2_pipelined()) return 0;
  return p.reduce_fp32() ? FP32_BYTES : activation_element_bytes(precision);
}

MemoryBreakdown model_state_memory(const ParameterCount& local, core::Precision precision, const ParallelismConfig& p) {
  auto sharded = [&](int from_stage) {
    const bool shard = p.zero_stage >= from_stage;
    return local.dense / (shard ? p.dense_shards() : 1) + local.expert / (shard ? p.expert_replicas() : 1);
  };
  MemoryBreakdown mem;
  mem.weights = core::Bytes(sharded(3) * weight_bytes_per_parameter(precision));
  mem.gradients = core::Bytes(sharded(2) * gradient_bytes_per_parameter());
  mem.optimizer_states = core::Bytes(sharded(1) * optimizer_bytes_per_parameter(precision));
  mem.gradients += core::Bytes(local.total() * accumulated_gradient_bytes_per_parameter(precision, p));
  return mem;
}

MemoryBreakdown model_state_memory(const ParameterCount& local, const TrainingConfig& t, const ParallelismConfig& p) {
  MemoryBreakdown mem = model_state_memory(local, t.precision, p);
  mem.weights = core::Bytes(mem.weights.value() / weight_bytes_per_parameter(t.precision) * weight_bytes_per_parameter(t));
  return mem;
}

}  // namespace trainsim::models
