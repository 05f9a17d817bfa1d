// `trainsim calibrate --nccl-tests` end to end: the fixture tests/data/nccl-tests/
// all_reduce_perf_8xA100.txt (made by generate.py there from a known model: 0.8 us step latency
// over the 1 us hop, efficiency 0.20 at 256 KiB rising in log size through 0.57 at 64 MiB and 0.72
// at 1 GiB, times up to 0.6 % slower) is calibrated by the command into a profile file, which
// core::Profile reads back with an efficiency curve, and with which network::collective_cost on an
// 8 x A100-SXM4-80GB node gives the fixture's times back within 2 %.

#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>

#include "calibrate/nccl_tests_import.hpp"
#include "network/cluster.hpp"
#include "network/collective_cost.hpp"
#include "sim/cli/calibrate_command.hpp"
#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

const std::string FIXTURE = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/nccl-tests/all_reduce_perf_8xA100.txt";

network::ClusterConfig a100_node() {
  const core::Json doc = {{"gpu", "A100-SXM4-80GB"}, {"nodes", 1}, {"gpus_per_node", 8}};
  core::Diagnostics diag;
  core::ObjectReader r(doc, "test", "/cluster", diag);
  network::ClusterConfig c = network::ClusterConfig::from_json(r);
  diag.throw_if_any();
  return c;
}

class NcclTestsCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    output_ = (std::filesystem::temp_directory_path() /
               (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".profile.json"))
                  .string();
    std::filesystem::remove(output_);
  }
  void TearDown() override { std::filesystem::remove(output_); }

  // Runs the command on the fixture (no scenario: the GPU comes from the ranks' device name).
  std::string calibrate() const {
    cli::CalibrateArgs args;
    args.nccl_tests = {FIXTURE};
    args.output = output_;
    std::ostringstream out;
    EXPECT_EQ(cli::calibrate_command(args, out), 0);
    return out.str();
  }

  core::Profile read_profile() const {
    const core::Json doc = core::load_json_file(output_);
    core::Diagnostics diag;
    core::ObjectReader r(doc, output_, "", diag);
    core::Profile p = core::Profile::from_json(r);
    EXPECT_TRUE(diag.empty()) << diag.problems().front().to_string();
    return p;
  }

  std::string output_;
};

TEST_F(NcclTestsCalibration, WritesAProfileWithACurveThatReproducesTheMeasuredTimes) {
  const std::string table = calibrate();
  EXPECT_NE(table.find("calibration of A100-SXM4-80GB from 1 nccl-tests file(s)"), std::string::npos) << table;
  EXPECT_NE(table.find("intra_node all_reduce curve"), std::string::npos) << table;

  const core::Profile profile = read_profile();
  const core::LinkEfficiency& intra = profile.network.intra_node;
  ASSERT_TRUE(intra.size_dependent());
  const std::vector<core::EfficiencyPoint>& curve = intra.by_size[static_cast<size_t>(core::CollectiveOp::ALL_REDUCE)];
  EXPECT_GE(curve.size(), 15u);
  // The generating model (generate.py), within 2 %.
  EXPECT_NEAR(intra.step_latency.value() / 0.8e-6, 1.0, 0.02);
  EXPECT_NEAR(intra.efficiency(core::CollectiveOp::ALL_REDUCE, core::Bytes(64 * core::MiB)) / 0.57, 1.0, 0.02);
  EXPECT_NEAR(intra.efficiency(core::CollectiveOp::ALL_REDUCE, core::Bytes(core::GiB)) / 0.72, 1.0, 0.02);
  EXPECT_NEAR(intra.efficiency(core::CollectiveOp::ALL_REDUCE, core::Bytes(core::MiB)) / 0.30, 1.0, 0.02);

  // Every row of the fixture, costed by the cost model with the fitted profile.
  const network::ClusterConfig cluster = a100_node();
  const network::GroupPlacement node{8, 1, 8};
  const NcclTestsRun run = load_nccl_tests(FIXTURE).front();
  ASSERT_EQ(run.rows.size(), 31u);
  for (const NcclTestsRow& row : run.rows) {
    const network::CollectiveCost cost =
        network::collective_cost(core::CollectiveOp::ALL_REDUCE, row.size, node, cluster, profile.network);
    EXPECT_NEAR(cost.time / row.time(), 1.0, 0.02) << row.size.value() << " B: " << cost.time.value() << " s vs "
                                                   << row.time().value() << " s";
  }
  // With the constant efficiency alone (no curve), the mid sizes are far off: the curve is what fits.
  core::NetworkProfile constant = profile.network;
  constant.intra_node.by_size = {};
  const NcclTestsRow& mid = run.rows[17];  // 1 MiB
  ASSERT_EQ(mid.size.value(), core::MiB);
  const core::Seconds flat = network::collective_cost(core::CollectiveOp::ALL_REDUCE, mid.size, node, cluster, constant).time;
  EXPECT_GT(std::abs(flat / mid.time() - 1.0), 0.1);
}

TEST_F(NcclTestsCalibration, JsonReportNamesTheFileAndTheCurve) {
  calibrate();
  const core::Json doc = core::load_json_file(output_);
  EXPECT_EQ(doc["fit"]["nccl_tests"], core::Json::array({FIXTURE}));
  EXPECT_TRUE(doc["fit"]["traces"].empty());
  EXPECT_TRUE(doc["network"]["intra_node"]["by_size"].contains("all_reduce"));
}

TEST_F(NcclTestsCalibration, NeedsTracesOrNcclTests) {
  cli::CalibrateArgs args;
  args.output = output_;
  std::ostringstream out;
  try {
    cli::calibrate_command(args, out);
    ADD_FAILURE() << "no error without inputs";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--nccl-tests FILE"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(output_));
}

}  // namespace
}  // namespace trainsim::calibrate
