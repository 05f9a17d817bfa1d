#include "sim/plan/search.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <memory>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include <unistd.h>

#include "sim/plan/prediction.hpp"
#include "sim/cli/search_command.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::string SCENARIOS = std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/";

// A tiny GPT on one node of 8 GPUs: 4 layers, 4 heads, sequences of 63 tokens (odd: no context
// parallelism, and no sequence parallelism with tensor > 1, can divide them), global batch 8.
std::string tiny_scenario() {
  // One file per process: ctest runs this suite's tests in parallel processes (and other checkouts'
  // suites may run beside them), each rewriting it.
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("trainsim_search_tiny-{}.json", ::getpid())).string();
  std::ofstream f(path);
  f << R"({
    "name": "tiny",
    "cluster": { "gpu": "A100-SXM4-80GB", "nodes": 1, "gpus_per_node": 8,
                 "network": { "topology": "ideal", "nics_per_node": 8, "nic_bandwidth": "200 Gb/s" } },
    "model": { "family": "transformer", "layers": 4, "hidden": 256, "heads": 4, "ffn_hidden": 1024, "vocab": 1024 },
    "training": { "sequence_length": 63, "global_batch": 8, "micro_batch": 1 },
    "parallelism": { "tensor": 1, "pipeline": 1, "data": 8 }
  })";
  return path;
}

SearchOptions tiny_options() {
  SearchOptions o;
  o.scenario = tiny_scenario();
  o.refine = 100000;  // every valid candidate goes through the analytic backend
  o.fits = false;
  o.quiet = true;
  o.jobs = 1;
  return o;
}

