#pragma once
// The cost of a PyTorch CPU op from its inputs, as the PyTorch profiler records them with
// `record_shapes=True`: "Input Dims" (one list of sizes per argument; [] for scalars and None),
// "Input type" ("c10::BFloat16", "float", "Scalar", ...) and, since PyTorch 2.2, "Concrete Inputs"
// (the values of scalar arguments as strings, "" for tensors). A Kineto import turns the costed ops
// into Gemm and Operation records (sim/core/trace.proto) that `calibrate` fits.
//
// GEMMs (m x k times k x n, `batch` products):
//   aten::mm(a[m,k], b[k,n])                 aten::addmm(bias, a[m,k], b[k,n])   aten::_addmm_activation (same)
//   aten::bmm(a[B,m,k], b[B,k,n])            aten::baddbmm(c, a[B,m,k], b[B,k,n])
//   aten::_scaled_mm(a[m,k], b[k,n], ...)    (FP8)
//   aten::matmul(a[...,m,k], b[k,n] or b[...,k,n])    aten::linear(x[...,k], w[n,k], bias)
// Attention (query, key, value in B,H,S,D order for SDPA's ops, B,S,H,D for the flash ones), with
// trainsim's FLOP count (models/accounting.cpp): forward 4·B·H·Sq·Sk·D, backward 10·B·H·Sq·Sk·D (2x
// forward plus the recomputed scores); the kernel executes half of them with a causal mask. The
// mask comes from the op's is_causal argument in "Concrete Inputs"; without it (older PyTorch) the
// op is taken as causal, as language-model training is, and `causal_known` is false. Bytes: every
// tensor input read, and the output (forward) or the gradients of Q, K and V (backward) written:
//   aten::_scaled_dot_product_{flash,efficient,cudnn}_attention[_backward], aten::_flash_attention_{forward,backward},
//   aten::_efficient_attention_{forward,backward}
// Memory-bound ops (bytes of HBM traffic = every tensor input read + an output the size of the
// largest input written; fill_/zero_ write their output only; copy_ reads src and writes self;
// native_dropout also writes a one-byte mask per element):
//   norm: aten::native_layer_norm[_backward], aten::_fused_rms_norm[_backward]
//   elementwise: add, sub, mul, div (and in-place), gelu, silu, relu, tanh, sigmoid, exp, neg,
//   sqrt, rsqrt, pow, clamp, where, masked_fill, threshold_backward, gelu_backward, silu_backward,
//   native_dropout[_backward], _softmax, _softmax_backward_data, copy_, fill_, zero_, addcmul_,
//   addcdiv_, lerp_ (the aten:: forms)
// Anything else is not costed.

#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/core/trace.pb.h"

namespace trainsim::calibrate {

struct OpArgument {
  std::vector<double> dims;  // sizes; empty for scalars, None and lists
  bool tensor = false;       // a tensor (its element type is known)
  // Sizes recorded but no type ("Input type" missing or shorter than "Input Dims"): a GEMM's shape
  // is known (its type may come from the kernel's name), its bytes are not.
  bool untyped = false;
  double element_bytes = 0;  // 0 when not a tensor
  trace::DataType data_type = trace::DATA_TYPE_UNKNOWN;
  std::string concrete;      // "Concrete Inputs" entry ("" when absent)

  double elements() const;   // product of dims (1 for a 0-dim tensor)
  double bytes() const { return tensor ? elements() * element_bytes : 0.0; }
};

struct CpuOp {
  std::string name;
  std::vector<OpArgument> inputs;
};

// Reads "Input Dims", "Input type" and "Concrete Inputs" from a cpu_op event's args; an argument
// whose entries are malformed is left as a non-tensor (its cost is then unknown, not wrong).
CpuOp read_cpu_op(const std::string& name, const core::Json& args);

// PyTorch's scalar type names ("c10::BFloat16", "float", "long int", ...): type and element size;
// DATA_TYPE_UNKNOWN and 0 for non-tensor types ("Scalar", "", "TensorList", ...).
std::pair<trace::DataType, double> torch_type(const std::string& name);

// The GEMM an op runs (m, n, k, batch_count, a_type / b_type; compute_type left to the caller), or
// nothing when the op is not a GEMM or its shapes are not known. Untyped operands give a GEMM of
// DATA_TYPE_UNKNOWN types. Attention and memory-bound ops with an untyped input have no cost (their
// bytes would be undercounted).
std::optional<trace::Gemm> gemm_of(const CpuOp& op);
// The attention or memory-bound cost of an op (external_id left to the caller), or nothing.
std::optional<trace::Operation> operation_of(const CpuOp& op);
// True for the attention ops above (their kernels may be launched by nested ops).
bool is_attention_op(const std::string& name);

}  // namespace trainsim::calibrate
