// GEMM shapes: with libtrainsim_tracer.so in LD_PRELOAD, the process's calls to cublasLtMatmul,
// cublasGemmEx, cublasGemmStridedBatchedEx and cublasSgemm_v2 reach these functions. Each reads the
// shape (record/gemm_shape.hpp), forwards to the real function found among the loaded libraries
// (record/library_lookup.hpp), with an external correlation id pushed to CUPTI so that the kernels it
// launches can be joined to the Gemm record, and records the call.
//
// cuBLAS calls cuBLASLt internally; a call made while another wrapped call of the same thread is in
// progress is forwarded without a record of its own.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <mutex>

#include "tracer/record/gemm_shape.hpp"
#include "tracer/record/library_lookup.hpp"
#include "tracer/record/session.hpp"

#define TRAINSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace trainsim::tracer {
namespace {

// External correlation kind of cuBLAS calls: CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1.
constexpr uint32_t EXTERNAL_KIND_CUBLAS = 4;

thread_local bool in_gemm = false;

// cublas_api.h also declares C++ overloads of these two (legacy cudaDataType compute types).
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                  const void*, const void*, cudaDataType, int, long long int,
                                                  const void*, cudaDataType, int, long long int, const void*, void*,
                                                  cudaDataType, int, long long int, int, cublasComputeType_t,
                                                  cublasGemmAlgo_t);

struct CublasApi {
  decltype(&::cublasLtMatmul) lt_matmul = nullptr;
  decltype(&::cublasLtMatrixLayoutGetAttribute) lt_layout_get = nullptr;
  decltype(&::cublasLtMatmulDescGetAttribute) lt_desc_get = nullptr;
  GemmExFn gemm_ex = nullptr;
  GemmStridedBatchedExFn gemm_strided_batched_ex = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasGetStream_v2) get_stream = nullptr;
};

LoadedLibrary find(bool (*matches)(std::string_view), const char* symbol) {
  static const int own = 0;
  LoadedLibrary lib = find_loaded_library(matches);
  return lib ? lib : find_library_defining(symbol, &own);
}

const CublasApi& api() {
  static const CublasApi resolved = [] {
    CublasApi a;
    const LoadedLibrary lt = find(is_cublaslt_library, "cublasLtMatmul");
    a.lt_matmul = reinterpret_cast<decltype(a.lt_matmul)>(lt.symbol("cublasLtMatmul"));
    a.lt_layout_get = reinterpret_cast<decltype(a.lt_layout_get)>(lt.symbol("cublasLtMatrixLayoutGetAttribute"));
    a.lt_desc_get = reinterpret_cast<decltype(a.lt_desc_get)>(lt.symbol("cublasLtMatmulDescGetAttribute"));
    const LoadedLibrary blas = find(is_cublas_library, "cublasGemmEx");
    a.gemm_ex = reinterpret_cast<decltype(a.gemm_ex)>(blas.symbol("cublasGemmEx"));
    a.gemm_strided_batched_ex =
        reinterpret_cast<decltype(a.gemm_strided_batched_ex)>(blas.symbol("cublasGemmStridedBatchedEx"));
    a.sgemm = reinterpret_cast<decltype(a.sgemm)>(blas.symbol("cublasSgemm_v2"));
    a.get_stream = reinterpret_cast<decltype(a.get_stream)>(blas.symbol("cublasGetStream_v2"));
    return a;
  }();
  return resolved;
}

void report_missing(const char* function) {
  log_once(function, std::string(function) + " wrapper: the real function was not found among the loaded "
                                              "libraries; the call fails with CUBLAS_STATUS_NOT_INITIALIZED");
}

// Runs `call` with a correlation id pushed and records `gemm` (unless nested in another GEMM call).
template <class Call>
cublasStatus_t recorded(GemmEvent gemm, Call call) {
  TraceSession* session = in_gemm ? nullptr : process_session();
  if (session == nullptr) return call();
  in_gemm = true;
  gemm.correlation_id = session->next_correlation_id();
  gemm.enqueue_ns = session->now_ns();
  const auto& hooks = session->correlation_hooks();
  if (hooks.push != nullptr) hooks.push(EXTERNAL_KIND_CUBLAS, gemm.correlation_id);
  const cublasStatus_t status = call();
  if (hooks.pop != nullptr) hooks.pop(EXTERNAL_KIND_CUBLAS);
  in_gemm = false;
  if (status == CUBLAS_STATUS_SUCCESS) session->record(gemm);
  return status;
}

