// Converting CUPTI activities and walking activity buffers, without CUDA: a synthetic buffer holds
// tagged mirror records and the walk uses a cursor like cuptiActivityGetNextRecord's.

#include "tracer/record/cupti_activity.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim/core/trace.pb.h"

namespace trainsim::tracer {
namespace {

std::vector<trace::Record> parse_all(const std::string& framed) {
  std::vector<trace::Record> out;
  size_t pos = 0;
  while (pos < framed.size()) {
    uint64_t len = 0;
    int shift = 0;
    while (true) {
      const auto c = static_cast<unsigned char>(framed[pos++]);
      len |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) break;
      shift += 7;
    }
    trace::Record r;
    EXPECT_TRUE(r.ParseFromString(framed.substr(pos, len)));
    out.push_back(r);
    pos += len;
  }
  return out;
}

// A synthetic activity buffer: fixed-size slots, each a tag followed by one mirror record.
struct Slot {
  uint32_t kind = 0;
  CuptiKernel kernel;
  CuptiMemcpy memcpy;
  CuptiMarker marker;
};

NextStatus next_slot(uint8_t* buffer, size_t valid_size, void** record) {
  uint8_t* next = *record == nullptr ? buffer : static_cast<uint8_t*>(*record) + sizeof(Slot);
  if (next + sizeof(Slot) > buffer + valid_size) return NextStatus::END;
  *record = next;
  return NextStatus::OK;
}

CuptiActivity decode_slot(const void* record) {
  Slot slot;
  std::memcpy(&slot, record, sizeof slot);
  switch (static_cast<ActivityKind>(slot.kind)) {
    case ActivityKind::CONCURRENT_KERNEL: return slot.kernel;
    case ActivityKind::MEMCPY: return slot.memcpy;
    case ActivityKind::MARKER: return slot.marker;
    default: return std::monostate{};
  }
}

NextStatus failing_next(uint8_t*, size_t, void**) { return NextStatus::ERROR; }

TEST(CuptiActivity, WalksABufferAndConvertsEachRecord) {
  std::vector<Slot> slots(4);
  slots[0].kind = static_cast<uint32_t>(ActivityKind::CONCURRENT_KERNEL);
  slots[0].kernel.name = "_Z10add_kernelPfS_i";
  slots[0].kernel.start = 1000;
  slots[0].kernel.end = 1500;
  slots[0].kernel.stream_id = 7;
  slots[0].kernel.correlation_id = 42;
  slots[0].kernel.grid[0] = 80;
  slots[0].kernel.block[0] = 256;
  slots[1].kind = static_cast<uint32_t>(ActivityKind::MEMCPY);
  slots[1].memcpy.copy_kind = 1;  // CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
  slots[1].memcpy.src_kind = 2;   // PINNED
  slots[1].memcpy.dst_kind = 3;   // DEVICE
  slots[1].memcpy.bytes = 4096;
  slots[1].memcpy.start = 2000;
  slots[1].memcpy.end = 2100;
  slots[2].kind = 27;  // CUPTI_ACTIVITY_KIND_MODULE: not converted
  slots[3].kind = static_cast<uint32_t>(ActivityKind::CONCURRENT_KERNEL);
  slots[3].kernel.name = "incomplete";
  slots[3].kernel.start = 3000;  // end 0: CUPTI had no end time
  ActivityConverter converter;
  std::string out;
  const WalkResult r = walk_activity_buffer(reinterpret_cast<uint8_t*>(slots.data()), slots.size() * sizeof(Slot),
                                            next_slot, decode_slot, converter, out);
  EXPECT_EQ(r.activities, 4u);
  EXPECT_FALSE(r.error);
  EXPECT_EQ(converter.counts().records, 2u);
  EXPECT_EQ(converter.counts().unsupported, 1u);
  EXPECT_EQ(converter.counts().invalid_timestamps, 1u);
  const std::vector<trace::Record> records = parse_all(out);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kernel().name(), "add_kernel(float*, float*, int)");
  EXPECT_EQ(records[0].kernel().stream_id(), 7u);
  EXPECT_EQ(records[0].kernel().correlation_id(), 42u);
  EXPECT_EQ(records[0].kernel().grid().x(), 80);
  EXPECT_EQ(records[0].kernel().end_ns() - records[0].kernel().start_ns(), 500u);
  EXPECT_EQ(records[1].memcpy().kind(), trace::MEMCPY_KIND_HTOD);
  EXPECT_EQ(records[1].memcpy().src_kind(), trace::MEMORY_KIND_PINNED);
  EXPECT_EQ(records[1].memcpy().dst_kind(), trace::MEMORY_KIND_DEVICE);
  EXPECT_EQ(records[1].memcpy().bytes(), 4096u);
}

