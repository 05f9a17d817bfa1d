#include "tracer/cuda/cupti_decode.hpp"

#include <cstring>
#include <cupti_activity.h>

namespace trainsim::tracer {
namespace {

static_assert(static_cast<uint32_t>(ActivityKind::MEMCPY) == CUPTI_ACTIVITY_KIND_MEMCPY);
static_assert(static_cast<uint32_t>(ActivityKind::MEMSET) == CUPTI_ACTIVITY_KIND_MEMSET);
static_assert(static_cast<uint32_t>(ActivityKind::DEVICE) == CUPTI_ACTIVITY_KIND_DEVICE);
static_assert(static_cast<uint32_t>(ActivityKind::CONTEXT) == CUPTI_ACTIVITY_KIND_CONTEXT);
static_assert(static_cast<uint32_t>(ActivityKind::CONCURRENT_KERNEL) == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
static_assert(static_cast<uint32_t>(ActivityKind::MARKER) == CUPTI_ACTIVITY_KIND_MARKER);
static_assert(static_cast<uint32_t>(ActivityKind::MEMCPY2) == CUPTI_ACTIVITY_KIND_MEMCPY2);
static_assert(static_cast<uint32_t>(ActivityKind::STREAM) == CUPTI_ACTIVITY_KIND_STREAM);
static_assert(static_cast<uint32_t>(ActivityKind::EXTERNAL_CORRELATION) == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
static_assert(static_cast<uint32_t>(ActivityKind::DRIVER) == CUPTI_ACTIVITY_KIND_DRIVER);
static_assert(static_cast<uint32_t>(ActivityKind::RUNTIME) == CUPTI_ACTIVITY_KIND_RUNTIME);
static_assert(MARKER_INSTANTANEOUS == CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS);
static_assert(MARKER_START == CUPTI_ACTIVITY_FLAG_MARKER_START);
static_assert(MARKER_END == CUPTI_ACTIVITY_FLAG_MARKER_END);

CuptiKernel kernel(const CUpti_ActivityKernel10& k) {
  CuptiKernel out;
  out.name = k.name;
  out.device_id = k.deviceId;
  out.context_id = k.contextId;
  out.stream_id = k.streamId;
  out.correlation_id = k.correlationId;
  out.start = k.start;
  out.end = k.end;
  out.grid[0] = k.gridX;
  out.grid[1] = k.gridY;
  out.grid[2] = k.gridZ;
  out.block[0] = k.blockX;
  out.block[1] = k.blockY;
  out.block[2] = k.blockZ;
  out.registers_per_thread = k.registersPerThread;
  out.static_shared_memory = k.staticSharedMemory;
  out.dynamic_shared_memory = k.dynamicSharedMemory;
  out.graph_id = k.graphId;
  out.graph_node_id = k.graphNodeId;
  return out;
}

// The fields CUPTI's device-memory copy and peer-to-peer copy records share.
template <class Record>
CuptiMemcpy common_memcpy(const Record& m) {
  CuptiMemcpy out;
  out.copy_kind = m.copyKind;
  out.src_kind = m.srcKind;
  out.dst_kind = m.dstKind;
  out.bytes = m.bytes;
  out.start = m.start;
  out.end = m.end;
  out.device_id = m.deviceId;
  out.context_id = m.contextId;
  out.stream_id = m.streamId;
  out.correlation_id = m.correlationId;
  return out;
}

CuptiMemcpy memcpy_record(const CUpti_ActivityMemcpy6& m) { return common_memcpy(m); }

CuptiMemcpy peer_memcpy(const CUpti_ActivityMemcpyPtoP4& m) {
  CuptiMemcpy out = common_memcpy(m);
  out.peer = true;
  out.src_device_id = m.srcDeviceId;
  out.dst_device_id = m.dstDeviceId;
  return out;
}

CuptiMemset memset_record(const CUpti_ActivityMemset4& m) {
  CuptiMemset out;
  out.value = m.value;
  out.bytes = m.bytes;
  out.start = m.start;
  out.end = m.end;
  out.device_id = m.deviceId;
  out.context_id = m.contextId;
  out.stream_id = m.streamId;
  out.correlation_id = m.correlationId;
  out.memory_kind = m.memoryKind;
  return out;
}

CuptiDevice device(const CUpti_ActivityDevice5& d) {
  CuptiDevice out;
  out.id = d.id;
  out.name = d.name;
  static_assert(sizeof d.uuid == sizeof out.uuid);
  std::memcpy(out.uuid, &d.uuid, sizeof out.uuid);
  out.global_memory_bandwidth_kbps = d.globalMemoryBandwidth;
  out.global_memory_size = d.globalMemorySize;
  out.l2_cache_size = d.l2CacheSize;
  out.core_clock_khz = d.coreClockRate;
  out.multiprocessors = d.numMultiprocessors;
  out.max_warps_per_multiprocessor = d.maxWarpsPerMultiprocessor;
  out.max_shared_memory_per_block = d.maxSharedMemoryPerBlock;
  out.max_threads_per_block = d.maxThreadsPerBlock;
  out.compute_capability_major = d.computeCapabilityMajor;
  out.compute_capability_minor = d.computeCapabilityMinor;
  return out;
}

}  // namespace

CuptiActivity decode_cupti_record(const void* record) {
  const auto* base = static_cast<const CUpti_Activity*>(record);
  switch (base->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return kernel(*static_cast<const CUpti_ActivityKernel10*>(record));
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return memcpy_record(*static_cast<const CUpti_ActivityMemcpy6*>(record));
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return peer_memcpy(*static_cast<const CUpti_ActivityMemcpyPtoP4*>(record));
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return memset_record(*static_cast<const CUpti_ActivityMemset4*>(record));
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return device(*static_cast<const CUpti_ActivityDevice5*>(record));
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = *static_cast<const CUpti_ActivityContext3*>(record);
      return CuptiContext{c.contextId, c.deviceId, c.nullStreamId};
    }
    case CUPTI_ACTIVITY_KIND_STREAM: {
      const auto& s = *static_cast<const CUpti_ActivityStream*>(record);
      return CuptiStream{s.contextId, s.streamId, s.priority, static_cast<uint32_t>(s.flag)};
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& m = *static_cast<const CUpti_ActivityMarker2*>(record);
      return CuptiMarker{static_cast<uint32_t>(m.flags), m.timestamp, m.id, m.name, m.domain};
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& x = *static_cast<const CUpti_ActivityExternalCorrelation*>(record);
      return CuptiExternalCorrelation{static_cast<uint32_t>(x.externalKind), x.externalId, x.correlationId};
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return CuptiApiCall{};
    default:
      return std::monostate{};
  }
}

}  // namespace trainsim::tracer
