// Trace readers never trust headers (issue 16 item 3): a world size or rank beyond
// core::TRACE_MAX_WORLD_SIZE is an input error before anything is sized by it, and a truncated file
// is read up to its last whole record with a warning naming the file and what was dropped.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "calibrate/kineto_import.hpp"
#include "calibrate/replay_workload.hpp"
#include "calibrate/trace_set.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::calibrate {
namespace {

namespace fs = std::filesystem;

std::string scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("trainsim_trace_limits_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

trace::Header header(int world_size, int rank) {
  trace::Header h;
  h.set_world_size(world_size);
  h.set_rank(rank);
  h.set_local_rank(-1);
  return h;
}

trace::Record kernel(uint64_t start_ns) {
  trace::Record r;
  r.mutable_kernel()->set_name("k");
  r.mutable_kernel()->set_start_ns(start_ns);
  r.mutable_kernel()->set_end_ns(start_ns + 10);
  return r;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(TraceLimits, HeaderWorldSizeAboveTheLimitIsAnInputError) {
  const std::string path = scratch("world.trace");
  core::TraceWriter(path, header(2147483647, 0)).flush();
  EXPECT_EQ(message_of([&] { core::TraceReader r(path); }),
            path + ": corrupt header: world_size 2147483647 is outside -1..1048576 (the limit is 1048576 ranks, "
                   "TRACE_MAX_WORLD_SIZE; -1 means unknown)");
  // At the limit it is read.
  core::TraceWriter(path, header(core::TRACE_MAX_WORLD_SIZE, core::TRACE_MAX_WORLD_SIZE - 1)).flush();
  EXPECT_EQ(core::TraceReader(path).header().world_size(), 1 << 20);
}

TEST(TraceLimits, HeaderRankOutsideItsWorldIsAnInputError) {
  const std::string path = scratch("rank.trace");
  core::TraceWriter(path, header(-1, 2147483647)).flush();
  EXPECT_EQ(message_of([&] { core::TraceReader r(path); }),
            path + ": corrupt header: rank 2147483647 is outside -1..1048575 (the limit is 1048576 ranks, "
                   "TRACE_MAX_WORLD_SIZE; -1 means unknown)");
  core::TraceWriter(path, header(2, 2)).flush();
  EXPECT_EQ(message_of([&] { core::TraceReader r(path); }), path + ": corrupt header: rank 2 is outside the world size 2");
}

TEST(TraceLimits, TruncatedFileIsReadUpToItsLastWholeRecordWithAWarning) {
  const std::string path = scratch("cut.trace");
  {
    core::TraceWriter w(path, header(2, 1));
    for (uint64_t t : {100u, 200u, 300u}) w.append(kernel(t));
    w.flush();
  }
  const uint64_t last = kernel(300).ByteSizeLong() + 1;  // one length byte: the record is short
  fs::resize_file(path, fs::file_size(path) - 3);           // cut 3 bytes off the last record
  const core::TraceFile f = core::read_trace_file(path);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.records[1].kernel().start_ns(), 200u);
  EXPECT_EQ(f.lost_bytes, last - 3);
  const std::string expected = "warning: " + path + ": truncated: the last " + std::to_string(last - 3) +
                               " bytes (an incomplete record) were dropped; read up to the last complete record (2 records)";
  EXPECT_EQ(core::truncation_warning(f), expected);

  // The trace set of a run carries the warning for the commands to print.
  core::TraceFile whole = f;
  whole.path = "rank0.trace";
  whole.header.set_rank(0);
  whole.lost_bytes = 0;
  const TraceSet set({whole, f});
  ASSERT_EQ(set.warnings().size(), 1u);
  EXPECT_EQ(set.warnings()[0], expected);
  EXPECT_EQ(set.world_size(), 2);
}

TEST(TraceLimits, CorruptRecordEndsTheReadingWithAWarning) {
  const std::string path = scratch("corrupt.trace");
  {
    core::TraceWriter w(path, header(1, 0));
    w.append(kernel(100));
    w.flush();
  }
  const uint64_t good = fs::file_size(path);
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << std::string(11, '\xff') << '\x01';  // an 11-byte length prefix: malformed
  }
  const core::TraceFile f = core::read_trace_file(path);
  ASSERT_EQ(f.records.size(), 1u);
  EXPECT_EQ(f.lost_bytes, 12u);
  EXPECT_EQ(core::truncation_warning(f),
            "warning: " + path + ": corrupt record at byte offset " + std::to_string(good) +
                ": malformed length prefix; the last 12 bytes were dropped from there on; read up to the last complete "
                "record (1 records)");
  // The streaming reader still throws: `trace dump` shows where the file went wrong.
  core::TraceReader r(path);
  trace::Record rec;
  EXPECT_TRUE(r.next(rec));
  EXPECT_THROW(r.next(rec), core::InputError);
}

TEST(TraceLimits, TraceSetRefusesHeadersBuiltInMemoryBeyondTheLimit) {
  core::TraceFile f;
  f.path = "mem.trace";
  f.header = header(2147483647, 0);
  EXPECT_EQ(message_of([&] { TraceSet set({f}); }),
            "mem.trace: corrupt header: world size 2147483647 or rank 0 is above the limit of 1048576 ranks "
            "(TRACE_MAX_WORLD_SIZE)");
}

TEST(TraceLimits, KinetoWorldSizeAndRankAreBounded) {
  const auto import = [](const std::string& info) {
    return message_of([&] {
      import_kineto_json(core::parse_json_text(R"({"distributedInfo": )" + info + R"(, "traceEvents": []})", "k.json"),
                         "k.json");
    });
  };
  EXPECT_EQ(import(R"({"rank": 0, "world_size": 1000000000000})"),
            "k.json: /distributedInfo/world_size: expected an integer from 1 to 1048576 (TRACE_MAX_WORLD_SIZE is "
            "1048576 ranks), got 1000000000000");
  EXPECT_EQ(import(R"({"rank": 4, "world_size": 4})"),
            "k.json: /distributedInfo/rank: expected an integer from 0 to 3 (TRACE_MAX_WORLD_SIZE is 1048576 ranks), got 4");
  EXPECT_EQ(import(R"({"rank": -5})"),
            "k.json: /distributedInfo/rank: expected an integer from 0 to 1048575 (TRACE_MAX_WORLD_SIZE is 1048576 "
            "ranks), got -5");
  const KinetoImport ok = import_kineto_json(
      core::parse_json_text(R"({"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": []})", "k.json"), "k.json");
  EXPECT_EQ(ok.header.rank(), 3);
  EXPECT_EQ(ok.header.world_size(), 4);
}

// Ranks that disagree on their collective sequence (tests/data/traces/bad): the rank and the call are
// named before anything is simulated.
const std::string BAD = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/bad/";

TEST(TraceLimits, ReplayNamesTheRankAndCallWhereRanksDisagree) {
  const std::string dir = BAD + "ranks-disagree";
  EXPECT_EQ(message_of([&] { build_replay_workload(TraceSet::load({dir}), ReplayOptions{}); }),
            dir + "/rank00001.trace: rank 1 disagrees with rank 0 (" + dir +
                "/rank00000.trace) on call 1 of the communicator of ranks 0,1: all_reduce of 1048576 bytes here, "
                "all_reduce of 2097152 bytes there; the traces must come from one run");
}

TEST(TraceLimits, ReplayNamesTheCallATruncatedRankLacks) {
  const std::string dir = BAD + "truncated-inside-a-call";
  const TraceSet set = TraceSet::load({dir});
  ASSERT_EQ(set.warnings().size(), 1u);
  EXPECT_EQ(set.warnings()[0].rfind("warning: " + dir + "/rank00001.trace: truncated: the last ", 0), 0u) << set.warnings()[0];
  EXPECT_EQ(message_of([&] { build_replay_workload(set, ReplayOptions{}); }),
            dir + "/rank00001.trace: rank 1 makes 0 calls on the communicator of ranks 0,1 in the replayed window, "
                  "rank 0 (" + dir + "/rank00000.trace) makes 1: call 1 (all_reduce of 2097152 bytes) is missing "
                  "here; a truncated trace, or traces of different runs");
  // Cut after its last call, the rank still replays, with the warning.
  const TraceSet cut_late = TraceSet::load({BAD + "truncated-rank"});
  EXPECT_EQ(cut_late.warnings().size(), 1u);
  EXPECT_NO_THROW(build_replay_workload(cut_late, ReplayOptions{}));
}

}  // namespace
}  // namespace trainsim::calibrate
