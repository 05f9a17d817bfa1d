#include "tracer/record/cupti_activity.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <memory>

namespace trainsim::tracer {
namespace {

bool valid_interval(uint64_t start, uint64_t end) { return start != 0 && end >= start; }

MemcpyKind memcpy_kind(uint8_t raw) {
  return raw <= static_cast<uint8_t>(MemcpyKind::PTOP) ? static_cast<MemcpyKind>(raw) : MemcpyKind::UNKNOWN;
}

MemoryKind memory_kind(uint32_t raw) {
  return raw <= static_cast<uint32_t>(MemoryKind::MANAGED_STATIC) ? static_cast<MemoryKind>(raw)
                                                                   : MemoryKind::UNKNOWN;
}

std::string hex(const uint8_t* bytes, size_t n) {
  static const char DIGITS[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(DIGITS[bytes[i] >> 4]);
    out.push_back(DIGITS[bytes[i] & 0xf]);
  }
  return out;
}

std::string str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

// CUpti_ActivityStreamFlag value of streams created with cudaStreamNonBlocking.
constexpr uint32_t STREAM_FLAG_NON_BLOCKING = 2;

}  // namespace

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

int64_t iteration_of(const std::string& name) {
  static constexpr std::string_view PREFIX = "ProfilerStep#";
  if (name.size() <= PREFIX.size() || name.compare(0, PREFIX.size(), PREFIX) != 0) return -1;
  int64_t n = -1;
  const char* first = name.data() + PREFIX.size();
  const char* last = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && ptr == last && n >= 0 ? n : -1;
}

void ActivityConverter::convert(const CuptiActivity& activity, std::string& out) {
  const size_t before = out.size();
  if (const auto* k = std::get_if<CuptiKernel>(&activity)) {
    if (!valid_interval(k->start, k->end)) {
      ++counts_.invalid_timestamps;
      return;
    }
    KernelEvent e;
    e.name = demangle(k->name);
    e.device_id = k->device_id;
    e.context_id = k->context_id;
    e.stream_id = k->stream_id;
    e.correlation_id = k->correlation_id;
    e.start_ns = k->start;
    e.end_ns = k->end;
    e.grid = {k->grid[0], k->grid[1], k->grid[2]};
    e.block = {k->block[0], k->block[1], k->block[2]};
    e.registers_per_thread = k->registers_per_thread;
    e.static_shared_memory_bytes = static_cast<uint32_t>(k->static_shared_memory);
    e.dynamic_shared_memory_bytes = static_cast<uint32_t>(k->dynamic_shared_memory);
    e.graph_id = k->graph_id;
    e.graph_node_id = k->graph_node_id;
    append_record(e, out);
  } else if (const auto* m = std::get_if<CuptiMemcpy>(&activity)) {
    if (!valid_interval(m->start, m->end)) {
      ++counts_.invalid_timestamps;
      return;
    }
    MemcpyEvent e;
    e.kind = m->peer ? MemcpyKind::PTOP : memcpy_kind(m->copy_kind);
    e.bytes = m->bytes;
    e.src_kind = memory_kind(m->src_kind);
    e.dst_kind = memory_kind(m->dst_kind);
    e.device_id = m->device_id;
    e.context_id = m->context_id;
    e.stream_id = m->stream_id;
    e.correlation_id = m->correlation_id;
    e.start_ns = m->start;
    e.end_ns = m->end;
    if (m->peer) {
      e.src_device_id = m->src_device_id;
      e.dst_device_id = m->dst_device_id;
    }
    append_record(e, out);
  } else if (const auto* s = std::get_if<CuptiMemset>(&activity)) {
    if (!valid_interval(s->start, s->end)) {
      ++counts_.invalid_timestamps;
      return;
    }
    MemsetEvent e;
    e.bytes = s->bytes;
    e.value = s->value;
    e.memory_kind = memory_kind(s->memory_kind);
    e.device_id = s->device_id;
    e.context_id = s->context_id;
    e.stream_id = s->stream_id;
    e.correlation_id = s->correlation_id;
    e.start_ns = s->start;
    e.end_ns = s->end;
    append_record(e, out);
  } else if (const auto* d = std::get_if<CuptiDevice>(&activity)) {
    DeviceInfo e;
    e.id = d->id;
    e.name = str(d->name);
    e.uuid = hex(d->uuid, sizeof d->uuid);
    e.sm_count = d->multiprocessors;
    e.global_memory_bytes = d->global_memory_size;
    e.global_memory_bandwidth_bytes_per_s = d->global_memory_bandwidth_kbps * 1000;
    e.core_clock_khz = d->core_clock_khz;
    e.compute_capability_major = d->compute_capability_major;
    e.compute_capability_minor = d->compute_capability_minor;
    e.l2_cache_bytes = d->l2_cache_size;
    e.max_threads_per_block = d->max_threads_per_block;
    e.shared_memory_per_block_bytes = d->max_shared_memory_per_block;
    e.max_warps_per_sm = d->max_warps_per_multiprocessor;
    append_record(e, out);
  } else if (const auto* c = std::get_if<CuptiContext>(&activity)) {
    append_record(ContextInfo{c->context_id, c->device_id, c->null_stream_id}, out);
  } else if (const auto* st = std::get_if<CuptiStream>(&activity)) {
    append_record(StreamInfo{st->stream_id, st->context_id, static_cast<int32_t>(st->priority),
                             st->flag == STREAM_FLAG_NON_BLOCKING},
                  out);
  } else if (const auto* mk = std::get_if<CuptiMarker>(&activity)) {
    convert_marker(*mk, out);
  } else if (const auto* x = std::get_if<CuptiExternalCorrelation>(&activity)) {
    append_record(ExternalCorrelationEvent{x->external_kind, x->external_id, x->correlation_id}, out);
  } else if (std::holds_alternative<CuptiApiCall>(activity)) {
    // consumed: only its external correlation record is of use (CuptiApiCall)
  } else {
    ++counts_.unsupported;
  }
  if (out.size() != before) ++counts_.records;
}

void ActivityConverter::convert_marker(const CuptiMarker& m, std::string& out) {
  if ((m.flags & MARKER_INSTANTANEOUS) != 0) {
    MarkerEvent e;
    e.name = str(m.name);
    e.domain = str(m.domain);
    e.start_ns = e.end_ns = m.timestamp;
    e.iteration = iteration_of(e.name);
    append_record(e, out);
  } else if ((m.flags & MARKER_START) != 0) {
    open_markers_[m.id] = OpenMarker{str(m.name), str(m.domain), m.timestamp};
  } else if ((m.flags & MARKER_END) != 0) {
    const auto it = open_markers_.find(m.id);
    if (it == open_markers_.end()) {
      ++counts_.invalid_timestamps;  // an END without its START (tracing began inside the range)
      return;
    }
    MarkerEvent e;
    e.name = std::move(it->second.name);
    e.domain = std::move(it->second.domain);
    e.start_ns = it->second.start;
    e.end_ns = m.timestamp;
    e.iteration = iteration_of(e.name);
    open_markers_.erase(it);
    append_record(e, out);
  }
}

WalkResult walk_activity_buffer(uint8_t* buffer, size_t valid_size, NextRecordFn next, DecodeFn decode,
                                ActivityConverter& converter, std::string& out) {
  WalkResult result;
  if (buffer == nullptr || valid_size == 0) return result;
  void* record = nullptr;
  while (true) {
    const NextStatus status = next(buffer, valid_size, &record);
    if (status == NextStatus::END) break;
    if (status == NextStatus::ERROR || record == nullptr) {
      result.error = true;
      break;
    }
    ++result.activities;
    converter.convert(decode(record), out);
  }
  return result;
}

}  // namespace trainsim::tracer
