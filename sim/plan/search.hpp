#pragma once
// `trainsim search`: every layout of a scenario's model on its cluster (or on several GPU counts and
// GPU types), ranked. Stages (docs/search.md):
//   1. enumerate  tensor, pipeline, context, expert (MoE), data (the rest of the GPUs), virtual
//                 stages, micro-batch, sequence parallel (tensor > 1), recompute, ZeRO stage and
//                 implementation, the offload choices of --offload and the gradient compression
//                 methods of --compression (default: the scenario's own, each); for a layer-graph
//                 model (docs/cnn.md) what it runs: spatial (each sample split over GPUs), data (the
//                 rest) and micro-batch;
//                 each candidate has an index in enumeration order
//   2. validate   the cluster's feasibility for each GPU type (network::check_feasibility: every
//                 layout of a type whose hardware lacks a feature the scenario asks for is rejected
//                 with that reason), then models::check_strategy, the scenario loader's own check: a
//                 rejected candidate is counted under its first problem (rejection_reasons merges
//                 the messages that differ only in their numbers)
//   3. estimate   the closed-form first pass (search_estimate.hpp) for every valid candidate; with
//                 `fits`, an estimated peak above the GPU's memory rejects it ("out of memory").
//                 A layer graph has no closed form: its (few) candidates are priced by the analytic
//                 backend here already
//   4. refine     the `refine` best estimates are evaluated with the analytic backend (the real
//                 workload) and ranked on those figures, after the constraints (fits, min_mfu)
//   5. recheck    the `top` best are simulated again with SimGrid and re-ordered by its figures
// A scenario whose cluster gives pools of several GPU types (docs/search.md, "Mixed clusters") is
// searched on its own pools: every layout on all of them (pipeline stages or data-parallel replicas
// across the pools, the layers or the batch split by speed as `run` splits them) and on each pool
// alone. The first pass prices a layout across pools as the GPU-weighted harmonic mean of its
// estimates on clusters of each type (the split by speed evens the per-GPU work out); the analytic
// backend then prices the real split.
// Same inputs, same output, whatever `jobs` (ties are broken by enumeration index).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/plan/prices.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/search_estimate.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::plan {

struct BandSet;  // bands.hpp

enum class Objective { ITERATION_TIME, TOKENS_PER_S, MFU, TIME_TO_TRAIN, COST, TOKENS_PER_DOLLAR, SAMPLES_PER_S, ENERGY, CO2 };
// "iteration_time", "tokens_per_s", "mfu", "time_to_train", "cost", "tokens_per_dollar", "samples_per_s",
// "energy", "co2".
// energy: the run's facility energy in MWh (with failures, as time_to_train) with training.tokens,
// else joules per token (per sample for a layer graph); co2: the run's tCO2eq (training.tokens and
// cluster.power.grid_gco2_per_kwh). Both from the report's energy figures (energy.hpp); a first-pass
// estimate, which has no timeline, at the GPUs' limit (TDP or cap) the whole iteration: an upper bound.
// A layer-graph model (CNN, ViT) has no tokens: tokens_per_s, time_to_train, cost and
// tokens_per_dollar are input errors for it.
std::string to_string(Objective o);
const std::map<std::string, Objective>& objective_names();

// GPU memory a planner keeps free: a share of the capacity, or bytes (--memory-headroom "10%" or
// "4 GiB"); zero by default.
struct MemoryHeadroom {
  double fraction = 0;  // of the GPU's capacity, in [0, 1)
  double bytes = 0;
  bool given() const { return fraction > 0 || bytes > 0; }
  double usable(double capacity_bytes) const { return capacity_bytes * (1 - fraction) - bytes; }
  std::string describe() const;  // "10%", "4 GiB"
  // "10%" (a percentage below 100) or a size ("4 GiB"); InputError naming `flag` otherwise.
  static MemoryHeadroom parse(const std::string& text, const std::string& flag);
};

