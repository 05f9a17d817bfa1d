// Planning constraints and prices per GPU type (issue 33, items 1 and 2): --price, --deadline,
// --budget and --memory-headroom on search, prices on compare and sweep. The oracles are computed
// here by hand from each layout's analytic iteration time (iterations x time x GPUs x price).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <fmt/format.h>
#include <string>

#include "sim/cli/search_command.hpp"
#include "sim/core/error.hpp"
#include "sim/plan/compare.hpp"
#include "sim/plan/prices.hpp"
#include "sim/plan/search.hpp"
#include "sim/plan/sweep.hpp"

namespace trainsim::plan {
namespace {

// A tiny GPT on one node of 8 GPUs that trains 1e9 tokens (8 x 64 = 512 tokens per iteration:
// 1,953,125 iterations), at $2 per GPU-hour unless a --price says otherwise.
std::string planning_scenario() {
  const std::string path = (std::filesystem::temp_directory_path() / "trainsim_search_planning.json").string();
  std::ofstream f(path);
  f << R"({
    "name": "tiny-planning",
    "cluster": { "gpu": "A100-SXM4-80GB", "nodes": 1, "gpus_per_node": 8, "price_per_gpu_hour": 2.0,
                 "network": { "topology": "ideal", "nics_per_node": 8, "nic_bandwidth": "200 Gb/s" } },
    "model": { "family": "transformer", "layers": 4, "hidden": 256, "heads": 4, "ffn_hidden": 1024, "vocab": 1024 },
    "training": { "sequence_length": 64, "global_batch": 8, "micro_batch": 1, "tokens": 1e9 },
    "parallelism": { "tensor": 1, "pipeline": 1, "data": 8 }
  })";
  return path;
}

constexpr double ITERATIONS = 1953125;  // ceil(1e9 / 512)

SearchOptions planning_options() {
  SearchOptions o;
  o.scenario = planning_scenario();
  o.refine = 100000;  // every valid candidate goes through the analytic backend
  o.fits = false;
  o.recheck = false;
  o.quiet = true;
  o.jobs = 1;
  o.max_micro_batch = 1;
  return o;
}

double days_of(const Evaluated& e) { return ITERATIONS * e.analytic->iteration_time_s / 86400; }

// Layouts in a ranking: each row and the layouts merged into it (Evaluated::equivalent).
size_t layouts_in(const std::vector<Evaluated>& ranked) {
  size_t n = 0;
  for (const Evaluated& e : ranked) n += 1 + e.equivalent.size();
  return n;
}

TEST(Prices, ReadAndMatchByNameOrPrefix) {
  const PriceList p = parse_prices({"H100=2.5", "A100-SXM4-80GB=1.3"}, "--price");
  ASSERT_EQ(p.prices.size(), 2u);
  EXPECT_EQ(p.for_gpu("H100-SXM5-80GB", "--price"), 2.5);
  EXPECT_EQ(p.for_gpu("H100-SXM5-80GB (custom)", "--price"), 2.5);
  EXPECT_EQ(p.for_gpu("A100-SXM4-80GB", "--price"), 1.3);
  EXPECT_EQ(p.for_gpu("A100-SXM4-40GB", "--price"), std::nullopt) << "a longer name is no prefix";
  EXPECT_EQ(p.for_gpu("H1000", "--price"), std::nullopt) << "a prefix ends at '-' or ' '";
  EXPECT_NO_THROW(p.check_used({"H100-SXM5-80GB", "A100-SXM4-80GB"}, "--price"));
  EXPECT_THROW(p.check_used({"H100-SXM5-80GB"}, "--price"), core::InputError) << "A100-SXM4-80GB prices nothing";
  // Two names for one GPU.
  EXPECT_THROW(parse_prices({"H100=2.5", "H100-SXM5-80GB=3"}, "--price").for_gpu("H100-SXM5-80GB", "--price"),
               core::InputError);
  for (const char* bad : {"H100", "H100=", "=2.5", "H100=abc", "H100=2.5x", "H100=0", "H100=1001", "H100=-1"}) {
    try {
      parse_prices({bad}, "--price");
      ADD_FAILURE() << bad << " was read";
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.problems().front().file, "--price") << bad;
    }
  }
  EXPECT_THROW(parse_prices({"H100=2", "H100=3"}, "--price"), core::InputError) << "given twice";
}