TEST(CuptiActivity, AnEmptyBufferOrAFailingCursorEndsTheWalk) {
  ActivityConverter converter;
  std::string out;
  uint8_t byte = 0;
  EXPECT_EQ(walk_activity_buffer(nullptr, 0, next_slot, decode_slot, converter, out).activities, 0u);
  const WalkResult r = walk_activity_buffer(&byte, 1, failing_next, decode_slot, converter, out);
  EXPECT_TRUE(r.error);
  EXPECT_EQ(r.activities, 0u);
  EXPECT_TRUE(out.empty());
}

TEST(CuptiActivity, NvtxRangesPairStartAndEndAcrossBuffers) {
  ActivityConverter converter;
  std::string out;
  converter.convert(CuptiMarker{MARKER_START, 100, 9, "ProfilerStep#3", "PyTorch"}, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(converter.open_markers(), 1u);
  converter.convert(CuptiMarker{MARKER_END, 900, 9, nullptr, nullptr}, out);  // the next buffer
  converter.convert(CuptiMarker{MARKER_END, 950, 10, nullptr, nullptr}, out);  // never started
  converter.convert(CuptiMarker{MARKER_INSTANTANEOUS, 960, 11, "checkpoint", nullptr}, out);
  const std::vector<trace::Record> records = parse_all(out);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].marker().name(), "ProfilerStep#3");
  EXPECT_EQ(records[0].marker().domain(), "PyTorch");
  EXPECT_EQ(records[0].marker().start_ns(), 100u);
  EXPECT_EQ(records[0].marker().end_ns(), 900u);
  EXPECT_EQ(records[0].marker().iteration(), 3);
  EXPECT_EQ(records[1].marker().iteration(), -1);
  EXPECT_EQ(records[1].marker().end_ns(), 960u);
  EXPECT_EQ(converter.open_markers(), 0u);
  EXPECT_EQ(converter.counts().invalid_timestamps, 1u);
}

TEST(CuptiActivity, DeviceContextStreamAndCorrelation) {
  ActivityConverter converter;
  std::string out;
  CuptiDevice d;
  d.id = 0;
  d.name = "NVIDIA A100-SXM4-80GB";
  d.uuid[0] = 0xab;
  d.multiprocessors = 108;
  d.global_memory_size = 85'899'345'920ull;
  d.global_memory_bandwidth_kbps = 2'039'000'000;  // kB/s
  d.core_clock_khz = 1'410'000;
  d.compute_capability_major = 8;
  converter.convert(d, out);
  converter.convert(CuptiContext{1, 0, 7}, out);
  converter.convert(CuptiStream{1, 13, 0, 2}, out);
  converter.convert(CuptiExternalCorrelation{3, 77, 42}, out);
  converter.convert(CuptiApiCall{}, out);  // consumed: neither written nor counted as unsupported
  EXPECT_EQ(converter.counts().unsupported, 0u);
  const std::vector<trace::Record> records = parse_all(out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].device().name(), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(records[0].device().uuid().substr(0, 4), "ab00");
  EXPECT_EQ(records[0].device().uuid().size(), 32u);
  EXPECT_EQ(records[0].device().sm_count(), 108u);
  EXPECT_EQ(records[0].device().global_memory_bandwidth_bytes_per_s(), 2'039'000'000'000ull);
  EXPECT_EQ(records[1].context().null_stream_id(), 7u);
  EXPECT_TRUE(records[2].stream().non_blocking());
  EXPECT_EQ(records[3].external_correlation().external_id(), 77u);
  EXPECT_EQ(records[3].external_correlation().correlation_id(), 42u);
}

TEST(CuptiActivity, DemangleAndIterations) {
  EXPECT_EQ(demangle("_Z3fooi"), "foo(int)");
  EXPECT_EQ(demangle("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn"), "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn");
  EXPECT_EQ(demangle("_Znot-a-symbol"), "_Znot-a-symbol");
  EXPECT_EQ(demangle(nullptr), "");
  EXPECT_EQ(iteration_of("ProfilerStep#12"), 12);
  EXPECT_EQ(iteration_of("ProfilerStep#"), -1);
  EXPECT_EQ(iteration_of("ProfilerStep#1x"), -1);
  EXPECT_EQ(iteration_of("forward"), -1);
}

}  // namespace
}  // namespace trainsim::tracer