// By hand: 8 GPUs = t x p x c x d with t dividing the 4 heads (1, 2, 4), p at most the 4 layers
// (1, 2, 4), c = 1 (63 tokens), so the valid (t, p, d) are exactly these eight.
TEST(Search, EnumeratesTheValidLayoutsOfATinyModelByHand) {
  const Search search(tiny_options());
  const SearchResult r = search.evaluate();
  std::set<std::tuple<int, int, int, int>> seen;
  for (const Evaluated& e : r.ranked) seen.insert({e.layout.tensor, e.layout.pipeline, e.layout.data, e.layout.context});
  const std::set<std::tuple<int, int, int, int>> expected = {{1, 1, 8, 1}, {1, 2, 4, 1}, {1, 4, 2, 1}, {2, 1, 4, 1},
                                                             {2, 2, 2, 1}, {2, 4, 1, 1}, {4, 1, 2, 1}, {4, 2, 1, 1}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(r.ranked.size(), r.valid) << "with --no-fits every valid candidate is kept";
  for (const Evaluated& e : r.ranked) {
    EXPECT_FALSE(e.layout.sequence_parallel) << "63 tokens cannot be split over tensor > 1";
    if (e.layout.virtual_stages > 1) {
      EXPECT_EQ(e.layout.pipeline * e.layout.virtual_stages, 4);
    }
  }
  // TP8: the one shape (8,1,1,1) with micro-batches 1, 2, 4, 8, SP off/on, 3 recomputes, ZeRO 0 only.
  EXPECT_EQ(r.rejected.at("tensor parallelism 8 must divide heads (4)"), 4u * 2 * 3);
  uint64_t rejected = 0;
  for (const auto& [reason, n] : r.rejected) rejected += n;
  EXPECT_EQ(r.valid + rejected, r.candidates);
  EXPECT_EQ(r.candidates, search.candidate_count());
}

// training.stack given: only the layouts the stack runs are ranked (composer: FSDP1, FULL_SHARD or
// SHARD_GRAD_OP, or DDP over data parallelism alone), each priced and labelled with it. Absent: every layout, each labelled and
// priced with the stack its ZeRO implementation implies.
TEST(Search, RespectsTheGivenStackAndLabelsTheImpliedOne) {
  SearchOptions o = tiny_options();
  o.overrides = {"training.stack=composer"};
  const SearchResult composer = Search(o).evaluate();
  ASSERT_FALSE(composer.ranked.empty());
  for (const Evaluated& e : composer.ranked) {
    const Layout& l = e.layout;
    EXPECT_EQ(l.tensor * l.pipeline * l.context, 1) << l.describe();
    EXPECT_TRUE(l.zero_stage == 0 || (l.zero_stage >= 2 && l.zero_impl == models::ZeroImpl::FSDP)) << l.describe();
    EXPECT_EQ(l.stack, "composer");
    EXPECT_TRUE(l.stack_runs);
  }
  EXPECT_GT(composer.rejected.count("stack \"composer\" runs data parallelism only (FSDP or DDP): tensor, pipeline, "
                                    "context and expert parallelism are not available"),
            0u);
  const SearchResult any = Search(tiny_options()).evaluate();
  std::set<std::string> stacks;
  for (const Evaluated& e : any.ranked) {
    stacks.insert(e.layout.stack);
    if (e.layout.zero_stage == 3 && e.layout.zero_impl == models::ZeroImpl::FSDP2) {
      EXPECT_EQ(e.layout.stack, "torchtitan");
    }
    if (e.layout.zero_stage == 0) {
      EXPECT_EQ(e.layout.stack, "megatron");
    }
  }
  EXPECT_EQ(stacks, (std::set<std::string>{"megatron", "torchtitan", "deepspeed", "fsdp"}));
}

// Without a given stack, a layout that no stack runs as a whole (FSDP1 with a pipeline, DeepSpeed's
// ZeRO-3 under one) is rejected with the reason of the stack its ZeRO implementation implies;
// --any-stack ranks it, labelled.
TEST(Search, RejectsLayoutsNoStackRunsUnlessAskedForAny) {
  const SearchResult runnable = Search(tiny_options()).evaluate();
  ASSERT_FALSE(runnable.ranked.empty());
  for (const Evaluated& e : runnable.ranked) EXPECT_TRUE(e.layout.stack_runs) << e.layout.describe();
  const std::string fsdp_pipeline =
      "no stack runs it: stack \"fsdp\" runs FSDP x TP (2-D) only: pipeline, context and expert parallelism are not "
      "available";
  EXPECT_GT(runnable.rejected.count(fsdp_pipeline), 0u);
  SearchOptions o = tiny_options();
  o.any_stack = true;
  const SearchResult any = Search(o).evaluate();
  EXPECT_EQ(any.rejected.count(fsdp_pipeline), 0u);
  size_t unrunnable = 0;
  for (const Evaluated& e : any.ranked) {
    if (e.layout.stack_runs) continue;
    ++unrunnable;
    EXPECT_TRUE(e.layout.pipeline > 1 || e.layout.context > 1) << e.layout.describe();
    EXPECT_NE(e.layout.describe().find("no stack runs it"), std::string::npos) << e.layout.describe();
  }
  EXPECT_GT(unrunnable, 0u);
  EXPECT_EQ(any.valid, runnable.valid + unrunnable) << "the same candidates, the unrunnable ones now ranked";
  // The scenario's own schedule is its question, not a reason: Megatron-core has no GPipe, yet the
  // pipelined Megatron layouts stay (as under 1F1B).
  SearchOptions g = tiny_options();
  g.overrides = {"parallelism.pipeline_schedule=gpipe"};
  const SearchResult gpipe = Search(g).evaluate();
  size_t pipelined_megatron = 0;
  for (const Evaluated& e : gpipe.ranked) {
    if (e.layout.pipeline > 1 && e.layout.virtual_stages == 1 && e.layout.stack == "megatron") ++pipelined_megatron;
  }
  EXPECT_GT(pipelined_megatron, 0u);
  EXPECT_EQ(gpipe.valid, runnable.valid) << "the same layouts as under 1F1B";
}

// Hybrid sharding: on 2 nodes of 4 GPUs the FSDP / FSDP2 layouts whose data ranks span the nodes are
// also enumerated with the shard group of one node (tensor x shard_group = 4): HSDP4 at TP1 (data 8),
// HSDP2 at TP2 (data 4), none at TP4 (one data rank per node). Under torchtitan they are fsdp2 only,
// under megatron none survives.
TEST(Search, EnumeratesHybridShardingWithTheShardGroupOfOneNode) {
  SearchOptions o = tiny_options();
  o.overrides = {"cluster.nodes=2", "cluster.gpus_per_node=4", "training.stack=torchtitan"};
  const Search search(o);
  const SearchResult r = search.evaluate();
  std::set<std::pair<int, int>> hybrid;  // (tensor, shard_group)
  for (const Evaluated& e : r.ranked) {
    const Layout& l = e.layout;
    if (l.shard_group == 0) continue;
    hybrid.insert({l.tensor, l.shard_group});
    EXPECT_EQ(l.zero_impl, models::ZeroImpl::FSDP2) << l.describe();
    EXPECT_EQ(l.tensor * l.context * l.shard_group, 4) << l.describe();
    EXPECT_NE(l.describe().find(fmt::format(" HSDP{}", l.shard_group)), std::string::npos);
    const std::optional<Layout> again = search.candidate(l.index);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->shard_group, l.shard_group);
    EXPECT_EQ(again->describe(), l.describe());
  }
  EXPECT_EQ(hybrid, (std::set<std::pair<int, int>>{{1, 4}, {2, 2}}));
  uint64_t rejected = 0;
  for (const auto& [reason, n] : r.rejected) rejected += n;
  EXPECT_EQ(r.valid + rejected, r.candidates);
  EXPECT_EQ(r.candidates, search.candidate_count());
  o.overrides = {"cluster.nodes=2", "cluster.gpus_per_node=4", "training.stack=megatron"};
  for (const Evaluated& e : Search(o).evaluate().ranked) EXPECT_EQ(e.layout.shard_group, 0) << e.layout.describe();
}

