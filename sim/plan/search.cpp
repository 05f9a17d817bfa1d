#include "sim/plan/search.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <exception>
#include <limits>
#include <mutex>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <thread>

#include "models/accounting.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/pool_placement.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/time_to_train.hpp"
#include "network/feasibility.hpp"
#include "sim/core/error.hpp"
#include "sim/core/units.hpp"

namespace trainsim::plan {

using models::Recompute;
using models::ZeroImpl;

struct ZeroOption {
  int stage;
  ZeroImpl impl;
};
// Every ZeRO stage with every implementation that runs it (strategy.hpp's ZeroImpl).
const std::vector<ZeroOption> ZERO_OPTIONS = {
    {0, ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER}, {1, ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER},
    {1, ZeroImpl::DEEPSPEED},                      {2, ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER},
    {2, ZeroImpl::DEEPSPEED},                      {2, ZeroImpl::FSDP},
    {2, ZeroImpl::FSDP2},                          {3, ZeroImpl::FSDP},
    {3, ZeroImpl::FSDP2},                          {3, ZeroImpl::DEEPSPEED}};
// Hybrid sharding (parallelism.shard_group): FSDP's and FSDP2's gathered stages, each with the shard
// group of one node (hybrid_shard_group), enumerated after ZERO_OPTIONS where it applies.
const std::vector<ZeroOption> HYBRID_OPTIONS = {
    {2, ZeroImpl::FSDP}, {2, ZeroImpl::FSDP2}, {3, ZeroImpl::FSDP}, {3, ZeroImpl::FSDP2}};
const Recompute RECOMPUTES[] = {Recompute::NONE, Recompute::SELECTIVE, Recompute::FULL};

struct Search::Variant {
  std::string gpu;
  int gpus = 0;
  Scenario base;
  // Why no layout can run on this GPU type's cluster (network::check_feasibility: "key: problem"),
  // "" when it has what the scenario asks for.
  std::string infeasible;
  double model_flops = 0;  // per iteration (layout-independent)
  double peak_flops = 0;   // per GPU at the training precision
  // The device profile under each stack (device_for_stack), by core::Stack: a layout is priced with
  // its own stack's (Layout::stack).
  std::vector<core::Profile> profiles;
  const core::Profile& profile(const std::string& stack) const {
    return profiles[static_cast<size_t>(core::parse_stack(stack))];
  }
  // A scenario with cluster.pools: the pools this variant runs on (Layout::pools), and when that is
  // several of them, each pool's GPU type as a cluster of the variant's size (the first pass
  // estimates a layout on each).
  std::string pools;
  struct PoolType {
    double share = 0;  // of the variant's GPUs
    double capacity_bytes = 0;
    double gpu_limit_w = 0;  // the pool's GPU at its limit (TDP or cap): the energy bound's
    network::ClusterConfig cluster;
    std::vector<core::Profile> profiles;  // by core::Stack, as `profiles`
  };
  std::vector<PoolType> pool_types;
  // The GPU memory a layout must fit in: the smallest of the pools' GPUs'.
  double capacity_bytes() const {
    double c = base.cluster.gpu_spec.hbm_capacity.value();
    for (const PoolType& t : pool_types) c = std::min(c, t.capacity_bytes);
    return c;
  }
};

namespace {

// The site power of `gpus` GPUs of variant `v` with every GPU at its limit (TDP or cap), hosts, NICs
// and switches on, times the PUE: an upper bound of the report's energy.peak_power_w (energy.hpp),
// which a first-pass estimate (no timeline) is judged on. Across pools, each pool's share of the
// GPUs at its own GPU's limit.
double peak_power_bound_w(const Search::Variant& v, int gpus) {
  const Scenario& s = v.base;
  const network::ClusterConfig& c = s.cluster;
  const int nodes = (gpus + c.gpus_per_node - 1) / c.gpus_per_node;
  double gpu_w = gpus * s.gpu_power.limit_w();
  if (!v.pool_types.empty()) {
    gpu_w = 0;
    for (const Search::Variant::PoolType& t : v.pool_types) gpu_w += t.share * gpus * t.gpu_limit_w;
  }
  return (gpu_w + s.power.non_gpu_w(nodes, c.network.nics_per_node)) * s.power.pue;
}

// Energy of an iteration of `time` at that bound the whole time: the upper bound a first-pass
// estimate is ranked on.
double energy_bound_j(const Search::Variant& v, int gpus, double time) { return peak_power_bound_w(v, gpus) * time; }

}  // namespace

struct Search::Shape {
  int variant = 0;
  int tensor = 1, pipeline = 1, context = 1, expert = 1, data = 1, expert_tensor = 0, spatial = 1;
  std::vector<int> virtual_stages;
  std::vector<int64_t> micro_batches;
  int sp_options = 1;
  int recompute_options = 3;  // the first ones of RECOMPUTES
  int zero_options = 1;        // ZERO_OPTIONS, then HYBRID_OPTIONS when shard_group > 0
  int shard_group = 0;         // hybrid sharding's shard group on this shape (0: none)
  int offload_options = 1;
  int compression_options = 1;
  uint64_t first = 0;  // index of its first candidate
  uint64_t count() const {
    return virtual_stages.size() * micro_batches.size() * static_cast<uint64_t>(sp_options) *
           static_cast<uint64_t>(recompute_options) *
           static_cast<uint64_t>(zero_options) * static_cast<uint64_t>(offload_options) *
           static_cast<uint64_t>(compression_options);
  }
};

namespace {

// Layout::stack_runs of a layout priced with `stack`: that stack runs it, or another listed stack does
// (the implied one first: the common case, and a cheap one). The only schedule search chooses is the
// interleaved one (for model chunks); any other but 1F1B is the scenario's own question (GPipe,
// PipeDream, zero-bubble: some in no listed stack), which must not reject every pipelined layout, so
// the layout is judged as if under 1F1B.
models::ParallelismConfig as_judged(models::ParallelismConfig par) {
  if (par.schedule != models::PipelineSchedule::INTERLEAVED_1F1B) par.schedule = models::PipelineSchedule::ONE_F_ONE_B;
  return par;
}
bool runs_somewhere(core::Stack stack, const models::ParallelismConfig& par) {
  const models::ParallelismConfig judged = as_judged(par);
  return models::stack_runs(stack, judged) || models::some_stack_runs(judged);
}

// Hybrid sharding's shard group for a shape: the data-parallel ranks of one node (tensor x context x
// shard_group = GPUs per node, the layout placing them adjacent), when that splits the data ranks
// into two or more groups; 0 otherwise, and for expert parallelism (models::check_strategy refuses it).
int hybrid_shard_group(int tensor, int context, int data, bool experts, int gpus_per_node) {
  const int inner = tensor * context;
  if (experts || gpus_per_node % inner != 0) return 0;
  const int group = gpus_per_node / inner;
  return group >= 2 && group < data && data % group == 0 ? group : 0;
}

std::vector<int> divisors(int64_t n) {
  std::vector<int> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(static_cast<int>(d));
    if (d * d != n) high.push_back(static_cast<int>(n / d));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// A message split at its values: `text` with each value replaced by VALUE_MARK, and the values in
// order. A value is a decimal number standing alone: not part of a word ("fp16", "H100", "1f1b",
// "80GB").
constexpr char VALUE_MARK = '\x1f';
struct SplitMessage {
  std::string text;
  std::vector<std::string> values;
};

SplitMessage split_values(const std::string& message) {
  SplitMessage out;
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t i = 0;
  while (i < message.size()) {
    const bool starts = std::isdigit(static_cast<unsigned char>(message[i])) && (i == 0 || !word(message[i - 1]));
    if (!starts) {
      out.text += message[i++];
      continue;
    }
    size_t end = i;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
    if (end + 1 < message.size() && message[end] == '.' && std::isdigit(static_cast<unsigned char>(message[end + 1]))) {
      for (++end; end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]));) ++end;
    }
    if (end < message.size() && word(message[end])) {  // a word that starts with digits: "1f1b", "80GB"
      while (end < message.size() && word(message[end])) ++end;
      out.text += message.substr(i, end - i);
    } else {
      out.text += VALUE_MARK;
      out.values.push_back(message.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

// The values one number of merged messages took, in increasing order: one value as itself, up to
// four as "{a, b, c}", more as "{a, b, ..., z: K values}".
std::string values_text(const std::map<double, std::string>& values) {
  if (values.size() == 1) return values.begin()->second;
  std::vector<std::string> texts;
  for (const auto& [v, text] : values) texts.push_back(text);
  if (texts.size() <= 4) return fmt::format("{{{}}}", fmt::join(texts, ", "));
  return fmt::format("{{{}, {}, ..., {}: {} values}}", texts[0], texts[1], texts.back(), texts.size());
}

// A problem as a rejection reason: its key, dotted as in --set ("cluster.intra_node.nvls"), and its
// message.
std::string reason_of(const core::InputProblem& p) {
  std::string key = p.pointer.substr(p.pointer.empty() ? 0 : 1);
  std::replace(key.begin(), key.end(), '/', '.');
  return key.empty() ? p.message : key + ": " + p.message;
}

bool better(double a_score, uint64_t a_index, double b_score, uint64_t b_index) {
  return a_score != b_score ? a_score < b_score : a_index < b_index;
}

// The "parallelism" section of the scenario without what the search sets, read back once per ZeRO
// option so that its implementation defaults (bucket size, overlaps, prefetch) resolve as in a file.
models::ParallelismConfig zero_template(const core::Json& doc, const std::string& file, const ZeroOption& z) {
  core::Json section = doc.contains("parallelism") ? doc["parallelism"] : core::Json::object();
  for (const char* key : {"tensor", "pipeline", "data", "context", "spatial", "expert", "expert_tensor",
                          "sequence_parallel",
                          "virtual_stages", "stage_layers", "recompute", "zero_stage", "zero_impl",
                          "pipeline_schedule", "shard_group"}) {
    section.erase(key);
  }
  if (z.stage != 1 && z.stage != 2) section.erase("overlap_param_gather");
  if (z.stage != 3 || z.impl == ZeroImpl::DEEPSPEED) section.erase("prefetch");  // DeepSpeed's is training.deepspeed's
  section["zero_stage"] = z.stage;
  if (z.stage > 0) section["zero_impl"] = models::to_string(z.impl);
  // The scenario's training.stack sets defaults (backward_prefetch); read_scenario checked the name.
  std::optional<core::Stack> stack;
  if (doc.contains("training") && doc["training"].is_object() && doc["training"].contains("stack") &&
      doc["training"]["stack"].is_string()) {
    stack = core::stack_named(doc["training"]["stack"].get<std::string>());
  }
  if (!(z.stage == 3 && z.impl == ZeroImpl::FSDP)) {
    section.erase("backward_prefetch");
  }
  // The scenario's reduce dtype stays with the layouts whose framework reduces (ParallelismConfig::framework_reduce).
  if (!models::ParallelismConfig::framework_reduces(z.stage, z.impl)) section.erase("reduce_dtype");
  // Read as for a full recompute, so that the template holds the scenario's (or the stack's)
  // recompute_early_stop; each layout sets its own recompute (layout_config).
  section["recompute"] = "full";
  core::Diagnostics diag;
  core::ObjectReader r(section, file, "/parallelism", diag);
  models::ParallelismConfig p = models::ParallelismConfig::from_json(r, stack);
  diag.throw_if_any();
  return p;
}

// --max-power and the objectives energy and co2 need what their figures need: a positive site
// power, the GPUs' power (a described GPU gives "tdp"), and for co2 the run and the grid's intensity.
void check_energy_options(const SearchOptions& o, const Scenario& s, const std::vector<std::string>& types) {
  const bool energy = o.objective == Objective::ENERGY || o.objective == Objective::CO2;
  if (o.max_power_w && !(*o.max_power_w >= 1 && *o.max_power_w <= 1e11)) {
    throw core::InputError("--max-power", "", fmt::format("expected a site power in MW, from 1e-06 to 1e+05, found {:g}",
                                                          *o.max_power_w / 1e6));
  }
  if (!energy && !o.max_power_w) return;
  if (!s.cluster.pools.empty() && !gpu_power_known(s)) {
    throw core::InputError(s.file, "/cluster/pools",
                           fmt::format("{} needs every pool's GPU power: give \"tdp\" in each pool's GPU object "
                                       "(docs/energy.md)",
                                       o.max_power_w ? "--max-power" : "--objective " + to_string(o.objective)));
  }
  if (s.cluster.pools.empty() && s.gpu_power.tdp_w <= 0 &&
      std::find(types.begin(), types.end(), s.cluster.gpu) != types.end()) {
    throw core::InputError(s.file, "/cluster/gpu/tdp",
                           fmt::format("{} needs the GPU's power: give \"tdp\" in the GPU object (docs/energy.md)",
                                       o.max_power_w ? "--max-power" : "--objective " + to_string(o.objective)));
  }
  if (o.objective != Objective::CO2) return;
  if (!s.training.tokens || !s.power.grid_gco2_per_kwh) {
    throw core::InputError(s.file, !s.training.tokens ? "/training/tokens" : "/cluster/power/grid_gco2_per_kwh",
                           "--objective co2 needs training.tokens and cluster.power.grid_gco2_per_kwh in the scenario "
                           "(docs/scenario.md)");
  }
}

// A cluster of several GPU types is searched on its own pools: the options that choose GPUs or price
// them by type, and the energy figures the power model does not give for several types, are refused.
void check_pool_search_options(const SearchOptions& o, const Scenario& s) {
  const auto refuse = [&](bool given, const char* flag, const std::string& why) {
    if (given) {
      throw core::InputError(flag, "", fmt::format("{} ({}: a cluster of several GPU types, cluster.pools, is searched on "
                                                   "its own pools, together and each alone)",
                                                   why, s.file));
    }
  };
  refuse(!o.gpus.empty(), "--gpus", "the GPU counts are the pools'");
  refuse(!o.gpu_types.empty(), "--gpu", "the GPU types are the pools'");
  refuse(!o.prices.empty(), "--price", "give cluster.price_per_gpu_hour instead of prices by GPU type");
}


Figures figures_of(const core::Json& report) {
  Figures f;
  f.iteration_time_s = report["iteration_time_s"].get<double>();
  f.tokens_per_s = report["tokens_per_s"].get<double>();
  f.samples_per_s = report["samples_per_s"].get<double>();
  f.mfu = report["mfu"].get<double>();
  f.peak_memory_bytes = report["memory"]["peak_bytes_per_gpu"].get<double>();
  f.fits = report["memory"]["fits"].get<bool>();
  f.breakdown_s = report["breakdown_s"];
  if (report.contains("goodput")) f.goodput = report["goodput"].get<double>();
  if (report.contains("energy")) {
    f.energy_per_iteration_j = report["energy"]["per_iteration_j"].get<double>();
    f.peak_power_w = report["energy"]["peak_power_w"].get<double>();
  }
  if (report.contains("pools")) f.binding_pool = report["pools"]["binding"].get<std::string>();
  if (report.contains("network") && report["network"].contains("closed_form")) {
    for (const core::Json& g : report["network"]["closed_form"]["groups"]) f.closed_form.push_back(g["group"].get<std::string>());
  }
  return f;
}

// The workload's timing fingerprint with what else a SimGrid run depends on: the resolved cluster,
// simulation settings and profile.
std::string timing_fingerprint(const Scenario& sc, const core::Workload& w) {
  const core::Json j = sc.to_json();
  const std::string context = j.value("cluster", core::Json()).dump() + j.value("simulation", core::Json()).dump() +
                              j.value("profile", core::Json()).dump();
  return fmt::format("{:016x}-{:016x}", w.timing_fingerprint(), std::hash<std::string>{}(context));
}

// A layer graph's first pass: its figures on the analytic backend (no closed form; few candidates).
Estimate exact_estimate(const Scenario& sc) {
  const Prediction p = predict(sc, "analytic");
  const core::Json report = report_json(sc, p);
  return {report["iteration_time_s"].get<double>(), report["memory"]["peak_bytes_per_gpu"].get<double>()};
}

// ASan's allocator (GCC 12's libasan) is not fork-safe: a child forked while another thread holds
// the allocator's lock waits for it forever. A sanitized build (scripts/sanitize.sh) re-checks one
// layout at a time; glibc's malloc, in every other build, is fork-safe.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool FORK_FROM_ONE_THREAD = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool FORK_FROM_ONE_THREAD = true;
#else
constexpr bool FORK_FROM_ONE_THREAD = false;
#endif
#else
constexpr bool FORK_FROM_ONE_THREAD = false;
#endif

// Runs fn(i) for i in [0, n) on `jobs` threads (work handed out one index at a time). The first
// exception any call throws stops the handing out and is thrown again here once every thread has
// ended (an exception leaving a thread would terminate the process: a SimGrid re-check refused by
// the step-fidelity budget did).
template <class Fn>
void parallel_for(size_t n, int jobs, Fn fn) {
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = n;
      }
    }
  };
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(n)));
  std::vector<std::thread> pool;
  for (int j = 1; j < threads; ++j) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

