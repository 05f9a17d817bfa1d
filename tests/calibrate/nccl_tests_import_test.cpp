#include "calibrate/nccl_tests_import.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

using core::CollectiveOp;

const std::string FIXTURE = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/nccl-tests/all_reduce_perf_8xA100.txt";

std::vector<NcclTestsRun> parse(const std::string& text, std::optional<CollectiveOp> op = std::nullopt) {
  std::istringstream in(text);
  return parse_nccl_tests(in, "out.txt", op);
}

// The message of the InputError that parsing `text` throws ("" when it does not throw).
std::string error_of(const std::string& text, std::optional<CollectiveOp> op = std::nullopt) {
  try {
    parse(text, op);
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

// An older nccl-tests (no version and program lines, no Group, "[0x07]" bus ids), `ranks` ranks on
// `per_host` per host, with `rows` after the column header (lines ranks + 8, ...; the header is line
// ranks + 6).
std::string old_output(int ranks, int per_host, const std::string& rows) {
  std::string s = "# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
                  "#\n# Using devices\n";
  for (int r = 0; r < ranks; ++r) {
    s += fmt::format("#   Rank {:2d} Pid {:6d} on {:>10} device {:2d} [0x{:02x}] Tesla V100-SXM2-32GB\n", r, 4000 + r,
                     fmt::format("node{}", r / per_host), r % per_host, 7 + r);
  }
  s += "#\n#                                                       out-of-place                       in-place\n"
       "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
       "#        (B)    (elements)                        (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  return s + rows;
}

TEST(NcclTestsImport, ReadsTheHeaderRanksAndRowsOfTheFixture) {
  const std::vector<NcclTestsRun> runs = load_nccl_tests(FIXTURE);
  ASSERT_EQ(runs.size(), 1u);
  const NcclTestsRun& run = runs.front();
  EXPECT_EQ(run.program, "all_reduce_perf");
  EXPECT_EQ(run.op, CollectiveOp::ALL_REDUCE);
  EXPECT_EQ(run.first_line, 1u);
  ASSERT_EQ(run.ranks.size(), 8u);
  EXPECT_EQ(run.ranks[3].rank, 3);
  EXPECT_EQ(run.ranks[3].host, "dgx-a100-07");
  EXPECT_EQ(run.ranks[3].device, 3);
  EXPECT_EQ(run.ranks[3].line, 9u);
  EXPECT_EQ(run.gpu(), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(run.hosts(), 1u);
  EXPECT_EQ(run.scope(), CollectiveScope::INTRA_NODE);

  ASSERT_EQ(run.rows.size(), 31u);  // -b 8 -e 8G -f 2
  const NcclTestsRow& first = run.rows.front();
  EXPECT_EQ(first.line, 18u);
  EXPECT_EQ(first.size.value(), 8);
  EXPECT_EQ(first.count, 2u);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_EQ(first.root, -1);
  EXPECT_NEAR(first.out_of_place.value(), 25.28e-6, 1e-12);
  EXPECT_NEAR(first.in_place.value(), 25.35e-6, 1e-12);
  EXPECT_EQ(run.rows.back().size.value(), 8589934592.0);
  EXPECT_NEAR(run.rows.back().out_of_place.value(), 65854.1e-6, 1e-9);  // "%7.1f" above 10 ms
}

TEST(NcclTestsImport, TimeIsTheLowerOfOutOfPlaceAndInPlace) {
  const NcclTestsRun run = load_nccl_tests(FIXTURE).front();
  EXPECT_NEAR(run.rows[0].time().value(), 25.28e-6, 1e-12);  // out-of-place 25.28, in-place 25.35
  EXPECT_NEAR(run.rows[1].time().value(), 25.23e-6, 1e-12);  // out-of-place 25.35, in-place 25.23
  const std::vector<CollectiveSample> samples = collective_samples(run);
  ASSERT_EQ(samples.size(), 31u);
  EXPECT_EQ(samples[1].op, CollectiveOp::ALL_REDUCE);
  EXPECT_EQ(samples[1].ranks, 8);
  EXPECT_EQ(samples[1].bytes.value(), 16);
  EXPECT_EQ(samples[1].time, run.rows[1].in_place);
  EXPECT_EQ(samples[1].scope, CollectiveScope::INTRA_NODE);
}

TEST(NcclTestsImport, HostsGiveTheScope) {
  const std::string rows = "     1048576        262144     float     sum    52.10   20.13   30.19      0    52.00   20.17   30.25      0\n";
  EXPECT_EQ(parse(old_output(4, 4, rows)).front().scope(), CollectiveScope::INTRA_NODE);
  EXPECT_EQ(parse(old_output(4, 1, rows)).front().scope(), CollectiveScope::INTER_NODE);
  const NcclTestsRun mixed = parse(old_output(8, 2, rows)).front();
  EXPECT_EQ(mixed.hosts(), 4u);
  EXPECT_EQ(mixed.busiest_host(), 2);
  EXPECT_EQ(mixed.scope(), CollectiveScope::HIERARCHICAL);
  EXPECT_EQ(mixed.gpu(), "Tesla V100-SXM2-32GB");
}

TEST(NcclTestsImport, RowsTellTheOpOfOutputsThatDoNotNameTheirProgram) {
  // 4 ranks of float: all_reduce counts size / 4 elements, reduce_scatter size / 16.
  EXPECT_EQ(parse(old_output(4, 4, "        4096          1024     float     sum    20.00   0.20   0.31   0   20.10   0.20   0.31   0\n"))
                .front().op,
            CollectiveOp::ALL_REDUCE);
  EXPECT_EQ(parse(old_output(4, 4, "        4096           256     float     sum    20.00   0.20   0.15   0   20.10   0.20   0.15   0\n"))
                .front().op,
            CollectiveOp::REDUCE_SCATTER);
  const std::string rooted =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "        4096          1024     float    none       0    20.00    0.20    0.20      0    20.10    0.20    0.20      0\n";
  EXPECT_EQ(parse(old_output(4, 4, rooted)).front().op, CollectiveOp::BROADCAST);

  // all_gather and alltoall look alike: --op decides, and the error says so.
  const std::string gather = "        4096           256     float    none    20.00   0.20   0.15   0   20.10   0.20   0.15   0\n";
  const std::string message = error_of(old_output(4, 4, gather));
  EXPECT_NE(message.find("out.txt:1: "), std::string::npos) << message;
  EXPECT_NE(message.find("--op"), std::string::npos) << message;
  EXPECT_EQ(parse(old_output(4, 4, gather), CollectiveOp::ALL_GATHER).front().op, CollectiveOp::ALL_GATHER);
}

TEST(NcclTestsImport, ANamedProgramWinsAndMustAgreeWithOp) {
  std::string text = "# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602\n"
                     "# Collective test starting: reduce_scatter_perf\n" +
                     old_output(2, 2, "        4096           512     float     sum    20.00   0.20   0.10   0   20.10   0.20   0.10   0\n");
  EXPECT_EQ(parse(text).front().op, CollectiveOp::REDUCE_SCATTER);
  EXPECT_EQ(parse(text).front().program, "reduce_scatter_perf");
  const std::string message = error_of(text, CollectiveOp::ALL_REDUCE);
  EXPECT_NE(message.find("out.txt:2: the output is of reduce_scatter_perf (reduce_scatter), but --op says all_reduce"),
            std::string::npos)
      << message;
  text.replace(text.find("reduce_scatter_perf"), 19, "sendrecv_perf");
  EXPECT_NE(error_of(text).find("sendrecv_perf does not measure a collective"), std::string::npos);
  EXPECT_EQ(nccl_tests_program_op("./build/alltoall_perf"), CollectiveOp::ALL_TO_ALL);
  EXPECT_EQ(nccl_tests_program_op("broadcast_perf_mpi"), CollectiveOp::BROADCAST);
  EXPECT_EQ(nccl_tests_program_op("hypercube_perf"), std::nullopt);
}

TEST(NcclTestsImport, ColumnsAreFoundByName) {
  // -R 1 adds #bitdiff after each #wrong; the in-place time moves one column to the right.
  const std::string rows =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong  #bitdiff     time   algbw   busbw  #wrong  #bitdiff\n"
      "     1048576        262144     float     sum      -1    52.10   20.13   30.19       0         0    51.00   20.56   30.84       0         0\n";
  const NcclTestsRun run = parse(old_output(3, 3, rows)).front();
  ASSERT_EQ(run.rows.size(), 1u);
  EXPECT_NEAR(run.rows[0].out_of_place.value(), 52.10e-6, 1e-12);
  EXPECT_NEAR(run.rows[0].in_place.value(), 51.00e-6, 1e-12);
}

TEST(NcclTestsImport, OtherProgramsOutputIsSkippedAndConcatenatedRunsAreSplit) {
  const std::string row = "        4096          1024     float     sum    20.00   0.20   0.35   0   20.10   0.20   0.35   0\n";
  std::string text = old_output(8, 8, row);
  text += "node0:4000:4100 [0] NCCL INFO comm 0x5581 rank 0 nranks 8 cudaDev 0 busId 7000 - Init COMPLETE\n";
  text += "        8192          2048     float     sum    21.00   0.39   0.68   0   21.30   0.38   0.67   0\n";
  text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.5 \n#\n";
  text += "--------------------------------------------------------------------------\n";
  text += old_output(8, 8, row);
  const std::vector<NcclTestsRun> runs = parse(text);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].rows.size(), 2u);
  EXPECT_EQ(runs[1].rows.size(), 1u);
  EXPECT_EQ(runs[1].first_line, 23u);
  EXPECT_EQ(runs[1].where(), "out.txt:23");
}

TEST(NcclTestsImport, MalformedLinesAreInputErrorsNamingFileAndLine) {
  const std::string good = "        4096          1024     float     sum    20.00   0.20   0.35   0   20.10   0.20   0.35   0\n";
  // Two ranks: line 10 is the first row, line 8 the column header.
  EXPECT_NE(error_of(old_output(2, 2, "        4096          1024     float     sum    fast   0.20   0.35   0   20.10   0.20   0.35   0\n"))
                .find("out.txt:10: expected a positive out-of-place time in microseconds (field 5), found \"fast\""),
            std::string::npos);
  EXPECT_NE(error_of(old_output(2, 2, good + "        8192          2048     float     sum    21.00\n"))
                .find("out.txt:11: expected a result row of at least 9 fields (the columns of line 8), found 5"),
            std::string::npos);
  EXPECT_NE(error_of(old_output(2, 2, "        4096          1024     float     sum    -3.00   0.20   0.35   0   20.10   0.20   0.35   0\n"))
                .find("out.txt:10: expected a positive"),
            std::string::npos);

  std::string bad_rank = old_output(2, 2, good);
  bad_rank.replace(bad_rank.find("Pid"), 3, "PID");
  EXPECT_NE(error_of(bad_rank).find("out.txt:4: expected a device line"), std::string::npos) << error_of(bad_rank);

  std::string twice = old_output(2, 2, good);
  twice.replace(twice.find("Rank  1"), 7, "Rank  0");
  EXPECT_NE(error_of(twice).find("out.txt:5: rank 0 is listed twice (also at line 4)"), std::string::npos);
  EXPECT_NE(error_of(twice).find("MPI=1"), std::string::npos);

  EXPECT_NE(error_of(old_output(1, 1, good)).find("a run on one rank"), std::string::npos);
  EXPECT_NE(error_of("just some text\n").find("out.txt: no nccl-tests results"), std::string::npos);
  EXPECT_NE(error_of(old_output(2, 2, "")).find("out.txt:1: a run with ranks but no result rows"), std::string::npos);
  EXPECT_NE(error_of("#       size    count  type  redop  time  algbw  busbw  #wrong\n" + good)
                .find("out.txt:2: a result row before any"),
            std::string::npos);
  try {
    load_nccl_tests("/nonexistent/all_reduce.txt");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/all_reduce.txt: cannot open file"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim::calibrate
