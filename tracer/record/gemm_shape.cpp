#include "tracer/record/gemm_shape.hpp"

#include <utility>

namespace trainsim::tracer {
namespace {

uint64_t non_negative(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

}  // namespace

DataType data_type_from_cuda(int cuda_data_type) {
  switch (cuda_data_type) {
    case 0: return DataType::FLOAT32;      // CUDA_R_32F
    case 1: return DataType::FLOAT64;      // CUDA_R_64F
    case 2: return DataType::FLOAT16;      // CUDA_R_16F
    case 3: return DataType::INT8;         // CUDA_R_8I
    case 8: return DataType::UINT8;        // CUDA_R_8U
    case 10: return DataType::INT32;       // CUDA_R_32I
    case 12: return DataType::UINT32;      // CUDA_R_32U
    case 14: return DataType::BFLOAT16;    // CUDA_R_16BF
    case 24: return DataType::INT64;       // CUDA_R_64I
    case 26: return DataType::UINT64;      // CUDA_R_64U
    case 28: return DataType::FLOAT8_E4M3; // CUDA_R_8F_E4M3
    case 29: return DataType::FLOAT8_E5M2; // CUDA_R_8F_E5M2
    default: return DataType::UNKNOWN;
  }
}

std::string compute_type_name(int compute_type) {
  static const std::pair<int, const char*> NAMES[] = {
      {64, "CUBLAS_COMPUTE_16F"}, {65, "CUBLAS_COMPUTE_16F_PEDANTIC"}, {68, "CUBLAS_COMPUTE_32F"},
      {69, "CUBLAS_COMPUTE_32F_PEDANTIC"}, {74, "CUBLAS_COMPUTE_32F_FAST_16F"},
      {75, "CUBLAS_COMPUTE_32F_FAST_16BF"}, {77, "CUBLAS_COMPUTE_32F_FAST_TF32"},
      {78, "CUBLAS_COMPUTE_32F_EMULATED_16BFX9"}, {70, "CUBLAS_COMPUTE_64F"}, {71, "CUBLAS_COMPUTE_64F_PEDANTIC"},
      {79, "CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT"}, {72, "CUBLAS_COMPUTE_32I"}, {73, "CUBLAS_COMPUTE_32I_PEDANTIC"},
      // Legacy: cudaDataType_t passed as the compute type.
      {0, "CUDA_R_32F"}, {1, "CUDA_R_64F"}, {2, "CUDA_R_16F"}, {10, "CUDA_R_32I"}};
  for (const auto& [value, name] : NAMES) {
    if (value == compute_type) return name;
  }
  return "unknown(" + std::to_string(compute_type) + ")";
}

GemmEvent gemm_from_lt_layouts(const LtLayout& a, const LtLayout& b, const LtLayout& d, int op_a, int op_b,
                               int compute_type) {
  GemmEvent g;
  g.api = GemmApi::CUBLASLT_MATMUL;
  g.transpose_a = op_a != CUBLAS_OP_N_VALUE;
  g.transpose_b = op_b != CUBLAS_OP_N_VALUE;
  g.m = d.rows;
  g.n = d.cols;
  g.k = g.transpose_a ? a.rows : a.cols;
  g.a_type = data_type_from_cuda(a.data_type);
  g.b_type = data_type_from_cuda(b.data_type);
  g.c_type = data_type_from_cuda(d.data_type);
  g.compute_type = compute_type_name(compute_type);
  g.batch_count = d.batch_count > 0 ? static_cast<uint64_t>(d.batch_count) : 1;
  g.lda = non_negative(a.ld);
  g.ldb = non_negative(b.ld);
  g.ldc = non_negative(d.ld);
  return g;
}

GemmEvent gemm_from_args(const GemmArgs& args) {
  GemmEvent g;
  g.api = args.api;
  g.transpose_a = args.op_a != CUBLAS_OP_N_VALUE;
  g.transpose_b = args.op_b != CUBLAS_OP_N_VALUE;
  g.m = non_negative(args.m);
  g.n = non_negative(args.n);
  g.k = non_negative(args.k);
  g.a_type = data_type_from_cuda(args.a_type);
  g.b_type = data_type_from_cuda(args.b_type);
  g.c_type = data_type_from_cuda(args.c_type);
  g.compute_type = compute_type_name(args.compute_type);
  g.batch_count = args.batch_count > 0 ? static_cast<uint64_t>(args.batch_count) : 1;
  g.lda = non_negative(args.lda);
  g.ldb = non_negative(args.ldb);
  g.ldc = non_negative(args.ldc);
  return g;
}

}  // namespace trainsim::tracer