struct SearchOptions {
  std::string scenario{};
  std::vector<std::string> overrides{};  // --set, applied before the search
  std::vector<int> gpus{};              // world sizes to search (default: the scenario's)
  std::vector<std::string> gpu_types{};  // catalog names (default: the scenario's)
  Objective objective = Objective::ITERATION_TIME;
  int top = 10;                         // shown, and re-simulated with SimGrid
  int refine = 30;                      // best estimates evaluated with the analytic backend
  bool recheck = true;                  // SimGrid re-check of the top
  std::optional<int> max_gpus{};
  std::optional<double> min_mfu{};      // fraction, e.g. 0.4
  bool fits = true;                     // only layouts that fit in GPU memory
  // Also rank layouts that no listed training stack runs as a whole (FSDP1 or DeepSpeed with context
  // parallelism, say), labelled "[x? no stack runs it]"; by default they are rejected with the reason
  // of the stack their ZeRO implementation implies. Moot when the scenario gives training.stack (its
  // layouts alone are candidates).
  bool any_stack = false;
  // Largest micro-batch tried; 0: 16 for a transformer (sequences), the whole per-replica batch for a
  // layer-graph model (images: hundreds per GPU are usual).
  int max_micro_batch = 0;
  // Offload choices tried for every layout (--offload): preset names (models::OffloadConfig::presets())
  // or "activations" (the scenario's offload plus activations to the host). Empty: the scenario's.
  std::vector<std::string> offload{};
  // Gradient compression methods tried for every layout (--compression): models::CompressionMethod
  // names, each at its defaults ("none": uncompressed). Empty: the scenario's.
  std::vector<std::string> compression{};
  // Planning constraints (docs/search.md, "Planning constraints"), checked on the figures a layout is
  // ranked on (analytic, then SimGrid's after the re-check); a layout that misses one is rejected
  // and counted under its reason. deadline_days: the time to train (with failures when the scenario
  // has checkpoints: Figures::goodput) at most this; budget_usd: its cost at most this.
  std::optional<double> deadline_days{};
  std::optional<double> budget_usd{};
  // --max-power MW: the site's power budget; a layout whose facility peak power (the report's
  // energy.peak_power_w) is above it is rejected.
  std::optional<double> max_power_w{};
  // GPU memory kept free (--memory-headroom): a layout fits when its peak is at most the capacity
  // less this (with `fits`).
  MemoryHeadroom headroom{};
  // USD per GPU-hour by GPU type (--price NAME=USD,...; parse_prices): each searched type takes the
  // price whose name matches it (PriceList::for_gpu), else the scenario's cluster.price_per_gpu_hour.
  PriceList prices{};
  // --bands FILE: a bands file (validate --write-bands) whose cases join the built-in ones for the
  // ranking's error bands and envelope (band_set_with); empty: the built-in ones.
  std::string bands{};
  int jobs = 1;                         // evaluation threads
  bool yes = false;                     // allow more than MAX_CANDIDATES
  bool quiet = false;                   // no progress bar
  int shard_index = 0;                  // evaluate candidates with index % shard_count == shard_index
  int shard_count = 1;
  // The scenario already in memory (the Python module's dicts): read instead of the file `scenario`,
  // which then only names it in messages and anchors relative paths (simulation.profile). Shard
  // files do not record it (to_json): a search merged from shards reads `scenario` as a file.
  std::optional<core::Json> document{};

  core::Json to_json() const;           // what a shard file records (merge checks they agree)
  // Reads to_json() back from a shard file, every value range-checked (InputErrors in the reader's
  // Diagnostics); top, jobs, shard and quiet are not recorded and keep their defaults.
  static SearchOptions from_json(core::ObjectReader& r);
};

// Bounds on what a shard file may hold (the command line's own: --gpus, --shard).
inline constexpr int64_t MAX_SEARCH_GPUS = 1'000'000;
inline constexpr int64_t MAX_SHARDS = 1'000'000;
// The largest time figure read back from trainsim's own files: 10^9 s (32 years per iteration).
inline constexpr double MAX_FIGURE_S = 1e9;

