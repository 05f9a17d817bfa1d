// Offloading end to end (scenarios/offload): what `run` reports for the bundled offload scenarios,
// held to the published figures they reproduce (validation/features.json: ZeRO-Offload trains 10B
// on one V100 at about 40 TFLOP/s where PyTorch fits about 1.4B, and more than 13B fits), the report
// fields of docs/scenario.md ("Offload in the report"), the host-memory line, and `search --offload`.

#include <gtest/gtest.h>

#include <string>

#include "sim/plan/prediction.hpp"
#include "sim/plan/search.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string OFFLOAD = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/offload/";
const std::string ZERO_OFFLOAD = OFFLOAD + "zero-offload-10b-v100-1.json";

core::Json report(const std::string& file, const std::vector<std::string>& overrides = {},
                  const std::string& backend = "analytic") {
  const Scenario s = load_scenario(file, overrides);
  return report_json(s, predict(s, backend));
}

bool fits(const core::Json& r) { return r["memory"]["fits"].get<bool>(); }

TEST(OffloadScenarios, ZeroOffloadTrainsTenBillionOnOneV100NearThePublishedThroughput) {
  const core::Json r = report(ZERO_OFFLOAD);
  EXPECT_TRUE(fits(r));
  // Published: about 40 TFLOP/s (Ren et al. 2021). A sanity band, not a calibration target.
  const double tflops = r["model_tflops_per_gpu"].get<double>();
  EXPECT_GT(tflops, 30.0);
  EXPECT_LT(tflops, 55.0);
  const core::Json& o = r["offload"];
  EXPECT_EQ(o["preset"], "zero-offload");
  EXPECT_FALSE(o["fits_without_offload"].get<bool>());
  EXPECT_GT(o["peak_bytes_per_gpu_without_offload"].get<double>(), r["memory"]["capacity_bytes"].get<double>());
  // The copies and the CPU step take time; what the GPU waits for is part of breakdown_s.other.
  const double copy_busy = o["copy_s"]["busy"].get<double>();
  const double exposed = o["copy_s"]["exposed"].get<double>() + o["host_optimizer_s"]["exposed"].get<double>();
  EXPECT_GT(copy_busy, 0.0);
  EXPECT_NEAR(o["copy_s"]["busy"].get<double>(),
              o["copy_s"]["exposed"].get<double>() + o["copy_s"]["hidden"].get<double>(), 1e-9);
  EXPECT_NEAR(r["breakdown_s"]["other"].get<double>(), exposed + r["breakdown_s"]["optimizer"].get<double>(), 1e-9);
  EXPECT_TRUE(r["memory"]["host_fits"].get<bool>());
  EXPECT_GT(r["memory"]["host_bytes"].get<double>(), 150e9);  // 10.3B x 16 bytes of states, master, gradients
  EXPECT_TRUE(o["summary"].get<std::string>().starts_with("fits: "));
}

TEST(OffloadScenarios, WithoutOffloadAboutOnePointFourBillionFitsAndWithItThirteen) {
  // Without offload, the same run (batch 10, full recompute) fits 7 layers (1.6B parameters), not 8.
  EXPECT_TRUE(fits(report(ZERO_OFFLOAD, {"optimizations.offload.preset=none", "model.layers=7"})));
  EXPECT_FALSE(fits(report(ZERO_OFFLOAD, {"optimizations.offload.preset=none", "model.layers=8"})));
  EXPECT_FALSE(fits(report(ZERO_OFFLOAD, {"optimizations.offload.preset=none"})));
  // With offload, 13B (65 layers) fits once its activation checkpoints go to the host too, or at a
  // smaller batch.
  EXPECT_FALSE(fits(report(ZERO_OFFLOAD, {"model.layers=65"})));
  const core::Json r13 = report(ZERO_OFFLOAD, {"model.layers=65", "optimizations.offload.activations=cpu"});
  EXPECT_TRUE(fits(r13));
  EXPECT_GT(r13["memory"]["host_breakdown_bytes"]["activations"].get<double>(), 0.0);
  EXPECT_TRUE(fits(report(ZERO_OFFLOAD, {"model.layers=65", "training.micro_batch=4", "training.global_batch=4"})));
}