TEST(Search, SameResultWhateverTheNumberOfThreads) {
  SearchOptions o = tiny_options();
  o.refine = 20;
  const Search one(o);
  o.jobs = 3;
  const Search three(o);
  SearchResult a = one.evaluate(), b = three.evaluate();
  one.rank(a);
  three.rank(b);
  EXPECT_EQ(shard_json(one, a).dump(), shard_json(three, b).dump());
}

TEST(Search, TwoShardsMergedEqualOneProcess) {
  SearchOptions o = tiny_options();
  o.refine = 15;
  const Search whole(o);
  SearchResult single = whole.evaluate();
  std::vector<SearchResult> shards;
  for (int i = 0; i < 2; ++i) {
    SearchOptions so = o;
    so.shard_index = i;
    so.shard_count = 2;
    const Search part(so);
    // Through the shard file format, as `search --shard` and `search merge` do.
    shards.push_back(shard_from_json(core::Json::parse(shard_json(part, part.evaluate()).dump()), "shard"));
  }
  EXPECT_LT(shards[0].candidates, single.candidates);
  SearchResult merged = whole.merge(shards);
  whole.rank(single);
  whole.rank(merged);
  EXPECT_EQ(shard_json(whole, merged).dump(), shard_json(whole, single).dump());
}

// Every candidate of the space is the one its index names (Search::candidate, which `search merge`
// checks shard layouts against), and nothing beyond the space is.
TEST(Search, CandidateByIndexEqualsTheEnumeratedLayout) {
  SearchOptions o = tiny_options();
  o.compression = {"none", "bf16"};
  const Search search(o);
  const SearchResult r = search.evaluate();
  ASSERT_FALSE(r.ranked.empty());
  for (const Evaluated& e : r.ranked) {
    const std::optional<Layout> l = search.candidate(e.layout.index);
    ASSERT_TRUE(l.has_value()) << e.layout.index;
    EXPECT_EQ(l->to_json(), e.layout.to_json());
  }
  EXPECT_FALSE(search.candidate(search.candidate_count()).has_value());
}

// Shard files are input (issue 34): each edit below is an input error naming the file and the
// pointer, never a signal, an internal error or nonsense printed.
class ShardFiles : public testing::Test {
 protected:
  void SetUp() override {
    SearchOptions o = tiny_options();
    o.refine = 5;
    for (int i = 0; i < 2; ++i) {
      o.shard_index = i;
      o.shard_count = 2;
      const Search part(o);
      shards_.push_back(core::Json::parse(shard_json(part, part.evaluate()).dump()));
    }
  }
  // The message of merging the two shards, or "" when they merge.
  std::string merge_error() {
    SearchArgs args;
    args.options.quiet = true;
    args.options.recheck = false;
    std::ostringstream out;
    try {
      merge_shards({{shards_[0], "s0.json"}, {shards_[1], "s1.json"}}, args, out);
    } catch (const core::InputError& e) {
      return e.what();
    }
    return "";
  }
  std::vector<core::Json> shards_;
};

TEST_F(ShardFiles, MergeAsWritten) { EXPECT_EQ(merge_error(), ""); }

TEST_F(ShardFiles, GpuCountsOutOfRange) {
  // 2^40 was read into an int as 0, and 0 divided by: SIGFPE.
  for (const core::Json& gpus : {core::Json::array({0}), core::Json::array({int64_t{1} << 40}), core::Json(nullptr)}) {
    shards_[0]["options"]["gpus"] = shards_[1]["options"]["gpus"] = gpus;
    const std::string e = merge_error();
    EXPECT_NE(e.find("s0.json: /options/gpus"), std::string::npos) << e;
  }
}

TEST_F(ShardFiles, FiguresOutOfRange) {
  shards_[0]["evaluated"][0]["analytic"]["mfu"] = 7.5;
  shards_[0]["evaluated"][0]["analytic"]["iteration_time_s"] = -1;
  shards_[1]["candidates"] = -1;
  EXPECT_NE(merge_error().find("s0.json: /evaluated/0/analytic/mfu: expected a number in [0, 1], found 7.5"),
            std::string::npos);
  EXPECT_NE(merge_error().find("s0.json: /evaluated/0/analytic/iteration_time_s"), std::string::npos);
  shards_[0] = shards_[1];
  EXPECT_NE(merge_error().find("/candidates: expected an integer >= 0, found -1"), std::string::npos) << merge_error();
}