std::string to_string(Objective o) {
  for (const auto& [name, value] : objective_names()) {
    if (value == o) return name;
  }
  return "?";
}

const std::map<std::string, Objective>& objective_names() {
  static const std::map<std::string, Objective> names{{"iteration_time", Objective::ITERATION_TIME},
                                                      {"tokens_per_s", Objective::TOKENS_PER_S},
                                                      {"mfu", Objective::MFU},
                                                      {"time_to_train", Objective::TIME_TO_TRAIN},
                                                      {"cost", Objective::COST},
                                                      {"tokens_per_dollar", Objective::TOKENS_PER_DOLLAR},
                                                      {"samples_per_s", Objective::SAMPLES_PER_S},
                                                      {"energy", Objective::ENERGY},
                                                      {"co2", Objective::CO2}};
  return names;
}

core::Json SearchOptions::to_json() const {
  core::Json j;
  j["scenario"] = scenario;
  j["overrides"] = overrides;
  j["gpus"] = gpus;
  j["gpu_types"] = gpu_types;
  j["objective"] = to_string(objective);
  j["refine"] = refine;
  j["max_gpus"] = max_gpus ? core::Json(*max_gpus) : core::Json();
  j["min_mfu"] = min_mfu ? core::Json(*min_mfu) : core::Json();
  j["fits"] = fits;
  if (any_stack) j["any_stack"] = true;
  j["max_micro_batch"] = max_micro_batch;
  if (!offload.empty()) j["offload"] = offload;
  if (!compression.empty()) j["compression"] = compression;
  if (deadline_days) j["deadline_days"] = *deadline_days;
  if (budget_usd) j["budget_usd"] = *budget_usd;
  if (max_power_w) j["max_power_w"] = *max_power_w;
  if (headroom.given()) j["memory_headroom"] = {{"fraction", headroom.fraction}, {"bytes", headroom.bytes}};
  if (!prices.empty()) j["prices"] = prices.to_json();
  if (!bands.empty()) j["bands"] = bands;
  return j;
}

std::string MemoryHeadroom::describe() const {
  if (fraction > 0 && bytes > 0) return fmt::format("{:g}% + {}", 100 * fraction, core::format_bytes(core::Bytes(bytes)));
  return fraction > 0 ? fmt::format("{:g}%", 100 * fraction) : core::format_bytes(core::Bytes(bytes));
}