TEST(MemoryHeadroom, ShareOrSize) {
  const MemoryHeadroom pct = MemoryHeadroom::parse("10%", "--memory-headroom");
  EXPECT_DOUBLE_EQ(pct.fraction, 0.1);
  EXPECT_DOUBLE_EQ(pct.usable(80.0 * (1 << 30)), 72.0 * (1 << 30));
  EXPECT_EQ(pct.describe(), "10%");
  const MemoryHeadroom size = MemoryHeadroom::parse("4 GiB", "--memory-headroom");
  EXPECT_DOUBLE_EQ(size.usable(80.0 * (1 << 30)), 76.0 * (1 << 30));
  EXPECT_EQ(size.describe(), "4 GiB");
  for (const char* bad : {"100%", "-5%", "abc", "10 %%", "", "5 parsecs"}) {
    EXPECT_THROW(MemoryHeadroom::parse(bad, "--memory-headroom"), core::InputError) << bad;
  }
}

// With a price per type, one search ranks two GPU types by cost at their own prices: each layout's
// objective is iterations x its analytic time / 3600 x 8 GPUs x its type's price.
TEST(SearchPlanning, PricesPerGpuTypeRankBothTypesByCost) {
  SearchOptions o = planning_options();
  o.gpu_types = {"A100-SXM4-80GB", "H100-SXM5-80GB"};
  o.prices = parse_prices({"H100=5", "A100=1.25"}, "--price");
  o.objective = Objective::COST;
  const Search search(o);
  SearchResult r = search.evaluate();
  search.rank(r);
  std::map<std::string, int> types;
  double previous = 0;
  for (const Evaluated& e : r.ranked) {
    const double price = e.layout.gpu == "H100-SXM5-80GB" ? 5 : 1.25;
    const double cost = ITERATIONS * e.analytic->iteration_time_s / 3600 * 8 * price;
    EXPECT_NEAR(search.objective_of(e), cost, 1e-9 * cost) << e.layout.describe() << " " << e.layout.gpu;
    EXPECT_GE(search.objective_of(e), previous);
    previous = search.objective_of(e);
    ++types[e.layout.gpu];
  }
  EXPECT_EQ(types.size(), 2u);
  // The scenario's one price ($2) for both: the order changes with the prices.
  o.prices = {};
  const Search same(o);
  SearchResult s = same.evaluate();
  same.rank(s);
  EXPECT_NE(s.ranked.front().layout.gpu, r.ranked.front().layout.gpu)
      << "a 4x dearer H100 should not win at equal prices' order (or vice versa)";
}

// --deadline between the fastest and the slowest layout: what is left meets it, and the rejected
// count is the number of layouts over it in the unconstrained ranking.
TEST(SearchPlanning, DeadlineRejectsTheLayoutsOverItAndCountsThem) {
  SearchOptions o = planning_options();
  const Search all(o);
  SearchResult unconstrained = all.evaluate();
  all.rank(unconstrained);
  ASSERT_GE(unconstrained.ranked.size(), 3u);
  const double fastest = days_of(unconstrained.ranked.front());
  const double slowest = days_of(unconstrained.ranked.back());
  ASSERT_LT(fastest, slowest);
  const double deadline = (fastest + slowest) / 2;
  size_t over = 0;  // layouts, merged ones included: each is rejected on its own
  for (const Evaluated& e : unconstrained.ranked) over += days_of(e) > deadline ? 1 + e.equivalent.size() : 0;
  ASSERT_GT(over, 0u);

  o.deadline_days = deadline;
  const Search search(o);
  SearchResult r = search.evaluate();
  search.rank(r);
  EXPECT_EQ(layouts_in(r.ranked) + over, layouts_in(unconstrained.ranked));
  for (const Evaluated& e : r.ranked) EXPECT_LE(days_of(e), deadline) << e.layout.describe();
  const std::string reason = fmt::format("over --deadline {:g} days (analytic backend)", deadline);
  ASSERT_TRUE(r.rejected.count(reason)) << "reasons: " << core::Json(r.rejected).dump();
  EXPECT_EQ(r.rejected.at(reason), over);
}

