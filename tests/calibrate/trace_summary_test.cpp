#include "calibrate/trace_summary.hpp"

#include <gtest/gtest.h>

#include "calibrate/kineto_import.hpp"

namespace trainsim::calibrate {
namespace {

const std::string DATA = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/";

core::TraceFile from_kineto(const std::string& name) {
  KinetoImport t = import_kineto_file(DATA + name);
  core::TraceFile f;
  f.path = name;
  f.header = t.header;
  f.records = std::move(t.records);
  return f;
}

trace::Record kernel(const std::string& name, uint64_t start, uint64_t end, uint32_t correlation = 0) {
  trace::Record r;
  r.mutable_kernel()->set_name(name);
  r.mutable_kernel()->set_start_ns(start);
  r.mutable_kernel()->set_end_ns(end);
  r.mutable_kernel()->set_correlation_id(correlation);
  return r;
}

double busy_us(const RankSummary& s, TimeCategory c) { return s.busy[static_cast<size_t>(c)].value() * 1e6; }

TEST(TraceSummary, KernelCategories) {
  EXPECT_EQ(categorize_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn"), TimeCategory::GEMM);
  EXPECT_EQ(categorize_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"),
            TimeCategory::GEMM);
  EXPECT_EQ(categorize_kernel("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8"), TimeCategory::GEMM);
  EXPECT_EQ(categorize_kernel("nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_TNT"), TimeCategory::GEMM);
  EXPECT_EQ(categorize_kernel("void pytorch_flash::flash_fwd_kernel<...>"), TimeCategory::ATTENTION);
  EXPECT_EQ(categorize_kernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80"), TimeCategory::ATTENTION);
  EXPECT_EQ(categorize_kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"),
            TimeCategory::ATTENTION);
  EXPECT_EQ(categorize_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), TimeCategory::COMMUNICATION);
  EXPECT_EQ(categorize_kernel("void at::native::vectorized_elementwise_kernel<4, ...>"), TimeCategory::ELEMENTWISE);
}

// nccl-tests, doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n for all_reduce, (n-1)/n for
// all_gather / reduce_scatter / all_to_all, 1 for broadcast / reduce.
TEST(TraceSummary, BusBandwidthFactorsOfNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_ALL_REDUCE, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_ALL_REDUCE, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_ALL_GATHER, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_REDUCE_SCATTER, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_ALL_TO_ALL, 16), 15.0 / 16.0);
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_BROADCAST, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(trace::COLLECTIVE_OP_REDUCE, 8), 1.0);
}