TEST_F(ShardFiles, CountsThatDoNotAddUp) {
  shards_[1]["valid"] = shards_[1]["valid"].get<uint64_t>() + 1;
  EXPECT_NE(merge_error().find("s1.json: /candidates:"), std::string::npos) << merge_error();
}

TEST_F(ShardFiles, ShardsOfAnotherSearch) {
  // Same options, another scenario: was an internal error ("layout of another search") or, on a
  // layer-graph scenario, a ranking of layouts it never enumerated.
  for (core::Json& s : shards_) s["options"]["scenario"] = SCENARIOS + "cnn/resnet50-a100-8.json";
  EXPECT_NE(merge_error().find("s0.json: /evaluated/0/layout: layout"), std::string::npos) << merge_error();
  SetUp();
  shards_.erase(shards_.begin(), shards_.begin() + 2);
  shards_[1]["options"]["refine"] = 6;
  EXPECT_NE(merge_error().find("s1.json: /options: this shard comes from another search"), std::string::npos)
      << merge_error();
  shards_[1] = shards_[0];
  EXPECT_NE(merge_error().find("s1.json: /shard: shard 0 given twice"), std::string::npos) << merge_error();
}

TEST_F(ShardFiles, NotAShard) {
  shards_[0] = core::Json::object({{"schema", "trainsim.report/1"}});
  EXPECT_NE(merge_error().find("s0.json: /schema: expected a shard file"), std::string::npos) << merge_error();
  shards_[0] = core::Json::array();
  EXPECT_NE(merge_error().find("s0.json: /schema"), std::string::npos) << merge_error();
}

// The first pass only orders candidates; it must agree with the analytic backend well enough that
// the analytic backend's best layout is among the estimate's best few, and in memory closely enough
// that --fits does not drop layouts that fit. GPT-3 6.7B's layers (8 of them, to keep the test short)
// on 8 A100, every valid layout.
TEST(Search, FirstPassEstimateAgreesWithTheAnalyticBackend) {
  SearchOptions o;
  o.scenario = SCENARIOS + "gpt3-6.7b-a100-8.json";
  o.overrides = {"training.global_batch=32", "model.layers=8"};
  o.refine = 100000;
  o.fits = false;
  o.quiet = true;
  o.jobs = 2;
  o.max_micro_batch = 2;
  const Search search(o);
  SearchResult r = search.evaluate();
  ASSERT_GT(r.ranked.size(), 50u);
  std::vector<double> time_error, memory_error;
  size_t best_analytic = 0;
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const Evaluated& e = r.ranked[i];
    ASSERT_TRUE(e.analytic);
    time_error.push_back(std::abs(e.estimate.iteration_time_s / e.analytic->iteration_time_s - 1));
    memory_error.push_back(std::abs(e.estimate.peak_memory_bytes / e.analytic->peak_memory_bytes - 1));
    if (e.analytic->iteration_time_s < r.ranked[best_analytic].analytic->iteration_time_s) best_analytic = i;
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::printf("first pass vs analytic backend over %zu layouts: time median %.1f%% max %.1f%%, memory median %.1f%% "
              "max %.1f%%\n",
              r.ranked.size(), 100 * median(time_error), 100 * *std::max_element(time_error.begin(), time_error.end()),
              100 * median(memory_error), 100 * *std::max_element(memory_error.begin(), memory_error.end()));
  EXPECT_LT(median(time_error), 0.05);
  EXPECT_LT(median(memory_error), 0.05);
  EXPECT_LT(*std::max_element(memory_error.begin(), memory_error.end()), 0.15);
  // r.ranked is in estimate order: the analytic best must be among the default --refine (30).
  EXPECT_LT(best_analytic, 30u) << r.ranked[best_analytic].layout.describe();
}

// Layouts with equal workload fingerprints share one SimGrid run in the re-check: every such group
// must have equal analytic figures (a timing field the fingerprint missed would split them), and the
// tiny space has such groups (ZeRO stages that differ only in memory).
TEST(Search, EqualFingerprintsHaveEqualTimes) {
  const Search search(tiny_options());
  const SearchResult r = search.evaluate();
  std::map<std::string, std::vector<const Evaluated*>> groups;
  for (const Evaluated& e : r.ranked) {
    ASSERT_TRUE(e.analytic);
    ASSERT_FALSE(e.analytic->fingerprint.empty());
    groups[e.analytic->fingerprint].push_back(&e);
  }
  size_t shared = 0;
  for (const auto& [fingerprint, members] : groups) {
    shared += members.size() > 1;
    for (const Evaluated* e : members) {
      EXPECT_EQ(e->analytic->iteration_time_s, members.front()->analytic->iteration_time_s)
          << e->layout.describe() << " vs " << members.front()->layout.describe();
      EXPECT_EQ(e->analytic->breakdown_s, members.front()->analytic->breakdown_s);
    }
  }
  EXPECT_GT(shared, 0u);
  EXPECT_LT(groups.size(), r.ranked.size());
  // Different micro-batch counts or degrees give different workloads.
  std::set<double> times;
  for (const Evaluated& e : r.ranked) times.insert(e.analytic->iteration_time_s);
  EXPECT_GE(groups.size(), times.size());
}

