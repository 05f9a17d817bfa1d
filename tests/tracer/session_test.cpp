// The trace session (what the tracer writes) and sim/core's reader and writer (what trainsim
// reads): round trips, a truncated tail, corrupt files.

#include "tracer/record/session.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"
#include "tests/tracer/test_util.hpp"

namespace trainsim::tracer {
namespace {

uint64_t fake_now = 1000;
uint64_t fake_clock() { return fake_now; }

HeaderInfo header_of_rank(int rank) {
  HeaderInfo h;
  h.rank = rank;
  h.world_size = 2;
  h.hostname = "node0";
  h.pid = 99;
  h.clock = TraceClock::REALTIME;
  return h;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Session, WritesHeaderRecordsAndFinalStatus) {
  const std::string dir = testing::temp_dir("session");
  std::string error;
  auto session = TraceSession::open(dir, header_of_rank(1), fake_clock, error);
  ASSERT_TRUE(session) << error;
  EXPECT_EQ(std::filesystem::path(session->path()).filename(), "rank00001.node0.99.trace");
  KernelEvent k;
  k.name = "k";
  k.start_ns = 1;
  k.end_ns = 2;
  session->record(k);
  session->report_error("cuptiActivityEnable failed; kernels are not recorded");
  session->add_dropped(5);
  EXPECT_EQ(session->next_correlation_id(), 1u);
  EXPECT_EQ(session->next_correlation_id(), 2u);
  session->close();
  session->record(k);  // after close: dropped
  session->flush();

  const core::TraceFile file = testing::read_only_trace(dir);
  EXPECT_EQ(file.header.rank(), 1);
  EXPECT_EQ(file.header.world_size(), 2);
  EXPECT_EQ(file.header.clock(), trace::TRACE_CLOCK_REALTIME);
  ASSERT_EQ(file.records.size(), 2u);
  EXPECT_EQ(file.records[0].kernel().name(), "k");
  const trace::TracerStatus& status = file.records[1].status();
  EXPECT_TRUE(status.final());
  EXPECT_EQ(status.dropped_records(), 5u);
  EXPECT_EQ(status.records_written(), 1u);
  ASSERT_EQ(status.errors_size(), 1);
  EXPECT_EQ(file.lost_bytes, 0u);
}

TEST(Session, WritesContinuouslyOnceASecondHasPassed) {
  const std::string dir = testing::temp_dir("session-continuous");
  std::string error;
  fake_now = 1000;
  auto session = TraceSession::open(dir, header_of_rank(0), fake_clock, error);
  ASSERT_TRUE(session) << error;
  const uintmax_t after_header = std::filesystem::file_size(session->path());
  session->record(MarkerEvent{"m", "", 1, 2, -1});
  EXPECT_EQ(std::filesystem::file_size(session->path()), after_header);  // buffered
  fake_now += 2'000'000'000;
  session->record(MarkerEvent{"m", "", 3, 4, -1});
  EXPECT_GT(std::filesystem::file_size(session->path()), after_header);  // written without a flush
}

TEST(Session, NeverOverwritesAndNamesThePathOnFailure) {
  const std::string dir = testing::temp_dir("session-exists");
  std::string error;
  auto first = TraceSession::open(dir, header_of_rank(0), fake_clock, error);
  ASSERT_TRUE(first);
  auto second = TraceSession::open(dir, header_of_rank(0), fake_clock, error);
  EXPECT_FALSE(second);
  EXPECT_NE(error.find("rank00000.node0.99.trace"), std::string::npos) << error;

  write_bytes(dir + "/a-file", "x");
  EXPECT_FALSE(TraceSession::open(dir + "/a-file/sub", header_of_rank(0), fake_clock, error));
  EXPECT_NE(error.find("cannot create the trace folder"), std::string::npos) << error;
}

// A file with a header and three kernel records, written by sim/core's writer.
std::string three_record_file(const std::string& dir) {
  const std::string path = dir + "/t.trace";
  trace::Header h;
  h.set_rank(0);
  core::TraceWriter w(path, h);
  for (int i = 0; i < 3; ++i) {
    trace::Record r;
    r.mutable_kernel()->set_name("kernel" + std::to_string(i));
    r.mutable_kernel()->set_start_ns(static_cast<uint64_t>(i) * 10 + 1);
    w.append(r);
  }
  w.flush();
  return path;
}

TEST(TraceIo, RoundTrip) {
  const std::string path = three_record_file(testing::temp_dir("io"));
  const core::TraceFile file = core::read_trace_file(path);
  EXPECT_EQ(file.header.magic(), core::TRACE_MAGIC);
  EXPECT_EQ(file.header.format_version(), core::TRACE_FORMAT_VERSION);
  ASSERT_EQ(file.records.size(), 3u);
  EXPECT_EQ(file.records[2].kernel().name(), "kernel2");
  EXPECT_EQ(file.lost_bytes, 0u);
}

TEST(TraceIo, TruncatedTailIsReadToTheLastWholeRecord) {
  const std::string path = three_record_file(testing::temp_dir("io-truncated"));
  const std::string bytes = read_bytes(path);
  core::TraceReader probe(path);
  trace::Record r;
  ASSERT_TRUE(probe.next(r) && probe.next(r));
  const uint64_t end_of_second = probe.offset();
  // Every cut inside the last record, its length prefix included, keeps the first two records.
  for (size_t size = end_of_second + 1; size < bytes.size(); ++size) {
    write_bytes(path, bytes.substr(0, size));
    core::TraceReader reader(path);
    int n = 0;
    while (reader.next(r)) ++n;
    EXPECT_EQ(n, 2) << "size " << size;
    EXPECT_EQ(reader.lost_bytes(), size - end_of_second) << "size " << size;
  }
}

TEST(TraceIo, CorruptLengthIsAnInputErrorWithTheOffset) {
  const std::string path = three_record_file(testing::temp_dir("io-corrupt"));
  std::string bytes = read_bytes(path);
  core::TraceReader probe(path);
  trace::Record r;
  ASSERT_TRUE(probe.next(r));
  const uint64_t second = probe.offset();
  // A length prefix of ten continuation bytes: not a varint.
  bytes.replace(second, 1, std::string(11, '\xff'));
  write_bytes(path, bytes);
  core::TraceReader reader(path);
  ASSERT_TRUE(reader.next(r));
  try {
    reader.next(r);
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("byte offset " + std::to_string(second)), std::string::npos) << msg;
  }
}

TEST(TraceIo, ImplausibleLengthAndGarbageAreInputErrors) {
  const std::string dir = testing::temp_dir("io-garbage");
  const std::string path = three_record_file(dir);
  std::string bytes = read_bytes(path);
  std::string huge;
  huge.push_back('\x80');
  huge.push_back('\x80');
  huge.push_back('\x80');
  huge.push_back('\x80');
  huge.push_back('\x01');  // 2^28 bytes: over the 64 MiB limit
  write_bytes(path, bytes + huge);
  core::TraceReader reader(path);
  trace::Record r;
  while (true) {
    try {
      if (!reader.next(r)) FAIL() << "expected an InputError";
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("exceeds"), std::string::npos) << e.what();
      break;
    }
  }

  write_bytes(dir + "/empty.trace", "");
  EXPECT_THROW(core::TraceReader(dir + "/empty.trace"), core::InputError);
  write_bytes(dir + "/text.trace", "hello world, not a trace");
  EXPECT_THROW(core::TraceReader(dir + "/text.trace"), core::InputError);
  EXPECT_THROW(core::TraceReader(dir + "/missing.trace"), core::InputError);
  EXPECT_THROW(core::expand_trace_paths({dir + "/nope"}), core::InputError);
}

}  // namespace
}  // namespace trainsim::tracer
