#include "tracer/record/session.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <unistd.h>

#include "tracer/record/environment.hpp"

namespace trainsim::tracer {
namespace {

constexpr size_t WRITE_THRESHOLD_BYTES = 256 * 1024;
constexpr uint64_t WRITE_INTERVAL_NS = 1'000'000'000;
constexpr const char* PRODUCER_VERSION = "trainsim-tracer 0.1.0";

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// /proc/self/cmdline, NUL separators turned into spaces.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

}  // namespace

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void log_once(std::string_view key, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> logged;
  std::lock_guard<std::mutex> lock(mutex);
  if (!logged.insert(std::string(key)).second) return;
  std::fprintf(stderr, "trainsim-tracer: %s\n", message.c_str());
}

TraceSession::TraceSession(std::string path, int fd, ClockFn clock)
    : path_(std::move(path)), fd_(fd), clock_(clock) {}

std::unique_ptr<TraceSession> TraceSession::open(const std::string& dir, const HeaderInfo& header, ClockFn clock,
                                                 std::string& error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot create the trace folder " + dir + ": " + ec.message();
    return nullptr;
  }
  const RankInfo rank{header.rank, header.local_rank, header.world_size};
  const std::string path = (std::filesystem::path(dir) / trace_file_name(rank, header.hostname, header.pid)).string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot create the trace file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<TraceSession> session(new TraceSession(path, fd, clock));
  std::string framed;
  append_record(header, framed);
  session->append(framed, 0);
  session->flush();
  if (session->write_failed_) {
    error = "cannot write the trace file " + path;
    return nullptr;
  }
  return session;
}

TraceSession::~TraceSession() {
  close();
  if (fd_ >= 0) ::close(fd_);
}

void TraceSession::append(std::string_view framed, uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_ || write_failed_) return;
  pending_.append(framed.data(), framed.size());
  records_ += count;
  if (pending_.size() >= WRITE_THRESHOLD_BYTES || clock_() - last_write_ns_ >= WRITE_INTERVAL_NS) write_locked();
}

void TraceSession::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked();
}

void TraceSession::write_locked() {
  last_write_ns_ = clock_();
  size_t done = 0;
  while (done < pending_.size() && !write_failed_) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      write_failed_ = true;
      log_once("write", "writing " + path_ + " failed (" + std::strerror(errno) + "); tracing stopped");
      break;
    }
    done += static_cast<size_t>(n);
  }
  pending_.clear();
}

void TraceSession::report_error(const std::string& message) {
  log_once(message, message);
  std::lock_guard<std::mutex> lock(mutex_);
  errors_.push_back(message);
}

void TraceSession::write_status(bool final) {
  TracerStatusEvent status;
  status.time_ns = clock_();
  status.dropped_records = dropped_;
  status.records_written = records_;
  status.unsupported_records = unsupported_;
  status.final = final;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status.errors.swap(errors_);
  }
  record(status);
}

void TraceSession::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
  }
  write_status(true);
  std::lock_guard<std::mutex> lock(mutex_);
  write_locked();
  closed_ = true;
}

TraceSession* process_session(const SessionSetup& setup) {
  static std::once_flag once;
  static TraceSession* session = nullptr;
  std::call_once(once, [&setup] {
    const EnvLookup env = process_environment();
    const RankInfo rank = discover_rank(env);
    const TracerOptions options = read_options(env);
    HeaderInfo header;
    header.producer = Producer::TRACER;
    header.producer_version = PRODUCER_VERSION;
    header.clock = setup.clock_kind;
    header.clock_anchor.trace_clock_ns = setup.clock();
    header.clock_anchor.realtime_ns = realtime_ns();
    header.world_size = rank.world_size;
    header.rank = rank.rank;
    header.local_rank = rank.local_rank;
    header.hostname = hostname();
    header.pid = static_cast<uint32_t>(getpid());
    header.cuda_driver_version = setup.cuda_driver_version;
    header.cuda_runtime_version = setup.cuda_runtime_version;
    header.cupti_api_version = setup.cupti_api_version;
    header.command_line = command_line();
    std::string error;
    session = TraceSession::open(options.dir, header, setup.clock, error).release();
    if (session == nullptr) {
      log_once("session", error + "; nothing will be traced");
      return;
    }
    std::atexit([] { session->close(); });
  });
  return session;
}

}  // namespace trainsim::tracer