template <class T>
T layout_attribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, T fallback) {
  T value = fallback;
  size_t written = 0;
  if (layout == nullptr || api().lt_layout_get(layout, attr, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS) {
    return fallback;
  }
  return value;
}

LtLayout lt_layout(cublasLtMatrixLayout_t layout) {
  LtLayout l;
  l.rows = layout_attribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_ROWS, 0);
  l.cols = layout_attribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_COLS, 0);
  l.ld = layout_attribute<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_LD, 0);
  l.data_type = static_cast<int>(layout_attribute<uint32_t>(layout, CUBLASLT_MATRIX_LAYOUT_TYPE, UINT32_MAX));
  l.batch_count = layout_attribute<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  return l;
}

template <class T>
T desc_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T fallback) {
  T value = fallback;
  size_t written = 0;
  if (api().lt_desc_get(desc, attr, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS) return fallback;
  return value;
}

uint64_t stream_of(cublasHandle_t handle) {
  cudaStream_t stream = nullptr;
  if (api().get_stream == nullptr || api().get_stream(handle, &stream) != CUBLAS_STATUS_SUCCESS) return 0;
  return reinterpret_cast<uintptr_t>(stream);
}

}  // namespace
}  // namespace trainsim::tracer

using namespace trainsim::tracer;

TRAINSIM_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                                              const void* a, cublasLtMatrixLayout_t a_desc, const void* b,
                                              cublasLtMatrixLayout_t b_desc, const void* beta, const void* c,
                                              cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
                                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                                              size_t workspace_bytes, cudaStream_t stream) {
  if (api().lt_matmul == nullptr || api().lt_layout_get == nullptr || api().lt_desc_get == nullptr) {
    report_missing("cublasLtMatmul");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  auto call = [&] {
    return api().lt_matmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
                           workspace_bytes, stream);
  };
  if (in_gemm) return call();
  const int op_a = desc_attribute<int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
  const int op_b = desc_attribute<int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  const int compute = desc_attribute<int32_t>(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, -1);
  GemmEvent gemm = gemm_from_lt_layouts(lt_layout(a_desc), lt_layout(b_desc), lt_layout(d_desc), op_a, op_b, compute);
  gemm.stream = reinterpret_cast<uintptr_t>(stream);
  return recorded(gemm, call);
}

TRAINSIM_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                            int m, int n, int k, const void* alpha, const void* a,
                                            cudaDataType a_type, int lda, const void* b, cudaDataType b_type, int ldb,
                                            const void* beta, void* c, cudaDataType c_type, int ldc,
                                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (api().gemm_ex == nullptr) {
    report_missing("cublasGemmEx");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  GemmEvent gemm = gemm_from_args({GemmApi::CUBLAS_GEMM_EX, transa, transb, m, n, k, a_type, b_type, c_type, lda, ldb,
                                   ldc, compute, 1});
  gemm.stream = stream_of(handle);
  return recorded(gemm, [&] {
    return api().gemm_ex(handle, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c, c_type, ldc,
                         compute, algo);
  });
}

TRAINSIM_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* a, cudaDataType a_type, int lda, long long int stride_a, const void* b, cudaDataType b_type, int ldb,
    long long int stride_b, const void* beta, void* c, cudaDataType c_type, int ldc, long long int stride_c,
    int batch_count, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (api().gemm_strided_batched_ex == nullptr) {
    report_missing("cublasGemmStridedBatchedEx");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  GemmEvent gemm = gemm_from_args({GemmApi::CUBLAS_GEMM_STRIDED_BATCHED_EX, transa, transb, m, n, k, a_type, b_type,
                                   c_type, lda, ldb, ldc, compute, batch_count});
  gemm.stream = stream_of(handle);
  return recorded(gemm, [&] {
    return api().gemm_strided_batched_ex(handle, transa, transb, m, n, k, alpha, a, a_type, lda, stride_a, b, b_type,
                                         ldb, stride_b, beta, c, c_type, ldc, stride_c, batch_count, compute, algo);
  });
}

TRAINSIM_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                              const float* a, int lda, const float* b, int ldb, const float* beta,
                                              float* c, int ldc) {
  if (api().sgemm == nullptr) {
    report_missing("cublasSgemm_v2");
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  GemmEvent gemm = gemm_from_args({GemmApi::CUBLAS_SGEMM, transa, transb, m, n, k, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                   lda, ldb, ldc, CUBLAS_COMPUTE_32F, 1});
  gemm.stream = stream_of(handle);
  return recorded(gemm, [&] { return api().sgemm(handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}