// Searches of more candidates need `yes`.
inline constexpr uint64_t MAX_CANDIDATES = 10'000'000;

// One layout of the search space.
struct Layout {
  uint64_t index = 0;  // enumeration order (sharding, ties)
  std::string gpu;     // on several pools their GPUs, "+"-joined in pool order
  int gpus = 0;
  // A scenario with cluster.pools: the pools the layout runs on, "+"-joined in pool order ("h100+a100":
  // every pool, its batch or layers split by speed; "h100": that pool alone); "" otherwise.
  std::string pools;
  int tensor = 1, pipeline = 1, data = 1, context = 1, expert = 1, virtual_stages = 1;
  int spatial = 1;  // layer-graph models: GPUs each sample is split over (parallelism.spatial)
  int64_t micro_batch = 1;
  bool sequence_parallel = false;
  models::Recompute recompute = models::Recompute::NONE;
  int zero_stage = 0;
  models::ZeroImpl zero_impl = models::ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER;
  int shard_group = 0;  // hybrid sharding (parallelism.shard_group), 0: none; "HSDP8" in describe()
  std::string offload;  // an --offload choice, or "" (the scenario's offload)
  std::string compression;  // a --compression method, or "" (the scenario's gradient compression)
  // The training stack that prices it: training.stack when the scenario gives it, else the one the
  // layout implies (models::implied_stack); stack_runs false when that implied stack cannot run the
  // layout (models::stack_unsupported: e.g. FSDP1 with context parallelism) - no listed stack does.
  std::string stack = "megatron";
  bool stack_runs = true;

  std::string describe() const;  // "TP8 PP8 DP16 mb1 full ZeRO-1 (megatron-distributed-optimizer)"
  // The words of describe() that `other`'s lacks: "rc:selective ZeRO-3/fsdp2 [torchtitan]".
  std::string difference_from(const Layout& other) const;
  core::Json to_json() const;
  static Layout from_json(core::ObjectReader& r);  // ranges checked; Search::candidate() checks the rest
};

// The figures of one evaluation (analytic backend or SimGrid).
struct Figures {
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double mfu = 0;
  double peak_memory_bytes = 0;
  bool fits = true;
  core::Json breakdown_s;  // the report's breakdown_s
  // The report's goodput (training.checkpoint given: the expected share of wall time that trains,
  // with checkpoint stalls and failures, docs/resilience.md); absent without checkpoints.
  std::optional<double> goodput;
  // The report's energy.per_iteration_j and energy.peak_power_w (facility); absent when the GPU's
  // power is not known.
  std::optional<double> energy_per_iteration_j;
  std::optional<double> peak_power_w;
  // On several pools: the pool whose ranks finish last (the report's pools.binding); "" otherwise.
  std::string binding_pool;
  // Analytic figures: the workload's timing fingerprint with the cluster, simulation settings and
  // profile ("" when unknown). Layouts with equal fingerprints simulate to the same time, so the
  // SimGrid re-check runs one of them (ZeRO-1 and ZeRO-2 often differ only in memory).
  std::string fingerprint;
  // SimGrid figures over simulation.max_flows (simulation.over_budget "approximate"): the group kinds
  // whose collectives the run priced in closed form (the report's network.closed_form); empty when
  // everything was simulated.
  std::vector<std::string> closed_form;
  core::Json to_json() const;
  // Ranges checked: times finite and positive, MFU and goodput in [0, 1], sizes up to 1 EiB.
  static Figures from_json(core::ObjectReader& r);
};

struct Evaluated {
  Layout layout;
  Estimate estimate;
  std::optional<Figures> analytic;
  std::optional<Figures> simgrid;
  // Layouts whose analytic figures equal this one's in every respect (iteration time, peak memory,
  // fits, goodput; same GPU type and count), merged into this row by rank(): names that change no
  // figure (fsdp vs fsdp2, recompute none vs selective when nothing is recomputed). The re-check
  // simulates this one.
  std::vector<Layout> equivalent;