// Layouts not refined (beyond --refine) whose first-pass estimate misses the deadline are rejected
// for it, by their estimate; enumerated = valid + rejected still holds.
TEST(SearchPlanning, UnrefinedLayoutsOverTheDeadlineAreCountedByTheirEstimate) {
  SearchOptions o = planning_options();
  const Search all(o);
  const SearchResult every = all.evaluate();  // refine 100000: every valid layout with its estimate
  std::vector<double> estimate_days;
  for (const Evaluated& e : every.ranked) estimate_days.push_back(ITERATIONS * e.estimate.iteration_time_s / 86400);
  std::sort(estimate_days.begin(), estimate_days.end());
  ASSERT_GE(estimate_days.size(), 4u);
  // A deadline between the second and third fastest estimates: two layouts meet it by estimate.
  const double deadline = (estimate_days[1] + estimate_days[2]) / 2;
  ASSERT_LT(estimate_days[1], estimate_days[2]);
  o.deadline_days = deadline;
  o.refine = 1;  // one refined: the other layouts are dropped after the first pass
  const Search search(o);
  const SearchResult r = search.evaluate();
  const std::string reason = fmt::format("over --deadline {:g} days (first-pass estimate)", deadline);
  ASSERT_TRUE(r.rejected.count(reason)) << core::Json(r.rejected).dump();
  // Of the dropped (all but the refined one), those over the deadline: every layout but the two fast ones.
  EXPECT_EQ(r.rejected.at(reason), estimate_days.size() - 2);
  EXPECT_EQ(r.valid, every.valid - (estimate_days.size() - 2));
  uint64_t rejected = 0;
  for (const auto& [why, n] : r.rejected) rejected += n;
  EXPECT_EQ(r.candidates, r.valid + rejected);
}

TEST(SearchPlanning, BudgetRejectsTheLayoutsOverIt) {
  SearchOptions o = planning_options();
  o.objective = Objective::TIME_TO_TRAIN;
  const Search all(o);
  SearchResult unconstrained = all.evaluate();
  all.rank(unconstrained);
  std::vector<double> costs;  // one per layout, merged ones included
  for (const Evaluated& e : unconstrained.ranked) {
    costs.insert(costs.end(), 1 + e.equivalent.size(), ITERATIONS * e.analytic->iteration_time_s / 3600 * 8 * 2.0);
  }
  std::sort(costs.begin(), costs.end());
  const double budget = costs[costs.size() / 2];
  size_t over = 0;
  for (double c : costs) over += c > budget;
  ASSERT_GT(over, 0u);
  o.budget_usd = budget;
  const Search search(o);
  SearchResult r = search.evaluate();
  search.rank(r);
  EXPECT_EQ(layouts_in(r.ranked) + over, layouts_in(unconstrained.ranked));
  EXPECT_EQ(r.rejected.at(fmt::format("over --budget ${:.0f} (analytic backend)", budget)), over);
}

// Every layout fits in 80 GiB; a headroom that leaves less than the smallest peak rejects them all,
// and one between the peaks keeps exactly those at or below it.
TEST(SearchPlanning, MemoryHeadroomLowersTheCapacity) {
  SearchOptions o = planning_options();
  o.fits = true;
  const Search all(o);
  SearchResult r0 = all.evaluate();
  all.rank(r0);
  double low = 1e30, high = 0;
  for (const Evaluated& e : r0.ranked) {
    low = std::min(low, e.analytic->peak_memory_bytes);
    high = std::max(high, e.analytic->peak_memory_bytes);
  }
  ASSERT_LT(low, high);
  const double capacity = 80.0 * (1 << 30);
  const double limit = (low + high) / 2;
  o.headroom.bytes = capacity - limit;
  const Search search(o);
  SearchResult r = search.evaluate();
  try {
    search.rank(r);
  } catch (const core::InputError& e) {
    FAIL() << e.what();
  }
  size_t kept = 0;
  for (const Evaluated& e : r0.ranked) kept += e.analytic->peak_memory_bytes <= limit ? 1 + e.equivalent.size() : 0;
  for (const Evaluated& e : r.ranked) EXPECT_LE(e.analytic->peak_memory_bytes, limit) << e.layout.describe();
  // The first pass's estimate may already reject some (its own reason); none above the limit is left.
  EXPECT_LE(layouts_in(r.ranked), kept);
  EXPECT_GT(r.ranked.size(), 0u);
}