MemoryHeadroom MemoryHeadroom::parse(const std::string& text, const std::string& flag) {
  MemoryHeadroom h;
  if (!text.empty() && text.back() == '%') {
    size_t used = 0;
    double pct = -1;
    try {
      pct = std::stod(text.substr(0, text.size() - 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used + 1 != text.size() || !(pct >= 0 && pct < 100)) {
      throw core::InputError(flag, "", fmt::format("expected a percentage from 0% to below 100% (\"10%\"), found \"{}\"", text));
    }
    h.fraction = pct / 100;
    return h;
  }
  core::Bytes b;
  if (!core::parse_bytes(text, b) || !(b.value() >= 0 && b.value() <= core::MAX_BYTES)) {
    throw core::InputError(flag, "",
                           fmt::format("expected a share of the GPU's memory (\"10%\") or a size (\"4 GiB\"), found \"{}\"", text));
  }
  h.bytes = b.value();
  return h;
}

std::string Layout::difference_from(const Layout& other) const {
  const auto words = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t start = 0; start < text.size();) {
      const size_t space = text.find(' ', start);
      out.push_back(text.substr(start, space == std::string::npos ? std::string::npos : space - start));
      if (space == std::string::npos) break;
      start = space + 1;
    }
    return out;
  };
  const std::vector<std::string> theirs = words(other.describe());
  std::string out;
  for (const std::string& w : words(describe())) {
    if (std::find(theirs.begin(), theirs.end(), w) == theirs.end()) out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

std::string Layout::describe() const {
  std::string s = fmt::format("TP{} PP{}", tensor, pipeline);
  if (virtual_stages > 1) s += fmt::format("x{}", virtual_stages);
  s += fmt::format(" DP{}", data);
  if (spatial > 1) s += fmt::format(" spatial{}", spatial);
  if (context > 1) s += fmt::format(" CP{}", context);
  if (expert > 1) s += fmt::format(" EP{}", expert);
  if (sequence_parallel) s += " SP";
  s += fmt::format(" mb{} rc:{} ZeRO-{}", micro_batch, models::to_string(recompute), zero_stage);
  if (zero_stage > 0) s += fmt::format("/{}", models::to_string(zero_impl));
  if (shard_group > 0) s += fmt::format(" HSDP{}", shard_group);
  if (!offload.empty()) s += " offload:" + offload;
  if (!compression.empty()) s += " compression:" + compression;
  s += stack_runs ? fmt::format(" [{}]", stack) : fmt::format(" [{}? no stack runs it]", stack);
  return s;
}

core::Json Layout::to_json() const {
  core::Json j;
  j["index"] = index;
  j["gpu"] = gpu;
  j["gpus"] = gpus;
  if (!pools.empty()) j["pools"] = pools;
  j["tensor"] = tensor;
  j["pipeline"] = pipeline;
  j["data"] = data;
  j["context"] = context;
  j["expert"] = expert;
  j["virtual_stages"] = virtual_stages;
  j["spatial"] = spatial;
  j["micro_batch"] = micro_batch;
  j["sequence_parallel"] = sequence_parallel;
  j["recompute"] = models::to_string(recompute);
  j["zero_stage"] = zero_stage;
  if (zero_stage > 0) j["zero_impl"] = models::to_string(zero_impl);
  if (shard_group > 0) j["shard_group"] = shard_group;
  if (!offload.empty()) j["offload"] = offload;
  if (!compression.empty()) j["compression"] = compression;
  j["stack"] = stack;
  j["stack_runs"] = stack_runs;
  return j;
}

Layout Layout::from_json(core::ObjectReader& r) {
  // Ranges as wide as any search enumerates; Search::candidate() then checks the layout is the one
  // its index names.
  constexpr int64_t MAX_DEGREE = int64_t{1} << 24;  // the largest cluster (ClusterConfig)
  Layout l;
  l.index = static_cast<uint64_t>(r.integer("index", 0, 0));
  l.gpu = r.required_string("gpu").value_or("");
  l.gpus = static_cast<int>(r.required_integer("gpus", 1, MAX_DEGREE).value_or(1));
  l.pools = r.string("pools", "");
  for (auto [key, field] : {std::pair{"tensor", &l.tensor}, std::pair{"pipeline", &l.pipeline}, std::pair{"data", &l.data},
                            std::pair{"context", &l.context}, std::pair{"expert", &l.expert},
                            std::pair{"virtual_stages", &l.virtual_stages}}) {
    *field = static_cast<int>(r.required_integer(key, 1, MAX_DEGREE).value_or(1));
  }
  l.spatial = static_cast<int>(r.integer("spatial", 1, 1, MAX_DEGREE));
  l.micro_batch = r.required_integer("micro_batch", 1).value_or(1);
  l.sequence_parallel = r.boolean("sequence_parallel", false);
  std::vector<std::string> recomputes;
  for (Recompute rc : RECOMPUTES) recomputes.push_back(models::to_string(rc));
  const std::string rc = r.choice("recompute", "none", recomputes);
  for (Recompute x : RECOMPUTES) {
    if (models::to_string(x) == rc) l.recompute = x;
  }
  l.zero_stage = static_cast<int>(r.integer("zero_stage", 0, 0, 3));
  std::vector<std::string> impls;
  for (const ZeroOption& z : ZERO_OPTIONS) {
    if (std::find(impls.begin(), impls.end(), models::to_string(z.impl)) == impls.end()) impls.push_back(models::to_string(z.impl));
  }
  const std::string impl = r.choice("zero_impl", models::to_string(l.zero_impl), impls);
  for (const ZeroOption& z : ZERO_OPTIONS) {
    if (models::to_string(z.impl) == impl) l.zero_impl = z.impl;
  }
  if (r.has("shard_group")) l.shard_group = static_cast<int>(r.integer("shard_group", 0, 2, MAX_DEGREE));
  l.offload = r.string("offload", "");
  l.compression = r.string("compression", "");
  l.stack = r.choice("stack", l.stack, core::stack_names());
  l.stack_runs = r.boolean("stack_runs", true);
  r.finish();
  return l;
}

core::Json Figures::to_json() const {
  core::Json j = {{"iteration_time_s", iteration_time_s}, {"tokens_per_s", tokens_per_s},
                  {"samples_per_s", samples_per_s},           {"mfu", mfu},
                  {"peak_bytes_per_gpu", peak_memory_bytes}, {"fits", fits}, {"breakdown_s", breakdown_s}};
  if (goodput) j["goodput"] = *goodput;
  if (energy_per_iteration_j) j["energy_per_iteration_j"] = *energy_per_iteration_j;
  if (peak_power_w) j["peak_power_w"] = *peak_power_w;
  if (!binding_pool.empty()) j["binding_pool"] = binding_pool;
  if (!fingerprint.empty()) j["workload_fingerprint"] = fingerprint;
  if (!closed_form.empty()) j["closed_form"] = closed_form;
  return j;
}

namespace {

// A duration or rate read back from trainsim's own file: finite and positive (a time of 0 or below
// is never a prediction).
double positive_figure(core::ObjectReader& r, std::string_view key, double max) {
  const double v = r.number(key, 1, 0, max);
  if (r.has(key) && v == 0) r.problem(key, fmt::format("expected a positive number, found 0"));
  if (!r.has(key)) r.problem(key, "missing required number");
  return v;
}

// Every number in a breakdown (nested objects of seconds) finite and non-negative.
void check_breakdown(const core::Json& j, const std::string& file, const std::string& pointer, core::Diagnostics& diag) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) check_breakdown(value, file, core::append_pointer(pointer, key), diag);
  } else if (!j.is_number() || !(j.get<double>() >= 0 && j.get<double>() <= MAX_FIGURE_S)) {
    diag.add(file, pointer, fmt::format("expected seconds, a number in [0, {:g}], found {}", MAX_FIGURE_S, core::describe_json(j)));
  }
}

}  // namespace

Figures Figures::from_json(core::ObjectReader& r) {
  Figures f;
  f.iteration_time_s = positive_figure(r, "iteration_time_s", MAX_FIGURE_S);
  f.tokens_per_s = r.number("tokens_per_s", 0, 0, 1e18);
  f.samples_per_s = r.number("samples_per_s", 0, 0, 1e18);
  f.mfu = r.number("mfu", 0, 0, 1);  // a fraction of the peak: never above 1
  f.peak_memory_bytes = r.number("peak_bytes_per_gpu", 0, 0, core::MAX_BYTES);
  f.fits = r.boolean("fits", true);
  if (const core::Json* b = r.raw("breakdown_s")) {
    if (!b->is_object()) {
      r.problem("breakdown_s", fmt::format("expected an object of seconds, found {}", core::describe_json(*b)));
    } else {
      check_breakdown(*b, r.file(), r.pointer_of("breakdown_s"), r.diagnostics());
      f.breakdown_s = *b;
    }
  } else {
    f.breakdown_s = core::Json::object();
  }
  if (r.has("goodput")) f.goodput = r.number("goodput", 1, 0, 1);
  if (r.has("energy_per_iteration_j")) f.energy_per_iteration_j = r.number("energy_per_iteration_j", 1, 0, 1e18);
  if (r.has("peak_power_w")) f.peak_power_w = r.number("peak_power_w", 1, 0, 1e12);
  f.binding_pool = r.string("binding_pool", "");
  f.fingerprint = r.string("workload_fingerprint", "");
  if (r.has("closed_form")) f.closed_form = r.string_array("closed_form");
  r.finish();
  return f;
}

Search::~Search() = default;
Search::Search(Search&&) noexcept = default;
Search& Search::operator=(Search&&) noexcept = default;

const Figures* Evaluated::best_figures() const { return simgrid ? &*simgrid : analytic ? &*analytic : nullptr; }

double Evaluated::iteration_time_s() const {
  const Figures* f = best_figures();
  return f ? f->iteration_time_s : estimate.iteration_time_s;
}

double Search::objective_of(const Evaluated& e) const {
  const Figures* f = e.best_figures();
  return objective_value(e.layout, e.iteration_time_s(), f ? f->goodput.value_or(1) : 1, f);
}

SearchResult Search::run() const {
  SearchResult result = evaluate();
  finish(result);
  return result;
}

void Search::finish(SearchResult& result) const {
  rank(result);
  if (options_.recheck && !result.interrupted) recheck(result);
}

