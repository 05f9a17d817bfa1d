// Determinism: every bundled scenario (every *.json under scenarios/, folders added later included)
// predicted twice with the analytic backend gives byte-identical JSON reports, the wall-clock time
// excluded. The SimGrid backend is covered by
// the golden tests (one prediction per process).

#include <filesystem>
#include <gtest/gtest.h>

#include "sim/plan/prediction.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::filesystem::path SOURCE(TRAINSIM_SOURCE_DIR);

std::string report_text(const Scenario& s) {
  core::Json r = report_json(s, predict(s, "analytic"));
  r["simulation"].erase("wall_s");  // the only wall-clock field of the report
  return r.dump(2);
}

TEST(Determinism, EveryBundledScenarioGivesTheSameReportTwice) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(SOURCE / "scenarios")) {
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 21u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    const Scenario s = load_scenario(f.string());
    const std::string first = report_text(s);
    const std::string second = report_text(load_scenario(f.string()));
    EXPECT_EQ(first, second);
    EXPECT_EQ(first.find("wall_s"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim::cli