// The planning scenario in memory without `key` of `section` (null is no way to remove a key).
core::Json without(const std::string& section, const std::string& key) {
  std::ifstream f(planning_scenario());
  core::Json doc = core::Json::parse(f);
  doc[section].erase(key);
  return doc;
}

TEST(SearchPlanning, ConstraintsNeedTheirInputs) {
  SearchOptions o = planning_options();
  o.document = without("training", "tokens");
  o.deadline_days = 10;
  EXPECT_THROW(Search{o}, core::InputError) << "--deadline without training.tokens";
  o = planning_options();
  o.document = without("cluster", "price_per_gpu_hour");
  o.budget_usd = 1e6;
  EXPECT_THROW(Search{o}, core::InputError) << "--budget without a price";
  o.prices = parse_prices({"A100=2"}, "--price");
  EXPECT_NO_THROW(Search{o}) << "--price gives the price";
  o = planning_options();
  o.gpu_types = {"A100-SXM4-80GB", "H100-SXM5-80GB"};
  o.document = without("cluster", "price_per_gpu_hour");
  o.objective = Objective::COST;
  o.prices = parse_prices({"A100=2"}, "--price");
  EXPECT_THROW(Search{o}, core::InputError) << "no price for the H100";
  o = planning_options();
  o.prices = parse_prices({"B200=2"}, "--price");
  EXPECT_THROW(Search{o}, core::InputError) << "a price for a GPU that is not searched";
  o = planning_options();
  o.deadline_days = -1;
  EXPECT_THROW(Search{o}, core::InputError);
}

// Shard files carry the constraints and prices (search merge applies them).
TEST(SearchPlanning, OptionsRoundTripThroughShardJson) {
  SearchOptions o = planning_options();
  o.deadline_days = 12.5;
  o.budget_usd = 3e6;
  o.headroom.fraction = 0.1;
  o.prices = parse_prices({"A100=1.5"}, "--price");
  const core::Json j = o.to_json();
  core::Diagnostics diag;
  core::ObjectReader reader(j, "shard.json", "/options", diag);
  const SearchOptions back = SearchOptions::from_json(reader);
  diag.throw_if_any();
  EXPECT_EQ(back.deadline_days, 12.5);
  EXPECT_EQ(back.budget_usd, 3e6);
  EXPECT_DOUBLE_EQ(back.headroom.fraction, 0.1);
  EXPECT_EQ(back.prices.for_gpu("A100-SXM4-80GB", "--price"), 1.5);
  EXPECT_EQ(back.to_json(), j);
}

// Rows that differ in no figure merge (issue 33, item 4): every refined layout appears once, as a row
// or under one; a merged layout's own analytic figures (evaluate(), before ranking) equal its row's;
// no two rows have equal figures.
TEST(SearchMerge, EqualFiguresMergeIntoOneRowAndNothingIsLost) {
  const Search search(planning_options());
  const SearchResult evaluated = search.evaluate();
  std::map<uint64_t, const Evaluated*> by_index;
  for (const Evaluated& e : evaluated.ranked) by_index[e.layout.index] = &e;
  SearchResult r = evaluated;
  search.rank(r);
  EXPECT_EQ(layouts_in(r.ranked), evaluated.ranked.size());
  EXPECT_EQ(r.merged, evaluated.ranked.size() - r.ranked.size());
  ASSERT_GT(r.merged, 0u) << "the tiny space has layouts that differ only in names (recompute with nothing to recompute)";
  std::set<uint64_t> seen;
  for (const Evaluated& row : r.ranked) {
    EXPECT_TRUE(seen.insert(row.layout.index).second);
    for (const Layout& q : row.equivalent) {
      EXPECT_TRUE(seen.insert(q.index).second);
      const Evaluated& own = *by_index.at(q.index);
      EXPECT_EQ(own.analytic->iteration_time_s, row.analytic->iteration_time_s) << q.describe();
      EXPECT_EQ(own.analytic->peak_memory_bytes, row.analytic->peak_memory_bytes) << q.describe();
      EXPECT_EQ(q.gpus, row.layout.gpus);
      EXPECT_FALSE(q.difference_from(row.layout).empty()) << q.describe();
    }
  }
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    for (size_t j = i + 1; j < r.ranked.size(); ++j) {
      const bool same = r.ranked[i].analytic->iteration_time_s == r.ranked[j].analytic->iteration_time_s &&
                        r.ranked[i].analytic->peak_memory_bytes == r.ranked[j].analytic->peak_memory_bytes;
      EXPECT_FALSE(same) << r.ranked[i].layout.describe() << " and " << r.ranked[j].layout.describe();
    }
  }
}