Search::Search(SearchOptions options)
    : options_(std::move(options)), bands_(std::make_shared<const BandSet>(band_set_with(options_.bands))) {
  if (options_.top < 1) throw core::InputError("--top", "", fmt::format("expected at least 1, found {}", options_.top));
  if (options_.refine < 1) {
    throw core::InputError("--refine", "", fmt::format("expected at least 1, found {}", options_.refine));
  }
  if (options_.jobs < 1) throw core::InputError("--jobs", "", fmt::format("expected at least 1, found {}", options_.jobs));
  if (options_.min_mfu && !(*options_.min_mfu > 0 && *options_.min_mfu < 1)) {
    throw core::InputError("--min-mfu", "",
                           fmt::format("expected a fraction of the peak in (0, 1) (40% is 0.4), found {}", *options_.min_mfu));
  }
  if (options_.max_micro_batch < 0) {
    throw core::InputError("--max-micro-batch", "",
                           fmt::format("expected at least 1 (or 0: the default), found {}", options_.max_micro_batch));
  }
  if (options_.max_gpus && *options_.max_gpus < 1) {
    throw core::InputError("--max-gpus", "", fmt::format("expected at least 1, found {}", *options_.max_gpus));
  }
  if (options_.shard_count < 1 || options_.shard_index < 0 || options_.shard_index >= options_.shard_count) {
    throw core::InputError("--shard", "",
                           fmt::format("expected I/N with 0 <= I < N, found {}/{}", options_.shard_index, options_.shard_count));
  }

  for (const std::string& choice : options_.offload) {
    std::vector<std::string> allowed = models::OffloadConfig::presets();
    allowed.push_back("activations");
    if (std::find(allowed.begin(), allowed.end(), choice) == allowed.end()) {
      std::string list;
      for (const std::string& a : allowed) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
      throw core::InputError("--offload", "", fmt::format("expected offload choices among {}, found \"{}\"", list, choice));
    }
  }

  const std::vector<std::string> methods = {"none", "fp16", "bf16", "fp8", "int8", "topk", "powersgd", "onebit_adam"};
  for (const std::string& choice : options_.compression) {
    if (std::find(methods.begin(), methods.end(), choice) == methods.end()) {
      std::string list;
      for (const std::string& a : methods) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
      throw core::InputError("--compression", "",
                             fmt::format("expected gradient compression methods among {}, found \"{}\"", list, choice));
    }
  }

  core::Json doc = options_.document ? *options_.document : core::load_scenario_file(options_.scenario);
  for (const std::string& o : options_.overrides) apply_override(doc, o);
  const Scenario scenario = read_scenario(doc, options_.scenario, StrategyCheck::SKIP);
  const int per_node = scenario.cluster.gpus_per_node;
  layer_graph_ = scenario.model.is_layer_graph();
  if (layer_graph_) {
    const bool tokens = options_.objective == Objective::TOKENS_PER_S || options_.objective == Objective::TIME_TO_TRAIN ||
                        options_.objective == Objective::COST || options_.objective == Objective::TOKENS_PER_DOLLAR;
    if (tokens) {
      throw core::InputError("--objective", "",
                             fmt::format("{} counts tokens, which a layer-graph model ({}) does not have: use "
                                         "samples_per_s, iteration_time or mfu",
                                         to_string(options_.objective), scenario.model.name));
    }
    for (const auto& [flag, given] : {std::pair{"--offload", !options_.offload.empty()},
                                      std::pair{"--compression", !options_.compression.empty()}}) {
      if (given) {
        throw core::InputError(flag, "",
                               fmt::format("a layer-graph model ({}) runs data and spatial parallelism only (docs/cnn.md)",
                                           scenario.model.name));
      }
    }
  }

  std::vector<int> gpus = options_.gpus.empty() ? std::vector<int>{scenario.cluster.world_size()} : options_.gpus;
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  for (int g : gpus) {
    if (g < per_node ? per_node % g != 0 : g % per_node != 0) {
      throw core::InputError("--gpus", "",
                             fmt::format("{} GPUs do not fill whole nodes of {} (cluster.gpus_per_node)", g, per_node));
    }
  }
  if (!scenario.cluster.pools.empty()) check_pool_search_options(options_, scenario);
  if (options_.max_gpus && scenario.cluster.pools.empty()) {
    std::erase_if(gpus, [&](int g) { return g > *options_.max_gpus; });
    if (gpus.empty()) {
      throw core::InputError("--max-gpus", "",
                             fmt::format("no GPU count to search is at most {} (the scenario has {}; give --gpus)",
                                         *options_.max_gpus, scenario.cluster.world_size()));
    }
  }
  std::vector<std::string> types = options_.gpu_types.empty() ? std::vector<std::string>{scenario.cluster.gpu}
                                                               : options_.gpu_types;

  for (const ZeroOption& z : ZERO_OPTIONS) zero_templates_.push_back(zero_template(doc, options_.scenario, z));

  if (options_.deadline_days && !(*options_.deadline_days > 0 && *options_.deadline_days <= MAX_FIGURE_S / 86400)) {
    throw core::InputError("--deadline", "", fmt::format("expected days, a positive number, found {}", *options_.deadline_days));
  }
  if (options_.budget_usd && !(*options_.budget_usd > 0 && *options_.budget_usd <= 1e18)) {
    throw core::InputError("--budget", "", fmt::format("expected US dollars, a positive number, found {}", *options_.budget_usd));
  }
  if (!(options_.headroom.fraction >= 0 && options_.headroom.fraction < 1 && options_.headroom.bytes >= 0)) {
    throw core::InputError("--memory-headroom", "", fmt::format("expected a share below 100% or a size, found {}",
                                                                options_.headroom.describe()));
  }
  options_.prices.check_used(types, "--price");
  // A constraint needs what its figure needs: --deadline the tokens, --budget the tokens and a price.
  for (const auto& [given, flag] : {std::pair{options_.deadline_days.has_value(), "--deadline"},
                                    std::pair{options_.budget_usd.has_value(), "--budget"}}) {
    if (given && !scenario.training.tokens) {
      throw core::InputError(options_.scenario, "/training/tokens",
                             fmt::format("{} needs training.tokens in the scenario, the tokens to train (docs/scenario.md)", flag));
    }
  }
  const bool objective_price = options_.objective == Objective::COST || options_.objective == Objective::TOKENS_PER_DOLLAR;
  if (!options_.prices.empty() && (objective_price || options_.budget_usd)) {
    for (const std::string& type : types) {
      if (!options_.prices.for_gpu(type, "--price") && !scenario.cluster.price_per_gpu_hour) {
        throw core::InputError("--price", "",
                               fmt::format("no price for the GPU {}, which {} needs: give --price {}=USD (per GPU-hour) "
                                           "or cluster.price_per_gpu_hour",
                                           type, options_.budget_usd ? "--budget" : "--objective " + to_string(options_.objective),
                                           type));
      }
    }
  }
  if (options_.budget_usd && options_.prices.empty() && !scenario.cluster.price_per_gpu_hour) {
    throw core::InputError(options_.scenario, "/cluster/price_per_gpu_hour",
                           "--budget needs a price: cluster.price_per_gpu_hour in the scenario, or --price NAME=USD");
  }
  const bool needs_tokens = options_.objective == Objective::TIME_TO_TRAIN || options_.objective == Objective::COST;
  const bool needs_price = objective_price && options_.prices.empty();
  if ((needs_tokens && !scenario.training.tokens) || (needs_price && !scenario.cluster.price_per_gpu_hour)) {
    throw core::InputError(options_.scenario, needs_tokens && !scenario.training.tokens ? "/training/tokens" : "/cluster/price_per_gpu_hour",
                           fmt::format("--objective {} needs {} in the scenario (docs/scenario.md)",
                                       to_string(options_.objective),
                                       needs_tokens && needs_price ? "training.tokens and cluster.price_per_gpu_hour"
                                       : needs_tokens              ? "training.tokens"
                                                                   : "cluster.price_per_gpu_hour"));
  }

  check_energy_options(options_, scenario, types);

  // A variant read from its scenario document `d`: the cluster's feasibility, warnings, FLOPs and
  // the device profile under each stack. `what` names it in messages ("8 x H100-SXM5-80GB").
  const auto make_variant = [&](const core::Json& d, const std::string& what) {
    Variant v;
    try {
      v.base = read_scenario(d, options_.scenario, StrategyCheck::SKIP);
    } catch (const core::InputError& e) {
      std::vector<core::InputProblem> problems = e.problems();
      for (auto& p : problems) p.message += fmt::format(" (searching {})", what);
      throw core::InputError(problems);
    }
    v.gpus = v.base.cluster.world_size();
    v.gpu = v.base.cluster.gpu;
    core::Diagnostics hardware;
    network::check_feasibility(v.base.cluster, options_.scenario, "/cluster", hardware);
    if (!hardware.empty()) v.infeasible = reason_of(hardware.problems().front());
    for (const std::string& w : v.base.warnings) {
      if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
    }
    v.base.parallelism.stage_layers.clear();
    v.model_flops = models::iteration_flops(v.base.model, v.base.training, v.base.parallelism).model.value();
    v.peak_flops = v.base.cluster.gpu_spec.peak(v.base.training.precision).value();
    for (const std::string& name : core::stack_names()) {
      v.profiles.push_back(v.base.profile);
      v.profiles.back().device = device_for_stack(v.base, core::parse_stack(name));
    }
    return v;
  };
  if (!scenario.cluster.pools.empty()) {
    // Every pool together (stages or replicas across them, split by speed), then each pool alone.
    const std::vector<network::NodePool>& pools = scenario.cluster.pools;
    const core::Json& pools_doc = doc["cluster"]["pools"];
    core::Json mixed = doc;
    if (mixed.contains("training")) mixed["training"].erase("batch_split");
    if (mixed.contains("parallelism")) mixed["parallelism"].erase("stage_layers");
    // The scenario on one GPU type: pool i's GPU on `nodes` nodes, with its NICs where it gives them.
    const auto one_type = [&](size_t i, int nodes) {
      core::Json d = mixed;
      d["cluster"].erase("pools");
      d["cluster"]["gpu"] = pools_doc[i]["gpu"];
      d["cluster"]["nodes"] = nodes;
      if (pools_doc[i].contains("network") && pools_doc[i]["network"].is_object()) {
        for (const auto& [key, value] : pools_doc[i]["network"].items()) d["cluster"]["network"][key] = value;
      }
      return d;
    };
    if (pools.size() > 1) {
      Variant v = make_variant(mixed, "every pool");
      std::vector<std::string> names, gpus_used;
      v.peak_flops = 0;
      for (size_t i = 0; i < pools.size(); ++i) {
        names.push_back(pools[i].name);
        gpus_used.push_back(pools[i].gpu);
        Variant u = make_variant(one_type(i, scenario.cluster.nodes), fmt::format("pool {}'s GPU", pools[i].name));
        // The links the pools share: the mixed cluster's NVLink (the slowest pool's).
        u.base.cluster.intra_node = v.base.cluster.intra_node;
        const double share = static_cast<double>(pools[i].nodes) / scenario.cluster.nodes;
        v.peak_flops += share * u.peak_flops;  // MFU over the GPUs' mean peak, as the report's
        v.pool_types.push_back(
            {share, pools[i].gpu_spec.hbm_capacity.value(), u.base.gpu_power.limit_w(), u.base.cluster, u.profiles});
      }
      v.pools = fmt::format("{}", fmt::join(names, "+"));
      v.gpu = fmt::format("{}", fmt::join(gpus_used, "+"));
      if (!options_.max_gpus || v.gpus <= *options_.max_gpus) variants_.push_back(std::move(v));
    }
    for (size_t i = 0; i < pools.size(); ++i) {
      Variant v = make_variant(one_type(i, pools[i].nodes), fmt::format("pool {} alone", pools[i].name));
      v.pools = pools[i].name;
      if (!options_.max_gpus || v.gpus <= *options_.max_gpus) variants_.push_back(std::move(v));
    }
    if (variants_.empty()) {
      throw core::InputError("--max-gpus", "", fmt::format("no pool has at most {} GPUs", *options_.max_gpus));
    }
  } else {
    for (const std::string& type : types) {
      for (int g : gpus) {
        core::Json d = doc;
        if (type != scenario.cluster.gpu) {
          // Another GPU: its NVLink bandwidth and its built-in profile, not the scenario's.
          d["cluster"]["gpu"] = type;
          if (d["cluster"].contains("intra_node")) d["cluster"]["intra_node"].erase("bandwidth");
          if (d.contains("simulation")) d["simulation"].erase("profile");
        }
        if (const std::optional<double> price = options_.prices.for_gpu(type, "--price")) {
          d["cluster"]["price_per_gpu_hour"] = *price;
        }
        if (g < per_node) {
          d["cluster"]["gpus_per_node"] = g;
          d["cluster"]["nodes"] = 1;
        } else {
          d["cluster"]["nodes"] = g / per_node;
        }
        Variant v = make_variant(d, fmt::format("{} x {}", g, type));
        v.gpu = type;
        variants_.push_back(std::move(v));
      }
    }
  }

  // Stage 1: the shapes (t, p, c, e, d) of every variant and the options of each.
  const int64_t max_micro_batch = options_.max_micro_batch > 0 ? options_.max_micro_batch
                                  : layer_graph_                ? std::numeric_limits<int64_t>::max()
                                                                : 16;
  const bool folded = scenario.parallelism.folded();
  for (size_t vi = 0; vi < variants_.size(); ++vi) {
    const Variant& v = variants_[vi];
    const models::ModelSpec& m = v.base.model;
    const int64_t batch = v.base.training.global_batch;
    if (layer_graph_) {
      // Each sample split over `spatial` GPUs, data replicas on the rest; no other option applies.
      for (int sp : divisors(v.gpus)) {
        Shape s;
        s.variant = static_cast<int>(vi);
        s.spatial = sp;
        s.data = v.gpus / sp;
        s.virtual_stages = {1};
        if (batch % s.data == 0) {
          for (int mb : divisors(batch / s.data)) {
            if (mb <= max_micro_batch) s.micro_batches.push_back(mb);
          }
        }
        if (s.micro_batches.empty()) s.micro_batches = {1};  // rejected by validation, and counted
        s.recompute_options = 1;
        s.first = total_;
        total_ += s.count();
        shapes_.push_back(std::move(s));
      }
      continue;
    }
    for (int t : divisors(v.gpus)) {
      for (int p : divisors(v.gpus / t)) {
        for (int c : divisors(v.gpus / t / p)) {
          const int rest = v.gpus / t / p / c;
          const std::vector<int> experts = !m.is_moe() ? std::vector<int>{1} : folded ? divisors(m.experts) : divisors(rest);
          for (int e : experts) {
            Shape s;
            s.variant = static_cast<int>(vi);
            s.tensor = t;
            s.pipeline = p;
            s.context = c;
            s.expert = e;
            s.data = folded ? rest : rest / e;
            s.expert_tensor = folded ? (scenario.parallelism.expert_tensor == 1 ? 1 : t) : 0;
            s.virtual_stages = {1};
            for (int vs = 2; p > 1 && p * vs <= m.layers; ++vs) {
              if (m.layers % (p * vs) == 0) s.virtual_stages.push_back(vs);
            }
            const int64_t replicas = folded ? s.data : static_cast<int64_t>(s.data) * e;
            if (batch % replicas == 0) {
              for (int mb : divisors(batch / replicas)) {
                if (mb <= max_micro_batch) s.micro_batches.push_back(mb);
              }
            }
            if (s.micro_batches.empty()) s.micro_batches = {1};  // rejected by validation, and counted
            s.sp_options = t > 1 ? 2 : 1;
            const int dense_replicas = folded ? s.data * c : s.data * e * c;
            // ZeRO-3 without replicas still matters with offloading: ZeRO-Infinity fetches parameters.
            s.zero_options = dense_replicas > 1 || !options_.offload.empty() ? static_cast<int>(ZERO_OPTIONS.size()) : 1;
            s.shard_group = hybrid_shard_group(t, c, s.data, e > 1 || folded, v.base.cluster.gpus_per_node);
            if (s.shard_group > 0) s.zero_options += static_cast<int>(HYBRID_OPTIONS.size());
            s.offload_options = std::max<int>(1, static_cast<int>(options_.offload.size()));
            s.compression_options = std::max<int>(1, static_cast<int>(options_.compression.size()));
            s.first = total_;
            total_ += s.count();
            shapes_.push_back(std::move(s));
          }
        }
      }
    }
  }
  if (total_ > MAX_CANDIDATES && !options_.yes) {
    throw core::InputError("search", "",
                           fmt::format("the search space has {} candidates, more than {}: narrow it (--gpus, --gpu, "
                                       "--max-micro-batch) or confirm with --yes",
                                       total_, MAX_CANDIDATES));
  }
}

