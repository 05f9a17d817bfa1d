#pragma once
// GEMM shapes from cuBLAS calls, CUDA-free: the cuBLAS wrappers (tracer/cuda/cublas_wrappers.cpp)
// pass raw integers (cudaDataType_t, cublasComputeType_t, cublasOperation_t, layout attributes)
// and get a GemmEvent. cuBLAS is column-major: D[m x n] = op(A)[m x k] * op(B)[k x n].
//
// Example (cublasLtMatmul with A 4096x1024 transposed, B 4096x8192, D 1024x8192, bf16):
//   LtLayout a{4096, 1024, 4096, CUDA_R_16BF, 1}, b{4096, 8192, 4096, CUDA_R_16BF, 1},
//            d{1024, 8192, 1024, CUDA_R_16BF, 1};
//   GemmEvent g = gemm_from_lt_layouts(a, b, d, OP_T, OP_N, CUBLAS_COMPUTE_32F);  // m=1024 n=8192 k=4096

#include <cstdint>
#include <string>

#include "tracer/record/events.hpp"

namespace trainsim::tracer {

// cublasOperation_t: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 (conjugate transpose).
inline constexpr int CUBLAS_OP_N_VALUE = 0;

// cudaDataType_t value -> DataType (CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14, ...).
DataType data_type_from_cuda(int cuda_data_type);
// cublasComputeType_t value -> its name ("CUBLAS_COMPUTE_32F"); legacy cudaDataType_t compute
// types (cublasGemmEx before CUDA 11) by their cudaDataType name ("CUDA_R_32F"); else "unknown(N)".
std::string compute_type_name(int compute_type);

// The attributes of one cublasLtMatrixLayout_t (CUBLASLT_MATRIX_LAYOUT_ROWS, _COLS, _LD, _TYPE,
// _BATCH_COUNT).
struct LtLayout {
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;
  int data_type = -1;
  int32_t batch_count = 1;
};

// A cublasLtMatmul call: m and n from D, k from A (its columns, or rows when op(A) transposes).
GemmEvent gemm_from_lt_layouts(const LtLayout& a, const LtLayout& b, const LtLayout& d, int op_a, int op_b,
                               int compute_type);

// The arguments of cublasGemmEx / cublasGemmStridedBatchedEx / cublasSgemm (types as cudaDataType_t).
struct GemmArgs {
  GemmApi api = GemmApi::UNKNOWN;
  int op_a = 0;
  int op_b = 0;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int a_type = -1;
  int b_type = -1;
  int c_type = -1;
  int64_t lda = 0;
  int64_t ldb = 0;
  int64_t ldc = 0;
  int compute_type = -1;
  int64_t batch_count = 1;
};
GemmEvent gemm_from_args(const GemmArgs& args);

}  // namespace trainsim::tracer