TEST(Search, BadOptionsAreInputErrors) {
  SearchOptions o = tiny_options();
  o.min_mfu = 1.5;
  EXPECT_THROW(Search{o}, core::InputError);
  o = tiny_options();
  o.gpus = {12};
  EXPECT_THROW(Search{o}, core::InputError) << "12 GPUs do not fill nodes of 8";
  o = tiny_options();
  o.max_gpus = 4;
  EXPECT_THROW(Search{o}, core::InputError) << "the scenario's 8 GPUs are above --max-gpus";
  o = tiny_options();
  o.gpu_types = {"A100-SXM4-80GBX"};
  EXPECT_THROW(Search{o}, core::InputError);
  EXPECT_THROW(parse_gpu_counts("4096:512"), core::InputError);
  EXPECT_THROW(parse_gpu_counts("512,abc"), core::InputError);
  EXPECT_EQ(parse_gpu_counts("256:4096"), (std::vector<int>{256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(parse_gpu_counts("512,1024"), (std::vector<int>{512, 1024}));
}

TEST(Search, ImpossibleConstraintsLeaveNothingAndSayWhy) {
  SearchOptions o = tiny_options();
  o.min_mfu = 0.99;
  o.refine = 5;
  const Search search(o);
  SearchResult r = search.evaluate();
  try {
    search.rank(r);
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_NE(e.problems().front().message.find("MFU below --min-mfu"), std::string::npos) << e.problems().front().message;
  }
}

// Rejection reasons keep their values (issue 33): messages that differ only in numbers merge, each
// number listing what it was; numbers inside names (fp16, int8, 1f1b, H100) are not values.
TEST(Search, RejectionReasonsShowTheirRealValues) {
  const std::map<std::string, uint64_t> rejected = {
      {"tensor parallelism 3 must divide heads (32)", 5},
      {"tensor parallelism 5 must divide heads (32)", 2},
      {"use zero_stage 0 or 1 with fp16, bf16, fp8 or int8 on H100-SXM5-80GB", 4},
      {"interleaved-1f1b with virtual_stages 2 needs 8 micro-batches", 1},
      {"interleaved-1f1b with virtual_stages 4 needs 8 micro-batches", 1},
      {"out of memory (first-pass estimate above the GPU's memory)", 9},
      {"pipeline 1 x 2.5 GiB", 1},
      {"pipeline 2 x 2.5 GiB", 1},
      {"pipeline 3 x 2.5 GiB", 1},
      {"pipeline 4 x 2.5 GiB", 1},
      {"pipeline 16 x 3.75 GiB", 1}};
  const std::vector<std::pair<std::string, uint64_t>> expected = {
      {"out of memory (first-pass estimate above the GPU's memory)", 9},
      {"tensor parallelism {3, 5} must divide heads (32)", 7},
      {"pipeline {1, 2, ..., 16: 5 values} x {2.5, 3.75} GiB", 5},
      {"use zero_stage 0 or 1 with fp16, bf16, fp8 or int8 on H100-SXM5-80GB", 4},
      {"interleaved-1f1b with virtual_stages {2, 4} needs 8 micro-batches", 2}};
  EXPECT_EQ(rejection_reasons(rejected), expected);
}

// Physical feasibility (network/feasibility.hpp) in the search: NVLS on the scenario's cluster is
// hardware only the H100 of the two types has, so every A100 layout is rejected with the rule's
// message and only H100 layouts rank; with the A100 alone nothing is left, and the error says why.
TEST(Search, LayoutsOfAGpuTypeWithoutTheHardwareAreRejectedWithTheReason) {
  SearchOptions o = tiny_options();
  o.overrides = {"cluster.intra_node.nvls=true"};
  o.gpu_types = {"A100-SXM4-80GB", "H100-SXM5-80GB"};
  o.refine = 5;
  o.recheck = false;
  const Search search(o);
  const SearchResult r = search.run();
  ASSERT_FALSE(r.ranked.empty());
  for (const Evaluated& e : r.ranked) EXPECT_EQ(e.layout.gpu, "H100-SXM5-80GB");
  const std::string reason =
      "cluster.intra_node.nvls: needs a GPU whose NVSwitch has NVLink SHARP (third-generation NVSwitch or later: "
      "H100, H800, H200, B200, GB200); cluster.gpu A100-SXM4-80GB has none: set intra_node.nvls false";
  ASSERT_TRUE(r.rejected.count(reason)) << "every A100 candidate";
  EXPECT_EQ(r.rejected.at(reason) * 2, r.candidates) << "the two types enumerate the same layouts";

  o.gpu_types = {"A100-SXM4-80GB"};
  try {
    Search(o).run();
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_NE(e.problems().front().message.find(reason), std::string::npos) << e.problems().front().message;
  }
}

// The ranked table stays aligned whatever the layout's suffixes (" offload:none compression:powersgd",
// "[fsdp]"), also past the old 60-character layout column: every row's analytic_s figure ends where
// its header does.
TEST(Search, TheTableStaysAlignedWhateverTheLayoutSuffixes) {
  SearchArgs args;
  args.options = tiny_options();
  args.options.refine = 8;
  args.options.top = 8;
  args.options.recheck = false;
  args.options.offload = {"none"};
  args.options.compression = {"powersgd"};  // every row: "... offload:none compression:powersgd [stack]"
  std::ostringstream out, err;
  ASSERT_EQ(search_command(args, out, err), 0) << err.str();
  std::istringstream lines(out.str());
  size_t header_end = std::string::npos;
  int rows = 0;
  bool longer_than_before = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("rank")) {
      header_end = line.find("analytic_s") + std::string("analytic_s").size();
    } else if (header_end != std::string::npos && line.find(" offload:") != std::string::npos) {
      ++rows;
      // The right-aligned analytic_s figure ends where its header does.
      EXPECT_EQ(line.find_first_of(' ', line.find_first_not_of(' ', line.find("] ") + 1)), header_end) << line;
      longer_than_before |= line.find("] ") > 4 + 1 + 6 + 1 + 60;
    } else if (line.empty() && rows > 0) {
      break;
    }
  }
  // Rows with equal figures are merged (docs/search.md, "Merged rows"): the table shows the rows the
  // search ranks, up to --top.
  const Search search(args.options);
  EXPECT_EQ(static_cast<size_t>(rows), std::min<size_t>(8, search.run().ranked.size()));
  EXPECT_GT(rows, 1);
  EXPECT_TRUE(longer_than_before) << "the layouts should exceed the old 60-character column:\n" << out.str();
}

TEST(Search, ExplodingSpacesNeedYes) {
  SearchOptions o;
  o.scenario = SCENARIOS + "gpt3-175b-a100-1024.json";
  o.overrides = {"training.global_batch=720720"};
  o.max_micro_batch = 1000000;
  o.gpus = {1024, 2048, 4096, 8192, 16384};
  o.quiet = true;
  try {
    const Search s(o);
    FAIL() << "expected an InputError, " << s.candidate_count() << " candidates";
  } catch (const core::InputError& e) {
    EXPECT_NE(e.problems().front().message.find("--yes"), std::string::npos);
  }
  o.yes = true;
  EXPECT_GT(Search(o).candidate_count(), MAX_CANDIDATES);
}

// Issue 13: with checkpoints and failures in the scenario, time_to_train and cost rank on the
// expected run (failure-free days / goodput, the report's time_to_train.with_failures), and the
// goodput of each refined layout is the one `run` reports for it.
TEST(Search, TimeToTrainWithCheckpointsRanksOnTheExpectedRunWithFailures) {
  SearchOptions o;
  o.scenario = SCENARIOS + "gpt3-6.7b-a100-8.json";
  // A node failing every 2 h and a slow file system: goodput well below 1 (86%).
  o.overrides = {"model.layers=8", "training.global_batch=32", "training.tokens=1e9",
                 R"(training.checkpoint={"interval": "auto", "mode": "sync", "sharding": "data-parallel"})",
                 R"(cluster.storage={"parallel_fs": {"write_bandwidth": "2 GB/s", "read_bandwidth": "2 GB/s"}})",
                 R"(cluster.reliability={"node_mtbf": "2 h"})"};
  o.objective = Objective::TIME_TO_TRAIN;
  o.max_micro_batch = 2;
  o.refine = 6;
  o.recheck = false;
  o.fits = false;
  o.quiet = true;
  const Search search(o);
  SearchResult r = search.evaluate();
  search.rank(r);
  ASSERT_GE(r.ranked.size(), 2u);
  double previous = 0;
  for (const Evaluated& e : r.ranked) {
    if (!e.analytic) continue;
    ASSERT_TRUE(e.analytic->goodput.has_value()) << e.layout.describe();
    const double g = *e.analytic->goodput;
    EXPECT_GT(g, 0);
    EXPECT_LT(g, 0.999) << e.layout.describe();
    const Scenario sc = search.scenario_of(e.layout);
    const core::Json report = report_json(sc, predict(sc, "analytic"));
    EXPECT_DOUBLE_EQ(report["goodput"].get<double>(), g);
    const double expected_days = report["time_to_train"]["with_failures"]["days"].get<double>();
    const double objective = search.objective_value(e.layout, e.analytic->iteration_time_s, g);
    EXPECT_NEAR(objective, expected_days, 1e-12 * expected_days) << e.layout.describe();
    EXPECT_GT(objective, search.objective_value(e.layout, e.analytic->iteration_time_s)) << "failures cost time";
    EXPECT_GE(objective, previous) << "ranked best (fewest expected days) first";
    previous = objective;
  }
  // A run that never ends (goodput 0) is the worst time, not a division by zero.
  EXPECT_EQ(search.objective_value(r.ranked[0].layout, 1.0, 0.0), std::numeric_limits<double>::infinity());
}

// A search of `scenario` with one override whose `top` best layouts (micro-batch 1) are refined and
// ranked, ready for the SimGrid re-check on two threads.
std::pair<std::unique_ptr<Search>, SearchResult> ranked_for_recheck(const std::string& scenario,
                                                                    const std::vector<std::string>& overrides, int top) {
  SearchOptions o;
  o.scenario = SCENARIOS + scenario;
  o.overrides = overrides;
  o.max_micro_batch = 1;
  o.refine = top;
  o.top = top;
  o.jobs = 2;
  o.quiet = true;
  auto search = std::make_unique<Search>(o);
  SearchResult r = search->evaluate();
  search->rank(r);
  return {std::move(search), std::move(r)};
}

// A SimGrid re-check that the scenario's settings refuse (step fidelity above its flow budget, an
// InputError thrown by a worker thread of the re-check) fails the search with that error instead of
// terminating the process (it aborted with exit 134).
TEST(Search, AnInputErrorInAReCheckThreadIsThrownToTheCaller) {
  auto [search, r] = ranked_for_recheck("gpt3-175b-a100-1024.json", {"simulation.fidelity=step"}, 4);
  try {
    search->recheck(r);
    FAIL() << "expected the step-fidelity budget's InputError";
  } catch (const core::InputError& e) {
    EXPECT_NE(e.problems().front().message.find("step-fidelity simulation of at most"), std::string::npos)
        << e.problems().front().message;
  }
}

// A re-check the SimGrid backend refuses for its flows (simulation.max_flows with
// simulation.over_budget "refuse") leaves the layout with its analytic figures, counted in
// recheck_refused, and the search goes on.
TEST(Search, ReChecksAboveTheFlowBudgetKeepTheirAnalyticFigures) {
  auto [search, r] = ranked_for_recheck("gpt3-6.7b-a100-8.json",
                                        {"simulation.max_flows=10", "simulation.over_budget=refuse"}, 3);
  search->recheck(r);
  ASSERT_GE(r.ranked.size(), 3U);
  EXPECT_EQ(r.recheck_refused.at("above simulation.max_flows"), r.simgrid_runs);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(r.ranked[i].analytic.has_value());
    EXPECT_FALSE(r.ranked[i].simgrid.has_value());
  }
}

