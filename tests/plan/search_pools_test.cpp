// `search` on a cluster of several GPU types (sim/plan/search.hpp, docs/search.md "Mixed clusters"):
// the layouts it places across the pools and on each pool alone, ranked against a hand-worked
// order, and the first pass's combination of the pools' estimates.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "sim/core/error.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim::plan {
namespace {

// Two nodes of one GPU each: "fast", an H100, and "slow", an H100 at half its tensor-core rate and
// half its HBM bandwidth (the same built-in profile: every kernel takes twice as long). GPT-3 125M,
// 48 sequences of 1024 per iteration, micro-batches of 1.
core::Json two_type_scenario() {
  return core::Json::parse(R"({
    "name": "two-types",
    "cluster": {
      "pools": [
        { "name": "fast", "gpu": "H100-SXM5-80GB", "nodes": 1 },
        { "name": "slow", "gpu": { "base": "H100-SXM5-80GB", "name": "H100-half",
                                   "dense_peak": { "bf16": "494.5 TFLOP/s", "fp16": "494.5 TFLOP/s" },
                                   "hbm_bandwidth": "1.675 TB/s" }, "nodes": 1 }
      ],
      "gpus_per_node": 1,
      "network": { "topology": "fat-tree", "nics_per_node": 1, "nic_bandwidth": "400 Gb/s" }
    },
    "model": "gpt3-125m",
    "training": { "sequence_length": 1024, "global_batch": 48, "micro_batch": 1, "precision": "bf16" },
    "parallelism": { "tensor": 1, "pipeline": 1, "data": 2 }
  })");
}

SearchOptions two_type_options() {
  SearchOptions o;
  o.scenario = "two-types.json";
  o.document = two_type_scenario();
  o.recheck = false;
  o.quiet = true;
  o.max_micro_batch = 1;
  o.refine = 100000;  // every valid layout on the analytic backend: each placement's best is ranked
  o.top = 100000;
  return o;
}

// By hand: with C the compute of an iteration on the fast GPU, the slow one alone takes about 2C
// (every kernel twice as long, nothing to communicate); the fast one alone C; both together, with
// the batch split by speed (32 sequences on the fast GPU, 16 on the slow one: each 2/3 C) or the 12
// layers split 8 / 4 over two pipeline stages (each stage 2/3 of C's per-micro-batch time), about
// 2/3 C plus what the gradient all-reduce or the pipeline's fill adds. So the ranking is: a layout
// on both pools, then the fast pool alone, then the slow pool alone, at about 2/3 : 1 : 2.
TEST(SearchOnPools, RanksBothPoolsThenTheFastThenTheSlowByHand) {
  const Search search(two_type_options());
  const SearchResult r = search.run();
  std::map<std::string, const Evaluated*> best;  // the first ranked layout of each placement
  std::vector<std::string> order;
  for (const Evaluated& e : r.ranked) {
    ASSERT_TRUE(e.analytic.has_value());
    if (best.emplace(e.layout.pools, &e).second) order.push_back(e.layout.pools);
  }
  ASSERT_EQ(order, (std::vector<std::string>{"fast+slow", "fast", "slow"}));
  const double both = best["fast+slow"]->analytic->iteration_time_s;
  const double fast = best["fast"]->analytic->iteration_time_s;
  const double slow = best["slow"]->analytic->iteration_time_s;
  EXPECT_NEAR(slow / fast, 2.0, 0.1);
  EXPECT_NEAR(both / fast, 2.0 / 3, 0.1);
  // Where the slow type binds: a layout on both pools names the pool that finishes last; one pool
  // alone names none.
  EXPECT_FALSE(best["fast+slow"]->analytic->binding_pool.empty());
  EXPECT_TRUE(best["fast"]->analytic->binding_pool.empty());
  EXPECT_EQ(best["fast+slow"]->layout.gpus, 2);
  EXPECT_EQ(best["fast+slow"]->layout.gpu, "H100-SXM5-80GB+H100-half");
  EXPECT_EQ(best["slow"]->layout.gpus, 1);
  // Its figures are `run`'s of the scenario it names: the pools with the split by speed.
  const Scenario s = search.scenario_of(best["fast+slow"]->layout);
  EXPECT_DOUBLE_EQ(predict(s, "analytic").iteration_time_s(), both);
  if (best["fast+slow"]->layout.pipeline == 1) {
    ASSERT_EQ(s.training.batch_split.size(), 2u);
    EXPECT_EQ(s.training.batch_split[0].second, 32);
    EXPECT_EQ(s.training.batch_split[1].second, 16);
  } else {
    EXPECT_EQ(s.parallelism.stage_layers, (std::vector<int>{8, 4}));
  }
}

// Across the pools, a layout whose stage or replica a pool would cut is rejected with run's reason:
// TP2 spans both one-GPU pools.
TEST(SearchOnPools, ALayoutThatCutsAPoolIsRejectedWithItsReason) {
  const SearchResult r = Search(two_type_options()).run();
  bool cut = false;
  for (const auto& [reason, n] : r.rejected) cut = cut || reason.find("which cuts a data-parallel replica") != std::string::npos;
  EXPECT_TRUE(cut);
  for (const Evaluated& e : r.ranked) EXPECT_FALSE(e.layout.pools == "fast+slow" && e.layout.tensor > 1);
}

