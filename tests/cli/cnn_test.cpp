// Layer-graph models end to end (docs/cnn.md): the bundled scenarios/cnn run on both backends and
// agree, report samples (no tokens) and model FLOPs from the graph, and spatial parallelism's halo
// traffic shows under "context".
#include <gtest/gtest.h>

#include <string>

#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string CNN = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/cnn/";

core::Json report(const std::string& file, const std::string& backend, const std::vector<std::string>& set = {}) {
  const Scenario s = load_scenario(CNN + file, set);
  return report_json(s, predict(s, backend));
}

// Analytic and SimGrid agree within 2%; samples, not tokens. One SimGrid platform per process
// (SimGrid 3.32), so one scenario per test: ctest runs each test in its own process.
void expect_backends_agree(const std::string& file) {
  const core::Json a = report(file, "analytic");
  const core::Json g = report(file, "simgrid");
  const double ta = a["iteration_time_s"].get<double>(), tg = g["iteration_time_s"].get<double>();
  EXPECT_NEAR(ta, tg, 0.02 * tg);
  EXPECT_EQ(a["tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(a["samples_per_s"].get<double>(), 0.0);
}

TEST(Cnn, ResNet50BackendsAgree) { expect_backends_agree("resnet50-a100-8.json"); }
TEST(Cnn, CosmoFlowBackendsAgree) { expect_backends_agree("cosmoflow-512-v100-512.json"); }

TEST(Cnn, ModelFlopsComeFromTheGraph) {
  // ResNet-50 on 8 GPUs, 2048 images: model FLOPs = 3 x forward (conv + fc) per image x 2048, so
  // model TFLOP/s per GPU x 8 x time = 3 x 2 x multiply-adds x 2048 (4.1e9 MACs: 5.0e13 FLOPs).
  const core::Json r = report("resnet50-a100-8.json", "analytic");
  const double flops = r["model_tflops_per_gpu"].get<double>() * 1e12 * 8 * r["iteration_time_s"].get<double>();
  EXPECT_GT(flops, 6 * 3.8e9 * 2048);
  EXPECT_LT(flops, 6 * 4.2e9 * 2048);
}

TEST(Cnn, SpatialSplitShowsHaloTrafficUnderContext) {
  const core::Json split = report("cosmoflow-512-v100-512.json", "analytic");
  EXPECT_GT(split["communication_s"]["context"].get<double>(), 0.0);
  // Without the split (8 replicas of one sample each on 8 GPUs) there is no context traffic.
  const core::Json whole = report("cosmoflow-512-v100-512.json", "analytic",
                                  {"cluster.nodes=2", "parallelism.spatial=1", "parallelism.data=8",
                                   "training.global_batch=8"});
  EXPECT_EQ(whole["communication_s"]["context"].get<double>(), 0.0);
  // Splitting a sample 4 ways cuts its compute about 4 ways: the split iteration (1 sample per 4
  // GPUs) is faster than the unsplit one (1 sample per GPU).
  EXPECT_LT(split["iteration_time_s"].get<double>(), 0.5 * whole["iteration_time_s"].get<double>());
}

}  // namespace
}  // namespace trainsim::cli