// By default (simulation.over_budget "approximate") the same re-checks run, with the collectives
// that do not fit the budget priced in closed form: the two best layouts (TP1 PP1 DP8, ZeRO-1 and 2)
// need 528 flows of gradient all-reduces, over a budget of 100, and get their SimGrid figures with
// none refused. (Sends are never approximated: the third, a pipeline layout, needs more than 500 for
// its sends alone and would be refused.)
TEST(Search, ReChecksAboveTheFlowBudgetApproximateByDefault) {
  auto [search, r] = ranked_for_recheck("gpt3-6.7b-a100-8.json", {"simulation.max_flows=100"}, 2);
  search->recheck(r);
  ASSERT_GE(r.ranked.size(), 2U);
  EXPECT_TRUE(r.recheck_refused.empty());
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(r.ranked[i].simgrid.has_value());
    EXPECT_EQ(r.ranked[i].simgrid->closed_form, std::vector<std::string>{"data"}) << "the report's network.closed_form";
    EXPECT_TRUE(r.ranked[i].analytic->closed_form.empty());
  }
  // Kept through a shard file and read back.
  const core::Json written = r.ranked[0].simgrid->to_json();
  core::Diagnostics diag;
  core::ObjectReader reader(written, "shard.json", "/ranked/0/simgrid", diag);
  EXPECT_EQ(Figures::from_json(reader).closed_form, std::vector<std::string>{"data"});
  EXPECT_TRUE(diag.empty());
}