  // The figures it is ranked on: SimGrid's when re-checked, else the analytic backend's; nullptr when
  // it only has the first-pass estimate.
  const Figures* best_figures() const;
  // best_figures()'s iteration time, else the estimate's.
  double iteration_time_s() const;
};

struct SearchResult {
  uint64_t candidates = 0;                   // enumerated (this shard's share)
  uint64_t valid = 0;                        // passed validation (and, with fits, the memory estimate)
  uint64_t estimated = 0;                    // first-pass estimates computed (logged only)
  std::map<std::string, uint64_t> rejected;  // by reason: each message with its own values (rejection_reasons)
  std::vector<Evaluated> ranked;             // best first; at most `refine` refined, then the rest by estimate
  bool interrupted = false;
  double capacity_bytes = 0;
  size_t simgrid_runs = 0;                   // SimGrid simulations of the re-check (distinct workloads)
  size_t merged = 0;                         // layouts merged into an equal row (Evaluated::equivalent)
  // Re-checks the SimGrid backend refused before simulating (above simulation.max_flows), by reason:
  // those layouts keep their analytic figures.
  std::map<std::string, uint64_t> recheck_refused;
  double first_pass_s = 0;  // wall time of stages 1-3 (logged, never in the output)
  double refine_s = 0;      // wall time of stage 4
};

class Search {
 public:
  // Loads the scenario and the cluster variants. Throws InputError for bad options (naming the flag)
  // or an empty or exploding search space.
  explicit Search(SearchOptions options);
  ~Search();
  Search(Search&&) noexcept;
  Search& operator=(Search&&) noexcept;

  // The whole search in this process: evaluate(), then finish(). Throws InputError as rank().
  SearchResult run() const;
  // rank(), then recheck() unless options().recheck is false or Ctrl-C stopped the evaluation
  // (result.interrupted): the end of a search, on one process's result or on merged shards.
  void finish(SearchResult& result) const;

  uint64_t candidate_count() const { return total_; }
  // Stages 1-4 on this shard's share of the candidates: `ranked` holds the `refine` best estimates
  // with their analytic figures, in estimate order, before the constraints (a shard's output).
  SearchResult evaluate() const;
  // The union of shard results, cut to the `refine` best estimates as one process would have.
  SearchResult merge(const std::vector<SearchResult>& shards) const;
  // Applies the constraints (fits, min_mfu; rejections counted), ranks on the analytic figures and
  // merges rows that differ in no figure (Evaluated::equivalent). Throws InputError when no candidate
  // is left.
  void rank(SearchResult& result) const;
  // Stage 5 on the result's top, then the final order.
  void recheck(SearchResult& result) const;

  const SearchOptions& options() const { return options_; }
  // The warnings of the scenario's cluster variants (Scenario::warnings: a profile fitted on another
  // GPU, a described GPU without a base), each once, for the command to print on stderr.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Whether the scenario's model is a layer graph (no tokens: throughput in samples/s).
  bool layer_graph() const { return layer_graph_; }
  // The candidate with enumeration index `index`, or std::nullopt beyond the space. A layout read
  // from a shard file belongs to this search only when it equals candidate(layout.index).
  std::optional<Layout> candidate(uint64_t index) const;
  // The scenario with `layout` applied (REQUIRES: a valid layout of this search).
  Scenario scenario_of(const Layout& layout) const;
  // The first planning constraint (deadline, budget, memory headroom) that figures of `layout` miss,
  // as a rejection reason naming the option and its value, or std::nullopt. `peak_bytes` < 0: memory
  // not checked. `source`: where the figures come from, "analytic backend", "SimGrid re-check", ...
  // `figures`: the evaluation's (energy, peak power for --max-power), nullptr for an estimate (whose
  // power is not checked).
  std::optional<std::string> missed_constraint(const Layout& layout, double iteration_time_s, double goodput,
                                               double peak_bytes, const std::string& source,
                                               const Figures* figures = nullptr) const;
  // The objective's value (lower is better) of figures for a layout; `figures` as missed_constraint
  // (energy and co2 take their energy from them, else the estimate's upper bound).
  double score(const Layout& layout, double iteration_time_s, double goodput = 1, const Figures* figures = nullptr) const;
  // The objective's value as shown (seconds, tokens/s, MFU, ...). time_to_train, cost and
  // tokens_per_dollar are expected values over the whole run: with `goodput` < 1 (Figures::goodput:
  // checkpoints and failures) the wall time is the failure-free one / goodput, as the report's
  // time_to_train.with_failures; a goodput of 0 (a run that never ends) is the worst value.
  // iteration_time, tokens_per_s and mfu are steady-state figures and ignore it.
  double objective_value(const Layout& layout, double iteration_time_s, double goodput = 1,
                         const Figures* figures = nullptr) const;
  // The bands the ranking is judged with (SearchOptions::bands over the built-in ones).
  const BandSet& band_set() const { return *bands_; }
  // objective_value() of a candidate on the figures it is ranked on (Evaluated::best_figures; the
  // estimate has no goodput: 1).
  double objective_of(const Evaluated& e) const;

