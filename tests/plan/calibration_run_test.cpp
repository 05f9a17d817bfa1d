// A calibrated profile's run and the error band it gives (sim/plan/calibration_run.hpp), against
// residuals and quantiles worked by hand, and through a scenario that uses such a profile.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/core/error.hpp"
#include "sim/plan/calibration_run.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/uncertainty.hpp"

namespace trainsim::plan {
namespace {

const std::string FIXTURE = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/traces/h200-fixture/";

// The fixture's job: one H200, ddp stack.
const Scenario& fixture_job() {
  static const Scenario job = load_scenario(FIXTURE + "scenario.json");
  return job;
}

// A run recorded before `job` existed: its band goes to the traced job's level-1 group.
CalibrationRun five_iterations() {
  CalibrationRun run;
  run.name = "job";
  run.traits = traits_of(fixture_job());
  run.predicted_s = 1.0;
  run.measured_s = {1.0, 1.25, 0.8, 1.1, 0.9};
  return run;
}

TEST(CalibrationRun, TheBandIsTheConformalQuantileOfTheIterationsResiduals) {
  const CalibrationRun run = five_iterations();
  // residuals ln(1 / m): 0, -ln 1.25, ln 1.25, -ln 1.1, -ln 0.9; |r| sorted: 0, 0.0953, 0.1054, 0.2231, 0.2231
  EXPECT_NEAR(run.median_residual(), 0, 1e-15);
  EXPECT_DOUBLE_EQ(run.median_measured_s(), 1.0);
  // n = 5: the ceil(6 x 0.8) = 5th smallest |r| = ln 1.25
  const std::optional<Band> b = calibrated_time_band(run, fixture_job(), 0.8);
  ASSERT_TRUE(b.has_value());
  EXPECT_NEAR(b->relative, std::log(1.25), 1e-12);
  EXPECT_NEAR(b->percent(), 25, 1e-9);
  EXPECT_EQ(b->level, 0);
  EXPECT_EQ(b->cases.size(), 5u);
  EXPECT_NE(b->group.find("the calibrated run job (5 measured iterations"), std::string::npos) << b->group;
}

TEST(CalibrationRun, OnlyJobsLikeTheTracedOneAndEnoughIterationsGetTheRunsBand) {
  // 16 GPUs: more than SIMILAR_SCALE x 1 GPU
  const Scenario sixteen = load_scenario(FIXTURE + "scenario.json", {"cluster.gpus_per_node=8", "cluster.nodes=2",
                                                                     "parallelism.data=16", "training.global_batch=128"});
  EXPECT_FALSE(calibrated_time_band(five_iterations(), sixteen, 0.8).has_value());
  const Scenario megatron = load_scenario(FIXTURE + "scenario.json", {"training.stack=megatron"});
  EXPECT_FALSE(calibrated_time_band(five_iterations(), megatron, 0.8).has_value());
  CalibrationRun three = five_iterations();
  three.measured_s.resize(3);  // the ceil(4 x 0.8) = 4th of 3: no band
  EXPECT_FALSE(calibrated_time_band(three, fixture_job(), 0.8).has_value());
  const BandCase c = as_band_case(five_iterations());
  EXPECT_EQ(c.name, "calibrated run job");
  EXPECT_NEAR(*c.time_residual, 0, 1e-15);
}

// A run that names its job (every run calibrate records now): the band is that job's alone; its
// neighbour with 8 layers, in the same level-1 group, keeps the validation cases' band.
TEST(CalibrationRun, ARunThatNamesItsJobGivesItsBandToThatJobOnly) {
  CalibrationRun run = five_iterations();
  run.job = job_of(fixture_job());
  ASSERT_TRUE(run.job.contains("model"));
  const std::optional<Band> own = calibrated_time_band(run, fixture_job(), 0.8);
  ASSERT_TRUE(own.has_value());
  EXPECT_NEAR(own->relative, std::log(1.25), 1e-12);
  EXPECT_NE(own->group.find("the calibrated run job of this job (5 measured iterations)"), std::string::npos) << own->group;
  EXPECT_FALSE(calibrated_time_band(run, load_scenario(FIXTURE + "near-8-layers.json"), 0.8).has_value());
  // The same job with another simulation setting is still the job.
  EXPECT_TRUE(calibrated_time_band(run, load_scenario(FIXTURE + "scenario.json", {"simulation.backend=simgrid"}), 0.8)
                  .has_value());
}

TEST(CalibrationRun, ReadsBackWhatItWritesAndRefusesABadTime) {
  core::Diagnostics diag;
  const core::Json written = five_iterations().to_json();
  core::ObjectReader r(written, "p.json", "/calibration_run", diag);
  const CalibrationRun back = CalibrationRun::from_json(r);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(back.name, "job");
  EXPECT_EQ(back.measured_s, five_iterations().measured_s);
  EXPECT_DOUBLE_EQ(back.predicted_s, 1.0);
  EXPECT_EQ(back.traits.mix, five_iterations().traits.mix);
  EXPECT_TRUE(back.job.is_null());

  core::Json bad = written;
  bad["measured_iteration_s"][2] = -0.8;
  core::Diagnostics bad_diag;
  core::ObjectReader br(bad, "p.json", "/calibration_run", bad_diag);
  CalibrationRun::from_json(br);
  ASSERT_FALSE(bad_diag.empty());
  EXPECT_NE(bad_diag.problems().front().to_string().find(
                "p.json: /calibration_run/measured_iteration_s/2: expected a positive time in seconds, found -0.8"),
            std::string::npos)
      << bad_diag.problems().front().to_string();
}

// A scenario whose simulation.profile carries a calibration run: the traced job (the H200 fixture's
// scenario) and a near one (8 layers) take the run's band; the same job on 16 GPUs takes the
// validation cases' band, with the run merged in as one more case.
TEST(CalibrationRun, AScenarioWithACalibratedProfileTakesItsBandNearTheTracedJob) {
  const std::string& dir = FIXTURE;
  CalibrationRun run = five_iterations();
  const std::filesystem::path profile = std::filesystem::temp_directory_path() / "trainsim_calibration_run_profile.json";
  std::ofstream(profile) << core::Json{{"schema", "trainsim.profile/1"}, {"calibration_run", run.to_json()}}.dump();
  const std::string use = "simulation.profile=" + profile.string();

  for (const char* file : {"scenario.json", "near-8-layers.json"}) {
    const Scenario s = load_scenario(dir + file, {use});
    ASSERT_NE(s.calibration_run, nullptr);
    const Uncertainty u = assess(s, builtin_band_set());
    EXPECT_EQ(u.time.level, 0) << file;
    EXPECT_NEAR(u.time.relative, std::log(1.25), 1e-12) << file;
  }
  const Scenario wide = load_scenario(dir + "scenario.json", {use, "cluster.gpus_per_node=8", "cluster.nodes=2",
                                                             "parallelism.data=16", "training.global_batch=128"});
  const Uncertainty u = assess(wide, builtin_band_set());
  EXPECT_GE(u.time.level, 1);
  EXPECT_NE(u.source.find("and the calibrated run in"), std::string::npos) << u.source;
  std::filesystem::remove(profile);
}

}  // namespace
}  // namespace trainsim::plan