// A layer-graph model (docs/cnn.md) is searched over what it runs: spatial x data = 8 GPUs and the
// micro-batches of each replica's share of the 16 samples. By hand: spatial 1, 2, 4, 8 leave data
// 8, 4, 2, 1, so 2, 4, 8, 16 samples per replica and 2 + 3 + 4 + 5 = 14 candidates. Spatial 8 splits
// the second convolution's 4 planes 8 ways (its 5 candidates rejected); spatial 4 leaves it one
// plane per GPU with a halo of 1 (kernel 3), which fits. Each of the 9 others is priced exactly by
// the analytic backend already in the first pass (no closed form for layer graphs).
TEST(Search, LayerGraphModelsSearchSpatialDataAndMicroBatch) {
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("trainsim_search_cnn-{}.json", ::getpid())).string();
  std::ofstream(path) << R"({
    "name": "tiny-cnn",
    "cluster": { "gpu": "A100-SXM4-80GB", "nodes": 1, "gpus_per_node": 8,
                 "network": { "topology": "ideal", "nics_per_node": 8, "nic_bandwidth": "200 Gb/s" } },
    "model": { "family": "layer_graph", "name": "tiny-3d", "input": { "channels": 4, "dims": [16, 16, 16] },
               "layers": [ { "type": "conv", "out_channels": 8, "kernel": 3, "padding": 1 },
                           { "type": "pool", "mode": "avg", "kernel": 2, "stride": 2 },
                           { "type": "pool", "mode": "avg", "kernel": 2, "stride": 2 },
                           { "type": "conv", "out_channels": 8, "kernel": 3, "padding": 1 },
                           { "type": "dense", "out_features": 4 } ] },
    "training": { "global_batch": 16, "micro_batch": 1, "precision": "fp16" },
    "parallelism": { "data": 8 }
  })";
  SearchOptions o;
  o.scenario = path;
  o.refine = 100;
  o.fits = false;
  o.quiet = true;
  o.recheck = false;
  const Search search(o);
  EXPECT_TRUE(search.layer_graph());
  SearchResult r = search.evaluate();
  EXPECT_EQ(r.candidates, 14u);
  EXPECT_EQ(r.valid, 9u);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected.begin()->second, 5u) << r.rejected.begin()->first;
  std::set<std::tuple<int, int, int64_t>> seen;
  for (const Evaluated& e : r.ranked) {
    seen.insert({e.layout.spatial, e.layout.data, e.layout.micro_batch});
    EXPECT_EQ(e.layout.tensor * e.layout.pipeline * e.layout.context * e.layout.expert, 1);
    ASSERT_TRUE(e.analytic.has_value());
    EXPECT_DOUBLE_EQ(e.estimate.iteration_time_s, e.analytic->iteration_time_s) << e.layout.describe();
    EXPECT_GT(e.analytic->samples_per_s, 0);
    EXPECT_EQ(e.analytic->tokens_per_s, 0) << "a layer graph has no tokens";
  }
  const std::set<std::tuple<int, int, int64_t>> expected = {{1, 8, 1}, {1, 8, 2}, {2, 4, 1}, {2, 4, 2}, {2, 4, 4},
                                                            {4, 2, 1}, {4, 2, 2}, {4, 2, 4}, {4, 2, 8}};
  EXPECT_EQ(seen, expected);
  search.rank(r);
  for (size_t i = 1; i < r.ranked.size(); ++i) {
    EXPECT_LE(r.ranked[i - 1].analytic->iteration_time_s, r.ranked[i].analytic->iteration_time_s);
  }
  // samples/s ranks the same way (global batch / iteration time).
  EXPECT_DOUBLE_EQ(search.objective_value(r.ranked[0].layout, 0.5), 0.5);
  o.objective = Objective::SAMPLES_PER_S;
  EXPECT_DOUBLE_EQ(Search(o).objective_value(r.ranked[0].layout, 0.5), 32.0);
  // What counts tokens, and the options a layer graph does not run, are input errors.
  for (Objective tokens : {Objective::TOKENS_PER_S, Objective::TIME_TO_TRAIN, Objective::TOKENS_PER_DOLLAR}) {
    o.objective = tokens;
    EXPECT_THROW(Search{o}, core::InputError) << to_string(tokens);
  }
  o.objective = Objective::ITERATION_TIME;
  o.offload = {"zero-offload"};
  EXPECT_THROW(Search{o}, core::InputError);
}

}  // namespace
}  // namespace trainsim::cli
