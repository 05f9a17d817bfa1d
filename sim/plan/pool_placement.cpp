#include "sim/plan/pool_placement.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <limits>
#include <numeric>

#include "sim/core/stack.hpp"
#include "sim/engine/compute_model.hpp"

namespace trainsim::plan {
namespace {

const std::vector<network::NodePool>& pools_of(const Scenario& s) { return s.cluster.pools; }

std::string pool_pointer(size_t i, const char* key) {
  return fmt::format("/cluster/pools/{}/{}", i, key);
}

std::string pool_names(const Scenario& s) {
  std::vector<std::string> names;
  for (const network::NodePool& p : pools_of(s)) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

int pool_gpus(const network::ClusterConfig& c, const network::NodePool& p) { return p.nodes * c.gpus_per_node; }
int pool_gpus(const Scenario& s, const network::NodePool& p) { return pool_gpus(s.cluster, p); }

// GPUs of one unit the pools must not cut: a pipeline stage (pipeline > 1) or a data-parallel replica.
int placement_unit(const network::ClusterConfig& c, const models::ParallelismConfig& par) {
  const int world = c.world_size();
  return par.pipeline > 1 ? world / par.pipeline : world / std::max(1, par.data);
}
int placement_unit(const Scenario& s) { return placement_unit(s.cluster, s.parallelism); }

// The built-in device profile of a pool's GPU with the job's stack costs and straggler slowdown (what
// a single-GPU scenario gets without a profile of its own).
core::DeviceProfile pool_device(const Scenario& s, const network::NodePool& p) {
  const std::string gpu = p.gpu_described ? p.gpu_base : p.gpu_spec.name;
  core::DeviceProfile d = core::DeviceProfile::defaults_for(gpu);
  core::apply_stack(d, models::resolved_stack(s.training, s.parallelism), s.training.compile, gpu);
  d.straggler_slowdown = s.profile.device.straggler_slowdown;
  return d;
}

// The GPU compute a program's rank runs per iteration on `gpu`: its compute tasks off the host.
double program_compute_s(const core::Program& program, core::Precision precision, const core::GpuSpec& gpu,
                         const core::DeviceProfile& device, bool training_only) {
  double seconds = 0;
  for (const core::Task& t : program.tasks) {
    if (t.kind != core::TaskKind::COMPUTE || t.stream == core::Stream::HOST) continue;
    if (training_only && t.phase == core::Phase::OPTIMIZER) continue;
    seconds += t.seconds > 0 ? t.seconds : engine::compute_time(t, precision, gpu, device).value();
  }
  return seconds;
}

void check_boundaries(const network::ClusterConfig& c, const models::ParallelismConfig& par, const std::string& file,
                      core::Diagnostics& problems) {
  const int unit = placement_unit(c, par);
  if (unit <= 0) return;
  const bool stages = par.pipeline > 1;
  for (size_t i = 0; i < c.pools.size(); ++i) {
    const network::NodePool& p = c.pools[i];
    const int gpus = pool_gpus(c, p);
    if (p.first_rank % unit == 0 && gpus % unit == 0) continue;
    problems.add(file, pool_pointer(i, "nodes"),
                 fmt::format("pool \"{}\" holds ranks {}-{}, which cuts a {} of {} GPUs: {} (ranks go to the pools in "
                             "list order)",
                             p.name, p.first_rank, p.first_rank + gpus - 1, stages ? "pipeline stage" : "data-parallel replica",
                             unit,
                             stages ? "with pipeline > 1 every pool holds whole stages"
                                    : "with pipeline 1 every pool holds whole replicas (tensor x context x expert GPUs)"));
  }
}

// What a batch split over the pools (pipeline 1) does not model.
void check_replica_layout(const models::ParallelismConfig& par, const std::string& file, core::Diagnostics& problems) {
  if (par.pipeline > 1) return;
  if (par.expert > 1) {
    problems.add(file, "/parallelism/expert",
                 "expert parallelism with a batch split (pipeline 1) is not modelled on a cluster of several GPU types "
                 "(cluster.pools)");
  }
  if (par.zero_stage == 3) {
    problems.add(file, "/parallelism/zero_stage",
                 "ZeRO-3 gathers weights in every micro-batch, so replicas running different micro-batch counts would "
                 "call different collectives: use zero_stage 0-2 with a batch split (pipeline 1)");
  } else if (par.gathers_parameters()) {
    problems.add(file, "/parallelism/zero_impl",
                 fmt::format("{} at zero_stage 2 (SHARD_GRAD_OP) gathers weights in every micro-batch, so replicas running "
                             "different micro-batch counts would call different collectives: use megatron-distributed-"
                             "optimizer or deepspeed at zero_stage 1-2 with a batch split (pipeline 1)",
                             models::to_string(par.zero_impl)));
  }
}

// Data-parallel replicas per pool (pipeline 1).
std::vector<int> pool_replicas(const network::ClusterConfig& c, const models::ParallelismConfig& par) {
  const int unit = placement_unit(c, par);
  std::vector<int> replicas;
  for (const network::NodePool& p : c.pools) replicas.push_back(pool_gpus(c, p) / std::max(1, unit));
  return replicas;
}

// training.batch_split checked against the pools (sum, multiples) and put in pool order.
void check_batch_split(Scenario& s, const std::vector<int>& replicas, core::Diagnostics& problems) {
  std::vector<std::pair<std::string, int64_t>> ordered;
  int64_t sum = 0;
  for (size_t i = 0; i < pools_of(s).size(); ++i) {
    const network::NodePool& p = pools_of(s)[i];
    const auto it = std::find_if(s.training.batch_split.begin(), s.training.batch_split.end(),
                                 [&](const auto& e) { return e.first == p.name; });
    if (it == s.training.batch_split.end()) return;  // check_pools reported it
    const int64_t step = s.training.micro_batch * replicas[i];
    if (it->second % step != 0) {
      problems.add(s.file, core::append_pointer("/training/batch_split", p.name),
                   fmt::format("a multiple of micro_batch x the pool's replicas = {} x {} = {} (every replica runs whole "
                               "micro-batches), found {}",
                               s.training.micro_batch, replicas[i], step, it->second));
    }
    sum += it->second;
    ordered.push_back(*it);
  }
  if (sum != s.training.global_batch) {
    problems.add(s.file, "/training/batch_split",
                 fmt::format("the pools' samples sum to {}, expected training.global_batch ({})", sum,
                             s.training.global_batch));
  }
  s.training.batch_split = std::move(ordered);
}

// The micro-batches per replica of each pool that minimize the slowest replica's compute at
// `seconds` per micro-batch (equal speeds: whether any split exists); a problem and {} when the
// batch cannot be split into whole micro-batches per replica.
std::vector<int64_t> split_micro_batches(const models::TrainingConfig& training, const std::vector<int>& replicas,
                                         const std::vector<double>& seconds, const std::string& file,
                                         core::Diagnostics& problems) {
  if (training.global_batch % training.micro_batch != 0) {
    problems.add(file, "/training/global_batch",
                 fmt::format("a multiple of micro_batch ({}) to split over the pools, found {}", training.micro_batch,
                             training.global_batch));
    return {};
  }
  const int64_t total = training.global_batch / training.micro_batch;
  std::vector<int64_t> m = balanced_micro_batches(total, replicas, seconds);
  if (m.empty()) {
    problems.add(file, "/training/batch_split",
                 fmt::format("a split of the {} micro-batches that gives every replica a whole number of them (pools of "
                             "{} replicas), found none: give training.batch_split",
                             total, fmt::join(replicas, ", ")));
  }
  return m;
}

void balance_batch(Scenario& s, const std::vector<int>& replicas, core::Diagnostics& problems) {
  const std::vector<int64_t> m = split_micro_batches(s.training, replicas, micro_batch_seconds(s), s.file, problems);
  if (m.empty()) return;
  s.training.batch_split.clear();
  for (size_t i = 0; i < m.size(); ++i) {
    s.training.batch_split.emplace_back(pools_of(s)[i].name, m[i] * replicas[i] * s.training.micro_batch);
  }
}

void balance_layers(Scenario& s) {
  const std::vector<double> speed = micro_batch_seconds(s);
  const std::vector<int> stage = stage_pools(s);
  const int chunks = s.parallelism.pipeline * s.parallelism.virtual_stages;
  std::vector<double> per_layer;
  for (int c = 0; c < chunks; ++c) {
    per_layer.push_back(speed[static_cast<size_t>(stage[static_cast<size_t>(c % s.parallelism.pipeline)])] / s.model.layers);
  }
  s.parallelism.stage_layers = balanced_layers(s.model.layers, per_layer);
}

}  // namespace

std::vector<int> balanced_layers(int layers, const std::vector<double>& seconds_per_layer) {
  TRAINSIM_CHECK(!seconds_per_layer.empty() && layers >= static_cast<int>(seconds_per_layer.size()),
                 "balanced_layers: at least one layer per chunk");
  std::vector<int> split(seconds_per_layer.size(), 1);
  for (int given = static_cast<int>(split.size()); given < layers; ++given) {
    size_t best = 0;
    for (size_t c = 1; c < split.size(); ++c) {
      if ((split[c] + 1) * seconds_per_layer[c] < (split[best] + 1) * seconds_per_layer[best]) best = c;
    }
    ++split[best];
  }
  return split;
}

std::vector<int64_t> balanced_micro_batches(int64_t total, const std::vector<int>& replicas,
                                            const std::vector<double>& seconds) {
  TRAINSIM_CHECK(!replicas.empty() && replicas.size() == seconds.size(), "balanced_micro_batches: one speed per pool");
  const size_t n = replicas.size();
  std::vector<int64_t> rest_min(n + 1, 0);  // replicas of the pools after i: the least they take
  for (size_t i = n; i-- > 0;) rest_min[i] = rest_min[i + 1] + replicas[i];
  std::vector<int64_t> current(n, 0), best;
  double best_time = std::numeric_limits<double>::infinity();
  // Depth-first over the pools in order, each pool's count ascending; a count whose time reaches the
  // best found cannot improve it, nor can a larger one.
  std::function<void(size_t, int64_t, double)> search = [&](size_t i, int64_t left, double slowest) {
    if (i + 1 == n) {
      if (left % replicas[i] != 0) return;
      current[i] = left / replicas[i];
      const double t = std::max(slowest, static_cast<double>(current[i]) * seconds[i]);
      if (current[i] >= 1 && t < best_time) {
        best_time = t;
        best = current;
      }
      return;
    }
    for (int64_t m = 1; m * replicas[i] + rest_min[i + 1] <= left; ++m) {
      const double t = static_cast<double>(m) * seconds[i];
      if (t >= best_time) break;
      current[i] = m;
      search(i + 1, left - m * replicas[i], std::max(slowest, t));
    }
  };
  search(0, total, 0);
  return best;
}

std::vector<double> micro_batch_seconds(const Scenario& s) {
  // One micro-batch of the whole model on one replica of one stage: the job's tensor and context
  // split, nothing sharded or pipelined.
  models::ParallelismConfig p = s.parallelism;
  p.pipeline = 1;
  p.data = 1;
  p.virtual_stages = 1;
  p.stage_layers.clear();
  p.schedule = models::PipelineSchedule::ONE_F_ONE_B;
  p.execution = models::PipelineExecution::ORDERED;
  p.zero_stage = 0;
  p.zero_impl = models::ZeroImpl::MEGATRON_DISTRIBUTED_OPTIMIZER;
  models::TrainingConfig t = s.training;
  t.global_batch = t.micro_batch;
  t.checkpoint.reset();
  t.batch_split.clear();
  const models::BuiltWorkload built = models::build_workload(s.model, t, p);
  std::vector<double> seconds;
  for (const network::NodePool& pool : pools_of(s)) {
    seconds.push_back(program_compute_s(built.workload.programs.front(), built.workload.precision, pool.gpu_spec,
                                        pool.device, true));
  }
  return seconds;
}

bool splits_batch(const Scenario& s) { return !pools_of(s).empty() && s.parallelism.pipeline == 1; }

models::TrainingConfig strategy_training(const Scenario& s) {
  // More data-parallel replicas than GPUs (placement_unit 0) is the world-size mismatch that
  // check_strategy reports; there is no replica to share the batch over.
  if (!splits_batch(s) || placement_unit(s) < 1) return s.training;
  models::TrainingConfig t = s.training;
  int64_t most = 1;
  if (s.training.batch_split.size() == pools_of(s).size()) {
    const std::vector<models::ReplicaShare> shares = replica_shares(s);
    for (const models::ReplicaShare& r : shares) most = std::max(most, r.micro_batches);
  }
  t.global_batch = most * t.micro_batch * s.parallelism.data;
  return t;
}

std::vector<models::ReplicaShare> replica_shares(const Scenario& s) {
  const int unit = placement_unit(s);
  TRAINSIM_CHECK(unit >= 1, "replica_shares of a layout with more replicas than GPUs (check_strategy rejects it)");
  std::vector<models::ReplicaShare> shares;
  for (size_t i = 0; i < pools_of(s).size(); ++i) {
    models::ReplicaShare r;
    r.replicas = pool_gpus(s, pools_of(s)[i]) / unit;
    const auto given = std::find_if(s.training.batch_split.begin(), s.training.batch_split.end(),
                                    [&](const auto& e) { return e.first == pools_of(s)[i].name; });
    const int64_t samples = given == s.training.batch_split.end() ? 0 : given->second;
    r.micro_batches = samples / (s.training.micro_batch * std::max(1, r.replicas));
    shares.push_back(r);
  }
  return shares;
}

std::vector<int> stage_pools(const Scenario& s) {
  const int unit = placement_unit(s);
  std::vector<int> stage;
  for (int st = 0; st < s.parallelism.pipeline; ++st) stage.push_back(s.cluster.pool_of(st * unit));
  return stage;
}

bool check_pools(const Scenario& s, core::Diagnostics& problems) {
  const size_t before = problems.problems().size();
  if (pools_of(s).empty()) {
    if (!s.training.batch_split.empty()) {
      problems.add(s.file, "/training/batch_split",
                   "a batch split needs a cluster of several GPU types (cluster.pools); remove batch_split");
    }
    return problems.problems().size() == before;
  }
  auto not_modelled = [&](const std::string& pointer, const std::string& what) {
    problems.add(s.file, pointer, fmt::format("{} is not modelled on a cluster of several GPU types (cluster.pools)", what));
  };
  if (s.profile_given) {
    not_modelled(s.simulation.profile.empty() ? "/profile" : "/simulation/profile",
                 "a profile of one GPU (each pool gets its GPU's built-in profile)");
  }
  if (s.model.is_layer_graph()) not_modelled("/model", "a layer-graph model");
  if (s.pruning.enabled()) not_modelled("/optimizations/pruning", "pruning");
  if (s.offload.active()) not_modelled("/optimizations/offload", "offloading");
  if (s.parallelism.folded()) not_modelled("/parallelism/expert_tensor", "parallel folding");
  for (size_t i = 0; i < pools_of(s).size(); ++i) {
    const network::NodePool& p = pools_of(s)[i];
    if (s.cluster.intra_node.nvls && !p.gpu_spec.nvlink_sharp) {
      problems.add(s.file, "/cluster/intra_node/nvls",
                   fmt::format("NVLink SHARP on every node, but pool \"{}\"'s {} has none (the catalog's nvlink_sharp)",
                               p.name, p.gpu));
    }
    if (p.gpu_spec.peak(s.training.precision).value() <= 0) {
      problems.add(s.file, pool_pointer(i, "gpu"),
                   fmt::format("{} has no {} tensor-core rate (training.precision)", p.gpu, core::to_string(s.training.precision)));
    }
  }
  if (s.parallelism.pipeline > 1) {
    if (!s.training.batch_split.empty()) {
      problems.add(s.file, "/training/batch_split",
                   "with pipeline > 1 every pool holds whole pipeline stages and the layers are split instead "
                   "(parallelism.stage_layers): remove batch_split, or use pipeline 1");
    }
    return problems.problems().size() == before;
  }
  check_replica_layout(s.parallelism, s.file, problems);
  for (const auto& [name, samples] : s.training.batch_split) {
    if (std::none_of(pools_of(s).begin(), pools_of(s).end(), [&](const network::NodePool& p) { return p.name == name; })) {
      problems.add(s.file, core::append_pointer("/training/batch_split", name),
                   fmt::format("unknown pool \"{}\": the pools are {}", name, pool_names(s)));
    }
  }
  if (!s.training.batch_split.empty()) {
    for (const network::NodePool& p : pools_of(s)) {
      if (std::none_of(s.training.batch_split.begin(), s.training.batch_split.end(),
                       [&](const auto& e) { return e.first == p.name; })) {
        problems.add(s.file, "/training/batch_split",
                     fmt::format("no samples for pool \"{}\": give every pool's, or leave batch_split out for the "
                                 "balanced split",
                                 p.name));
      }
    }
  }
  return problems.problems().size() == before;
}

bool check_pool_layout(const network::ClusterConfig& cluster, const models::ParallelismConfig& parallelism,
                       const models::TrainingConfig& training, const std::string& file, core::Diagnostics& problems) {
  const size_t before = problems.problems().size();
  check_replica_layout(parallelism, file, problems);
  check_boundaries(cluster, parallelism, file, problems);
  if (problems.problems().size() != before || parallelism.pipeline > 1) return problems.problems().size() == before;
  const std::vector<int> replicas = pool_replicas(cluster, parallelism);
  return !split_micro_batches(training, replicas, std::vector<double>(replicas.size(), 1.0), file, problems).empty();
}

void resolve_pools(Scenario& s, core::Diagnostics& problems, bool place) {
  if (pools_of(s).empty()) return;
  for (network::NodePool& p : s.cluster.pools) p.device = pool_device(s, p);
  if (!place) return;
  const size_t before = problems.problems().size();
  check_boundaries(s.cluster, s.parallelism, s.file, problems);
  if (problems.problems().size() != before) return;
  if (s.parallelism.pipeline > 1) {
    if (s.parallelism.stage_layers.empty() && pools_of(s).size() > 1) balance_layers(s);
    return;
  }
  std::vector<int> replicas;
  for (const models::ReplicaShare& r : replica_shares(s)) replicas.push_back(r.replicas);
  if (s.training.batch_split.empty()) {
    balance_batch(s, replicas, problems);
  } else {
    check_batch_split(s, replicas, problems);
  }
}

std::vector<PoolFigures> pool_figures(const Scenario& s, const core::Workload& workload, double iteration_s) {
  std::vector<PoolFigures> figures;
  const std::vector<models::ReplicaShare> shares =
      splits_batch(s) ? replica_shares(s) : std::vector<models::ReplicaShare>{};
  for (size_t i = 0; i < pools_of(s).size(); ++i) {
    const network::NodePool& pool = pools_of(s)[i];
    PoolFigures f;
    f.name = pool.name;
    f.gpu = pool.gpu;
    f.gpus = pool_gpus(s, pool);
    f.first_rank = pool.first_rank;
    for (size_t prog = 0; prog < workload.programs.size(); ++prog) {
      const core::Program& program = workload.programs[prog];
      if (static_cast<size_t>(program.node_pool) != i) continue;
      f.compute_s = std::max(f.compute_s, program_compute_s(program, workload.precision, pool.gpu_spec, pool.device, false));
    }
    if (s.parallelism.pipeline > 1) {
      const std::vector<int> stage = stage_pools(s);
      const int chunks = static_cast<int>(s.parallelism.stage_layers.size());
      for (int st = 0; st < s.parallelism.pipeline; ++st) {
        if (stage[static_cast<size_t>(st)] != static_cast<int>(i)) continue;
        f.stages.push_back(st);
        for (int c = st; c < chunks; c += s.parallelism.pipeline) f.layers += s.parallelism.stage_layers[static_cast<size_t>(c)];
      }
    } else if (i < shares.size()) {
      f.micro_batches = shares[i].micro_batches;
      f.samples = shares[i].micro_batches * shares[i].replicas * s.training.micro_batch;
    }
    f.idle_fraction = iteration_s > 0 ? std::max(0.0, 1 - f.compute_s / iteration_s) : 0;
    figures.push_back(std::move(f));
  }
  return figures;
}

std::string binding_sentence(const Scenario& s, const std::vector<PoolFigures>& pools, int critical_rank) {
  const size_t binding = static_cast<size_t>(s.cluster.pool_of(critical_rank));
  if (binding >= pools.size()) return "";
  const PoolFigures& b = pools[binding];
  std::string text = fmt::format("the {} {} (pool {}) finish last", b.gpu, s.parallelism.pipeline > 1 ? "stages" : "replicas",
                                 b.name);
  std::vector<std::string> others;
  for (size_t i = 0; i < pools.size(); ++i) {
    if (i == binding) continue;
    others.push_back(fmt::format("{:.0f}% idle on {} (pool {})", 100 * pools[i].idle_fraction, pools[i].gpu, pools[i].name));
  }
  if (!others.empty()) text += fmt::format(": {}", fmt::join(others, ", "));
  return text;
}

}  // namespace trainsim::plan