// The fixture, by hand: two 400 us steps (window 800 us); per step a 100 us and a 60 us GEMM, a
// 15 us elementwise kernel, a 50 us attention kernel and a 100 us all-reduce of 1 Mi bf16 elements,
// plus one 20 us copy; nothing overlaps.
TEST(TraceSummary, KinetoFixtureRank0) {
  const RankSummary s = summarize_trace(from_kineto("kineto_rank0.json"), 3);
  EXPECT_EQ(s.rank, 0);
  EXPECT_EQ(s.device, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s.iterations, 2u);
  EXPECT_NEAR(s.window.value(), 800e-6, 1e-12);
  EXPECT_NEAR(busy_us(s, TimeCategory::GEMM), 320, 1e-6);
  EXPECT_NEAR(busy_us(s, TimeCategory::ATTENTION), 100, 1e-6);
  EXPECT_NEAR(busy_us(s, TimeCategory::ELEMENTWISE), 30, 1e-6);
  EXPECT_NEAR(busy_us(s, TimeCategory::COMMUNICATION), 200, 1e-6);
  EXPECT_NEAR(busy_us(s, TimeCategory::MEMCPY), 20, 1e-6);
  EXPECT_NEAR(busy_us(s, TimeCategory::IDLE), 130, 1e-6);
  ASSERT_EQ(s.top_kernels.size(), 3u);
  EXPECT_EQ(s.top_kernels[0].name, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn");
  EXPECT_EQ(s.top_kernels[0].count, 2u);
  EXPECT_NEAR(s.top_kernels[0].mean.value(), 100e-6, 1e-12);
  EXPECT_EQ(s.top_kernels[1].name.rfind("ncclDevKernel_AllReduce", 0), 0u);
  ASSERT_EQ(s.collectives.size(), 1u);
  const CollectiveStat& c = s.collectives[0];
  EXPECT_EQ(c.op, trace::COLLECTIVE_OP_ALL_REDUCE);
  EXPECT_EQ(c.size.value(), 2097152.0);
  EXPECT_EQ(c.comm_size, 2);
  EXPECT_EQ(c.count, 2u);
  EXPECT_NEAR(c.mean.value(), 100e-6, 1e-12);
  EXPECT_NEAR(c.algbw.value(), 2097152.0 / 100e-6, 1.0);
  EXPECT_NEAR(c.busbw.value(), c.algbw.value(), 1e-6);  // factor 2(n-1)/n = 1 for n = 2
  EXPECT_EQ(c.timing, trace::TIMING_GPU_KERNEL);
}

TEST(TraceSummary, OverlapsCountOnceAndIdleIsTheRest) {
  core::TraceFile f;
  f.records.push_back(kernel("gemm_a", 0, 100));
  f.records.push_back(kernel("gemm_b", 50, 150));          // overlaps gemm_a: 150 us of GEMM, not 200
  f.records.push_back(kernel("ncclDevKernel_X", 100, 300));  // overlaps the GEMMs by 50
  f.records.push_back(kernel("elementwise", 400, 500));
  const RankSummary s = summarize_trace(f, 10);
  EXPECT_EQ(s.iterations, 0u);
  EXPECT_NEAR(s.window.value(), 500e-9, 1e-15);
  EXPECT_NEAR(s.busy[static_cast<size_t>(TimeCategory::GEMM)].value(), 150e-9, 1e-15);
  EXPECT_NEAR(s.busy[static_cast<size_t>(TimeCategory::COMMUNICATION)].value(), 200e-9, 1e-15);
  EXPECT_NEAR(s.busy[static_cast<size_t>(TimeCategory::IDLE)].value(), 100e-9, 1e-15);  // 300..400
}

TEST(TraceSummary, WrapperCollectivesAreTimedByTheirKernels) {
  core::TraceFile f;
  f.header.set_rank(3);
  trace::Record call;
  trace::Collective* c = call.mutable_collective();
  c->set_op(trace::COLLECTIVE_OP_ALL_GATHER);
  c->set_bytes(1 << 20);
  c->set_comm_size(4);
  c->set_start_ns(10);  // the host call
  c->set_end_ns(12);
  c->set_timing(trace::TIMING_ENQUEUE);
  c->set_source(trace::SOURCE_NCCL_WRAPPER);
  c->set_correlation_id(77);
  f.records.push_back(call);
  trace::Record link;
  link.mutable_external_correlation()->set_external_kind(3);
  link.mutable_external_correlation()->set_external_id(77);
  link.mutable_external_correlation()->set_correlation_id(500);
  f.records.push_back(link);
  f.records.push_back(kernel("ncclDevKernel_AllGather_RING_LL", 1000, 1000 + 262144, 500));
  const RankSummary s = summarize_trace(f, 10);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].timing, trace::TIMING_GPU_KERNEL);
  EXPECT_NEAR(s.collectives[0].mean.value(), 262144e-9, 1e-15);
  EXPECT_NEAR(s.collectives[0].algbw.value(), 4e9, 1.0);  // 1 MiB in 262.144 us
  EXPECT_NEAR(s.collectives[0].busbw.value(), 3e9, 1.0);  // x (n-1)/n
}

TEST(TraceSummary, TableAndJson) {
  const std::vector<RankSummary> ranks = {summarize_trace(from_kineto("kineto_rank0.json"), 2)};
  const std::string table = format_summary_table(ranks);
  EXPECT_NE(table.find("rank 0 (kineto_rank0.json): NVIDIA A100-SXM4-80GB"), std::string::npos) << table;
  EXPECT_NE(table.find("window_ms 0.800 over 2 iterations"), std::string::npos) << table;
  EXPECT_NE(table.find("all_reduce"), std::string::npos) << table;
  const core::Json j = summary_to_json(ranks);
  EXPECT_EQ(j["schema"], "trainsim.trace-summary/1");
  EXPECT_EQ(j["ranks"][0]["collectives"][0]["op"], "all_reduce");
  EXPECT_NEAR(j["ranks"][0]["share"]["gemm"].get<double>(), 0.4, 1e-9);
  EXPECT_EQ(j["ranks"][0]["top_kernels"].size(), 2u);
}

TEST(TraceSummary, EmptyTrace) {
  const RankSummary s = summarize_trace(core::TraceFile{}, 10);
  EXPECT_EQ(s.window.value(), 0.0);
  EXPECT_TRUE(s.collectives.empty());
}

}  // namespace
}  // namespace trainsim::calibrate
