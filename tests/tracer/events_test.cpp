// Every event struct through the hand-written encoder and back through libprotobuf's parser, field by
// field: the test that keeps tracer/record/events.cpp and sim/core/trace.proto in step.

#include "tracer/record/events.hpp"

#include <gtest/gtest.h>

#include "sim/core/trace.pb.h"

namespace trainsim::tracer {
namespace {

trace::Record parse_one(const std::string& framed) {
  // One-byte length prefix for these small records.
  EXPECT_LT(static_cast<unsigned char>(framed[0]), 0x80);
  EXPECT_EQ(static_cast<size_t>(framed[0]) + 1, framed.size());
  trace::Record r;
  EXPECT_TRUE(r.ParseFromString(framed.substr(1)));
  return r;
}

TEST(Events, Header) {
  HeaderInfo h;
  h.producer_version = "trainsim-tracer 0.1.0";
  h.clock = TraceClock::CUPTI;
  h.clock_anchor = {123, 456};
  h.world_size = 16;
  h.rank = 3;
  h.local_rank = -1;
  h.hostname = "node7";
  h.pid = 4242;
  h.cuda_driver_version = 13000;
  h.cuda_runtime_version = 13000;
  h.cupti_api_version = 130001;
  h.nccl_version = 22809;
  DeviceInfo d;
  d.id = 2;
  d.name = "NVIDIA H100 80GB HBM3";
  d.sm_count = 132;
  d.global_memory_bytes = 85'000'000'000ull;
  d.compute_capability_major = 9;
  h.devices.push_back(d);
  h.command_line = "python train.py";
  std::string out;
  append_record(h, out);
  trace::Record r;
  ASSERT_TRUE(r.ParseFromString(out.substr(out[0] & 0x80 ? 2 : 1)));
  const trace::Header& p = r.header();
  EXPECT_EQ(p.magic(), "trainsim.trace");
  EXPECT_EQ(p.format_version(), 1u);
  EXPECT_EQ(p.producer(), trace::PRODUCER_TRACER);
  EXPECT_EQ(p.clock(), trace::TRACE_CLOCK_CUPTI);
  EXPECT_EQ(p.clock_anchor().trace_clock_ns(), 123u);
  EXPECT_EQ(p.clock_anchor().realtime_ns(), 456u);
  EXPECT_EQ(p.world_size(), 16);
  EXPECT_EQ(p.rank(), 3);
  EXPECT_EQ(p.local_rank(), -1);
  EXPECT_EQ(p.hostname(), "node7");
  EXPECT_EQ(p.pid(), 4242u);
  EXPECT_EQ(p.cuda_driver_version(), 13000u);
  EXPECT_EQ(p.cuda_runtime_version(), 13000u);
  EXPECT_EQ(p.cupti_api_version(), 130001u);
  EXPECT_EQ(p.nccl_version(), 22809u);
  ASSERT_EQ(p.devices_size(), 1);
  EXPECT_EQ(p.devices(0).id(), 2u);
  EXPECT_EQ(p.devices(0).name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.devices(0).sm_count(), 132u);
  EXPECT_EQ(p.devices(0).global_memory_bytes(), 85'000'000'000ull);
  EXPECT_EQ(p.devices(0).compute_capability_major(), 9u);
  EXPECT_EQ(p.command_line(), "python train.py");
}

TEST(Events, MemcpyAndMemset) {
  MemcpyEvent m;
  m.kind = MemcpyKind::PTOP;
  m.bytes = 1 << 20;
  m.src_kind = MemoryKind::DEVICE;
  m.dst_kind = MemoryKind::DEVICE;
  m.device_id = 1;
  m.context_id = 2;
  m.stream_id = 3;
  m.correlation_id = 4;
  m.start_ns = 10;
  m.end_ns = 20;
  m.src_device_id = 0;
  m.dst_device_id = 1;
  std::string out;
  append_record(m, out);
  const trace::Memcpy p = parse_one(out).memcpy();
  EXPECT_EQ(p.kind(), trace::MEMCPY_KIND_PTOP);
  EXPECT_EQ(p.bytes(), 1u << 20);
  EXPECT_EQ(p.src_kind(), trace::MEMORY_KIND_DEVICE);
  EXPECT_EQ(p.dst_kind(), trace::MEMORY_KIND_DEVICE);
  EXPECT_EQ(p.device_id(), 1u);
  EXPECT_EQ(p.context_id(), 2u);
  EXPECT_EQ(p.stream_id(), 3u);
  EXPECT_EQ(p.correlation_id(), 4u);
  EXPECT_EQ(p.start_ns(), 10u);
  EXPECT_EQ(p.end_ns(), 20u);
  EXPECT_EQ(p.dst_device_id(), 1u);

  MemsetEvent s;
  s.bytes = 64;
  s.value = 255;
  s.memory_kind = MemoryKind::MANAGED;
  s.stream_id = 9;
  s.start_ns = 1;
  s.end_ns = 2;
  out.clear();
  append_record(s, out);
  const trace::Memset q = parse_one(out).memset();
  EXPECT_EQ(q.bytes(), 64u);
  EXPECT_EQ(q.value(), 255u);
  EXPECT_EQ(q.memory_kind(), trace::MEMORY_KIND_MANAGED);
  EXPECT_EQ(q.stream_id(), 9u);
  EXPECT_EQ(q.end_ns(), 2u);
}

TEST(Events, CollectiveAndP2p) {
  CollectiveEvent c;
  c.op = CollectiveOp::REDUCE_SCATTER;
  c.op_name = "ReduceScatter";
  c.bytes = 8 << 20;
  c.count = 1 << 20;
  c.data_type = DataType::BFLOAT16;
  c.root = -1;
  c.seq_number = 17;
  c.algorithm = "Ring";
  c.protocol = "Simple";
  c.group_ranks = {0, 2, 4, 6};
  c.comm = {0xfeedface, "pg1", 4, 2, 0x7f00, 100, 200, Timing::KERNEL_CHANNEL, 90, 8, Source::NCCL_PROFILER, 5};
  std::string out;
  append_record(c, out);
  const trace::Collective p = parse_one(out).collective();
  EXPECT_EQ(p.op(), trace::COLLECTIVE_OP_REDUCE_SCATTER);
  EXPECT_EQ(p.op_name(), "ReduceScatter");
  EXPECT_EQ(p.bytes(), 8u << 20);
  EXPECT_EQ(p.count(), 1u << 20);
  EXPECT_EQ(p.data_type(), trace::DATA_TYPE_BFLOAT16);
  EXPECT_EQ(p.comm_hash(), 0xfeedfaceu);
  EXPECT_EQ(p.comm_name(), "pg1");
  EXPECT_EQ(p.comm_size(), 4);
  EXPECT_EQ(p.rank(), 2);
  EXPECT_EQ(p.root(), -1);
  EXPECT_EQ(p.stream(), 0x7f00u);
  EXPECT_EQ(p.start_ns(), 100u);
  EXPECT_EQ(p.end_ns(), 200u);
  EXPECT_EQ(p.timing(), trace::TIMING_KERNEL_CHANNEL);
  EXPECT_EQ(p.enqueue_ns(), 90u);
  EXPECT_EQ(p.seq_number(), 17u);
  EXPECT_EQ(p.algorithm(), "Ring");
  EXPECT_EQ(p.protocol(), "Simple");
  EXPECT_EQ(p.channels(), 8u);
  EXPECT_EQ(p.source(), trace::SOURCE_NCCL_PROFILER);
  EXPECT_EQ(p.correlation_id(), 5u);
  ASSERT_EQ(p.group_ranks_size(), 4);
  EXPECT_EQ(p.group_ranks(3), 6);

  P2pEvent s;
  s.direction = P2pDirection::RECV;
  s.peer = 3;
  s.bytes = 4096;
  s.count = 1024;
  s.data_type = DataType::FLOAT32;
  s.comm.comm_size = 8;
  s.comm.rank = 2;
  s.comm.start_ns = 5;
  s.comm.end_ns = 6;
  s.comm.timing = Timing::PROXY;
  s.comm.source = Source::NCCL_WRAPPER;
  s.comm.correlation_id = 77;
  out.clear();
  append_record(s, out);
  const trace::P2p q = parse_one(out).p2p();
  EXPECT_EQ(q.direction(), trace::P2P_DIRECTION_RECV);
  EXPECT_EQ(q.peer(), 3);
  EXPECT_EQ(q.bytes(), 4096u);
  EXPECT_EQ(q.count(), 1024u);
  EXPECT_EQ(q.data_type(), trace::DATA_TYPE_FLOAT32);
  EXPECT_EQ(q.comm_size(), 8);
  EXPECT_EQ(q.rank(), 2);
  EXPECT_EQ(q.timing(), trace::TIMING_PROXY);
  EXPECT_EQ(q.source(), trace::SOURCE_NCCL_WRAPPER);
  EXPECT_EQ(q.correlation_id(), 77u);
}

TEST(Events, GemmMarkerCorrelationLibraryStatus) {
  GemmEvent g;
  g.api = GemmApi::CUBLAS_GEMM_STRIDED_BATCHED_EX;
  g.m = 128;
  g.n = 256;
  g.k = 64;
  g.transpose_a = true;
  g.a_type = DataType::FLOAT16;
  g.b_type = DataType::FLOAT16;
  g.c_type = DataType::FLOAT32;
  g.compute_type = "CUBLAS_COMPUTE_32F";
  g.batch_count = 12;
  g.lda = 64;
  g.correlation_id = 31;
  std::string out;
  append_record(g, out);
  const trace::Gemm p = parse_one(out).gemm();
  EXPECT_EQ(p.api(), trace::GEMM_API_CUBLAS_GEMM_STRIDED_BATCHED_EX);
  EXPECT_EQ(p.m(), 128u);
  EXPECT_EQ(p.n(), 256u);
  EXPECT_EQ(p.k(), 64u);
  EXPECT_TRUE(p.transpose_a());
  EXPECT_FALSE(p.transpose_b());
  EXPECT_EQ(p.a_type(), trace::DATA_TYPE_FLOAT16);
  EXPECT_EQ(p.c_type(), trace::DATA_TYPE_FLOAT32);
  EXPECT_EQ(p.compute_type(), "CUBLAS_COMPUTE_32F");
  EXPECT_EQ(p.batch_count(), 12u);
  EXPECT_EQ(p.lda(), 64u);
  EXPECT_EQ(p.correlation_id(), 31u);

  out.clear();
  append_record(MarkerEvent{"ProfilerStep#4", "nvtx", 10, 20, 4}, out);
  const trace::Marker m = parse_one(out).marker();
  EXPECT_EQ(m.name(), "ProfilerStep#4");
  EXPECT_EQ(m.domain(), "nvtx");
  EXPECT_EQ(m.iteration(), 4);
  EXPECT_EQ(m.end_ns(), 20u);

  out.clear();
  append_record(ExternalCorrelationEvent{3, 1ull << 40, 12}, out);
  const trace::ExternalCorrelation x = parse_one(out).external_correlation();
  EXPECT_EQ(x.external_kind(), 3u);
  EXPECT_EQ(x.external_id(), 1ull << 40);
  EXPECT_EQ(x.correlation_id(), 12u);

  out.clear();
  append_record(LibraryInfo{"nccl", 22809, "/usr/lib/libnccl.so.2"}, out);
  EXPECT_EQ(parse_one(out).library().version(), 22809u);

  TracerStatusEvent s;
  s.dropped_records = 3;
  s.records_written = 1000;
  s.unsupported_records = 2;
  s.errors = {"cuptiActivityEnable failed", "second"};
  s.final = true;
  out.clear();
  append_record(s, out);
  const trace::TracerStatus q = parse_one(out).status();
  EXPECT_EQ(q.dropped_records(), 3u);
  EXPECT_EQ(q.records_written(), 1000u);
  EXPECT_EQ(q.unsupported_records(), 2u);
  ASSERT_EQ(q.errors_size(), 2);
  EXPECT_EQ(q.errors(1), "second");
  EXPECT_TRUE(q.final());
}

TEST(Events, ContextStreamDevice) {
  std::string out;
  append_record(ContextInfo{5, 1, 7}, out);
  EXPECT_EQ(parse_one(out).context().null_stream_id(), 7u);
  out.clear();
  append_record(StreamInfo{13, 5, -2, true}, out);
  const trace::Stream s = parse_one(out).stream();
  EXPECT_EQ(s.stream_id(), 13u);
  EXPECT_EQ(s.priority(), -2);
  EXPECT_TRUE(s.non_blocking());
}

TEST(Events, NamesAndSizes) {
  EXPECT_EQ(data_type_from_name("ncclBfloat16"), DataType::BFLOAT16);
  EXPECT_EQ(data_type_from_name("ncclFloat32"), DataType::FLOAT32);
  EXPECT_EQ(data_type_from_name("BFloat16"), DataType::BFLOAT16);
  EXPECT_EQ(data_type_from_name("Half"), DataType::FLOAT16);
  EXPECT_EQ(data_type_from_name("complex"), DataType::UNKNOWN);
  EXPECT_EQ(collective_op_from_name("AllReduce"), CollectiveOp::ALL_REDUCE);
  EXPECT_EQ(collective_op_from_name("_reduce_scatter_base"), CollectiveOp::REDUCE_SCATTER);
  EXPECT_EQ(collective_op_from_name("all_gather_into_tensor"), CollectiveOp::ALL_GATHER);
  EXPECT_EQ(collective_op_from_name("SendRecv"), CollectiveOp::UNKNOWN);
  // nccl-tests' size: all_gather's count is per rank.
  EXPECT_EQ(collective_bytes(CollectiveOp::ALL_GATHER, 1000, DataType::BFLOAT16, 8), 16000u);
  EXPECT_EQ(collective_bytes(CollectiveOp::ALL_REDUCE, 1000, DataType::BFLOAT16, 8), 2000u);
}

}  // namespace
}  // namespace trainsim::tracer
