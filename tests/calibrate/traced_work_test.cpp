// The traced work by class (calibrate/traced_work.hpp) of a hand-made one-rank trace.

#include "calibrate/traced_work.hpp"

#include <gtest/gtest.h>

namespace trainsim::calibrate {
namespace {

trace::Record kernel(const std::string& name, uint64_t start_us, uint64_t end_us) {
  trace::Record r;
  r.mutable_kernel()->set_name(name);
  r.mutable_kernel()->set_start_ns(start_us * 1000);
  r.mutable_kernel()->set_end_ns(end_us * 1000);
  return r;
}

trace::Record step(int64_t number, uint64_t start_us, uint64_t end_us) {
  trace::Record r;
  r.mutable_marker()->set_name("ProfilerStep#" + std::to_string(number));
  r.mutable_marker()->set_iteration(number);
  r.mutable_marker()->set_start_ns(start_us * 1000);
  r.mutable_marker()->set_end_ns(end_us * 1000);
  return r;
}

double ms(const TracedWork& w, core::OpClass c) { return w.seconds[static_cast<size_t>(c)] * 1e3; }

TEST(TracedWork, KernelNamesToTheWorkloadsClasses) {
  core::OpClass c;
  ASSERT_TRUE(kernel_op_class("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", true, c));
  EXPECT_EQ(c, core::OpClass::GEMM);
  ASSERT_TRUE(kernel_op_class("void pytorch_flash::flash_bwd_dq_dk_dv_loop_kernel<...>", true, c));
  EXPECT_EQ(c, core::OpClass::FLASH_ATTENTION);
  ASSERT_TRUE(kernel_op_class("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", true, c));
  EXPECT_EQ(c, core::OpClass::ELEMENTWISE);  // with FlashAttention: the loss's softmax
  ASSERT_TRUE(kernel_op_class("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", false, c));
  EXPECT_EQ(c, core::OpClass::ATTENTION);
  ASSERT_TRUE(kernel_op_class("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<...>", true, c));
  EXPECT_EQ(c, core::OpClass::NORM);
  ASSERT_TRUE(kernel_op_class("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...FusedAdamMathFunctor>", true, c));
  EXPECT_EQ(c, core::OpClass::OPTIMIZER);
  ASSERT_TRUE(kernel_op_class("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<...>", true, c));
  EXPECT_EQ(c, core::OpClass::EMBEDDING);
  ASSERT_TRUE(kernel_op_class("void at::native::vectorized_elementwise_kernel<8, ...>", true, c));
  EXPECT_EQ(c, core::OpClass::ELEMENTWISE);
  EXPECT_FALSE(kernel_op_class("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", true, c));
}

// Two marked steps of 1,000 us. Step 0: a GEMM 100-400, a layer norm 400-450, a softmax (the loss)
// 450-550, an all-reduce 550-700, a 30 us copy 700-730; GPU idle 0-100 and 730-1000 (370 us).
// Step 1 (1000-2000): a GEMM 1100-1300 and an optimizer kernel 1300-1500; idle 600 us. A GEMM
// outside the marks (2100-2500) does not count. Per iteration: GEMM 250 us, norm 25, elementwise
// (50 softmax + 15 copy) 65, optimizer 100, idle 485; the all-reduce is busy but in no class.
TEST(TracedWork, ClassTimesAndIdlePerMarkedIteration) {
  core::TraceFile f;
  f.path = "rank0.trace";
  f.header.set_rank(0);
  f.header.set_world_size(1);
  f.records = {step(0, 0, 1000),
               kernel("nvjet_gemm", 100, 400),
               kernel("vectorized_layer_norm_kernel", 400, 450),
               kernel("cunn_SoftMaxForward", 450, 550),
               kernel("ncclDevKernel_AllReduce", 550, 700),
               step(1, 1000, 2000),
               kernel("nvjet_gemm", 1100, 1300),
               kernel("multi_tensor_apply_kernel", 1300, 1500),
               kernel("nvjet_gemm", 2100, 2500)};
  trace::Record copy;
  copy.mutable_memcpy()->set_start_ns(700'000);
  copy.mutable_memcpy()->set_end_ns(730'000);
  f.records.push_back(copy);
  const TracedWork w = traced_work(TraceSet({f}), true);
  EXPECT_EQ(w.iterations, 2u);
  EXPECT_NEAR(ms(w, core::OpClass::GEMM), 0.250, 1e-12);
  EXPECT_NEAR(ms(w, core::OpClass::NORM), 0.025, 1e-12);
  EXPECT_NEAR(ms(w, core::OpClass::ELEMENTWISE), 0.065, 1e-12);
  EXPECT_NEAR(ms(w, core::OpClass::OPTIMIZER), 0.100, 1e-12);
  EXPECT_NEAR(ms(w, core::OpClass::FLASH_ATTENTION), 0.0, 1e-12);
  EXPECT_NEAR(w.copies_s * 1e3, 0.015, 1e-12);
  EXPECT_NEAR(w.idle_s * 1e3, 0.485, 1e-12);
  EXPECT_NEAR(w.iteration_s * 1e3, 1.0, 1e-12);
}

TEST(TracedWork, NoMarksNoIterations) {
  core::TraceFile f;
  f.path = "rank0.trace";
  f.records = {kernel("nvjet_gemm", 100, 400)};
  const TracedWork w = traced_work(TraceSet({f}), true);
  EXPECT_EQ(w.iterations, 0u);
  EXPECT_EQ(ms(w, core::OpClass::GEMM), 0.0);
}

}  // namespace
}  // namespace trainsim::calibrate