namespace {

// The offload of an --offload choice over the scenario's.
models::OffloadConfig offload_of(const Scenario& base, const std::string& choice) {
  if (choice.empty()) return base.offload;
  if (choice == "activations") {
    models::OffloadConfig o = base.offload;
    o.activations = models::OffloadTarget::CPU;
    return o;
  }
  return models::offload_preset(choice);
}

// The gradient compression of a --compression choice (the method at its defaults) over the
// scenario's. Layouts are ranked on the compressed steady state: no warm-up.
models::CompressionConfig compression_of(const Scenario& base, const std::string& choice) {
  models::CompressionConfig c = base.compression;
  if (!choice.empty()) {
    const core::Json j = {{"method", choice}, {"warmup_steps", 0}};
    core::Diagnostics diag;
    core::ObjectReader r(j, "--compression", "", diag);
    c = models::CompressionConfig::from_json(r);
    TRAINSIM_CHECK(diag.empty(), "a --compression method checked above did not read");
  }
  c.warmup_steps = 0;
  return c;
}

// The parallelism, micro-batch, offload and gradient compression of `l` over the variant's scenario.
void configure(const Scenario& base, const std::vector<models::ParallelismConfig>& zero_templates, const Layout& l,
               models::ParallelismConfig& p, models::TrainingConfig& t, models::OffloadConfig& o,
               models::CompressionConfig& c) {
  o = offload_of(base, l.offload);
  c = compression_of(base, l.compression);
  size_t zi = 0;  // a hybrid layout's template is its stage and implementation's
  for (size_t i = 0; i < ZERO_OPTIONS.size(); ++i) {
    if (ZERO_OPTIONS[i].stage == l.zero_stage && ZERO_OPTIONS[i].impl == l.zero_impl) zi = i;
  }
  p = zero_templates[zi];
  p.tensor = l.tensor;
  p.pipeline = l.pipeline;
  p.data = l.data;
  p.context = l.context;
  p.spatial = l.spatial;
  p.expert = l.expert;
  p.expert_tensor = base.parallelism.folded() ? (base.parallelism.expert_tensor == 1 ? 1 : l.tensor) : 0;
  p.virtual_stages = l.virtual_stages;
  // The scenario's schedule, except that model chunks need the interleaved one and one chunk 1F1B.
  p.schedule = l.virtual_stages > 1 ? models::PipelineSchedule::INTERLEAVED_1F1B
               : base.parallelism.schedule == models::PipelineSchedule::INTERLEAVED_1F1B ? models::PipelineSchedule::ONE_F_ONE_B
                                                                                          : base.parallelism.schedule;
  p.execution = base.parallelism.execution;
  p.sequence_parallel = l.sequence_parallel;
  p.recompute = l.recompute;
  // The template read the scenario's (or its stack's) early stop as if recompute were "full".
  if (p.recompute != models::Recompute::FULL) p.recompute_early_stop = false;
  p.shard_group = l.shard_group;
  // The scenario's moe_a2a_overlap if it gives one, else the default for this layout.
  p.moe_a2a_overlap_given = base.parallelism.moe_a2a_overlap_given;
  p.moe_a2a_overlap = base.parallelism.moe_a2a_overlap;
  models::resolve_defaults(base.model, p);
  t = base.training;
  t.micro_batch = l.micro_batch;
}

}  // namespace

const Search::Variant& Search::variant_of(const Layout& l) const {
  const auto v = std::find_if(variants_.begin(), variants_.end(),
                              [&](const Variant& x) { return x.gpu == l.gpu && x.gpus == l.gpus && x.pools == l.pools; });
  TRAINSIM_CHECK(v != variants_.end(), "layout of another search");
  return *v;
}

Scenario Search::scenario_of(const Layout& l) const {
  const Variant& v = variant_of(l);
  Scenario s = v.base;
  configure(v.base, zero_templates_, l, s.parallelism, s.training, s.offload, s.compression);
  s.profile = v.profile(l.stack);
  // Pruning is the scenario's, fixed: layouts are ranked on the pruned steady-state iteration, without
  // predicting the dense iterations before start_iteration (docs/search.md).
  s.pruning.start_iteration = 0;
  if (!v.pool_types.empty()) {
    // The layers or the batch split over the pools by speed, as `run` splits them; evaluate()
    // checked that the layout's placement has one (check_pool_layout).
    core::Diagnostics problems;
    resolve_pools(s, problems);
    TRAINSIM_CHECK(problems.empty(), "a layout on the pools that check_pool_layout let through has no split");
  }
  return s;
}

double Search::objective_value(const Layout& l, double time, double goodput, const Figures* figures) const {
  const Variant& v = variant_of(l);
  const double tokens = static_cast<double>(v.base.training.global_batch * v.base.training.sequence_length);
  switch (options_.objective) {
    case Objective::ITERATION_TIME: return time;
    case Objective::TOKENS_PER_S: return tokens / time;
    case Objective::SAMPLES_PER_S: return static_cast<double>(v.base.training.global_batch) / time;
    case Objective::MFU: return v.model_flops / time / l.gpus / v.peak_flops;
    case Objective::TIME_TO_TRAIN:
      return goodput > 0 ? time_to_train(v.base, time)->days / goodput : std::numeric_limits<double>::infinity();
    case Objective::COST:
      return goodput > 0 ? *time_to_train(v.base, time)->cost / goodput : std::numeric_limits<double>::infinity();
    case Objective::TOKENS_PER_DOLLAR:
      return goodput * tokens / time / (l.gpus * *v.base.cluster.price_per_gpu_hour / 3600.0);
    case Objective::ENERGY:
    case Objective::CO2: {
      const double joules = figures != nullptr && figures->energy_per_iteration_j
                                ? *figures->energy_per_iteration_j
                                : energy_bound_j(v, l.gpus, time);
      const std::optional<TimeToTrain> t = time_to_train(v.base, time);
      if (!t) {  // energy without training.tokens: per token (per sample for a layer graph)
        return joules / (layer_graph_ ? static_cast<double>(v.base.training.global_batch) : tokens);
      }
      if (!(goodput > 0)) return std::numeric_limits<double>::infinity();
      const double mwh = joules / time * t->days * 86400 / goodput / 3.6e9;
      if (options_.objective == Objective::ENERGY) return mwh;
      return mwh * *v.base.power.grid_gco2_per_kwh / 1000;
    }
  }
  TRAINSIM_CHECK(false, "unknown objective");
  return 0;
}

std::optional<std::string> Search::missed_constraint(const Layout& l, double time, double goodput, double peak_bytes,
                                                     const std::string& source, const Figures* figures) const {
  const Variant& v = variant_of(l);
  if (options_.max_power_w && figures != nullptr && figures->peak_power_w &&
      *figures->peak_power_w > *options_.max_power_w) {
    return fmt::format("over --max-power {} ({})", core::format_watts(*options_.max_power_w), source);
  }
  if (options_.fits && options_.headroom.given() && peak_bytes >= 0 &&
      peak_bytes > options_.headroom.usable(v.capacity_bytes())) {
    return fmt::format("out of memory with --memory-headroom {} ({})", options_.headroom.describe(), source);
  }
  if (!options_.deadline_days && !options_.budget_usd) return std::nullopt;
  // The expected wall time and cost over the whole run: with failures when the scenario has
  // checkpoints (goodput < 1), as the objectives time_to_train and cost count them.
  const std::optional<TimeToTrain> t = time_to_train(v.base, time);
  TRAINSIM_CHECK(t.has_value(), "a constraint on the run without training.tokens (checked by the constructor)");
  if (options_.deadline_days && !(goodput > 0 && t->days / goodput <= *options_.deadline_days)) {
    return fmt::format("over --deadline {:g} days ({})", *options_.deadline_days, source);
  }
  if (options_.budget_usd) {
    TRAINSIM_CHECK(t->cost.has_value(), "--budget without a price (checked by the constructor)");
    if (!(goodput > 0 && *t->cost / goodput <= *options_.budget_usd)) {
      return fmt::format("over --budget ${:.0f} ({})", *options_.budget_usd, source);
    }
  }
  return std::nullopt;
}

double Search::score(const Layout& l, double time, double goodput, const Figures* figures) const {
  const double value = objective_value(l, time, goodput, figures);
  const bool lower_is_better = options_.objective == Objective::ITERATION_TIME ||
                               options_.objective == Objective::TIME_TO_TRAIN || options_.objective == Objective::COST ||
                               options_.objective == Objective::ENERGY || options_.objective == Objective::CO2;
  return lower_is_better ? value : -value;
}

bool Search::estimate_before(const Evaluated& a, const Evaluated& b) const {
  // Layouts whose estimate meets the planning constraints first: the refinement then spends its
  // analytic runs where a layout can pass them. (The constraints themselves are checked on the
  // analytic figures, in rank().)
  // --max-power: the estimate has no power figure, so a layout whose bound (every GPU at its limit)
  // is under the cap surely meets it; the others may (their peak is below the bound).
  const auto meets = [this](const Evaluated& e) {
    if (options_.max_power_w && peak_power_bound_w(variant_of(e.layout), e.layout.gpus) > *options_.max_power_w) {
      return false;
    }
    return !missed_constraint(e.layout, e.estimate.iteration_time_s, 1, -1, "estimate").has_value();
  };
  if (options_.deadline_days || options_.budget_usd || options_.max_power_w) {
    const bool ma = meets(a), mb = meets(b);
    if (ma != mb) return ma;
  }
  return better(score(a.layout, a.estimate.iteration_time_s), a.layout.index, score(b.layout, b.estimate.iteration_time_s),
                b.layout.index);
}

