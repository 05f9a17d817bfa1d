#include "tracer/record/gemm_shape.hpp"

#include <gtest/gtest.h>

namespace trainsim::tracer {
namespace {

constexpr int CUDA_R_16BF = 14;
constexpr int CUDA_R_32F = 0;
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int OP_N = 0;
constexpr int OP_T = 1;

// A linear layer's forward pass as PyTorch issues it to cuBLASLt (column-major view of
// y = x W^T with x: 8192 x 4096 tokens x features, W: 1024 x 4096): D[1024 x 8192] = W^T-op(A) * B.
TEST(GemmShape, CublasLtLinearLayer) {
  const LtLayout a{4096, 1024, 4096, CUDA_R_16BF, 1};
  const LtLayout b{4096, 8192, 4096, CUDA_R_16BF, 1};
  const LtLayout d{1024, 8192, 1024, CUDA_R_16BF, 1};
  const GemmEvent g = gemm_from_lt_layouts(a, b, d, OP_T, OP_N, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(g.api, GemmApi::CUBLASLT_MATMUL);
  EXPECT_EQ(g.m, 1024u);
  EXPECT_EQ(g.n, 8192u);
  EXPECT_EQ(g.k, 4096u);
  EXPECT_TRUE(g.transpose_a);
  EXPECT_FALSE(g.transpose_b);
  EXPECT_EQ(g.a_type, DataType::BFLOAT16);
  EXPECT_EQ(g.c_type, DataType::BFLOAT16);
  EXPECT_EQ(g.compute_type, "CUBLAS_COMPUTE_32F");
  EXPECT_EQ(g.batch_count, 1u);
  EXPECT_EQ(g.lda, 4096u);
  EXPECT_EQ(g.ldc, 1024u);
}

TEST(GemmShape, NonTransposedKComesFromColumnsAndBatchesFromD) {
  const LtLayout a{128, 64, 128, CUDA_R_32F, 12};
  const LtLayout b{64, 256, 64, CUDA_R_32F, 12};
  const LtLayout d{128, 256, 128, CUDA_R_32F, 12};
  const GemmEvent g = gemm_from_lt_layouts(a, b, d, OP_N, OP_N, 77);
  EXPECT_EQ(g.k, 64u);
  EXPECT_EQ(g.batch_count, 12u);
  EXPECT_EQ(g.compute_type, "CUBLAS_COMPUTE_32F_FAST_TF32");
}

TEST(GemmShape, GemmExArguments) {
  GemmArgs args;
  args.api = GemmApi::CUBLAS_GEMM_STRIDED_BATCHED_EX;
  args.op_a = OP_T;
  args.m = 64;
  args.n = 64;
  args.k = 128;
  args.a_type = args.b_type = 2;  // CUDA_R_16F
  args.c_type = 2;
  args.lda = 128;
  args.ldb = 128;
  args.ldc = 64;
  args.compute_type = CUBLAS_COMPUTE_32F;
  args.batch_count = 96;
  const GemmEvent g = gemm_from_args(args);
  EXPECT_EQ(g.m, 64u);
  EXPECT_EQ(g.k, 128u);
  EXPECT_EQ(g.a_type, DataType::FLOAT16);
  EXPECT_EQ(g.batch_count, 96u);
  EXPECT_TRUE(g.transpose_a);
  EXPECT_EQ(compute_type_name(0), "CUDA_R_32F");  // legacy cudaDataType compute type
  EXPECT_EQ(compute_type_name(12345), "unknown(12345)");
  EXPECT_EQ(data_type_from_cuda(28), DataType::FLOAT8_E4M3);
  EXPECT_EQ(data_type_from_cuda(99), DataType::UNKNOWN);
}

}  // namespace
}  // namespace trainsim::tracer