TEST(OffloadScenarios, OneGpuShareNoLinkSoTheBackendsAgree) {
  const core::Json a = report(ZERO_OFFLOAD, {}, "analytic");
  const core::Json s = report(ZERO_OFFLOAD, {}, "simgrid");
  EXPECT_NEAR(s["iteration_time_s"].get<double>(), a["iteration_time_s"].get<double>(),
              1e-9 * a["iteration_time_s"].get<double>());
  EXPECT_EQ(s["memory"], a["memory"]);
}

TEST(OffloadScenarios, ActivationsAboveHostMemoryAreReportedOutOfHostMemory) {
  // The model states fit in 155 GiB (153.2 GiB); the offloaded activation checkpoints do not.
  const Scenario sc = load_scenario(ZERO_OFFLOAD, {"cluster.host_memory=155 GiB", "optimizations.offload.activations=cpu"});
  const Prediction p = predict(sc, "analytic");
  const core::Json r = report_json(sc, p);
  EXPECT_FALSE(r["memory"]["host_fits"].get<bool>());
  EXPECT_NE(report_table(sc, p).find("OUT OF HOST MEMORY by"), std::string::npos);
  // Below the model states alone, the scenario is refused up front.
  try {
    load_scenario(ZERO_OFFLOAD, {"cluster.host_memory=100 GiB"});
    ADD_FAILURE() << "accepted";
  } catch (const ImpossibleScenario& e) {
    EXPECT_NE(std::string(e.what()).find("OUT OF HOST MEMORY"), std::string::npos);
  }
}

TEST(OffloadScenarios, EveryOffloadScenarioRunsAndReadsBack) {
  for (const char* name : {"zero-offload-10b-v100-1", "zero-infinity-gpt3-175b-dgx2", "axonn-gpt-12b-v100-48"}) {
    SCOPED_TRACE(name);
    const Scenario s = load_scenario(OFFLOAD + name + ".json");
    EXPECT_TRUE(s.offload.active());
    const core::Json resolved = s.to_json();
    EXPECT_EQ(read_scenario(resolved, s.file).to_json(), resolved);
    const core::Json r = report_json(s, predict(s, "analytic"));
    EXPECT_TRUE(fits(r));
    EXPECT_TRUE(r["memory"]["host_fits"].get<bool>());
  }
}

TEST(OffloadScenarios, ZeroInfinityKeepsTheModelStatesOnNvme) {
  const core::Json r = report(OFFLOAD + "zero-infinity-gpt3-175b-dgx2.json");
  // 175B x 18 bytes (moments 8, master 4, fp32 gradients 4, 16-bit weights 2) on the node's drives.
  EXPECT_NEAR(r["memory"]["nvme_bytes"].get<double>(), 175e9 * 18, 0.01 * 175e9 * 18);
  EXPECT_EQ(r["memory"]["host_bytes"].get<double>(), 0.0);
  EXPECT_GT(r["offload"]["bytes_per_iteration"]["nvme_to_device"].get<double>(), 0.0);
}

TEST(OffloadScenarios, SearchTriesTheOffloadChoicesAndOnlyOffloadFits) {
  SearchOptions o;
  o.scenario = ZERO_OFFLOAD;
  o.quiet = true;
  o.recheck = false;
  o.offload = {"none", "zero-offload"};
  const Search search(o);
  SearchResult r = search.evaluate();
  search.rank(r);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.ranked.front().layout.offload, "zero-offload");
  EXPECT_NE(r.ranked.front().layout.describe().find("offload:zero-offload"), std::string::npos);
  EXPECT_GT(r.rejected.at("out of memory (first-pass estimate above the GPU's memory)"), 0u);

  o.offload = {"none"};
  const Search without(o);
  SearchResult nothing = without.evaluate();
  EXPECT_THROW(without.rank(nothing), core::InputError);

  o.offload = {"tape"};
  EXPECT_THROW(Search{o}, core::InputError);
}

}  // namespace
}  // namespace trainsim::cli