namespace {

// Keeps the first `keep` of `pool` (sorted by Search::estimate_before, those meeting the planning
// constraints first) for the analytic backend. A dropped layout whose first-pass estimate misses
// --deadline or --budget is counted as rejected for it (and no longer as valid), so that the counts
// say why it was not refined; the others dropped are only further down the ranking.
void keep_for_refinement(std::vector<Evaluated>& pool, size_t keep, const Search& search, SearchResult& result) {
  if (pool.size() <= keep) return;
  for (size_t i = keep; i < pool.size(); ++i) {
    const Evaluated& e = pool[i];
    if (const std::optional<std::string> missed =
            search.missed_constraint(e.layout, e.estimate.iteration_time_s, 1, -1, "first-pass estimate")) {
      ++result.rejected[*missed];
      if (result.valid > 0) --result.valid;
    }
  }
  pool.resize(keep);
}

}  // namespace

namespace {

// The first pass of a layout across the pools (Search::Variant::pool_types): its estimate on a
// cluster of each pool's GPU type, combined as the split by speed combines them. With the layers or
// the batch split in proportion to each type's speed, every GPU's work takes about as long, so the
// iteration runs at the GPUs' summed speed: 1 / T = sum over types of (share of GPUs / T on that
// type), the GPU-weighted harmonic mean (exact for compute when every pool's share of the work
// divides evenly; the pools' collectives, priced at each type's, are averaged the same way). Peak
// memory: the largest type's. std::nullopt when, with `headroom`, some type's estimate is above its
// GPU's memory.
std::optional<Estimate> estimate_across_pools(const Search::Variant& v, const models::TrainingConfig& training,
                                              const models::ParallelismConfig& par, const std::string& stack,
                                              const models::OffloadConfig& offload,
                                              const models::CompressionConfig& compression,
                                              const MemoryHeadroom* headroom) {
  Estimate across;
  double speed = 0;
  for (const Search::Variant::PoolType& t : v.pool_types) {
    const Estimate e = estimate_layout(v.base.model, training, par, t.cluster,
                                       t.profiles[static_cast<size_t>(core::parse_stack(stack))], v.base.pruning, offload,
                                       compression);
    if (headroom != nullptr && e.peak_memory_bytes > headroom->usable(t.capacity_bytes)) return std::nullopt;
    speed += t.share / e.iteration_time_s;
    across.peak_memory_bytes = std::max(across.peak_memory_bytes, e.peak_memory_bytes);
  }
  across.iteration_time_s = 1 / speed;
  return across;
}

}  // namespace

SearchResult Search::evaluate() const {
  SearchResult result;
  result.capacity_bytes = variants_.front().base.cluster.gpu_spec.hbm_capacity.value();
  struct ShapeOut {
    uint64_t candidates = 0, valid = 0, estimated = 0;
    std::map<std::string, uint64_t> rejected;
    std::vector<Evaluated> kept;
  };
  std::vector<ShapeOut> outs(shapes_.size());
  std::atomic<bool> stopped{false};
  const auto start = std::chrono::steady_clock::now();
  Progress bar("search: estimating", total_, !options_.quiet);
  const uint64_t shard = static_cast<uint64_t>(options_.shard_index), shards = static_cast<uint64_t>(options_.shard_count);

  parallel_for(shapes_.size(), options_.jobs, [&](size_t si) {
    const Shape& s = shapes_[si];
    const Variant& v = variants_[static_cast<size_t>(s.variant)];
    ShapeOut& out = outs[si];
    const double capacity = options_.headroom.usable(v.base.cluster.gpu_spec.hbm_capacity.value());
    const std::string out_of_memory = options_.headroom.given()
                                          ? fmt::format("out of memory with --memory-headroom {} (first-pass estimate)",
                                                        options_.headroom.describe())
                                          : "out of memory (first-pass estimate above the GPU's memory)";
    uint64_t k = 0;
    for (int vs : s.virtual_stages) {
      for (int64_t mb : s.micro_batches) {
        for (int sp = 0; sp < s.sp_options; ++sp) {
          for (int rci = 0; rci < s.recompute_options; ++rci) {
            const int choices = s.offload_options * s.compression_options;  // offload x compression, per ZeRO option
            for (int zo = 0; zo < s.zero_options * choices; ++zo, ++k) {
              const uint64_t index = s.first + k;
              if (index % shards != shard) continue;
              if (StopOnInterrupt::requested()) {
                stopped = true;
                return;
              }
              Layout l = layout_of(s, vs, mb, sp, rci, zo, index);
              ++out.candidates;
              if (!v.infeasible.empty()) {  // hardware this GPU type's cluster does not have
                ++out.rejected[v.infeasible];
                continue;
              }
              models::ParallelismConfig par;
              models::TrainingConfig training;
              models::OffloadConfig offload;
              models::CompressionConfig compression;
              configure(v.base, zero_templates_, l, par, training, offload, compression);
              core::Diagnostics diag;
              models::check_strategy(v.base.model, training, par, v.gpus, "", diag);
              if (diag.empty()) models::check_offload(offload, par, v.base.cluster.nvme.has_value(), "", diag);
              // The scenario's gradient compression may not combine with this layout's ZeRO stage.
              if (diag.empty()) models::check_compression(compression, v.base.model, par, v.base.pruning, "", diag);
              if (diag.empty() && !v.pool_types.empty()) check_pool_layout(v.base.cluster, par, training, "", diag);
              if (!diag.empty()) {
                ++out.rejected[diag.problems().front().message];
                continue;
              }
              const core::Stack stack = models::resolved_stack(training, par);
              l.stack = core::to_string(stack);
              // A layout no stack runs as a whole is not a plan anyone can carry out (a given stack
              // never gets here with one: check_strategy refused it above).
              l.stack_runs = runs_somewhere(stack, par);
              if (!l.stack_runs && !options_.any_stack) {
                ++out.rejected["no stack runs it: " + models::stack_unsupported(stack, as_judged(par))];
                continue;
              }
              // predict() would refuse it in the refinement (check_task_budget).
              if (!within_task_budget(v.base.model, training, par, v.base.simulation.max_tasks, offload,
                                      compression)) {
                ++out.rejected["workload above simulation.max_tasks"];
                continue;
              }
              if (offload.active() && offload_footprint(v.base.model, training, par, v.base.cluster, offload)
                                              .host_bytes_per_node > v.base.cluster.host_memory.value()) {
                ++out.rejected["out of host memory (offloaded model states above cluster.host_memory)"];
                continue;
              }
              ++out.estimated;
              Estimate est;
              if (layer_graph_) {
                try {
                  est = exact_estimate(scenario_of(l));
                } catch (const core::InputError& e) {
                  ++out.rejected[e.problems().front().message];
                  continue;
                }
              } else if (!v.pool_types.empty()) {
                const std::optional<Estimate> across = estimate_across_pools(v, training, par, l.stack, offload, compression,
                                                                             options_.fits ? &options_.headroom : nullptr);
                if (!across) {
                  ++out.rejected[out_of_memory];
                  continue;
                }
                est = *across;
              } else {
                est = estimate_layout(v.base.model, training, par, v.base.cluster, v.profile(l.stack), v.base.pruning,
                                      offload, compression);
              }
              if (options_.fits && v.pool_types.empty() && est.peak_memory_bytes > capacity) {
                ++out.rejected[out_of_memory];
                continue;
              }
              ++out.valid;
              out.kept.push_back({l, est, std::nullopt, std::nullopt, {}});
            }
          }
        }
      }
    }
    bar.advance(s.count());
  });
  bar.finish();

  std::vector<Evaluated> pool;
  for (ShapeOut& o : outs) {
    result.candidates += o.candidates;
    result.valid += o.valid;
    result.estimated += o.estimated;
    for (const auto& [reason, n] : o.rejected) result.rejected[reason] += n;
    for (Evaluated& e : o.kept) pool.push_back(std::move(e));
  }
  const auto by_estimate = [this](const Evaluated& a, const Evaluated& b) { return estimate_before(a, b); };
  const size_t keep = std::min(pool.size(), static_cast<size_t>(options_.refine));
  std::partial_sort(pool.begin(), pool.begin() + static_cast<ptrdiff_t>(keep), pool.end(), by_estimate);
  keep_for_refinement(pool, keep, *this, result);
  result.interrupted = stopped;
  const auto estimated = std::chrono::steady_clock::now();
  result.first_pass_s = std::chrono::duration<double>(estimated - start).count();

  // Stage 4: the real workload on the analytic backend.
  if (!result.interrupted) {
    Progress refine_bar("search: analytic backend", pool.size(), !options_.quiet);
    parallel_for(pool.size(), options_.jobs, [&](size_t i) {
      if (StopOnInterrupt::requested()) return;
      const Scenario sc = scenario_of(pool[i].layout);
      const Prediction p = predict(sc, "analytic");
      pool[i].analytic = figures_of(report_json(sc, p));
      pool[i].analytic->fingerprint = timing_fingerprint(sc, p.built.workload);
      if (p.resilience) {
        // The goodput also depends on the checkpoint's shards, which the workload does not show.
        const models::CheckpointSize& z = p.resilience->size;
        pool[i].analytic->fingerprint +=
            fmt::format("|checkpoint {} {} {}", z.per_writer.value(), z.writers, z.writing_nodes);
      }
      refine_bar.advance();
    });
    refine_bar.finish();
    if (StopOnInterrupt::requested()) result.interrupted = true;
  }
  result.refine_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - estimated).count();
  result.ranked = std::move(pool);
  return result;
}

SearchResult Search::merge(const std::vector<SearchResult>& shards) const {
  SearchResult result;
  for (const SearchResult& s : shards) {
    result.capacity_bytes = s.capacity_bytes;
    result.candidates += s.candidates;
    result.valid += s.valid;
    result.interrupted = result.interrupted || s.interrupted;
    for (const auto& [reason, n] : s.rejected) result.rejected[reason] += n;
    result.ranked.insert(result.ranked.end(), s.ranked.begin(), s.ranked.end());
  }
  std::sort(result.ranked.begin(), result.ranked.end(),
            [this](const Evaluated& a, const Evaluated& b) { return estimate_before(a, b); });
  keep_for_refinement(result.ranked, static_cast<size_t>(options_.refine), *this, result);
  return result;
}

namespace {

// Whether two refined layouts differ in no figure a planner reads (Evaluated::equivalent).
bool same_figures(const Evaluated& a, const Evaluated& b) {
  return a.analytic && b.analytic && a.layout.gpu == b.layout.gpu && a.layout.gpus == b.layout.gpus &&
         a.layout.pools == b.layout.pools &&
         a.analytic->iteration_time_s == b.analytic->iteration_time_s &&
         a.analytic->peak_memory_bytes == b.analytic->peak_memory_bytes && a.analytic->fits == b.analytic->fits &&
         a.analytic->goodput == b.analytic->goodput;
}

// Merges each ranked layout into the first one above it with the same figures (ranked in objective
// order, equal figures are neighbours but for exact ties of other layouts). The row keeps a layout
// some stack runs where one of the group does (Layout::stack_runs).
size_t merge_equivalent(std::vector<Evaluated>& ranked) {
  std::vector<Evaluated> rows;
  size_t merged = 0;
  for (Evaluated& e : ranked) {
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const Evaluated& r) { return same_figures(r, e); });
    if (row == rows.end()) {
      rows.push_back(std::move(e));
      continue;
    }
    ++merged;
    if (!row->layout.stack_runs && e.layout.stack_runs) {
      std::swap(row->layout, e.layout);
      std::swap(row->estimate, e.estimate);
    }
    row->equivalent.push_back(std::move(e.layout));
  }
  ranked = std::move(rows);
  return merged;
}

}  // namespace

