#pragma once
// The trace file of one traced process, shared by everything that records into it (the CUPTI
// callbacks, the NCCL profiler plugin, the nccl* and cuBLAS wrappers), and the tracer's diagnostics.
//
// Writing is continuous: records are buffered in memory and written with write(2) whenever a CUPTI
// buffer completes, the buffer passes 256 KiB, or a second has passed since the last write, so a
// killed run keeps nearly everything it recorded. Every write holds whole records; a crash in the
// middle of one leaves a truncated tail that readers skip and report.
//
// The tracer never stops the traced job: a failure is logged once to stderr ("trainsim-tracer:
// ...") and recorded in the next TracerStatus record, and the failing part stops recording.
//
// Example:
//   std::string error;
//   auto session = TraceSession::open("out", header, realtime_ns, error);
//   if (!session) log_once("open", error);
//   session->record(kernel_event);
//   session->close();   // final TracerStatus, flush

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tracer/record/events.hpp"

namespace trainsim::tracer {

using ClockFn = uint64_t (*)();
// CLOCK_REALTIME in nanoseconds.
uint64_t realtime_ns();

// Writes "trainsim-tracer: <message>" to stderr, at most once per `key` in the process.
void log_once(std::string_view key, const std::string& message);

class TraceSession {
 public:
  // Creates `dir` (and missing parents) and the file `dir/trace_file_name(...)` for this process,
  // refusing to overwrite one, and writes `header` into it. On failure returns nullptr and sets
  // `error` to a one-line description naming the path.
  static std::unique_ptr<TraceSession> open(const std::string& dir, const HeaderInfo& header, ClockFn clock,
                                            std::string& error);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  // Appends one event (any type append_record accepts). Thread-safe. Dropped after close().
  template <class Event>
  void record(const Event& event) {
    std::string framed;
    append_record(event, framed);
    append(framed, 1);
  }
  // Appends `count` framed records held in `framed`. Thread-safe.
  void append(std::string_view framed, uint64_t count);
  // Writes the buffered records. Thread-safe.
  void flush();
  // Writes a final TracerStatus record and flushes; later records are dropped. Idempotent.
  void close();

  uint64_t now_ns() const { return clock_(); }
  // A new external correlation id, unique within the process (never 0).
  uint64_t next_correlation_id() { return next_correlation_.fetch_add(1) + 1; }

  // Logs `message` once to stderr and keeps it for the next TracerStatus record.
  void report_error(const std::string& message);
  void add_dropped(uint64_t n) { dropped_ += n; }
  void add_unsupported(uint64_t n) { unsupported_ += n; }
  // Appends a TracerStatus record (errors reported since the last one, and the counters).
  void write_status(bool final);

  const std::string& path() const { return path_; }
  uint64_t records_written() const { return records_; }

  // Called around library calls to attribute the kernels they launch (cuptiActivityPush/Pop
  // ExternalCorrelationId in the tracer; unset without CUPTI). `kind` is a
  // CUpti_ExternalCorrelationKind.
  struct CorrelationHooks {
    void (*push)(uint32_t kind, uint64_t id) = nullptr;
    void (*pop)(uint32_t kind) = nullptr;
  };
  void set_correlation_hooks(CorrelationHooks hooks) { hooks_ = hooks; }
  const CorrelationHooks& correlation_hooks() const { return hooks_; }

 private:
  TraceSession(std::string path, int fd, ClockFn clock);
  void write_locked();  // REQUIRES: mutex_ held

  std::string path_;
  int fd_ = -1;
  ClockFn clock_;
  std::mutex mutex_;
  std::string pending_;
  uint64_t last_write_ns_ = 0;
  bool closed_ = false;
  bool write_failed_ = false;
  std::vector<std::string> errors_;
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> unsupported_{0};
  std::atomic<uint64_t> next_correlation_{0};
  CorrelationHooks hooks_;
};

// What the first user of the process session knows about the process (the CUDA injection fills in
// the clock and the versions; the NCCL plugin and the wrappers use the defaults).
struct SessionSetup {
  ClockFn clock = realtime_ns;
  TraceClock clock_kind = TraceClock::REALTIME;
  uint32_t cuda_driver_version = 0;
  uint32_t cuda_runtime_version = 0;
  uint32_t cupti_api_version = 0;
};

// The session of this process, created on the first call from the environment (environment.hpp)
// and `setup` (later calls ignore `setup`). Returns nullptr when the file could not be created; the
// reason is logged once. Closed at exit. The session is never destroyed, so that threads still
// running at exit (NCCL's proxy threads) never touch a destroyed object.
TraceSession* process_session(const SessionSetup& setup = SessionSetup());

}  // namespace trainsim::tracer
