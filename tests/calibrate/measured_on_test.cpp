// What a calibration measured (calibrate/measured_on.hpp): the version texts, the software stack of
// traces and nccl-tests outputs, and `calibrate` writing it into the profile with the GPU.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "calibrate/measured_on.hpp"
#include "calibrate/nccl_tests_import.hpp"
#include "sim/cli/calibrate_command.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/calibrate/synthetic_trace.hpp"

namespace trainsim::calibrate {
namespace {

TEST(MeasuredOn, VersionCodesReadAsTheirReleases) {
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(11080), "11.8");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(0), "");
  EXPECT_EQ(nccl_version_text(22105), "2.21.5");  // NCCL_VERSION_CODE since 2.9: X*10000 + Y*100 + Z
  EXPECT_EQ(nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(nccl_version_text(20900), "2.9.0");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");    // before: X*1000 + Y*100 + Z
  EXPECT_EQ(nccl_version_text(0), "");
}

TEST(MeasuredOn, TracesGiveCudaNcclAndFrameworkAndDistinctVersionsAreListed) {
  testing::SyntheticRun run = testing::make_synthetic_run({});
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    trace::Header& h = run.ranks[i].header;
    h.set_cuda_runtime_version(12040);
    h.set_nccl_version(i == 3 ? 0 : 22105);
    h.set_producer(trace::PRODUCER_TRACER);
  }
  // Rank 3 learned its NCCL version later, from a Library record.
  trace::Record lib;
  lib.mutable_library()->set_name("nccl");
  lib.mutable_library()->set_version(22306);
  run.ranks[3].records.push_back(lib);
  const TraceSet traces(run.ranks);
  const core::FittedOn f = measured_on("A100-SXM4-80GB", &traces, {});
  EXPECT_EQ(f.gpu, "A100-SXM4-80GB");
  EXPECT_EQ(f.cuda, "12.4");
  EXPECT_EQ(f.nccl, "2.21.5 / 2.23.6");
  EXPECT_EQ(f.framework, "");

  for (core::TraceFile& t : run.ranks) t.header.set_producer(trace::PRODUCER_KINETO_IMPORT);
  const TraceSet kineto(run.ranks);
  EXPECT_EQ(measured_on("A100-SXM4-80GB", &kineto, {}).framework, "pytorch");
}

TEST(MeasuredOn, NcclTestsOutputsGiveTheirNcclLibraryVersion) {
  const std::string file = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/nccl-tests/all_reduce_perf_8xA100.txt";
  const std::vector<NcclTestsRun> runs = load_nccl_tests(file);
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.front().nccl_version, 22602u) << "# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602";
  const core::FittedOn f = measured_on("A100-SXM4-80GB", nullptr, runs);
  EXPECT_EQ(f.nccl, "2.26.2");
  EXPECT_EQ(f.cuda, "");
}

// `calibrate` writes "fitted_on" into the profile; a scenario on another GPU is then warned about
// (tests/cli/described_gpu_test.cpp).
TEST(MeasuredOn, CalibrateWritesFittedOnIntoTheProfile) {
  const std::filesystem::path out = std::filesystem::temp_directory_path() / "trainsim_measured_on_profile.json";
  cli::CalibrateArgs args;
  args.nccl_tests = {std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/nccl-tests/all_reduce_perf_8xA100.txt"};
  args.output = out.string();
  std::ostringstream report;
  ASSERT_EQ(cli::calibrate_command(args, report), 0);
  const core::Json profile = core::load_json_file(out.string());
  EXPECT_EQ(profile["fitted_on"], (core::Json{{"gpu", "A100-SXM4-80GB"}, {"nccl", "2.26.2"}}));
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace trainsim::calibrate