void Search::rank(SearchResult& result) const {
  std::vector<Evaluated> kept;
  std::map<std::string, uint64_t> constrained;
  for (Evaluated& e : result.ranked) {
    if (e.analytic && options_.fits && !e.analytic->fits) {
      ++constrained["out of memory (analytic backend)"];
    } else if (e.analytic && options_.min_mfu && e.analytic->mfu < *options_.min_mfu) {
      ++constrained["MFU below --min-mfu"];
    } else if (const std::optional<std::string> missed =
                   e.analytic ? missed_constraint(e.layout, e.analytic->iteration_time_s, e.analytic->goodput.value_or(1),
                                                  e.analytic->peak_memory_bytes, "analytic backend", &*e.analytic)
                              : std::nullopt) {
      ++constrained[*missed];
    } else {
      kept.push_back(std::move(e));
    }
  }
  for (const auto& [reason, n] : constrained) result.rejected[reason] += n;
  // Refined candidates first, on their analytic figures; any left unrefined (interrupted) after.
  std::stable_sort(kept.begin(), kept.end(), [&](const Evaluated& a, const Evaluated& b) {
    if (a.analytic.has_value() != b.analytic.has_value()) return a.analytic.has_value();
    const double ta = a.analytic ? a.analytic->iteration_time_s : a.estimate.iteration_time_s;
    const double tb = b.analytic ? b.analytic->iteration_time_s : b.estimate.iteration_time_s;
    const double ga = a.analytic ? a.analytic->goodput.value_or(1) : 1;
    const double gb = b.analytic ? b.analytic->goodput.value_or(1) : 1;
    const Figures* fa = a.analytic ? &*a.analytic : nullptr;
    const Figures* fb = b.analytic ? &*b.analytic : nullptr;
    return better(score(a.layout, ta, ga, fa), a.layout.index, score(b.layout, tb, gb, fb), b.layout.index);
  });
  result.merged = merge_equivalent(kept);
  result.ranked = std::move(kept);
  if (result.ranked.empty() && !result.interrupted) {
    // The constraints of the last stage first, then the most frequent first-pass reasons.
    std::map<std::string, uint64_t> first_pass = result.rejected;
    for (const auto& [reason, n] : constrained) first_pass.erase(reason);
    std::vector<std::pair<uint64_t, std::string>> reasons;
    for (const auto& [reason, n] : rejection_reasons(constrained)) reasons.emplace_back(n, reason);
    const size_t last_stage = reasons.size();
    for (const auto& [reason, n] : rejection_reasons(first_pass)) reasons.emplace_back(n, reason);
    reasons.resize(std::min(last_stage + 3, reasons.size()));
    std::string why;
    for (const auto& [n, reason] : reasons) why += fmt::format("; {} x \"{}\"", n, reason);
    throw core::InputError(options_.scenario, "",
                           fmt::format("no layout is left to rank ({} candidates, {} valid after the first pass; "
                                       "constraints --fits, --min-mfu, --max-gpus, --deadline, --budget, "
                                       "--memory-headroom, --max-power){}",
                                       result.candidates, result.valid, why));
  }
}

void Search::recheck(SearchResult& result) const {
  const size_t n = std::min(result.ranked.size(), static_cast<size_t>(options_.top));
  // One simulation per distinct workload: a layout whose fingerprint an earlier one has takes that
  // one's SimGrid times (its own memory figures stay).
  std::vector<size_t> simulated;
  std::map<std::string, size_t> first_with;
  std::vector<std::optional<size_t>> same_as(n);
  for (size_t i = 0; i < n; ++i) {
    const std::optional<Figures>& a = result.ranked[i].analytic;
    if (!a) continue;
    if (!a->fingerprint.empty()) {
      const auto [it, inserted] = first_with.try_emplace(a->fingerprint, i);
      if (!inserted) {
        same_as[i] = it->second;
        continue;
      }
    }
    simulated.push_back(i);
  }
  result.simgrid_runs = simulated.size();
  Progress bar("search: SimGrid re-check", simulated.size(), !options_.quiet);
  std::mutex refused_mutex;
  // predict_report runs each SimGrid simulation in a child process (one SimGrid engine per process),
  // so several can run at once.
  parallel_for(simulated.size(), FORK_FROM_ONE_THREAD ? 1 : options_.jobs, [&](size_t k) {
    if (StopOnInterrupt::requested()) return;
    const size_t i = simulated[k];
    const Scenario sc = scenario_of(result.ranked[i].layout);
    try {
      result.ranked[i].simgrid = figures_of(predict_report(sc, "simgrid"));
    } catch (const engine::Interrupted&) {
      return;  // Ctrl-C ended the simulation; this layout keeps its analytic figures
    } catch (const core::InputError& e) {
      // A layout whose simulation would exceed simulation.max_flows keeps its analytic figures (a
      // larger layout of the same job can need far more flows than the scenario's own). Any other
      // input error ends the search: the step fidelity's budget, asked for every layout, included.
      const std::string& pointer = e.problems().front().pointer;
      if (pointer != "/simulation/max_flows" && pointer != "/simulation/max_seconds") throw;
      const std::lock_guard<std::mutex> lock(refused_mutex);
      ++result.recheck_refused[pointer == "/simulation/max_flows" ? "above simulation.max_flows"
                                                                   : "above simulation.max_seconds"];
    }
    bar.advance();
  });
  bar.finish();
  for (size_t i = 0; i < n; ++i) {
    if (!same_as[i] || !result.ranked[*same_as[i]].simgrid) continue;
    Figures f = *result.ranked[*same_as[i]].simgrid;
    f.peak_memory_bytes = result.ranked[i].analytic->peak_memory_bytes;
    f.fits = result.ranked[i].analytic->fits;
    result.ranked[i].simgrid = f;
  }
  if (StopOnInterrupt::requested()) result.interrupted = true;
  // SimGrid's time can miss a deadline or budget that the analytic figures met: such a layout leaves
  // the ranking, counted under its reason (its memory figures are the analytic ones, checked).
  size_t top = n;
  if (options_.deadline_days || options_.budget_usd || options_.max_power_w) {
    std::vector<Evaluated> kept;
    for (size_t i = 0; i < result.ranked.size(); ++i) {
      Evaluated& e = result.ranked[i];
      const std::optional<std::string> missed =
          i < n && e.simgrid ? missed_constraint(e.layout, e.simgrid->iteration_time_s, e.simgrid->goodput.value_or(1), -1,
                                                 "SimGrid re-check", &*e.simgrid)
                             : std::nullopt;
      if (missed) {
        ++result.rejected[*missed];
        --top;
      } else {
        kept.push_back(std::move(e));
      }
    }
    result.ranked = std::move(kept);
  }
  // The re-checked top is ordered by its SimGrid figures (contention-aware); the rest stays below.
  const auto end = result.ranked.begin() + static_cast<ptrdiff_t>(top);
  std::stable_sort(result.ranked.begin(), end, [&](const Evaluated& a, const Evaluated& b) {
    if (a.simgrid.has_value() != b.simgrid.has_value()) return a.simgrid.has_value();
    if (!a.simgrid) return false;
    return better(score(a.layout, a.simgrid->iteration_time_s, a.simgrid->goodput.value_or(1), &*a.simgrid),
                  a.layout.index,
                  score(b.layout, b.simgrid->iteration_time_s, b.simgrid->goodput.value_or(1), &*b.simgrid),
                  b.layout.index);
  });
}

core::Json shard_json(const Search& search, const SearchResult& r) {
  core::Json j;
  j["schema"] = "trainsim.search-shard/1";
  j["options"] = search.options().to_json();
  j["shard"] = {search.options().shard_index, search.options().shard_count};
  j["candidates"] = r.candidates;
  j["valid"] = r.valid;
  j["rejected"] = r.rejected;
  j["interrupted"] = r.interrupted;
  j["capacity_bytes"] = r.capacity_bytes;
  core::Json list = core::Json::array();
  for (const Evaluated& e : r.ranked) {
    core::Json c;
    c["layout"] = e.layout.to_json();
    c["estimate"] = {{"iteration_time_s", e.estimate.iteration_time_s}, {"peak_bytes_per_gpu", e.estimate.peak_memory_bytes}};
    if (e.analytic) c["analytic"] = e.analytic->to_json();
    list.push_back(c);
  }
  j["evaluated"] = list;
  return j;
}

SearchOptions SearchOptions::from_json(core::ObjectReader& r) {
  SearchOptions o;
  o.scenario = r.required_string("scenario").value_or("");
  o.overrides = r.string_array("overrides");
  for (int64_t g : r.integer_array("gpus", 1, MAX_SEARCH_GPUS)) o.gpus.push_back(static_cast<int>(g));
  o.gpu_types = r.string_array("gpu_types");
  std::vector<std::string> objectives;
  for (const auto& [name, value] : objective_names()) objectives.push_back(name);
  o.objective = objective_names().at(r.choice("objective", to_string(o.objective), objectives));
  o.refine = static_cast<int>(r.integer("refine", o.refine, 1, MAX_SEARCH_GPUS));
  // null: the option was not given (what shard_json writes).
  if (const core::Json* v = r.raw("max_gpus"); v != nullptr && !v->is_null()) {
    o.max_gpus = static_cast<int>(r.integer("max_gpus", 1, 1, MAX_SEARCH_GPUS));
  }
  if (const core::Json* v = r.raw("min_mfu"); v != nullptr && !v->is_null()) {
    o.min_mfu = r.number("min_mfu", 0.5, 1e-9, 1 - 1e-9);
  }
  o.fits = r.boolean("fits", o.fits);
  o.any_stack = r.boolean("any_stack", o.any_stack);
  o.max_micro_batch = static_cast<int>(r.integer("max_micro_batch", 0, 0, INT32_MAX));
  o.offload = r.string_array("offload");
  o.compression = r.string_array("compression");
  if (r.has("deadline_days")) o.deadline_days = r.number("deadline_days", 1, 1e-9, MAX_FIGURE_S);
  if (r.has("bands")) o.bands = r.string("bands", "");
  if (r.has("budget_usd")) o.budget_usd = r.number("budget_usd", 1, 1e-9, 1e18);
  if (r.has("max_power_w")) o.max_power_w = r.number("max_power_w", 1, 1, 1e11);
  if (auto h = r.object("memory_headroom")) {
    o.headroom.fraction = h->number("fraction", 0, 0, 1 - 1e-9);
    o.headroom.bytes = h->number("bytes", 0, 0, core::MAX_BYTES);
    h->finish();
  }
  if (auto p = r.object("prices")) {
    for (const auto& [name, v] : r.raw("prices")->items()) o.prices.prices.emplace_back(name, p->number(name, 1, 0.001, 1000));
    p->finish();
  }
  r.finish();
  return o;
}