TEST(SearchMerge, DifferenceNamesWhatDiffers) {
  Layout a;
  a.tensor = 2;
  a.recompute = models::Recompute::NONE;
  Layout b = a;
  b.recompute = models::Recompute::SELECTIVE;
  EXPECT_EQ(b.difference_from(a), "rc:selective");
  EXPECT_EQ(a.difference_from(a), "");
}

// The search table with merged rows, as a golden file (tests/data/golden/search-merged-rows.txt;
// TRAINSIM_UPDATE_GOLDEN=1 rewrites it on purpose). The scenario's path is replaced by SCENARIO.
TEST(SearchMerge, MergedRowsTableIsUnchanged) {
  cli::SearchArgs args;
  args.options = planning_options();
  args.options.top = 6;
  args.options.refine = 12;
  // Flash attention stores no score matrix: selective recompute re-runs nothing, so rc:none and
  // rc:selective price the same (merged).
  args.options.overrides = {"training.attention=flash"};
  std::ostringstream out, err;
  ASSERT_EQ(cli::search_command(args, out, err), 0) << err.str();
  std::string table = out.str();
  for (size_t at; (at = table.find(args.options.scenario)) != std::string::npos;) {
    table.replace(at, args.options.scenario.size(), "SCENARIO");
  }
  EXPECT_NE(table.find("same figures: "), std::string::npos) << table;
  const std::string golden = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/golden/search-merged-rows.txt";
  if (std::getenv("TRAINSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << table;
    return;
  }
  std::ifstream f(golden);
  ASSERT_TRUE(f) << golden << " missing: regenerate on purpose with TRAINSIM_UPDATE_GOLDEN=1";
  const std::string expected((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(table, expected);
}

// compare --vary over GPU types with --price: each configuration's cost is its own price's.
TEST(ComparePrices, EachConfigurationTakesItsGpusPrice) {
  CompareOptions o;
  o.inputs = {planning_scenario()};
  o.vary = {"cluster.gpu=A100-SXM4-80GB,H100-SXM5-80GB"};
  o.quiet = true;
  o.prices = parse_prices({"H100=4", "A100=1"}, "--price");
  const CompareResult r = compare(o);
  ASSERT_EQ(r.configurations.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const core::Json& rep = r.configurations[i].report;
    const double price = i == 0 ? 1 : 4;
    const double expected = ITERATIONS * rep["iteration_time_s"].get<double>() / 3600 * 8 * price;
    EXPECT_NEAR(rep["time_to_train"]["cost"].get<double>(), expected, 1e-6 * expected) << i;
  }
  o.prices = parse_prices({"B200=4"}, "--price");
  EXPECT_THROW(compare(o), core::InputError) << "a price for no configuration's GPU";
}

TEST(SweepPrices, EachPointTakesItsGpusPrice) {
  SweepOptions o;
  o.scenario = planning_scenario();
  o.ranges = {"cluster.gpu=A100-SXM4-80GB,H100-SXM5-80GB"};
  o.quiet = true;
  o.prices = parse_prices({"H100=4"}, "--price");
  const SweepResult r = sweep(o);
  ASSERT_EQ(r.points.size(), 2u);
  const double a100 = ITERATIONS * r.points[0].figure("iteration_time_s") / 3600 * 8 * 2.0;  // the scenario's
  const double h100 = ITERATIONS * r.points[1].figure("iteration_time_s") / 3600 * 8 * 4.0;
  EXPECT_NEAR((*r.points[0].report)["time_to_train"]["cost"].get<double>(), a100, 1e-6 * a100);
  EXPECT_NEAR((*r.points[1].report)["time_to_train"]["cost"].get<double>(), h100, 1e-6 * h100);
}

}  // namespace
}  // namespace trainsim::plan