  struct Variant;
  struct Shape;

 private:
  // The variant (GPU type and count) of a layout of this search.
  const Variant& variant_of(const Layout& layout) const;
  // The first-pass order (evaluate, merge): estimates that meet the planning constraints first, then
  // by objective, then by enumeration index.
  bool estimate_before(const Evaluated& a, const Evaluated& b) const;
  // The layout of shape `s` with its options (the indices evaluate() loops over) and `index`.
  Layout layout_of(const Shape& s, int vs, int64_t mb, int sp, int rci, int zo, uint64_t index) const;

  SearchOptions options_;
  std::vector<Variant> variants_;
  std::vector<Shape> shapes_;
  std::vector<models::ParallelismConfig> zero_templates_;  // by ZeRO option (search.cpp)
  uint64_t total_ = 0;
  std::vector<std::string> warnings_;
  bool layer_graph_ = false;
  std::shared_ptr<const BandSet> bands_;
};

// Shard files (search --shard I/N --out FILE): the options, the counts and the refined candidates.
core::Json shard_json(const Search& search, const SearchResult& result);

// SearchResult::rejected as shown (table, JSON, the "no layout is left" error): the messages that
// differ only in their numbers merged into one, each number giving the values seen in order ("tensor
// parallelism {5, 7} must divide heads (32)"; more than four: the first two, the last and the count),
// most frequent first. Numbers inside names ("fp16", "H100", "1f1b") are not values.
std::vector<std::pair<std::string, uint64_t>> rejection_reasons(const std::map<std::string, uint64_t>& rejected);
// A shard file read back, as user input: schema, every range, and counts that add up; InputError
// naming the file and pointer otherwise. Whether its layouts belong to the search its options
// describe is checked by merge_shards (Search::candidate).
struct Shard {
  SearchOptions options;
  core::Json options_json;  // as written: shards of one search have equal ones
  int index = 0, count = 1;
  SearchResult result;
};
Shard read_shard(const core::Json& j, const std::string& file);
SearchResult shard_from_json(const core::Json& j, const std::string& file);

// `search merge`: the search that shard documents (each with the file name its errors give) come
// from, and their results merged as one process would have evaluated them (Search::merge; ready for
// Search::finish). The search's scenario, space, objective and constraints come from the shards'
// recorded options; `options` gives the rest (top, recheck, jobs, quiet). Throws InputError naming
// the file and pointer for a malformed shard (read_shard), shards of different searches, a shard
// given twice or missing, or a layout that is not the candidate its index names in the search the
// options describe (a shard of another scenario, or of the same one since edited).
struct MergedShards {
  Search search;
  SearchResult result;
};
MergedShards merge_shards(const std::vector<std::pair<core::Json, std::string>>& files, const SearchOptions& options);

}  // namespace trainsim::plan