Shard read_shard(const core::Json& j, const std::string& file) {
  if (!j.is_object() || !j.contains("schema") || j["schema"] != "trainsim.search-shard/1") {
    throw core::InputError(file, "/schema",
                           fmt::format("expected a shard file of `trainsim search --shard` (\"trainsim.search-shard/1\"), "
                                       "found {}",
                                       j.is_object() && j.contains("schema") ? core::describe_json(j["schema"])
                                                                             : std::string("no schema")));
  }
  core::Diagnostics diag;
  core::ObjectReader r(j, file, "", diag);
  r.raw("schema");
  Shard shard;
  if (auto o = r.object("options")) {
    shard.options = SearchOptions::from_json(*o);
    shard.options_json = j["options"];
  } else {
    r.problem("options", "missing required object (the search's options)");
  }
  const std::vector<int64_t> position = r.integer_array("shard", 0, MAX_SHARDS);
  if (position.size() != 2 || position[1] < 1 || position[0] >= position[1]) {
    r.problem("shard", fmt::format("expected [I, N] with 0 <= I < N <= {} (shard I of N)", MAX_SHARDS));
  } else {
    shard.index = static_cast<int>(position[0]);
    shard.count = static_cast<int>(position[1]);
  }
  SearchResult& res = shard.result;
  res.candidates = static_cast<uint64_t>(r.integer("candidates", 0, 0));
  res.valid = static_cast<uint64_t>(r.integer("valid", 0, 0));
  uint64_t accounted = res.valid;
  if (auto rej = r.object("rejected")) {
    for (const auto& [reason, n] : j["rejected"].items()) {
      const uint64_t count = static_cast<uint64_t>(rej->integer(reason, 0, 0));
      res.rejected[reason] = count;
      accounted = accounted + count < accounted ? UINT64_MAX : accounted + count;
    }
  }
  res.interrupted = r.boolean("interrupted", false);
  res.capacity_bytes = r.number("capacity_bytes", 1, 1, core::MAX_BYTES);
  // Every candidate of the shard is valid or rejected once; an interrupted shard stopped early.
  if (diag.empty() && (res.interrupted ? accounted > res.candidates : accounted != res.candidates)) {
    r.problem("candidates", fmt::format("{} candidates, but {} valid and {} rejected: the counts do not add up "
                                        "(an edited or truncated shard)",
                                        res.candidates, res.valid, accounted - res.valid));
  }
  if (const core::Json* list = r.raw("evaluated")) {
    if (!list->is_array()) {
      r.problem("evaluated", fmt::format("expected an array, found {}", core::describe_json(*list)));
    } else if (list->size() > res.valid) {
      r.problem("evaluated", fmt::format("{} evaluated layouts, more than the {} valid", list->size(), res.valid));
    } else {
      for (size_t i = 0; i < list->size(); ++i) {
        core::ObjectReader c((*list)[i], file, core::append_pointer("/evaluated", i), diag);
        Evaluated e;
        if (auto l = c.object("layout")) e.layout = Layout::from_json(*l);
        if (auto est = c.object("estimate")) {
          e.estimate.iteration_time_s = positive_figure(*est, "iteration_time_s", MAX_FIGURE_S);
          e.estimate.peak_memory_bytes = est->number("peak_bytes_per_gpu", 0, 0, core::MAX_BYTES);
          est->finish();
        } else {
          c.problem("estimate", "missing required object (iteration_time_s, peak_bytes_per_gpu)");
        }
        if (auto a = c.object("analytic")) e.analytic = Figures::from_json(*a);
        c.finish();
        res.ranked.push_back(std::move(e));
      }
    }
  } else {
    r.problem("evaluated", "missing required array");
  }
  r.finish();
  diag.throw_if_any();
  return shard;
}

SearchResult shard_from_json(const core::Json& j, const std::string& file) { return read_shard(j, file).result; }

std::optional<Layout> Search::candidate(uint64_t index) const {
  if (index >= total_) return std::nullopt;
  const auto next = std::upper_bound(shapes_.begin(), shapes_.end(), index,
                                     [](uint64_t i, const Shape& s) { return i < s.first; });
  const Shape& s = *(next - 1);
  uint64_t k = index - s.first;
  const uint64_t choices = static_cast<uint64_t>(s.offload_options) * static_cast<uint64_t>(s.compression_options);
  const uint64_t zos = static_cast<uint64_t>(s.zero_options) * choices;
  const uint64_t zo = k % zos;
  k /= zos;
  const uint64_t rci = k % static_cast<uint64_t>(s.recompute_options);
  k /= static_cast<uint64_t>(s.recompute_options);
  const uint64_t sp = k % static_cast<uint64_t>(s.sp_options);
  k /= static_cast<uint64_t>(s.sp_options);
  const uint64_t mbi = k % s.micro_batches.size();
  k /= s.micro_batches.size();
  TRAINSIM_CHECK(k < s.virtual_stages.size(), "candidate index beyond its shape");
  Layout l = layout_of(s, s.virtual_stages[k], s.micro_batches[mbi], static_cast<int>(sp), static_cast<int>(rci),
                       static_cast<int>(zo), index);
  // The stack that prices it, as evaluate() sets it on a valid candidate.
  const Variant& v = variants_[static_cast<size_t>(s.variant)];
  models::ParallelismConfig par;
  models::TrainingConfig training;
  models::OffloadConfig offload;
  models::CompressionConfig compression;
  configure(v.base, zero_templates_, l, par, training, offload, compression);
  const core::Stack stack = models::resolved_stack(training, par);
  l.stack = core::to_string(stack);
  l.stack_runs = runs_somewhere(stack, par);
  return l;
}

Layout Search::layout_of(const Shape& s, int vs, int64_t mb, int sp, int rci, int zo, uint64_t index) const {
  const Variant& v = variants_[static_cast<size_t>(s.variant)];
  const int choices = s.offload_options * s.compression_options;  // offload x compression, per ZeRO option
  const int z = zo / choices;
  Layout l;
  l.index = index;
  l.gpu = v.gpu;
  l.gpus = v.gpus;
  l.pools = v.pools;
  l.tensor = s.tensor;
  l.pipeline = s.pipeline;
  l.data = s.data;
  l.context = s.context;
  l.spatial = s.spatial;
  l.expert = s.expert;
  l.virtual_stages = vs;
  l.micro_batch = mb;
  l.sequence_parallel = sp == 1;
  l.recompute = RECOMPUTES[rci];
  const size_t plain = ZERO_OPTIONS.size();
  const ZeroOption& option = static_cast<size_t>(z) < plain ? ZERO_OPTIONS[static_cast<size_t>(z)]
                                                            : HYBRID_OPTIONS[static_cast<size_t>(z) - plain];
  l.zero_stage = option.stage;
  l.zero_impl = option.impl;
  if (static_cast<size_t>(z) >= plain) l.shard_group = s.shard_group;
  if (!options_.offload.empty()) l.offload = options_.offload[static_cast<size_t>(zo % choices / s.compression_options)];
  if (!options_.compression.empty()) l.compression = options_.compression[static_cast<size_t>(zo % s.compression_options)];
  return l;
}

MergedShards merge_shards(const std::vector<std::pair<core::Json, std::string>>& files, const SearchOptions& options) {
  // Shard files are input, read like a scenario (read_shard): a field of the wrong type or out of
  // range is an input error naming the file and pointer, and so is a shard of another search.
  std::vector<Shard> shards;
  std::vector<bool> seen;
  for (const auto& [j, file] : files) {
    Shard shard = read_shard(j, file);
    if (shards.empty()) {
      seen.assign(static_cast<size_t>(shard.count), false);
    } else if (shard.options_json != shards.front().options_json || static_cast<size_t>(shard.count) != seen.size()) {
      throw core::InputError(file, "/options",
                             fmt::format("this shard comes from another search than {} (its options or shard count differ)",
                                         files.front().second));
    }
    const auto index = static_cast<size_t>(shard.index);
    if (seen[index]) throw core::InputError(file, "/shard", fmt::format("shard {} given twice", index));
    seen[index] = true;
    shards.push_back(std::move(shard));
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) throw core::InputError("search merge", "", fmt::format("shard {}/{} is missing", i, seen.size()));
  }
  SearchOptions o = options;
  const SearchOptions& recorded = shards.front().options;
  o.scenario = recorded.scenario;
  o.overrides = recorded.overrides;
  o.gpus = recorded.gpus;
  o.gpu_types = recorded.gpu_types;
  o.objective = recorded.objective;
  o.refine = recorded.refine;
  o.max_gpus = recorded.max_gpus;
  o.min_mfu = recorded.min_mfu;
  o.fits = recorded.fits;
  o.any_stack = recorded.any_stack;
  o.max_micro_batch = recorded.max_micro_batch;
  o.offload = recorded.offload;
  o.compression = recorded.compression;
  std::optional<Search> search;
  try {
    search.emplace(o);
  } catch (const core::InputError& e) {
    // The options came from the shard, not from the command line: name the file, not the flag.
    std::vector<core::InputProblem> problems = e.problems();
    for (core::InputProblem& p : problems) {
      if (p.file.starts_with("--")) p = {files.front().second, "/options", fmt::format("{} ({})", p.message, p.file)};
    }
    throw core::InputError(problems);
  }
  // Each layout must be the candidate its index names in the search the options describe, in this
  // shard's share: a shard of another scenario (or of the same one since edited) is refused here.
  std::vector<SearchResult> results;
  for (size_t k = 0; k < shards.size(); ++k) {
    const Shard& shard = shards[k];
    for (size_t i = 0; i < shard.result.ranked.size(); ++i) {
      const Layout& l = shard.result.ranked[i].layout;
      const std::optional<Layout> expected = search->candidate(l.index);
      if (!expected || expected->to_json() != l.to_json() ||
          l.index % static_cast<uint64_t>(shard.count) != static_cast<uint64_t>(shard.index)) {
        throw core::InputError(
            files[k].second, fmt::format("/evaluated/{}/layout", i),
            fmt::format("layout {} ({}) is not candidate {} of shard {}/{} of the search of {} (its {}): the shard "
                        "comes from another search, or the scenario changed since",
                        l.index, l.describe(), l.index, shard.index, shard.count, o.scenario,
                        expected ? expected->describe() : fmt::format("{} candidates", search->candidate_count())));
      }
    }
    results.push_back(shard.result);
  }
  SearchResult result = search->merge(results);
  return {std::move(*search), std::move(result)};
}

}  // namespace trainsim::plan

namespace trainsim::plan {

std::vector<std::pair<std::string, uint64_t>> rejection_reasons(const std::map<std::string, uint64_t>& rejected) {
  struct Merged {
    uint64_t count = 0;
    std::vector<std::map<double, std::string>> values;  // per number of the message
  };
  std::map<std::string, Merged> merged;
  for (const auto& [message, n] : rejected) {
    const SplitMessage split = split_values(message);
    Merged& m = merged[split.text];
    m.count += n;
    m.values.resize(split.values.size());
    for (size_t i = 0; i < split.values.size(); ++i) m.values[i].emplace(std::stod(split.values[i]), split.values[i]);
  }
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [text, m] : merged) {
    std::string reason;
    size_t value = 0;
    for (char c : text) reason += c == VALUE_MARK ? values_text(m.values[value++]) : std::string(1, c);
    out.emplace_back(reason, m.count);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace trainsim::plan
