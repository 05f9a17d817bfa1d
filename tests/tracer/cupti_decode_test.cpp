// Synthetic CUPTI activity buffers built from the real CUPTI 13 record structs
// (CUpti_ActivityKernel10, ...), decoded by the tracer's decoder and converted into a trace file that
// sim/core's reader reads back: the whole path of a buffer-completed callback except CUPTI itself.
// Built wherever the CUDA headers are installed; no GPU and no libcupti needed.

#include "tracer/cuda/cupti_decode.hpp"

#include <gtest/gtest.h>

#include <cupti_activity.h>
#include <cstring>
#include <vector>

#include "tests/tracer/test_util.hpp"
#include "tracer/record/session.hpp"

namespace trainsim::tracer {
namespace {

// Records packed back to back at ACTIVITY_RECORD_ALIGNMENT, with a cursor that steps by each
// kind's struct size, as cuptiActivityGetNextRecord does over a CUPTI buffer.
class Buffer {
 public:
  template <class T>
  void add(const T& record) {
    const size_t at = bytes_.size();
    bytes_.resize(at + aligned(sizeof(T)));
    std::memcpy(bytes_.data() + at, &record, sizeof(T));
  }
  uint8_t* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

  static size_t aligned(size_t n) { return (n + ACTIVITY_RECORD_ALIGNMENT - 1) / ACTIVITY_RECORD_ALIGNMENT * ACTIVITY_RECORD_ALIGNMENT; }
  static size_t size_of(CUpti_ActivityKind kind) {
    switch (kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
      case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
      case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
      case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
      case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
      default: return sizeof(CUpti_Activity);
    }
  }

 private:
  std::vector<uint8_t> bytes_;  // operator new aligns to 16, more than the records need
};

NextStatus next(uint8_t* buffer, size_t valid_size, void** record) {
  uint8_t* at = buffer;
  if (*record != nullptr) {
    const auto* current = static_cast<const CUpti_Activity*>(*record);
    at = static_cast<uint8_t*>(*record) + Buffer::aligned(Buffer::size_of(current->kind));
  }
  if (at >= buffer + valid_size) return NextStatus::END;
  *record = at;
  return NextStatus::OK;
}

TEST(CuptiDecode, RealStructsToTraceFile) {
  Buffer buffer;
  CUpti_ActivityDevice5 device{};
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  device.id = 0;
  device.name = "NVIDIA H100 80GB HBM3";
  device.numMultiprocessors = 132;
  device.globalMemorySize = 85'520'809'984ull;
  device.computeCapabilityMajor = 9;
  buffer.add(device);

  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.name = "_Z6kernelv";
  kernel.start = 5000;
  kernel.end = 8000;
  kernel.deviceId = 0;
  kernel.streamId = 13;
  kernel.correlationId = 101;
  kernel.gridX = 132;
  kernel.gridY = 1;
  kernel.gridZ = 1;
  kernel.blockX = 128;
  kernel.blockY = 1;
  kernel.blockZ = 1;
  kernel.registersPerThread = 168;
  kernel.staticSharedMemory = 1024;
  kernel.dynamicSharedMemory = 49152;
  buffer.add(kernel);

  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.bytes = 1 << 20;
  copy.start = 9000;
  copy.end = 9500;
  buffer.add(copy);

  CUpti_ActivityExternalCorrelation correlation{};
  correlation.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  correlation.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  correlation.externalId = 7;
  correlation.correlationId = 101;
  buffer.add(correlation);

  const std::string dir = testing::temp_dir("cupti-decode");
  std::string error;
  HeaderInfo header;
  header.rank = 0;
  header.hostname = "h";
  header.pid = 1;
  auto session = TraceSession::open(dir, header, realtime_ns, error);
  ASSERT_TRUE(session) << error;
  ActivityConverter converter;
  std::string out;
  const WalkResult r = walk_activity_buffer(buffer.data(), buffer.size(), next, decode_cupti_record, converter, out);
  EXPECT_EQ(r.activities, 4u);
  session->append(out, converter.counts().records);
  session->close();

  const core::TraceFile file = testing::read_only_trace(dir);
  ASSERT_EQ(file.records.size(), 5u);  // four activities and the final status
  EXPECT_EQ(file.records[0].device().name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(file.records[0].device().sm_count(), 132u);
  const trace::Kernel& k = file.records[1].kernel();
  EXPECT_EQ(k.name(), "kernel()");
  EXPECT_EQ(k.start_ns(), 5000u);
  EXPECT_EQ(k.end_ns(), 8000u);
  EXPECT_EQ(k.stream_id(), 13u);
  EXPECT_EQ(k.correlation_id(), 101u);
  EXPECT_EQ(k.grid().x(), 132);
  EXPECT_EQ(k.block().x(), 128);
  EXPECT_EQ(k.registers_per_thread(), 168u);
  EXPECT_EQ(k.static_shared_memory_bytes(), 1024u);
  EXPECT_EQ(k.dynamic_shared_memory_bytes(), 49152u);
  EXPECT_EQ(file.records[2].memcpy().kind(), trace::MEMCPY_KIND_DTOH);
  EXPECT_EQ(file.records[2].memcpy().dst_kind(), trace::MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(file.records[3].external_correlation().external_id(), 7u);
  EXPECT_EQ(file.records[3].external_correlation().external_kind(),
            static_cast<uint32_t>(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0));
  EXPECT_TRUE(file.records[4].status().final());
}

TEST(CuptiDecode, MarkersAndUnknownKinds) {
  CUpti_ActivityMarker2 start{};
  start.kind = CUPTI_ACTIVITY_KIND_MARKER;
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.timestamp = 10;
  start.id = 3;
  start.name = "ProfilerStep#0";
  const CuptiActivity decoded = decode_cupti_record(&start);
  ASSERT_TRUE(std::holds_alternative<CuptiMarker>(decoded));
  EXPECT_EQ(std::get<CuptiMarker>(decoded).flags, MARKER_START);
  EXPECT_STREQ(std::get<CuptiMarker>(decoded).name, "ProfilerStep#0");

  CUpti_Activity api{};  // enabled for their external correlation records only
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  EXPECT_TRUE(std::holds_alternative<CuptiApiCall>(decode_cupti_record(&api)));
  api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  EXPECT_TRUE(std::holds_alternative<CuptiApiCall>(decode_cupti_record(&api)));
  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(decode_cupti_record(&other)));
}

}  // namespace
}  // namespace trainsim::tracer