// The first pass across pools, the GPU-weighted harmonic mean of the layout's estimates on a cluster
// of each type (1 / T = 0.5 / T_fast + 0.5 / T_slow here), stands for the split by speed: for the
// data-parallel layouts across the pools it is within 15% of the analytic backend's figure on the
// real split, as the estimate is for one type (tests/cli/search_test.cpp).
TEST(SearchOnPools, TheFirstPassAcrossPoolsIsNearTheAnalyticFigure) {
  const SearchResult r = Search(two_type_options()).run();
  int checked = 0;
  for (const Evaluated& e : r.ranked) {
    if (e.layout.pools != "fast+slow" || e.layout.pipeline != 1 || e.layout.zero_stage != 0) continue;
    EXPECT_NEAR(e.estimate.iteration_time_s / e.analytic->iteration_time_s, 1.0, 0.15) << e.layout.describe();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// --objective energy on pools: the first pass bounds each layout with every pool's GPU at its own
// limit, the refined figures are `run`'s (each rank drawing as its pool's GPU). Both GPUs are H100s
// by their power (the slow one is an H100 at half rate, same 700 W), so by hand, with C the fast
// GPU's compute time: the fast pool alone holds one GPU and one node for C, both pools two of each
// for about 2/3 C (4/3 C of GPU and node time), the slow pool alone one of each for 2C: energy per
// token about 1 : 4/3 : 2, in that order.
TEST(SearchOnPools, EnergyRanksTheFastPoolThenBothThenTheSlowByHand) {
  SearchOptions o = two_type_options();
  o.objective = Objective::ENERGY;
  const Search search(o);
  const SearchResult r = search.run();
  std::map<std::string, const Evaluated*> best;
  std::vector<std::string> order;
  for (const Evaluated& e : r.ranked) {
    ASSERT_TRUE(e.analytic.has_value());
    ASSERT_TRUE(e.analytic->energy_per_iteration_j.has_value()) << e.layout.describe();
    if (best.emplace(e.layout.pools, &e).second) order.push_back(e.layout.pools);
  }
  ASSERT_EQ(order, (std::vector<std::string>{"fast", "fast+slow", "slow"}));
  const double fast = *best["fast"]->analytic->energy_per_iteration_j;
  EXPECT_NEAR(*best["fast+slow"]->analytic->energy_per_iteration_j / fast, 4.0 / 3, 0.2);
  EXPECT_NEAR(*best["slow"]->analytic->energy_per_iteration_j / fast, 2.0, 0.2);
  // The figures are run's of the scenario each layout names.
  const Prediction p = predict(search.scenario_of(best["fast+slow"]->layout), "analytic");
  ASSERT_TRUE(p.energy.has_value());
  EXPECT_DOUBLE_EQ(p.energy->per_iteration_j, *best["fast+slow"]->analytic->energy_per_iteration_j);
}

// --max-power on pools: a site power between the fast pool's peak (one GPU, one node) and the two
// pools' (two of each) leaves the layouts on one pool and rejects those on both. With only 3 layouts
// refined, the fastest estimates (all on both pools) would all be over the cap: the first pass puts
// first the layouts whose power bound (every GPU at its limit) is under it, so 3 single-pool layouts
// are refined and ranked.
TEST(SearchOnPools, MaxPowerKeepsTheLayoutsOnOnePool) {
  SearchOptions o = two_type_options();
  const SearchResult all = Search(o).run();
  double one = 0;
  double both = 1e300;
  for (const Evaluated& e : all.ranked) {
    ASSERT_TRUE(e.analytic->peak_power_w.has_value());
    if (e.layout.pools == "fast+slow") {
      both = std::min(both, *e.analytic->peak_power_w);
    } else {
      one = std::max(one, *e.analytic->peak_power_w);
    }
  }
  ASSERT_LT(one, both);
  o.max_power_w = (one + both) / 2;
  o.refine = 3;
  const SearchResult capped = Search(o).run();
  ASSERT_EQ(capped.ranked.size(), 3u);
  for (const Evaluated& e : capped.ranked) EXPECT_NE(e.layout.pools, "fast+slow");
  EXPECT_GT(capped.rejected.size(), 0u);
}

TEST(SearchOnPools, OptionsThatChooseGpusAreRefused) {
  SearchOptions o = two_type_options();
  o.gpus = {2};
  try {
    Search s(o);
    ADD_FAILURE() << "accepted --gpus";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpus: the GPU counts are the pools'"), std::string::npos) << e.what();
  }
  o = two_type_options();
  o.max_gpus = 1;  // both pools together have 2: only the pools alone are searched
  const SearchResult r = Search(o).run();
  for (const Evaluated& e : r.ranked) EXPECT_NE(e.layout.pools, "fast+slow");
}

}  // namespace
}  // namespace trainsim::plan
