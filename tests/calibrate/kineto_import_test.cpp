#include "calibrate/kineto_import.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::calibrate {
namespace {

const std::string DATA = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/";
constexpr uint64_t BASE_NS = 1'700'000'000'000'000'000ull;

TEST(KinetoImport, HeaderFromDistributedInfoAndDeviceProperties) {
  const KinetoImport t = import_kineto_file(DATA + "kineto_rank1.json");
  EXPECT_EQ(t.header.magic(), core::TRACE_MAGIC);
  EXPECT_EQ(t.header.producer(), trace::PRODUCER_KINETO_IMPORT);
  EXPECT_EQ(t.header.clock(), trace::TRACE_CLOCK_KINETO);
  EXPECT_EQ(t.header.rank(), 1);
  EXPECT_EQ(t.header.world_size(), 2);
  EXPECT_EQ(t.header.nccl_version(), 22105u);
  EXPECT_EQ(t.header.cuda_runtime_version(), 12040u);
  ASSERT_EQ(t.header.devices_size(), 1);
  const trace::Device& d = t.header.devices(0);
  EXPECT_EQ(d.name(), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(d.sm_count(), 108u);
  EXPECT_EQ(d.global_memory_bytes(), 85899345920u);
  EXPECT_EQ(d.compute_capability_major(), 8u);
  EXPECT_EQ(d.max_warps_per_sm(), 64u);
  EXPECT_EQ(t.header.clock_anchor().trace_clock_ns(), BASE_NS);
}

TEST(KinetoImport, KernelsCollectivesCopiesAndSteps) {
  const KinetoImport t = import_kineto_file(DATA + "kineto_rank0.json");
  size_t kernels = 0, collectives = 0, memcpys = 0, markers = 0;
  for (const trace::Record& r : t.records) {
    kernels += r.has_kernel();
    collectives += r.has_collective();
    memcpys += r.has_memcpy();
    markers += r.has_marker();
  }
  EXPECT_EQ(kernels, 10u);  // 4 compute kernels and 1 NCCL kernel per step
  EXPECT_EQ(collectives, 2u);
  EXPECT_EQ(memcpys, 1u);
  EXPECT_EQ(markers, 2u);
  EXPECT_EQ(t.skipped_events, 6u);  // metadata, an unknown category, 2 cpu_op, 2 cuda_runtime

  const trace::Memcpy& m = t.records[0].memcpy();
  EXPECT_EQ(m.kind(), trace::MEMCPY_KIND_HTOD);
  EXPECT_EQ(m.src_kind(), trace::MEMORY_KIND_PINNED);
  EXPECT_EQ(m.dst_kind(), trace::MEMORY_KIND_DEVICE);
  EXPECT_EQ(m.bytes(), 4194304u);
  EXPECT_EQ(m.start_ns(), BASE_NS + 105'000);  // microseconds to nanoseconds
  EXPECT_EQ(m.end_ns(), BASE_NS + 125'000);

  const trace::Marker& step = t.records[1].marker();
  EXPECT_EQ(step.name(), "ProfilerStep#1");
  EXPECT_EQ(step.iteration(), 1);
  EXPECT_EQ(step.domain(), "user_annotation");

  const trace::Kernel& gemm = t.records[2].kernel();
  EXPECT_EQ(gemm.name(), "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn");
  EXPECT_EQ(gemm.stream_id(), 7u);
  EXPECT_EQ(gemm.correlation_id(), 210u);
  EXPECT_EQ(gemm.grid().y(), 16);
  EXPECT_EQ(gemm.block().x(), 256);
  EXPECT_EQ(gemm.registers_per_thread(), 128u);
  EXPECT_EQ(gemm.end_ns() - gemm.start_ns(), 100'000u);

  const trace::Collective& c = t.records[7].collective();
  EXPECT_TRUE(t.records[6].has_kernel());  // the NCCL kernel itself comes first
  EXPECT_EQ(c.op(), trace::COLLECTIVE_OP_ALL_REDUCE);
  EXPECT_EQ(c.op_name(), "allreduce");
  EXPECT_EQ(c.count(), 1048576u);
  EXPECT_EQ(c.bytes(), 2097152u);
  EXPECT_EQ(c.data_type(), trace::DATA_TYPE_BFLOAT16);
  EXPECT_EQ(c.comm_size(), 2);
  EXPECT_EQ(c.comm_name(), "0");
  ASSERT_EQ(c.group_ranks_size(), 2);
  EXPECT_EQ(c.group_ranks(1), 1);
  EXPECT_EQ(c.stream(), 20u);
  EXPECT_EQ(c.timing(), trace::TIMING_GPU_KERNEL);
  EXPECT_EQ(c.source(), trace::SOURCE_KINETO);
  EXPECT_EQ(c.end_ns() - c.start_ns(), 100'000u);
}

TEST(KinetoImport, WritesOneTraceFilePerRank) {
  const std::string dir = (std::filesystem::temp_directory_path() / "trainsim-kineto-import").string();
  std::filesystem::remove_all(dir);
  const KinetoImport t = import_kineto_file(DATA + "kineto_rank0.json");
  EXPECT_EQ(kineto_output_name(t), "rank00000.kineto_rank0.trace");
  const std::string path = write_kineto_import(t, dir);
  const core::TraceFile file = core::read_trace_file(path);
  EXPECT_EQ(file.header.rank(), 0);
  EXPECT_EQ(file.header.source_file(), DATA + "kineto_rank0.json");
  ASSERT_EQ(file.records.size(), t.records.size());
  EXPECT_EQ(file.records[7].collective().bytes(), 2097152u);
}

TEST(KinetoImport, BadInputNamesFileAndPointer) {
  try {
    import_kineto_file(DATA + "kineto_bad_ts.json");
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              DATA + "kineto_bad_ts.json: /traceEvents/1/ts: expected a number (microseconds), found \"12.5\"");
  }
  try {
    import_kineto_json(core::parse_json_text(R"({"events": []})", "x.json"), "x.json");
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.json: /traceEvents: missing or not an array: not a PyTorch profiler (Kineto) trace");
  }
  EXPECT_THROW(import_kineto_file(DATA + "does-not-exist.json"), core::InputError);
}

TEST(KinetoImport, NoRankNoDevicesStillImports) {
  const KinetoImport t = import_kineto_json(
      core::parse_json_text(R"json({"traceEvents": [{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)",
                                                      "ts": 1.5, "dur": 0.25, "args": {"bytes": 64}}]})json",
                            "norank.json"),
      "norank.json");
  EXPECT_EQ(t.header.rank(), -1);
  EXPECT_EQ(kineto_output_name(t), "norank.norank.trace");
  ASSERT_EQ(t.records.size(), 1u);
  EXPECT_EQ(t.records[0].memset().bytes(), 64u);
  EXPECT_EQ(t.records[0].memset().start_ns(), 1500u);
  EXPECT_EQ(t.records[0].memset().end_ns(), 1750u);
}

}  // namespace
}  // namespace trainsim::calibrate
